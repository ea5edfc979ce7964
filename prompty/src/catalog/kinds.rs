//! What the catalog knows of prompty's own tool kinds: `#[tool]` fns, and the loaders of the
//! `mcp` and `openapi` kinds (with their features).

use super::entry::CatalogEntry;
use super::loaders::ToolLoader;
use super::ToolCatalog;
use crate::tools::ToolRegistration;
use crate::{
    properties_schema, Agent, BoxFuture, Error, FunctionDefinition, Result, Tool, ToolCall, ToolContext, ToolHandler,
    ToolKind,
};
use serde_json::json;
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
        ("mcp", Arc::new(super::mcp_kind::McpLoader::default()) as Arc<dyn ToolLoader>),
        #[cfg(feature = "openapi")]
        ("openapi", Arc::new(super::openapi_kind::OpenApiLoader) as Arc<dyn ToolLoader>),
    ]
}

/// The namespace under which the tools of a declared `mcp` or `openapi` tool are offered: the
/// MCP `serverName`, the OpenAPI tool's `name`. `None` for the other kinds.
pub(crate) fn remote_namespace(tool: &Tool) -> Option<&str> {
    match &tool.kind {
        ToolKind::Mcp(m) => Some(m.server_name.as_str()),
        ToolKind::OpenApi(_) => Some(tool.name.as_str()),
        _ => None,
    }
}

/// Whether the MCP declaration lets the model use its server's tool `name` (`allowedTools`).
fn allowed(tool: &Tool, name: &str) -> bool {
    match &tool.kind {
        ToolKind::Mcp(m) => m.allowed_tools.as_ref().is_none_or(|list| list.iter().any(|t| t == name)),
        _ => true,
    }
}

/// The `mcp` / `openapi` declaration among `tools` that offers the tool the wire name `wire`
/// names (and allows it).
pub(crate) fn remote_declaration<'a>(tools: &'a [Tool], wire: &str) -> Option<&'a Tool> {
    if !tools.iter().any(|t| remote_namespace(t).is_some()) {
        return None;
    }
    let (ns, name) = ToolCatalog::global().decode(wire)?;
    tools.iter().find(|t| remote_namespace(t) == Some(ns.as_str()) && allowed(t, &name))
}

/// Why the model may not call `wire` although it names a tool in the namespace of one of the
/// agent's `mcp` declarations: `allowedTools` leaves it out. `None` when `wire` is in no such
/// namespace (or is allowed).
pub(crate) fn withheld(tools: &[Tool], wire: &str) -> Option<String> {
    if !tools.iter().any(|t| remote_namespace(t).is_some()) {
        return None;
    }
    let (ns, name) = ToolCatalog::global().decode(wire)?;
    let decl = tools.iter().find(|t| remote_namespace(t) == Some(ns.as_str()))?;
    if allowed(decl, &name) {
        return None;
    }
    let ToolKind::Mcp(m) = &decl.kind else { return None };
    Some(format!(
        "Tool '{wire}' is not available to this prompt: MCP server '{}' offers it only the tools [{}] (allowedTools)",
        m.server_name,
        m.allowed_tools.as_deref().unwrap_or_default().join(", ")
    ))
}

/// Why a call of `wire` (a tool of the MCP declaration `tool`) needs approval under the
/// declaration's `approvalMode`, or `None` when it does not. Absent or `never`: no approval;
/// `always`: every call; `specify`: the tools of `alwaysRequireApprovalTools`, and every tool
/// not listed in `neverRequireApprovalTools`.
pub(crate) fn needs_approval(tool: &Tool, _agent: &Agent, wire: &str) -> Option<String> {
    let ToolKind::Mcp(m) = &tool.kind else { return None };
    let mode = m.approval_mode.as_ref()?;
    let name = ToolCatalog::global().decode(wire).map(|(_, n)| n).unwrap_or_else(|| wire.to_owned());
    let listed = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| l.contains(&name));
    let needed = match mode.kind.as_str() {
        "never" => false,
        "specify" => listed(&mode.always_require_approval_tools) || !listed(&mode.never_require_approval_tools),
        // `always`, and any mode this runtime does not know: the safe reading.
        _ => true,
    };
    needed.then(|| {
        format!("MCP tool '{name}' of server '{}' needs approval (approvalMode: {})", m.server_name, mode.kind)
    })
}

/// A declared remote tool as a catalog source: its id (a hash of the declaration and the
/// prompt's folder, so no secret shows in it), its namespace, its loader and configuration.
pub(crate) struct RemoteSource {
    pub(crate) id: String,
    pub(crate) loader: Arc<dyn ToolLoader>,
    pub(crate) config: serde_json::Value,
}

/// The id of the source of a remote declaration: its kind, namespace, and a hash of what it
/// reaches (as resolved: the same server declared by two prompts is one source; two servers
/// under one name are two). The hash covers credentials, so declarations with other keys never
/// share a session, and shows none of them.
#[cfg(any(feature = "mcp", feature = "openapi"))]
pub(crate) fn source_id(kind: &str, namespace: &str, identity: &serde_json::Value) -> String {
    format!("{kind} {namespace} {}", &super::entry::fingerprint(identity)[..16])
}

/// Whether prompty's client of the tool's kind is compiled in (features `mcp`, `openapi`).
fn compiled_in(tool: &Tool) -> bool {
    (cfg!(feature = "mcp") && matches!(tool.kind, ToolKind::Mcp(_)))
        || (cfg!(feature = "openapi") && matches!(tool.kind, ToolKind::OpenApi(_)))
}

/// The catalog source of a declared `mcp` / `openapi` tool, when its kind is compiled in.
fn remote_source(tool: &Tool, agent: &Agent) -> Result<Option<RemoteSource>> {
    if remote_namespace(tool).is_none() {
        return Ok(None);
    }
    match &tool.kind {
        #[cfg(feature = "mcp")]
        ToolKind::Mcp(m) => super::mcp_kind::source(m, agent).map(Some),
        #[cfg(feature = "openapi")]
        ToolKind::OpenApi(o) => super::openapi_kind::source(tool, o, agent).map(Some),
        _ => {
            let _ = agent;
            Err(Error::NoToolHandler {
                name: tool.name.clone(),
                kind: tool.kind.as_str().to_owned(),
                hint: format!(
                    "Tools of kind '{}' need prompty's `{}` feature (or your own handler and projector: \
                     `prompty::register_tool_handler` and `prompty::register_tool_projector`).",
                    tool.kind.as_str(),
                    tool.kind.as_str()
                ),
            })
        }
    }
}

/// Loads (once) the tool lists of the MCP servers and OpenAPI documents the agent declares into
/// the global catalog, and reloads those whose server said its list changed. The agent loop calls
/// it before every model request.
pub(crate) async fn load_remote_tools(agent: &Agent) -> Result<()> {
    let catalog = ToolCatalog::global();
    let mut any = false;
    for tool in agent.tools.as_deref().unwrap_or_default() {
        if remote_namespace(tool).is_none() || custom_handler(tool) || !compiled_in(tool) {
            continue;
        }
        any = true;
        let Some(src) = remote_source(tool, agent)? else { continue };
        if !catalog.has_source(&src.id) {
            catalog.ensure_source_async(src.id, src.loader, src.config).await?;
        }
    }
    if any {
        catalog.refresh_stale_async().await?;
    }
    Ok(())
}

/// Whether the host registered its own handler for the tool's kind (then prompty's client stays
/// out of the way).
fn custom_handler(tool: &Tool) -> bool {
    crate::tools::handlers::is_custom_handler(tool.kind.as_str())
}

/// The entries of a declared remote tool, loading its source when it is not loaded yet.
async fn remote_entries(tool: &Tool, agent: &Agent) -> Result<Vec<Arc<CatalogEntry>>> {
    let Some(src) = remote_source(tool, agent)? else { return Ok(Vec::new()) };
    let catalog = ToolCatalog::global();
    if !catalog.has_source(&src.id) {
        catalog.ensure_source_async(src.id.clone(), src.loader, src.config).await?;
    }
    Ok(catalog.source_entries(&src.id))
}

/// The projector of `mcp` and `openapi` tools: one function per tool of the server or operation
/// of the document (allowed by `allowedTools`), named by its wire name, bound parameters removed.
pub(crate) fn project_remote(tool: &Tool, agent: &Agent) -> Result<Vec<FunctionDefinition>> {
    if !compiled_in(tool) {
        tracing::warn!(tool = %tool.name, kind = tool.kind.as_str(), "tool left out of the request: its kind needs a prompty feature that is not enabled");
        return Ok(Vec::new());
    }
    // The agent loop loaded the list before building the request; otherwise load it now.
    let entries = match remote_source(tool, agent)? {
        Some(src) if ToolCatalog::global().has_source(&src.id) => ToolCatalog::global().source_entries(&src.id),
        _ => crate::blocking::block_on(remote_entries(tool, agent))??,
    };
    Ok(entries
        .iter()
        .filter(|e| allowed(tool, &e.name))
        .map(|e| {
            let mut d = e.definition();
            strip_bindings(&mut d.parameters, tool);
            if is_strict(tool) {
                crate::strict_schema(&mut d.parameters);
                d.strict = true;
            }
            d
        })
        .collect())
}

/// Whether the declaration asks for strict mode.
fn is_strict(tool: &Tool) -> bool {
    match &tool.kind {
        ToolKind::Mcp(m) => m.strict.unwrap_or(false),
        ToolKind::OpenApi(o) => o.strict.unwrap_or(false),
        _ => false,
    }
}

/// Removes bound parameters from a schema's `properties` and `required`.
fn strip_bindings(schema: &mut serde_json::Value, tool: &Tool) {
    for b in &tool.bindings {
        if let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
            props.remove(&b.name);
        }
        if let Some(req) = schema.get_mut("required").and_then(|r| r.as_array_mut()) {
            req.retain(|r| r.as_str() != Some(b.name.as_str()));
        }
    }
    if schema.get("required").and_then(|r| r.as_array()).is_some_and(|r| r.is_empty()) {
        if let Some(o) = schema.as_object_mut() {
            o.remove("required");
        }
    }
}

/// The built-in handler of `mcp` and `openapi` tools: resolves the called wire name in the
/// declaration's namespace of the catalog and runs that entry.
pub(crate) struct RemoteHandler;

impl ToolHandler for RemoteHandler {
    fn execute<'a>(
        &'a self,
        tool: &'a Tool,
        args: serde_json::Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<serde_json::Value>> {
        Box::pin(async move {
            let entries = remote_entries(tool, ctx.agent).await?;
            let name = ToolCatalog::global().decode(ctx.function).map(|(_, name)| name);
            let candidates: Vec<Arc<CatalogEntry>> =
                entries.into_iter().filter(|e| Some(&e.name) == name.as_ref() && allowed(tool, &e.name)).collect();
            let call = ToolCall::new("", ctx.function, args.to_string());
            let Some(entry) = super::resolve::pick(&call, &candidates) else {
                let ns = remote_namespace(tool).unwrap_or_default();
                return Err(Error::Tool {
                    name: ctx.function.to_owned(),
                    message: format!("'{ns}' has no tool of that name (any more): its list may have changed"),
                });
            };
            let Some(f) = &entry.function else {
                return Err(Error::Tool {
                    name: ctx.function.to_owned(),
                    message: "the catalog entry has no function".into(),
                });
            };
            f.call_in(args, ctx).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(extra: serde_json::Value) -> Tool {
        let mut decl = json!({"name": "files", "kind": "mcp", "serverName": "fs"});
        if let (Some(d), Some(e)) = (decl.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        serde_json::from_value(decl).unwrap()
    }

    #[test]
    fn approval_follows_the_mode() {
        let agent = Agent::default();
        assert_eq!(needs_approval(&mcp(json!({})), &agent, "fs__read"), None);
        assert_eq!(needs_approval(&mcp(json!({"approvalMode": "never"})), &agent, "fs__read"), None);
        let always = needs_approval(&mcp(json!({"approvalMode": "always"})), &agent, "fs__read").unwrap();
        assert_eq!(always, "MCP tool 'read' of server 'fs' needs approval (approvalMode: always)");
        let specify = mcp(json!({"approvalMode": {"kind": "specify", "alwaysRequireApprovalTools": ["write"],
                                                   "neverRequireApprovalTools": ["read"]}}));
        assert_eq!(needs_approval(&specify, &agent, "fs__read"), None);
        assert!(needs_approval(&specify, &agent, "fs__write").is_some());
        assert!(needs_approval(&specify, &agent, "fs__delete").is_some(), "unlisted tools need approval");
        assert!(needs_approval(&mcp(json!({"approvalMode": "sometimes"})), &agent, "fs__x").is_some());
    }

    #[test]
    fn a_wire_name_finds_the_declaration_of_its_namespace_within_allowed_tools() {
        let tools = [
            mcp(json!({"allowedTools": ["read"]})),
            serde_json::from_value(json!({"name": "api", "kind": "openapi", "specification": "x.json"})).unwrap(),
        ];
        assert_eq!(remote_declaration(&tools, "fs__read").map(|t| t.name.as_str()), Some("files"));
        assert!(remote_declaration(&tools, "fs__write").is_none());
        assert!(remote_declaration(&tools, "other__read").is_none());
        assert_eq!(remote_declaration(&tools, "api__getPet").map(|t| t.name.as_str()), Some("api"));
        assert!(remote_declaration(&tools, "read").is_none());
    }

    #[test]
    fn bound_parameters_leave_the_schema() {
        let tool: Tool = serde_json::from_value(
            json!({"name": "files", "kind": "mcp", "serverName": "fs", "bindings": {"root": "home"}}),
        )
        .unwrap();
        let mut schema = json!({"type": "object", "properties": {"root": {"type": "string"}, "path": {"type": "string"}}, "required": ["root"]});
        strip_bindings(&mut schema, &tool);
        assert_eq!(schema, json!({"type": "object", "properties": {"path": {"type": "string"}}}));
    }
}
