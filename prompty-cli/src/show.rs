//! The commands that only show something: `render`, `prepare` (offline), `tools`, `trace`,
//! `models`.

use crate::call;
use crate::exit::{CliError, CliResult, Exit};
use crate::inputs;
use crate::{ModelsArgs, PromptArgs, RenderArgs, ToolsArgs, TraceArgs};
use prompty::catalog::ToolCatalog;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The inputs of `render` and `prepare`: the `--inputs` object, then the `--input` pairs.
async fn load_with_inputs(args: &PromptArgs) -> CliResult<(prompty::Agent, Value)> {
    let agent = call::load(&args.file, None).await?;
    let all = inputs::one_call(args.inputs.as_deref(), &args.input, &agent, args.extra.allow_extra_inputs)?;
    Ok((agent, Value::Object(all)))
}

/// `prompty render`: the template rendered with the inputs, as text (no model call); with
/// `--segments`, which text came from which input.
pub async fn render(args: &RenderArgs) -> CliResult {
    let (agent, inputs) = load_with_inputs(&args.prompt).await?;
    let inputs = Value::Object(inputs::validate(&agent, &inputs)?);
    let text = if args.segments {
        let segments = prompty::render_segments(&agent, &inputs)?;
        if args.json {
            format!("{}\n", serde_json::to_string_pretty(&segments).unwrap_or_default())
        } else {
            let colours = crate::ui::colours_on_stdout();
            let (text, legend) = show_segments(&segments, colours);
            if let Some(legend) = legend {
                crate::ui::info(legend);
            }
            text
        }
    } else {
        prompty::render_async(&agent, &inputs).await?
    };
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    crate::ui::out(&format!("{text}{newline}")).map_err(call::write_error)?;
    Ok(Exit::Ok)
}

/// The colours of the inputs, in the order they first appear (then again from the first).
const PALETTE: [&str; 6] = ["36", "35", "33", "32", "34", "31"];

/// The rendered text with each value shown: in its input's colour (bold when strict) with a legend
/// of the colours, or between `⟦input:…⟧` markers (`⟦:…⟧` when the value has no single input).
fn show_segments(segments: &[prompty::RenderSegment], colours: bool) -> (String, Option<String>) {
    let mut out = String::new();
    let mut sources: Vec<Option<&str>> = Vec::new();
    for s in segments {
        if s.kind == prompty::SegmentKind::Literal {
            out.push_str(&s.text);
            continue;
        }
        let source = s.source.as_deref();
        if !colours {
            let _ = write!(out, "⟦{}:{}⟧", source.unwrap_or(""), s.text);
            continue;
        }
        let i = sources.iter().position(|x| *x == source).unwrap_or_else(|| {
            sources.push(source);
            sources.len() - 1
        });
        let bold = if s.strict { "1;" } else { "" };
        // Colour each line by itself, so a pager or a terminal that resets at line ends keeps it.
        for (n, line) in s.text.split('\n').enumerate() {
            if n > 0 {
                out.push('\n');
            }
            if !line.is_empty() {
                let _ = write!(out, "\x1b[{bold}{}m{line}\x1b[0m", PALETTE[i % PALETTE.len()]);
            }
        }
    }
    let legend = (colours && !sources.is_empty()).then(|| {
        let names: Vec<String> = sources
            .iter()
            .enumerate()
            .map(|(i, s)| format!("\x1b[{}m{}\x1b[0m", PALETTE[i % PALETTE.len()], s.unwrap_or("(expression)")))
            .collect();
        format!("values from: {}", names.join("  "))
    });
    (out, legend)
}

/// `prompty prepare`: the messages the model would receive, as a JSON array (no model call).
pub async fn prepare(args: &PromptArgs) -> CliResult {
    let (agent, inputs) = load_with_inputs(args).await?;
    let (_, messages) = crate::run::prepare(&agent, &inputs).await?;
    let text = serde_json::to_string_pretty(&messages).unwrap_or_default();
    crate::ui::out(&format!("{text}\n")).map_err(call::write_error)?;
    Ok(Exit::Ok)
}

/// `prompty tools`: the function definitions the model would see, as a JSON array, each with the
/// declaration it comes from (`tool`, `kind`) and, for MCP and OpenAPI tools, its `namespace` and
/// name there (`remoteName`). Remote lists are loaded (the MCP server is started, the OpenAPI
/// document read).
pub async fn tools(args: &ToolsArgs) -> CliResult {
    let agent = call::load(&args.file, None).await?;
    let mut out = Vec::new();
    let mut offers_nothing = false;
    for tool in agent.tools.as_deref().unwrap_or_default() {
        let projector = prompty::get_tool_projector(tool.kind.as_str())?;
        let definitions = {
            let agent = agent.clone();
            let tool = tool.clone();
            // Remote lists are loaded with blocking calls: off the async workers.
            tokio::task::spawn_blocking(move || projector(&tool, &agent))
                .await
                .map_err(|e| CliError::provider(format!("listing the tools failed: {e}")))??
        };
        if definitions.is_empty() && matches!(tool.kind, prompty::ToolKind::Mcp(_) | prompty::ToolKind::OpenApi(_)) {
            offers_nothing = true;
        }
        for d in definitions {
            let mut entry = json!({
                "name": d.name,
                "description": d.description,
                "parameters": d.parameters,
                "strict": d.strict,
                "tool": tool.name,
                "kind": tool.kind.as_str(),
            });
            if let Some((namespace, remote)) = ToolCatalog::global().decode(&d.name) {
                entry["namespace"] = json!(namespace);
                entry["remoteName"] = json!(remote);
            }
            out.push(entry);
        }
    }
    if offers_nothing {
        // Why a declaration offers nothing: what going online finds (its server or document is
        // unavailable, or its lists name tools the server does not offer).
        let mut report = prompty::check(&agent);
        prompty::check_online_async(&agent, &mut report).await;
        for d in &report.diagnostics {
            if matches!(d.code, "remote-tools-unavailable" | "unoffered-tool" | "no-remote-tools") {
                crate::ui::info(format!("warning: {d}"));
            }
        }
    }
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    crate::ui::out(&format!("{text}\n")).map_err(call::write_error)?;
    Ok(Exit::Ok)
}

/// The largest `.tracy` file read, in bytes.
pub const MAX_TRACE_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// `prompty trace`: the span tree of a `.tracy` file, one span per line, with its duration and
/// the token usage summed into it.
pub fn trace(args: &TraceArgs) -> CliResult {
    let path = &args.file;
    let size = std::fs::metadata(path).map_err(|e| CliError::prompt(format!("{}: {e}", path.display())))?.len();
    if size > MAX_TRACE_FILE_BYTES {
        return Err(CliError::prompt(format!("{}: larger than {MAX_TRACE_FILE_BYTES} bytes", path.display())));
    }
    let text = std::fs::read_to_string(path).map_err(|e| CliError::prompt(format!("{}: {e}", path.display())))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        CliError::prompt(format!("{}:{}:{}: not a .tracy file: {e}", path.display(), e.line(), e.column()))
    })?;
    let Some(root) = doc.get("trace").filter(|t| t.is_object()) else {
        return Err(CliError::prompt(format!("{}: not a .tracy file: no `trace` object", path.display())));
    };
    let mut out = String::new();
    if let Some(runtime) = doc.get("runtime").and_then(Value::as_str) {
        let version = doc.get("version").and_then(Value::as_str).unwrap_or("?");
        let _ = writeln!(out, "{} (written by prompty {runtime} {version})", path.display());
    }
    tree(root, "", "", &mut out, 0);
    crate::ui::out(&out).map_err(call::write_error)?;
    Ok(Exit::Ok)
}

/// How deep `trace` prints the tree.
const MAX_TRACE_DEPTH: usize = 64;

/// One frame and its children, drawn with box characters.
fn tree(frame: &Value, first: &str, rest: &str, out: &mut String, depth: usize) {
    let name = frame.get("name").and_then(Value::as_str).unwrap_or("?");
    let duration = frame.pointer("/__time/duration").and_then(Value::as_u64);
    let _ = write!(out, "{first}{name}");
    match duration {
        Some(ms) => {
            let _ = write!(out, "  {ms} ms");
        }
        None => out.push_str("  ? ms"),
    }
    if let Some(usage) = frame.get("__usage").and_then(Value::as_object).filter(|u| !u.is_empty()) {
        let parts: Vec<String> = usage.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(out, "  [usage: {}]", parts.join(", "));
    }
    out.push('\n');
    let children = frame.get("__frames").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    if depth >= MAX_TRACE_DEPTH && !children.is_empty() {
        let _ = writeln!(out, "{rest}└─ … {} more levels not shown", children.len());
        return;
    }
    for (i, child) in children.iter().enumerate() {
        let last = i + 1 == children.len();
        let (branch, indent) = if last { ("└─ ", "   ") } else { ("├─ ", "│  ") };
        tree(child, &format!("{rest}{branch}"), &format!("{rest}{indent}"), out, depth + 1);
    }
    if let Some(dropped) = frame.get("__dropped_frames").and_then(Value::as_u64) {
        let _ = writeln!(out, "{rest}└─ … {dropped} spans not recorded");
    }
}

/// `prompty models`: what the provider's endpoint lists (for `local`: the aliases and the
/// cache); `prompty models pull <alias>`: the download of a local model.
pub async fn models(args: &ModelsArgs) -> CliResult {
    if let Some(crate::ModelsAction::Pull(pull)) = &args.action {
        let path = prompty::providers::local::pull(&pull.alias).await?;
        crate::ui::out(&format!("{}\n", path.display())).map_err(call::write_error)?;
        return Ok(Exit::Ok);
    }
    let (provider, connection) = match &args.prompt {
        Some(file) => {
            let agent = call::load(file, None).await?;
            let model = agent.model.unwrap_or_default();
            let provider = args.provider.clone().or(model.provider).unwrap_or_else(|| "openai".to_owned());
            (provider, model.connection)
        }
        None => (args.provider.clone().unwrap_or_else(|| "openai".to_owned()), None),
    };
    // A connection that cannot be resolved is the prompt's fault (3), the request failing the
    // provider's (4): as for every command, by the error's variant.
    let models = prompty::list_models(&provider, connection.as_ref()).await?;
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&models).unwrap_or_default())
    } else {
        let mut text = String::new();
        for m in &models {
            let mut line = m.id.clone();
            if let Some(owner) = &m.owned_by {
                let _ = write!(line, "  owned by {owner}");
            }
            if let Some(window) = m.context_window {
                let _ = write!(line, "  context {window}");
            }
            if provider == "local" {
                local_line(&mut line, m);
            }
            let _ = writeln!(text, "{line}");
        }
        text
    };
    crate::ui::out(&text).map_err(call::write_error)?;
    Ok(Exit::Ok)
}

/// What a model of the local provider adds to its line: downloaded (size, path) or how to get it.
fn local_line(line: &mut String, m: &prompty::providers::discovery::ModelInfo) {
    let extra = m.additional_properties.as_ref();
    let field = |k: &str| extra.and_then(|e| e.get(k));
    let path = field("path").and_then(Value::as_str).unwrap_or_default();
    if field("downloaded").and_then(Value::as_bool) == Some(true) {
        let size = field("size").and_then(Value::as_u64).unwrap_or(0);
        let _ = write!(line, "  downloaded  {:.1} MB  {path}", size as f64 / 1e6);
    } else {
        let _ = write!(line, "  not downloaded (prompty models pull {})  {path}", m.id);
    }
}
