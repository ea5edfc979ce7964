//! Tool calls and projection, built on the tool kinds ([`ToolKindPlugin`]) and the catalog: a
//! model's call is resolved once ([`resolve_call`]: the only decode of its wire name), the tools
//! of the MCP servers and OpenAPI documents prompts declare are loaded into the global catalog,
//! declarations are projected, and calls run: the per-call function of that name, the registered
//! function of that name, the kind of the declared tool (then `*`).

use super::ToolCatalog;
use crate::tools::args::parse_arguments;
use crate::tools::entry::fingerprint;
use crate::tools::entry::CatalogEntry;
use crate::tools::function::ToolContext;
use crate::tools::function::{get_tool, ToolRegistration};
use crate::tools::handlers::{inject_bindings, undeclared, ToolHandler};
use crate::tools::kind::{ResolvedCall, ToolKindPlugin};
use crate::tools::kinds::{self as kind, get_tool_kind, kind_of, unknown_projector};
use crate::tools::projection::ToolProjector;
use crate::tools::source::{unoffered_names, ToolLoader, ToolSource};
use crate::{properties_schema, Agent, BoxFuture, Error, FunctionDefinition, Result, Tool, ToolCall, ToolKind};
use futures_util::FutureExt;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, LazyLock, Mutex};

/// An entry for every `#[prompty::tool]` fn linked into the program.
pub(crate) fn registered_functions() -> Vec<CatalogEntry> {
    inventory::iter::<ToolRegistration>
        .into_iter()
        .map(|r| {
            let function = (r.make)();
            let definition = function.definition();
            let parameters = match definition.as_ref().map(|d| &d.kind) {
                Some(ToolKind::Function(f)) => {
                    properties_schema(&f.parameters, false).unwrap_or_else(|_| json!({"type": "object"}))
                }
                _ => json!({"type": "object", "properties": {}}),
            };
            let mut entry = CatalogEntry::new(r.namespace, r.name, parameters)
                .with_source(format!("#[tool] fn {}::{}", r.namespace, r.name))
                .with_shared_function(function);
            entry.description = definition.and_then(|d| d.description);
            entry
        })
        .collect()
}

/// The loaders of the tool kinds compiled in.
pub(super) fn builtin_loaders() -> Vec<(&'static str, Arc<dyn ToolLoader>)> {
    vec![
        #[cfg(feature = "mcp")]
        ("mcp", Arc::new(crate::tools::mcp::kind::McpLoader::default()) as Arc<dyn ToolLoader>),
        #[cfg(feature = "openapi")]
        ("openapi", Arc::new(crate::tools::openapi::kind::OpenApiLoader) as Arc<dyn ToolLoader>),
    ]
}

/// Resolves a model's call against the agent's declarations, once: a tool of that name, else the
/// `mcp` / `openapi` declaration whose namespace ([`Tool::namespace`]: its `name`) the wire name
/// decodes to (the only decode of the call's wire name, through [`ToolCatalog::global`]) and that
/// lets the model use that tool.
///
/// A call in the spelling of earlier versions, which offered an MCP server's tools under its
/// `serverName` (`fs__read` for a declaration `files` of the server `fs`: a conversation or a
/// durable thread recorded before), still resolves to that declaration, with a `tracing`
/// warning naming the name it should use; the resolved namespace is the declaration's.
///
/// ```
/// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [
///     {"name": "files", "kind": "mcp", "serverName": "fs", "allowedTools": ["read"]}]}))?;
/// let call = prompty::ToolCall::new("1", "files__read", "{}");
/// let resolved = prompty::catalog::resolve_call(&agent, &call);
/// assert_eq!((resolved.namespace(), resolved.name()), (Some("files"), "read"));
/// assert_eq!(resolved.tool().map(|t| t.name.as_str()), Some("files"));
/// let write = prompty::ToolCall::new("2", "files__write", "{}");
/// assert!(prompty::catalog::resolve_call(&agent, &write).withheld().is_some());
/// let old = prompty::ToolCall::new("3", "fs__read", "{}"); // the server's name: accepted, with a warning
/// let resolved = prompty::catalog::resolve_call(&agent, &old);
/// assert_eq!((resolved.namespace(), resolved.tool().map(|t| t.name.as_str())), (Some("files"), Some("files")));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn resolve_call<'a>(agent: &'a Agent, call: &'a ToolCall) -> ResolvedCall<'a> {
    let (tool, kind, qualified, withheld) = resolve_name(agent, &call.name);
    ResolvedCall::new(call, tool, kind, qualified).with_withheld(withheld)
}

/// The declaration the called name `name` runs (see [`resolve_call`]).
pub(crate) fn declared_tool<'a>(agent: &'a Agent, name: &str) -> Option<&'a Tool> {
    resolve_name(agent, name).0
}

type Resolution<'a> = (Option<&'a Tool>, Option<Arc<dyn ToolKindPlugin>>, Option<(String, String)>, Option<String>);

fn resolve_name<'a>(agent: &'a Agent, wire: &str) -> Resolution<'a> {
    let tools = agent.tools.as_deref().unwrap_or_default();
    if let Some(tool) = tools.iter().find(|t| t.name == wire) {
        return (Some(tool), Some(kind_of(tool.kind.as_str())), None, None);
    }
    let remote: Vec<(&Tool, Arc<dyn ToolKindPlugin>)> =
        tools.iter().map(|t| (t, kind_of(t.kind.as_str()))).filter(|(t, k)| k.namespace(t).is_some()).collect();
    if remote.is_empty() {
        return (None, None, None, None);
    }
    let Some((ns, name)) = ToolCatalog::global().decode(wire) else { return (None, None, None, None) };
    let mut in_namespace: Vec<&(&Tool, Arc<dyn ToolKindPlugin>)> =
        remote.iter().filter(|(t, k)| k.namespace(t) == Some(ns.as_str())).collect();
    if in_namespace.is_empty() {
        in_namespace = remote.iter().filter(|(t, _)| old_mcp_namespace(t) == Some(ns.as_str())).collect();
        if let Some((tool, _)) = in_namespace.first() {
            let now = crate::tools::wire::wire_name(&tool.name, &name);
            tracing::warn!(
                tool = %tool.name,
                "the model called `{wire}`, the name earlier versions gave the tool `{name}` of the MCP server \
                 `{ns}`: it runs the declaration `{}`, whose tools are now offered as `{now}` (the namespace of \
                 a remote declaration is its `name`)",
                tool.name
            );
        }
    }
    if let Some((tool, k)) = in_namespace.iter().find(|(t, k)| k.withheld(t, &name).is_none()) {
        let kind = Some(Arc::clone(k));
        let ns = k.namespace(tool).map_or(ns, str::to_owned);
        return (Some(*tool), kind, Some((ns, name)), None);
    }
    let withheld = in_namespace.iter().find_map(|(t, k)| k.withheld(t, &name));
    (None, None, Some((ns, name)), withheld)
}

/// The namespace earlier versions offered an MCP declaration's tools under, its `serverName`,
/// when it is not its namespace now (the declaration's `name`).
fn old_mcp_namespace(tool: &Tool) -> Option<&str> {
    match &tool.kind {
        ToolKind::Mcp(m) if m.server_name != tool.name && !m.server_name.is_empty() => Some(m.server_name.as_str()),
        _ => None,
    }
}

/// A warning about a declaration's source, for the turn's event stream: it failed and its tools
/// are left out of the request, or the declaration names tools it does not offer. (Already
/// written to `tracing` when made.)
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SourceWarning {
    /// The declaration's `name`.
    pub(crate) tool: String,
    /// Whether its source failed (its tools are left out): an error event, not a warning.
    pub(crate) failed: bool,
    /// What happened, and what to do (no secret).
    pub(crate) message: String,
}

/// What became of one declaration's source for one model request.
#[derive(Debug)]
pub(crate) enum Loaded {
    /// The declaration's kind lists no tools from a source (`function`, `prompty`, ...).
    NoSource,
    /// The entries its source lists (loaded now or before).
    Listed(Vec<Arc<CatalogEntry>>),
    /// Its source failed and it is not `required`: its tools are left out of the request.
    LeftOut,
}

/// How many (declaration, tool list) pairs [`unoffered_once`] remembers having warned about;
/// when full, it forgets them all (each may then be warned about once more).
const WARNED_MAX: usize = 4096;

/// The declaration as its warnings and errors name it: `the tool 'files' (kind: mcp, serverName:
/// fs)`.
fn described(tool: &Tool) -> String {
    match &tool.kind {
        ToolKind::Mcp(m) => format!("the tool '{}' (kind: mcp, serverName: {})", tool.name, m.server_name),
        other => format!("the tool '{}' (kind: {})", tool.name, other.as_str()),
    }
}

fn is_required(tool: &Tool) -> bool {
    match &tool.kind {
        ToolKind::Mcp(m) => m.required,
        ToolKind::OpenApi(o) => o.required,
        _ => false,
    }
}

/// The source's entries: loaded into the global catalog when it has not been, loaded again when
/// its loader says it is stale.
pub(crate) async fn fetch(kind: &str, src: ToolSource) -> Result<Vec<Arc<CatalogEntry>>> {
    let catalog = ToolCatalog::global();
    if let Some(entries) = catalog.fresh_source_entries(&src.id) {
        return Ok(entries);
    }
    if catalog.has_source(&src.id) {
        catalog.refresh_stale_source_async(&src.id).await?;
    }
    if !catalog.has_source(&src.id) {
        catalog.ensure_source_async(kind, src.id.clone(), src.loader, src.config).await?;
    }
    Ok(catalog.source_entries(&src.id))
}

/// The one rule for a declaration whose source has been (or failed to be) listed, wherever tools
/// are projected (the agent loop, `project_tools`, the request of `run`/`invoke`):
///
/// - listed: its entries; the names it lists in `allowedTools` / `approvalMode` that the source
///   does not offer are warned about (once per declaration and tool list);
/// - failed on a setting of the prompt that cannot work ([`Error::Config`], such as a
///   specification URL that is not a URL): that error, `required` or not;
/// - failed, `required: true`: the error, naming the declaration (the turn fails);
/// - failed otherwise: left out, with a warning saying why (an error event in the agent loop).
///
/// Every warning goes to `tracing` (target `prompty::tools`) and into `warnings`.
fn settle(
    tool: &Tool,
    source_id: &str,
    listed: Result<Vec<Arc<CatalogEntry>>>,
    warnings: &mut Vec<SourceWarning>,
) -> Result<Loaded> {
    match listed {
        Ok(entries) => {
            for message in unoffered_once(tool, source_id, &entries) {
                tracing::warn!(target: "prompty::tools", tool = %tool.name, kind = tool.kind.as_str(), "{message}");
                warnings.push(SourceWarning { tool: tool.name.clone(), failed: false, message });
            }
            Ok(Loaded::Listed(entries))
        }
        // A setting of the prompt that cannot work (a specification URL that is not a URL): a
        // mistake to fix, not a server that is down, so an error whether or not `required`.
        Err(e @ Error::Config { .. }) => Err(e),
        Err(e) if is_required(tool) => Err(Error::Execution {
            message: format!(
                "{} is required (`required: true`) and its tools could not be loaded: {e}",
                described(tool)
            ),
        }),
        Err(e) => {
            let message = format!(
                "{} is left out of this request: {e}; the turn goes on without its tools (declare `required: true` \
                 to fail the turn instead)",
                described(tool)
            );
            tracing::warn!(target: "prompty::tools", tool = %tool.name, kind = tool.kind.as_str(), "{message}");
            warnings.push(SourceWarning { tool: tool.name.clone(), failed: true, message });
            Ok(Loaded::LeftOut)
        }
    }
}

/// The messages of [`unoffered_names`] not given before for this declaration and tool list.
fn unoffered_once(tool: &Tool, source_id: &str, entries: &[Arc<CatalogEntry>]) -> Vec<String> {
    static WARNED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Mutex::default);
    let unoffered = unoffered_names(tool, entries);
    if unoffered.is_empty() {
        return Vec::new();
    }
    let offered: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let declaration = serde_json::to_value(tool).unwrap_or(Value::Null);
    let key = fingerprint(&json!({"source": source_id, "tool": declaration, "offered": offered}));
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned.contains(&key) {
        return Vec::new();
    }
    if warned.len() >= WARNED_MAX {
        warned.clear();
    }
    warned.insert(key);
    unoffered.into_iter().map(|u| u.message).collect()
}

/// Lists the source of `tool` (when its kind has one) and applies [`settle`].
pub(crate) async fn load_declared(tool: &Tool, agent: &Agent, warnings: &mut Vec<SourceWarning>) -> Result<Loaded> {
    // A declaration that cannot be made into a source (a bad `handshakeTimeout`, a connection
    // that reaches no server) is a mistake of the prompt: an error, `required` or not.
    let Some(src) = kind_of(tool.kind.as_str()).source(tool, agent) else { return Ok(Loaded::NoSource) };
    let src = src?;
    let id = src.id.clone();
    let listed = fetch(tool.kind.as_str(), src).await;
    settle(tool, &id, listed, warnings)
}

/// Lists the tools of the MCP servers and OpenAPI documents the agent declares into the global
/// catalog (once, and again when a server said its list changed), except those of the
/// declarations named in `skip`. The agent loop calls it before every model request (with the
/// declarations left out earlier in the turn as `skip`, so a failing server is tried once per
/// turn): it returns the declarations left out now and the warnings to report.
pub(crate) async fn load_remote_tools(agent: &Agent, skip: &[String]) -> Result<(Vec<String>, Vec<SourceWarning>)> {
    let mut left_out = Vec::new();
    let mut warnings = Vec::new();
    for tool in agent.tools.as_deref().unwrap_or_default() {
        if skip.contains(&tool.name) {
            continue;
        }
        if let Loaded::LeftOut = load_declared(tool, agent, &mut warnings).await? {
            left_out.push(tool.name.clone());
        }
    }
    Ok((left_out, warnings))
}

/// The function definitions one declaration of kind `kind` offers: the host's projector for that
/// kind, else the kind's own projection (with the entries its source lists, loaded when the agent
/// loop has not loaded them yet; a source that fails leaves the declaration out, see [`settle`]).
fn project_one(kind: &str, tool: &Tool, agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    if let Some(projector) = kind::projector_override(kind) {
        return projector(tool, agent);
    }
    let Some(plugin) = get_tool_kind(kind).filter(|_| kind::has_projection(kind)) else {
        return Err(unknown_projector(kind));
    };
    let entries = match plugin.source(tool, agent) {
        None => Vec::new(),
        Some(src) => {
            let src = src?;
            let catalog = ToolCatalog::global();
            let mut warnings = Vec::new();
            let loaded = match catalog.fresh_source_entries(&src.id) {
                Some(entries) => settle(tool, &src.id, Ok(entries), &mut warnings)?,
                None => {
                    let id = src.id.clone();
                    let listed = crate::blocking::block_on(fetch(kind, src))?;
                    settle(tool, &id, listed, &mut warnings)?
                }
            };
            match loaded {
                Loaded::Listed(entries) => entries,
                Loaded::LeftOut | Loaded::NoSource => return Ok(Vec::new()),
            }
        }
    };
    plugin.project(tool, agent, &entries)
}

/// The function definitions of every tool the agent declares, in declaration order.
///
/// ```
/// let agent = prompty::load_str("---\ntools:\n  - name: get_weather\n    kind: function\n    parameters:\n      city: {kind: string, required: true}\n      unit: {kind: string}\n    bindings: {unit: preferred_unit}\n---\n", ".", "t.prompty")?;
/// let defs = prompty::project_tools(&agent)?;
/// assert_eq!(defs[0].parameters, serde_json::json!({
///     "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn project_tools(agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    let mut out = Vec::new();
    for tool in agent.tools.as_deref().unwrap_or_default() {
        out.extend(project_one(tool.kind.as_str(), tool, agent)?);
    }
    Ok(out)
}

/// The function definitions of the declared tools whose kind has a projection (`function`,
/// `prompty`, `mcp` and `openapi` with their features, or one the host registered); tools of other
/// kinds are left out, as spec §7.5 says, instead of failing the request.
fn projectable_tools(agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    let mut out = Vec::new();
    for tool in agent.tools.as_deref().unwrap_or_default() {
        if let Ok(projector) = get_tool_projector(tool.kind.as_str()) {
            out.extend(projector(tool, agent)?);
        }
    }
    Ok(out)
}

inventory::submit!(crate::registry::FunctionProjection { every: project_tools, projectable: projectable_tools });

/// The projection of a tool kind, as a function (an adapter onto the kind registry).
///
/// ```
/// let project: std::sync::Arc<prompty::ToolProjector> = prompty::get_tool_projector("function")?;
/// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [{"name": "now", "kind": "function"}]}))?;
/// let defs = project(&agent.tools.as_ref().unwrap()[0], &agent)?;
/// assert_eq!(defs[0].name, "now");
/// assert!(prompty::get_tool_projector("mcp").is_ok());
/// assert!(prompty::get_tool_projector("calendar_service").is_err());
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn get_tool_projector(kind: &str) -> Result<Arc<ToolProjector>> {
    if !kind::has_projection(kind) {
        return Err(unknown_projector(kind));
    }
    let kind = kind.to_owned();
    Ok(Arc::new(move |tool: &Tool, agent: &Agent| project_one(&kind, tool, agent)))
}

/// The execution of a tool kind, as a [`ToolHandler`] (an adapter onto the kind registry).
///
/// ```
/// assert!(prompty::get_tool_handler("prompty").is_ok());
/// assert!(prompty::get_tool_handler("function").is_ok());
/// assert!(prompty::get_tool_handler("no_such_kind").is_err());
/// ```
pub fn get_tool_handler(kind: &str) -> Result<Arc<dyn ToolHandler>> {
    if !kind::has_execution(kind) {
        return Err(Error::UnknownComponent {
            component: "tool handler",
            key: crate::Secret::scrub(kind).into_owned(),
            known: kind::known_executors().join(", "),
            register: "prompty::register_tool_handler(kind, ...)",
            hint: String::new(),
        });
    }
    Ok(Arc::new(KindHandler(kind.to_owned())))
}

/// A kind of the registry seen as a [`ToolHandler`]: resolves the called name in the declaration
/// and runs the call as the kind does.
struct KindHandler(String);

impl ToolHandler for KindHandler {
    fn execute<'a>(&'a self, tool: &'a Tool, args: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let wire = if ctx.function.is_empty() { tool.name.clone() } else { ctx.function.to_owned() };
            let call = ToolCall::new("", wire, "");
            let plugin = kind_of(&self.0);
            let qualified = plugin.namespace(tool).and_then(|_| ToolCatalog::global().decode(&call.name));
            let resolved = ResolvedCall::new(&call, Some(tool), Some(Arc::clone(&plugin)), qualified);
            run_kind(plugin.as_ref(), tool, &resolved, args, ctx.with_function(&call.name)).await
        })
    }
}

/// Runs a call of a declared tool as its kind does: with the listed entry it names, for kinds
/// with a source (among overloads, the one the arguments fit).
async fn run_kind<'a>(
    plugin: &'a dyn ToolKindPlugin,
    tool: &'a Tool,
    call: &'a ResolvedCall<'a>,
    args: Value,
    ctx: ToolContext<'a>,
) -> Result<Value> {
    let entry = match plugin.source(tool, ctx.agent) {
        None => None,
        Some(src) => {
            let entries = fetch(tool.kind.as_str(), src?).await?;
            let candidates: Vec<Arc<CatalogEntry>> = entries
                .into_iter()
                .filter(|e| e.name == call.name() && plugin.withheld(tool, &e.name).is_none())
                .collect();
            super::resolve::pick(&ToolCall::new("", call.wire_name(), args.to_string()), &candidates)
        }
    };
    plugin.execute(call, entry, args, ctx).await
}

/// Runs a tool call of the model: parses its arguments (forgiving fences, surrounding text and
/// trailing commas), injects bound parameters, then runs the first of: the per-call function of
/// that name, the registered function of that name, the kind of the declared tool (then `*`).
///
/// Only the tools the agent declares and the per-call tools run: a call of any other tool is
/// refused, registered or not ([`Error::ToolNotDeclared`] for a registered function,
/// [`Error::NoToolHandler`] otherwise). A handler that panics is a [`Error::Tool`] error
/// (`panicked: <message>`), never a panic of the caller.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use prompty::{Agent, ToolCall, ToolContext, Tools};
/// let agent = Agent::from_value(serde_json::json!({"tools": [
///     {"name": "add", "kind": "function", "parameters": {"a": {"kind": "integer"}, "b": {"kind": "integer"}}}]}))?;
/// let tools = Tools::new().with("add", prompty::tool_fn_sync(|a| Ok(serde_json::json!(a["a"].as_i64().unwrap_or(0) + a["b"].as_i64().unwrap_or(0)))));
/// let inputs = serde_json::Map::new();
/// let out = prompty::execute_tool_async(&ToolCall::new("1", "add", r#"{"a": 2, "b": 3}"#), ToolContext::new(&agent, &inputs, &tools)).await?;
/// assert_eq!(out, serde_json::json!(5));
/// # Ok::<(), prompty::Error>(()) }).unwrap();
/// ```
pub async fn execute_tool_async(call: &ToolCall, ctx: ToolContext<'_>) -> Result<Value> {
    let resolved = resolve_call(ctx.agent, call);
    if resolved.tool().is_none() && ctx.tools.get(&call.name).is_none() {
        if let Some(reason) = resolved.withheld() {
            return Err(Error::Tool { name: call.name.clone(), message: reason.to_owned() });
        }
        return Err(undeclared(&call.name));
    }
    let mut args =
        parse_arguments(&call.arguments).map_err(|message| Error::Tool { name: call.name.clone(), message })?;
    if let Some(tool) = resolved.tool() {
        inject_bindings(tool, &mut args, ctx.inputs);
        if let Some(reason) = resolved.needs_approval() {
            return Err(Error::Tool {
                name: call.name.clone(),
                message: format!("{reason}; outside the agent loop there is no approver, so it was not run"),
            });
        }
    }
    run_tool(&resolved, args, ctx.with_function(&call.name)).await
}

/// Sync form of [`execute_tool_async`].
///
/// ```
/// use prompty::{Agent, ToolCall, ToolContext, Tools};
/// let agent = Agent::default();
/// let (inputs, tools) = (serde_json::Map::new(), Tools::new());
/// let err = prompty::execute_tool(&ToolCall::new("1", "nope", "{}"), ToolContext::new(&agent, &inputs, &tools)).unwrap_err();
/// assert!(err.to_string().starts_with("No handler registered for tool: nope (kind: unknown)"));
/// ```
pub fn execute_tool(call: &ToolCall, ctx: ToolContext<'_>) -> Result<Value> {
    crate::blocking::block_on(execute_tool_async(call, ctx))?
}

/// Runs a resolved call with arguments already parsed (and bindings injected): the per-call
/// function of that name, the registered function of that name, the kind of the declared tool
/// (then `*`). A kind that panics is the error `Tool '<name>' failed: panicked: <message>`.
pub(crate) async fn run_tool(call: &ResolvedCall<'_>, args: Value, ctx: ToolContext<'_>) -> Result<Value> {
    match AssertUnwindSafe(dispatch(call, args, ctx)).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(Error::Tool {
            name: call.wire_name().to_owned(),
            message: format!("panicked: {}", crate::support::panic_text(payload.as_ref())),
        }),
    }
}

async fn dispatch(call: &ResolvedCall<'_>, args: Value, ctx: ToolContext<'_>) -> Result<Value> {
    let name = call.wire_name();
    if let Some(f) = ctx.tools.get(name) {
        return f.call_in(args, ctx).await;
    }
    let Some(tool) = call.tool() else { return Err(undeclared(name)) };
    if let Some(f) = get_tool(name) {
        return f.call_in(args, ctx).await;
    }
    let plugin = call.kind().cloned().unwrap_or_else(|| kind_of(tool.kind.as_str()));
    run_kind(plugin.as_ref(), tool, call, args, ctx).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn declared(value: Value) -> Tool {
        serde_json::from_value(value).unwrap()
    }

    /// A failed source leaves a declaration out with a warning, or fails when it is `required`;
    /// a listed one gives its entries, and its unoffered names are warned about once.
    #[test]
    fn a_failed_source_is_left_out_unless_required() {
        let failed =
            || Err(Error::Execution { message: "MCP server 'gone' could not be started: no such file".into() });
        let tool = declared(json!({"name": "settle_gone", "kind": "mcp", "serverName": "gone"}));
        let mut warnings = Vec::new();
        assert!(matches!(settle(&tool, "settle 1", failed(), &mut warnings), Ok(Loaded::LeftOut)));
        assert_eq!(
            warnings,
            [SourceWarning {
                tool: "settle_gone".into(),
                failed: true,
                message:
                    "the tool 'settle_gone' (kind: mcp, serverName: gone) is left out of this request: MCP server \
                          'gone' could not be started: no such file; the turn goes on without its tools (declare \
                          `required: true` to fail the turn instead)"
                        .into()
            }]
        );
        let required = declared(json!({"name": "settle_gone", "kind": "mcp", "serverName": "gone", "required": true}));
        let err = settle(&required, "settle 1", failed(), &mut Vec::new()).unwrap_err().to_string();
        assert!(
            err.contains(
                "the tool 'settle_gone' (kind: mcp, serverName: gone) is required (`required: true`) and its tools \
                 could not be loaded: MCP server 'gone' could not be started: no such file"
            ),
            "{err}"
        );
        let api =
            declared(json!({"name": "settle_api", "kind": "openapi", "specification": "x.json", "required": true}));
        let err = settle(&api, "settle 2", failed(), &mut Vec::new()).unwrap_err().to_string();
        assert!(err.contains("the tool 'settle_api' (kind: openapi) is required"), "{err}");

        let typo = declared(json!({"name": "settle_typo", "kind": "mcp", "serverName": "s", "allowedTools": ["ech0"]}));
        let entries = vec![Arc::new(CatalogEntry::new("s", "echo", json!({"type": "object"})))];
        let mut warnings = Vec::new();
        for _ in 0..3 {
            let loaded = settle(&typo, "settle 3", Ok(entries.clone()), &mut warnings).unwrap();
            assert!(matches!(loaded, Loaded::Listed(ref e) if e.len() == 1));
        }
        assert_eq!(warnings.len(), 1, "once per declaration and tool list: {warnings:?}");
        assert!(warnings[0].message.ends_with("(did you mean `echo`?)"), "{warnings:?}");
        // Another tool list of the same source: said again.
        let more = vec![entries[0].clone(), Arc::new(CatalogEntry::new("s", "add", json!({"type": "object"})))];
        settle(&typo, "settle 3", Ok(more), &mut warnings).unwrap();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }

    #[test]
    fn a_wire_name_finds_the_declaration_of_its_namespace_within_allowed_tools() {
        let agent = Agent::from_value(json!({"tools": [
            {"name": "files", "kind": "mcp", "serverName": "fs", "allowedTools": ["read"]},
            {"name": "api", "kind": "openapi", "specification": "x.json"}]}))
        .unwrap();
        let decl = |wire: &str| {
            let call = ToolCall::new("1", wire, "{}");
            resolve_call(&agent, &call).tool().map(|t| t.name.clone())
        };
        assert_eq!(decl("fs__read").as_deref(), Some("files"));
        assert!(decl("fs__write").is_none());
        assert!(decl("other__read").is_none());
        assert_eq!(decl("api__getPet").as_deref(), Some("api"));
        assert!(decl("read").is_none());
    }
}
