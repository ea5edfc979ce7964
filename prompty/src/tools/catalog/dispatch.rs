//! Tool calls and projection, built on the tool kinds ([`ToolKindPlugin`]) and the catalog: a
//! model's call is resolved once ([`resolve_call`]: the only decode of its wire name), the tools
//! of the MCP servers and OpenAPI documents prompts declare are loaded into the global catalog,
//! declarations are projected, and calls run: the per-call function of that name, the registered
//! function of that name, the kind of the declared tool (then `*`).

use super::ToolCatalog;
use crate::tools::args::parse_arguments;
use crate::tools::entry::CatalogEntry;
use crate::tools::function::ToolContext;
use crate::tools::function::{get_tool, ToolRegistration};
use crate::tools::handlers::{inject_bindings, undeclared, ToolHandler};
use crate::tools::kind::{ResolvedCall, ToolKindPlugin};
use crate::tools::kinds::{self as kind, get_tool_kind, kind_of, unknown_projector};
use crate::tools::projection::ToolProjector;
use crate::tools::source::ToolLoader;
use crate::tools::source::ToolSource;
use crate::{properties_schema, Agent, BoxFuture, Error, FunctionDefinition, Result, Tool, ToolCall, ToolKind};
use futures_util::FutureExt;
use serde_json::{json, Value};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

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
/// `mcp` / `openapi` declaration whose namespace the wire name decodes to (the only decode of the
/// call's wire name, through [`ToolCatalog::global`]) and that lets the model use that tool.
///
/// ```
/// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [
///     {"name": "files", "kind": "mcp", "serverName": "fs", "allowedTools": ["read"]}]}))?;
/// let call = prompty::ToolCall::new("1", "fs__read", "{}");
/// let resolved = prompty::catalog::resolve_call(&agent, &call);
/// assert_eq!((resolved.namespace(), resolved.name()), (Some("fs"), "read"));
/// assert_eq!(resolved.tool().map(|t| t.name.as_str()), Some("files"));
/// let write = prompty::ToolCall::new("2", "fs__write", "{}");
/// assert!(prompty::catalog::resolve_call(&agent, &write).withheld().is_some());
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
    let in_namespace = || remote.iter().filter(|(t, k)| k.namespace(t) == Some(ns.as_str()));
    if let Some((tool, k)) = in_namespace().find(|(t, k)| k.withheld(t, &name).is_none()) {
        let kind = Some(Arc::clone(k));
        return (Some(*tool), kind, Some((ns, name)), None);
    }
    let withheld = in_namespace().find_map(|(t, k)| k.withheld(t, &name));
    (None, None, Some((ns, name)), withheld)
}

/// The entries of a declaration's source, loading it into the global catalog when it is not
/// loaded yet.
async fn listed(src: ToolSource) -> Result<Vec<Arc<CatalogEntry>>> {
    let catalog = ToolCatalog::global();
    if !catalog.has_source(&src.id) {
        catalog.ensure_source_async(src.id.clone(), src.loader, src.config).await?;
    }
    Ok(catalog.source_entries(&src.id))
}

/// Loads (once) the tool lists of the MCP servers and OpenAPI documents the agent declares into
/// the global catalog, and reloads those whose server said its list changed. The agent loop calls
/// it before every model request.
pub(crate) async fn load_remote_tools(agent: &Agent) -> Result<()> {
    let catalog = ToolCatalog::global();
    let mut any = false;
    for tool in agent.tools.as_deref().unwrap_or_default() {
        let Some(src) = kind_of(tool.kind.as_str()).source(tool, agent) else { continue };
        any = true;
        let src = src?;
        if !catalog.has_source(&src.id) {
            catalog.ensure_source_async(src.id, src.loader, src.config).await?;
        }
    }
    if any {
        catalog.refresh_stale_async().await?;
    }
    Ok(())
}

/// The function definitions one declaration of kind `kind` offers: the host's projector for that
/// kind, else the kind's own projection (with the entries its source lists, loaded when the agent
/// loop has not loaded them yet).
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
            if catalog.has_source(&src.id) {
                catalog.source_entries(&src.id)
            } else {
                crate::blocking::block_on(listed(src))??
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
            let entries = listed(src?).await?;
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
