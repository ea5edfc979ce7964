//! `kind: mcp`: the tools of an MCP server as entries (namespace: the declaration's `name`,
//! [`Tool::namespace`]), their
//! projection, approval (`approvalMode`), `allowedTools`, their calls, and the `mcp` loader.
//!
//! Sessions live on prompty's one process-wide runtime (`crate::blocking`), whatever
//! runtime (or blocking call) asks: a server started for one request keeps running for the next,
//! instead of dying with the runtime of the call that started it.

use super::{McpOutput, McpServer, McpServerConfig, McpTransport};
use crate::tools::entry::{canonical_json, CatalogEntry};
use crate::tools::kind::{run_listed, ResolvedCall, ToolKindPlugin};
use crate::tools::source::{mcp_withheld, project_listed, source_id, ToolLoader, ToolSource};
use crate::{
    Agent, BoxFuture, ContentPart, Error, FunctionDefinition, McpTool, Result, Tool, ToolContext, ToolFunction,
    ToolKind,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Runs `future` on prompty's shared runtime and waits for it from any runtime.
async fn on_runtime<T: Send + 'static>(future: impl Future<Output = Result<T>> + Send + 'static) -> Result<T> {
    crate::blocking::on_runtime("an MCP task", future).await
}

/// The entries of one MCP server, in one namespace.
struct ServerLoader {
    server: McpServer,
    /// The namespace of its entries ([`Tool::namespace`] of the declaration).
    namespace: String,
    /// How entries name their source: the server and how it is reached (no secret).
    label: String,
    /// The server's list generation when it was last listed.
    listed_at: AtomicU64,
}

impl ServerLoader {
    fn new(server: McpServer, namespace: String) -> Self {
        let how = match &server.config().transport {
            McpTransport::Stdio { command, .. } => format!("stdio `{command}`"),
            McpTransport::Http { .. } => "streamable HTTP".to_owned(),
        };
        let label = format!("MCP server '{}' ({how})", server.name());
        ServerLoader { server, namespace, label, listed_at: AtomicU64::new(u64::MAX) }
    }

    async fn entries(&self) -> Result<Vec<CatalogEntry>> {
        let generation = self.server.list_generation();
        let server = self.server.clone();
        let tools = on_runtime(async move { server.tools().await }).await?;
        self.listed_at.store(generation, Ordering::SeqCst);
        let ns = self.namespace.clone();
        Ok(tools
            .iter()
            .map(|t| {
                let mut e = CatalogEntry::new(ns.clone(), t.name.clone(), t.input_schema.clone())
                    .with_kind("mcp")
                    .with_source(self.label.clone())
                    .with_function(McpCall { server: self.server.clone(), tool: t.name.clone() });
                e.description = t.description.clone();
                if let Some(a) = &t.annotations {
                    if let Some(hint) = a.read_only_hint {
                        e.metadata.insert("readOnlyHint".into(), hint.into());
                    }
                    if let Some(hint) = a.destructive_hint {
                        e.metadata.insert("destructiveHint".into(), hint.into());
                    }
                }
                e
            })
            .collect())
    }

    fn is_stale(&self) -> bool {
        let listed = self.listed_at.load(Ordering::SeqCst);
        listed != u64::MAX && listed != self.server.list_generation()
    }

    /// Ends the server's session (on the shared runtime) and waits until it has ended.
    async fn release(&self) {
        let server = self.server.clone();
        let _ = on_runtime(async move {
            server.shutdown().await;
            Ok(())
        })
        .await;
    }
}

impl ToolLoader for ServerLoader {
    fn load<'a>(&'a self, _config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
        Box::pin(self.entries())
    }

    fn is_stale(&self, _config: &Value) -> bool {
        ServerLoader::is_stale(self)
    }

    fn release<'a>(&'a self, _config: &'a Value) -> BoxFuture<'a, ()> {
        Box::pin(self.release())
    }

    fn is_running(&self, _config: &Value) -> Option<bool> {
        Some(self.server.is_running())
    }
}

/// A call of one tool of an MCP server: the text (or structured content) as the result, images
/// attached as content parts; `isError` and protocol errors as tool failures the model reads.
struct McpCall {
    server: McpServer,
    tool: String,
}

impl McpCall {
    async fn run(&self, args: Value) -> Result<McpOutput> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(Error::Tool {
                    name: self.tool.clone(),
                    message: format!("arguments must be a JSON object, not {other}"),
                })
            }
        };
        let (server, tool) = (self.server.clone(), self.tool.clone());
        let out = on_runtime(async move {
            let out = server.call(&tool, arguments).await;
            // A `tools/list_changed` the server sent before its answer is handled in a task rmcp
            // spawned on this runtime's single worker, which would otherwise run after the caller
            // has gone on to its next request: yielding here lets it run first, so the next
            // request offers the changed list.
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
            out
        })
        .await?;
        if out.is_error {
            return Err(Error::Tool { name: self.tool.clone(), message: out.text });
        }
        Ok(out)
    }
}

impl ToolFunction for McpCall {
    fn call<'a>(&'a self, args: Value) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let out = self.run(args).await?;
            let mut text = out.text;
            for image in &out.images {
                text.push_str(&format!("\n[image: {}, {} base64 characters]", image.mime_type, image.data.len()));
            }
            Ok(Value::String(text))
        })
    }

    fn call_in<'a>(&'a self, args: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
        Box::pin(async move {
            let out = self.run(args).await?;
            for image in out.images {
                ctx.attach(ContentPart::Image { source: image.data, detail: None, media_type: Some(image.mime_type) });
            }
            Ok(Value::String(out.text))
        })
    }
}

/// The catalog source of a declared `kind: mcp` tool: one per namespace and server as resolved
/// (command, arguments, environment and folder, or URL and headers).
fn source(tool: &Tool, mcp: &McpTool, agent: &Agent) -> Result<ToolSource> {
    let config = McpServerConfig::from_tool(mcp, agent)?;
    let namespace = tool.namespace().unwrap_or(&tool.name).to_owned();
    let id = source_id("mcp", &namespace, &identity(&config));
    Ok(ToolSource { id, loader: Arc::new(ServerLoader::new(McpServer::new(config), namespace)), config: Value::Null })
}

/// The `mcp` kind: a declaration offers its server's tools (those `allowedTools` lets through)
/// under its namespace, the declaration's `name` ([`Tool::namespace`]); a call runs on the
/// server, after approval when `approvalMode` asks for it.
#[derive(Default)]
pub(crate) struct McpKind;

impl ToolKindPlugin for McpKind {
    fn project(&self, tool: &Tool, _agent: &Agent, listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        let strict = matches!(&tool.kind, ToolKind::Mcp(m) if m.strict.unwrap_or(false));
        Ok(project_listed(tool, listed, strict))
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        entry: Option<Arc<CatalogEntry>>,
        args: Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        run_listed(call, entry, args, ctx)
    }

    /// Under the declaration's `approvalMode`: absent or `never`, no approval; `always`, every
    /// call; `specify`, the tools of `alwaysRequireApprovalTools` and every tool not listed in
    /// `neverRequireApprovalTools`.
    fn needs_approval(&self, call: &ResolvedCall<'_>) -> Option<String> {
        let ToolKind::Mcp(m) = &call.tool()?.kind else { return None };
        needs_approval(m, call.name())
    }

    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        tool.namespace()
    }

    fn withheld(&self, tool: &Tool, name: &str) -> Option<String> {
        mcp_withheld(tool, name)
    }

    fn source(&self, tool: &Tool, agent: &Agent) -> Option<Result<ToolSource>> {
        match &tool.kind {
            ToolKind::Mcp(m) => Some(source(tool, m, agent)),
            _ => None,
        }
    }
}

/// Why a call of the server's tool `name` needs approval under the declaration's `approvalMode`.
fn needs_approval(m: &McpTool, name: &str) -> Option<String> {
    let mode = m.approval_mode.as_ref()?;
    let listed = |list: &Option<Vec<String>>| list.as_ref().is_some_and(|l| l.iter().any(|t| t == name));
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

/// What tells two servers apart, credentials included (only ever hashed).
fn identity(config: &McpServerConfig) -> Value {
    let exposed = |m: &std::collections::BTreeMap<String, crate::Secret>| -> Map<String, Value> {
        m.iter().map(|(k, v)| (k.clone(), Value::String(v.expose().to_owned()))).collect()
    };
    match &config.transport {
        McpTransport::Stdio { command, args, env, cwd } => serde_json::json!({
            "stdio": command, "args": args, "env": exposed(env), "cwd": cwd.as_ref().map(|c| c.display().to_string())}),
        McpTransport::Http { url, headers } => serde_json::json!({"http": url, "headers": exposed(headers)}),
    }
}

/// The `mcp` loader: `ToolCatalog::add_source("mcp", config)` with `namespace` and the fields
/// of a `kind: mcp` declaration (`serverName`, `connection`, `allowedTools`): the server's tools
/// (those allowed), in the namespace `namespace`, as a declaration named so offers them
/// ([`Tool::namespace`]). A configuration without `namespace` (the spelling of earlier versions)
/// is read with its `serverName` as the namespace, and a warning (`tracing`). One server per
/// distinct configuration, kept until the catalog releases its source (then its session ends and
/// the server is forgotten); its session also ends after its idle timeout, and starts again on
/// next use.
#[derive(Default)]
pub(crate) struct McpLoader {
    servers: Mutex<HashMap<String, Arc<ServerLoader>>>,
}

impl McpLoader {
    fn server(&self, config: &Value) -> Result<(Arc<ServerLoader>, McpTool)> {
        let bad = |m: String| Error::Catalog { message: format!("the `mcp` loader's configuration: {m}") };
        let decl: McpTool = serde_json::from_value(config.clone())
            .map_err(|e| bad(format!("it is not an MCP tool declaration: {e}")))?;
        let key = canonical_json(config);
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = servers.get(&key) {
            return Ok((Arc::clone(s), decl));
        }
        let name = match config.get("namespace") {
            Some(Value::String(ns)) if !ns.is_empty() => ns.clone(),
            Some(_) => return Err(bad("`namespace` must be a non-empty string".into())),
            None => {
                tracing::warn!(
                    server = %decl.server_name,
                    "the `mcp` loader's configuration names no `namespace`: its tools are offered under the \
                     server's name `{}`, as earlier versions did (add `\"namespace\": \"{}\"`: it plays the part \
                     of a `kind: mcp` declaration's `name`)",
                    decl.server_name,
                    decl.server_name
                );
                decl.server_name.clone()
            }
        };
        let tool = Tool { name, description: None, bindings: Vec::new(), kind: ToolKind::Mcp(decl.clone()) };
        let namespace = tool.namespace().unwrap_or(&tool.name).to_owned();
        let server = McpServer::new(McpServerConfig::from_tool(&decl, &Agent::default())?);
        let loader = Arc::new(ServerLoader::new(server, namespace));
        servers.insert(key, Arc::clone(&loader));
        Ok((loader, decl))
    }
}

impl ToolLoader for McpLoader {
    fn load<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
        Box::pin(async move {
            let (server, decl) = self.server(config)?;
            let entries = server.entries().await?;
            Ok(match &decl.allowed_tools {
                Some(allowed) => entries.into_iter().filter(|e| allowed.contains(&e.name)).collect(),
                None => entries,
            })
        })
    }

    fn is_stale(&self, config: &Value) -> bool {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        servers.get(&canonical_json(config)).is_some_and(|s| s.is_stale())
    }

    fn release<'a>(&'a self, config: &'a Value) -> BoxFuture<'a, ()> {
        let removed = self.servers.lock().unwrap_or_else(|e| e.into_inner()).remove(&canonical_json(config));
        Box::pin(async move {
            if let Some(server) = removed {
                server.release().await;
            }
        })
    }

    fn is_running(&self, config: &Value) -> Option<bool> {
        let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        Some(servers.get(&canonical_json(config)).is_some_and(|s| s.server.is_running()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mcp(extra: Value) -> Tool {
        let mut decl = json!({"name": "files", "kind": "mcp", "serverName": "fs"});
        if let (Some(d), Some(e)) = (decl.as_object_mut(), extra.as_object()) {
            d.extend(e.clone());
        }
        serde_json::from_value(decl).unwrap()
    }

    fn approval(tool: &Tool, name: &str) -> Option<String> {
        let call = crate::ToolCall::new("1", format!("files__{name}"), "{}");
        let resolved = ResolvedCall::new(&call, Some(tool), None, Some(("files".into(), name.into())));
        McpKind.needs_approval(&resolved)
    }

    #[test]
    fn approval_follows_the_mode() {
        assert_eq!(approval(&mcp(json!({})), "read"), None);
        assert_eq!(approval(&mcp(json!({"approvalMode": "never"})), "read"), None);
        let always = approval(&mcp(json!({"approvalMode": "always"})), "read").unwrap();
        assert_eq!(always, "MCP tool 'read' of server 'fs' needs approval (approvalMode: always)");
        let specify = mcp(json!({"approvalMode": {"kind": "specify", "alwaysRequireApprovalTools": ["write"],
                                                   "neverRequireApprovalTools": ["read"]}}));
        assert_eq!(approval(&specify, "read"), None);
        assert!(approval(&specify, "write").is_some());
        assert!(approval(&specify, "delete").is_some(), "unlisted tools need approval");
        assert!(approval(&mcp(json!({"approvalMode": "sometimes"})), "x").is_some());
    }
}
