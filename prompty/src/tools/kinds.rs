//! The one registry of tool kinds: the kinds compiled in (`function`, `prompty`, `mcp`,
//! `openapi`, and `*`, every kind without its own), the kinds a host registers
//! ([`register_tool_kind`]), and the parts of a kind a host overrides with the thin adapters
//! [`register_tool_handler`] (execution) and [`register_tool_projector`] (projection). It names the
//! built-in kinds, so it sits above them; the trait they implement is [`super::kind`].

use super::entry::CatalogEntry;
use super::function::ToolContext;
use super::handlers::ToolHandler;
use super::kind::{refuse, ResolvedCall, ToolKindPlugin};
use super::projection::ToolProjector;
use super::source::ToolSource;
use crate::{Agent, BoxFuture, Error, FunctionDefinition, Result, Tool};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

/// The kinds compiled in.
fn builtin_kinds() -> HashMap<String, Arc<dyn ToolKindPlugin>> {
    let kinds: Vec<(&str, Arc<dyn ToolKindPlugin>)> = vec![
        ("function", Arc::new(super::function::kind::FunctionKind)),
        ("prompty", Arc::new(super::prompty::kind::PromptyKind)),
        #[cfg(feature = "mcp")]
        ("mcp", Arc::new(super::mcp::kind::McpKind)),
        #[cfg(not(feature = "mcp"))]
        ("mcp", Arc::new(super::custom::Unavailable::mcp())),
        #[cfg(feature = "openapi")]
        ("openapi", Arc::new(super::openapi::kind::OpenApiKind)),
        #[cfg(not(feature = "openapi"))]
        ("openapi", Arc::new(super::custom::Unavailable::openapi())),
        ("*", Arc::new(NeedsClient)),
    ];
    kinds.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// The one registry of kinds: the kinds (built in and registered), and the parts hosts override
/// with the adapters `register_tool_handler` (execution) and `register_tool_projector` (projection).
#[derive(Default)]
struct Registry {
    kinds: HashMap<String, Arc<dyn ToolKindPlugin>>,
    handlers: HashMap<String, Arc<dyn ToolHandler>>,
    projectors: HashMap<String, Arc<ToolProjector>>,
}

static BUILTIN: LazyLock<HashMap<String, Arc<dyn ToolKindPlugin>>> = LazyLock::new(builtin_kinds);
static REGISTRY: LazyLock<RwLock<Registry>> = LazyLock::new(Default::default);

fn read() -> std::sync::RwLockReadGuard<'static, Registry> {
    REGISTRY.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> std::sync::RwLockWriteGuard<'static, Registry> {
    REGISTRY.write().unwrap_or_else(|e| e.into_inner())
}

/// Registers a tool kind, replacing the built-in or earlier one of that name (`*`: every kind
/// without its own). See [`ToolKindPlugin`].
pub fn register_tool_kind(kind: impl Into<String>, plugin: impl ToolKindPlugin) {
    write().kinds.insert(kind.into(), Arc::new(plugin));
}

/// Forgets every registered kind, handler and projector; the built-in kinds come back.
///
/// ```
/// prompty::clear_tool_kinds();
/// assert!(prompty::get_tool_kind("mcp").is_some());
/// ```
pub fn clear_tool_kinds() {
    *write() = Registry::default();
}

/// The kind `kind` as registered (with the parts a host overrode), without the `*` fallback.
///
/// ```
/// assert!(prompty::get_tool_kind("function").is_some());
/// assert!(prompty::get_tool_kind("no_such_kind").is_none());
/// ```
pub fn get_tool_kind(kind: &str) -> Option<Arc<dyn ToolKindPlugin>> {
    let registry = read();
    let base = registry.kinds.get(kind).or_else(|| BUILTIN.get(kind)).cloned();
    let handler = registry.handlers.get(kind).cloned();
    let projector = registry.projectors.get(kind).cloned();
    if handler.is_none() && projector.is_none() {
        return base;
    }
    Some(Arc::new(Adapted { base, handler, projector }))
}

/// The kind that runs the declarations of `kind`: its own, else `*`.
pub(crate) fn kind_of(kind: &str) -> Arc<dyn ToolKindPlugin> {
    get_tool_kind(kind).or_else(|| get_tool_kind("*")).unwrap_or_else(|| Arc::new(NeedsClient))
}

/// Whether `kind` can run calls (a kind, or a handler, is registered under it).
pub(crate) fn has_execution(kind: &str) -> bool {
    let registry = read();
    registry.kinds.contains_key(kind) || registry.handlers.contains_key(kind) || BUILTIN.contains_key(kind)
}

/// Whether `kind` can project declarations (`*` runs calls only).
pub(crate) fn has_projection(kind: &str) -> bool {
    let registry = read();
    kind != "*"
        && (registry.kinds.contains_key(kind) || registry.projectors.contains_key(kind) || BUILTIN.contains_key(kind))
}

/// The names of the kinds that run calls, sorted.
pub(crate) fn known_executors() -> Vec<String> {
    let registry = read();
    let mut keys: Vec<String> =
        BUILTIN.keys().chain(registry.kinds.keys()).chain(registry.handlers.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The names of the kinds that project declarations, sorted.
pub(crate) fn known_projectors() -> Vec<String> {
    let registry = read();
    let mut keys: Vec<String> = BUILTIN
        .keys()
        .chain(registry.kinds.keys())
        .chain(registry.projectors.keys())
        .filter(|k| k.as_str() != "*")
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

/// The projector a host registered for `kind`.
pub(crate) fn projector_override(kind: &str) -> Option<Arc<ToolProjector>> {
    read().projectors.get(kind).cloned()
}

/// Whether the host registered its own handler (or kind) for `kind`.
pub(crate) fn is_custom_handler(kind: &str) -> bool {
    let registry = read();
    registry.handlers.contains_key(kind) || registry.kinds.contains_key(kind)
}

/// Registers the handler of a tool kind (`*` for every kind without its own handler), overriding
/// the built-in one. See [`ToolHandler`].
///
/// ```
/// use prompty::{Agent, BoxFuture, Result, Tool, ToolCall, ToolContext, ToolHandler, Tools};
/// use serde_json::{json, Value};
/// struct McpClient;
/// impl ToolHandler for McpClient {
///     fn execute<'a>(&'a self, tool: &'a Tool, _args: Value, _ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async move { Ok(json!(format!("{} ran on the server", tool.name))) })
///     }
/// }
/// prompty::register_tool_handler("mcp", McpClient);
/// let agent = Agent::from_value(json!({"tools": [{"name": "search", "kind": "mcp", "serverName": "docs"}]}))?;
/// let (inputs, tools) = (serde_json::Map::new(), Tools::new());
/// let out = prompty::execute_tool(&ToolCall::new("1", "search", "{}"), ToolContext::new(&agent, &inputs, &tools))?;
/// assert_eq!(out, "search ran on the server");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn register_tool_handler(kind: impl Into<String>, handler: impl ToolHandler) {
    write().handlers.insert(kind.into(), Arc::new(handler));
}

/// Forgets registered kind handlers; the built-in ones come back.
///
/// ```
/// prompty::clear_tool_handlers();
/// assert!(prompty::get_tool_handler("mcp").is_ok());
/// ```
pub fn clear_tool_handlers() {
    write().handlers.clear();
}

/// Registers the projector of a tool kind, overriding the built-in one.
///
/// ```
/// prompty::register_tool_projector("calendar", |tool: &prompty::Tool, _agent: &prompty::Agent| {
///     Ok(vec![prompty::FunctionDefinition {
///         name: tool.name.clone(), description: tool.description.clone(),
///         parameters: serde_json::json!({"type": "object", "properties": {}}), strict: false }])
/// });
/// assert!(prompty::get_tool_projector("calendar").is_ok());
/// ```
pub fn register_tool_projector(
    kind: impl Into<String>,
    projector: impl Fn(&Tool, &Agent) -> Result<Vec<FunctionDefinition>> + Send + Sync + 'static,
) {
    write().projectors.insert(kind.into(), Arc::new(projector));
}

/// Forgets registered projectors; the built-in ones come back.
///
/// ```
/// prompty::clear_tool_projectors();
/// assert!(prompty::get_tool_projector("prompty").is_ok());
/// ```
pub fn clear_tool_projectors() {
    write().projectors.clear();
}

/// The built-in `*`: kinds prompty has no client for, until the host registers a handler.
pub(crate) struct NeedsClient;

impl ToolKindPlugin for NeedsClient {
    fn project(&self, tool: &Tool, _agent: &Agent, _listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        Err(unknown_projector(tool.kind.as_str()))
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        _entry: Option<Arc<CatalogEntry>>,
        _args: Value,
        _ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        refuse(call, |tool| {
            let kind = tool.kind.as_str();
            format!(
                "Tools of kind '{kind}' need a handler for their kind: register a handler with \
                 `prompty::register_tool_handler(\"{kind}\", ...)`, or register the tool by name with \
                 `prompty::register_tool(\"{}\", ...)`.",
                tool.name
            )
        })
    }
}

/// The error of a kind that has no projector.
pub(crate) fn unknown_projector(kind: &str) -> Error {
    Error::UnknownComponent {
        component: "tool projector",
        key: crate::Secret::scrub(kind).into_owned(),
        known: known_projectors().join(", "),
        register: "prompty::register_tool_projector(kind, ...)",
        hint: String::new(),
    }
}

/// A kind with the parts a host overrode: execution (`register_tool_handler`), projection
/// (`register_tool_projector`); the rest is the kind's own (`base`), when there is one.
pub(crate) struct Adapted {
    pub(crate) base: Option<Arc<dyn ToolKindPlugin>>,
    pub(crate) handler: Option<Arc<dyn ToolHandler>>,
    pub(crate) projector: Option<Arc<ToolProjector>>,
}

impl ToolKindPlugin for Adapted {
    fn project(&self, tool: &Tool, agent: &Agent, listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
        match (&self.projector, &self.base) {
            (Some(projector), _) => projector(tool, agent),
            (None, Some(base)) => base.project(tool, agent, listed),
            (None, None) => Err(unknown_projector(tool.kind.as_str())),
        }
    }

    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        entry: Option<Arc<CatalogEntry>>,
        args: Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>> {
        match (&self.handler, &self.base, call.tool()) {
            (Some(handler), _, Some(tool)) => handler.execute(tool, args, ctx),
            (None, Some(base), _) => base.execute(call, entry, args, ctx),
            _ => NeedsClient.execute(call, entry, args, ctx),
        }
    }

    fn needs_approval(&self, call: &ResolvedCall<'_>) -> Option<String> {
        self.base.as_ref()?.needs_approval(call)
    }

    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        self.base.as_ref()?.namespace(tool)
    }

    fn withheld(&self, tool: &Tool, name: &str) -> Option<String> {
        self.base.as_ref()?.withheld(tool, name)
    }

    /// A kind whose calls the host runs lists nothing: prompty's client stays out of the way.
    fn source(&self, tool: &Tool, agent: &Agent) -> Option<Result<ToolSource>> {
        if self.handler.is_some() {
            return None;
        }
        self.base.as_ref()?.source(tool, agent)
    }
}
