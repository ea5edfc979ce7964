//! [`check`]: the static analysis of a prompt ([`prompty_core::analysis`], the same one that makes
//! `include_prompty!` fail the build), completed with what only the running program knows: which
//! renderers, parsers, executors, tool functions and tool handlers are registered.

mod online;

pub use online::{check_online, check_online_async};

use crate::analysis::{self, Diagnostic, Report};
use crate::{get_executor, get_parser, get_processor, get_renderer, get_tool, Agent, Error, ToolKind};

/// Checks `agent` without running it: every mistake the files show (the diagnostics of
/// [`analysis::check_agent`], with `file:line:column` when the agent was loaded from a file), then
/// against this program's registries:
///
/// - `template.format` / `template.parser`: an unknown key is an error when no renderer (parser)
///   is registered under it, and no longer a warning when one is;
/// - `model.provider`: an executor and a processor must be registered under it (the `openai` and
///   `anthropic` features register the built-in ones); a key that is not built in is no longer a
///   warning when they are;
/// - `kind: function` tools without a registered function (`#[prompty::tool]`,
///   [`crate::register_tool`]) are a warning, since one may still be handed to the call in
///   [`crate::TurnOptions`]; `kind: mcp` and `kind: openapi` tools need their feature (or a handler
///   registered for their kind), an MCP server reached over HTTP the feature `mcp-http`; other
///   kinds need a registered handler (a warning).
///
/// Children compiled into the program (typed prompts) were checked when it was built.
///
/// ```
/// let agent = prompty::load_str(
///     "---\nmodel: {id: m, provider: nowhere}\ninputs: [q]\n---\nuser:\n{{ qq }}", ".", "ask.prompty")?;
/// let report = prompty::check(&agent);
/// let errors: Vec<String> = report.errors().map(|d| d.to_string()).collect();
/// assert_eq!(errors[0], "ask.prompty:2:1: no executor is registered for the provider `nowhere` \
///     (register one with `#[prompty::executor(\"nowhere\")]` or `prompty::register_executor`)");
/// assert_eq!(errors[1], "ask.prompty:6:4: the template uses `qq`, which no input declares (did you mean `q`?)");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn check(agent: &Agent) -> Report {
    let mut report = analysis::check_agent(agent);
    template_keys(agent, &mut report);
    provider(agent, &mut report);
    tools(agent, &mut report);
    report
}

/// Renderer and parser keys against the registries.
fn template_keys(agent: &Agent, report: &mut Report) {
    let checks = [
        ("format", agent.template.format.kind.as_str(), "renderer", get_renderer(&agent.template.format.kind).err()),
        ("parser", agent.template.parser.kind.as_str(), "parser", get_parser(&agent.template.parser.kind).err()),
    ];
    for (key, kind, component, missing) in checks {
        // The analysis warns about a key that is not built in; the registry now decides.
        let warned = format!("unknown template {key} `{kind}`");
        report.diagnostics.retain(|d| !(d.code == "unknown-template-key" && d.message.starts_with(&warned)));
        let Some(Error::UnknownComponent { known, .. }) = missing else { continue };
        if report.errors().any(|d| d.code == "template-key-case" && d.message.starts_with(&warned)) {
            continue; // a built-in key in the wrong case: already an error
        }
        let hint = analysis::did_you_mean(kind, known.split(", "));
        let at = report.locate(&format!("template.{key}.kind"));
        let code = if component == "renderer" { "unregistered-renderer" } else { "unregistered-parser" };
        let d = Diagnostic::error(
            at,
            format!(
                "no {component} is registered under `{kind}`{hint} (the registered ones are {known}; register one with \
                 `#[prompty::{component}(\"{kind}\")]` or `prompty::register_{component}`)"
            ),
        )
        .with_code(code);
        report.add(d);
    }
}

/// The executor and processor of `model.provider`.
fn provider(agent: &Agent, report: &mut Report) {
    let Some(provider) = agent.model.as_ref().and_then(|m| m.provider.as_deref()) else { return };
    // The analysis warns about a key that is not built in; the registry now decides.
    report.diagnostics.retain(|d| d.code != "unknown-provider");
    if report.errors().any(|d| d.code == "provider-key-case") {
        return; // a built-in key in the wrong case: already an error
    }
    for (component, missing) in
        [("executor", get_executor(provider).err()), ("processor", get_processor(provider).err())]
    {
        let Some(missing) = missing else { continue };
        let hint = match missing {
            Error::UnknownComponent { known, .. } => analysis::did_you_mean(provider, known.split(", ")),
            _ => String::new(),
        };
        let feature = match provider {
            "openai" | "azure" | "foundry" => " (or turn on prompty's `openai` feature)",
            "anthropic" => " (or turn on prompty's `anthropic` feature)",
            _ => "",
        };
        let at = report.locate("model.provider");
        let code = if component == "executor" { "unregistered-executor" } else { "unregistered-processor" };
        report.add(
            Diagnostic::error(
                at,
                format!(
                    "no {component} is registered for the provider `{provider}`{hint} (register one with \
                     `#[prompty::{component}(\"{provider}\")]` or `prompty::register_{component}`){feature}"
                ),
            )
            .with_code(code),
        );
        // The processor usually comes with the executor: one message is enough.
        break;
    }
}

/// Whether each declared tool has something to run it.
fn tools(agent: &Agent, report: &mut Report) {
    use crate::tools::kinds::is_custom_handler;
    for (i, tool) in agent.tools.iter().flatten().enumerate() {
        if get_tool(&tool.name).is_some() || is_custom_handler(tool.kind.as_str()) {
            continue;
        }
        let at = report.locate(&format!("tools[{i}].name"));
        let name = &tool.name;
        match &tool.kind {
            ToolKind::Function(_) => report.add(Diagnostic::warning(
                at,
                format!(
                    "no function is registered under `{name}`: annotate a fn with `#[prompty::tool]`, call \
                     `prompty::register_tool(\"{name}\", ...)`, or hand one to the call in `TurnOptions`"
                ),
            )
            .with_code("unregistered-function")),
            ToolKind::Mcp(_) if !cfg!(feature = "mcp") => report.add(Diagnostic::error(
                at,
                format!("the MCP tool `{name}` needs prompty's `mcp` feature (or a handler registered for `mcp`)"),
            )
            .with_code("missing-feature")),
            #[cfg(all(feature = "mcp", not(feature = "mcp-http")))]
            ToolKind::Mcp(m) => {
                if let Some(url) = crate::mcp::declared_over_http(m, agent) {
                    let at = report.locate(&format!("tools[{i}].connection"));
                    report.add(
                        Diagnostic::error(
                            at,
                            format!("the MCP tool `{name}`: {}", crate::mcp::http_needs_feature(&url)),
                        )
                        .with_code("missing-feature"),
                    );
                }
            }
            ToolKind::OpenApi(_) if !cfg!(feature = "openapi") => report.add(Diagnostic::error(
                at,
                format!("the OpenAPI tool `{name}` needs prompty's `openapi` feature (or a handler registered for `openapi`)"),
            )
            .with_code("missing-feature")),
            ToolKind::Custom(custom) if !is_custom_handler("*") => {
                let kind = custom.kind.as_str();
                report.add(Diagnostic::warning(
                    at,
                    format!(
                        "no handler is registered for tools of kind `{kind}`: register one with \
                         `prompty::register_tool_handler(\"{kind}\", ...)`, or register `{name}` with `prompty::register_tool`"
                    ),
                )
                .with_code("unregistered-tool-handler"));
            }
            _ => {}
        }
    }
}
