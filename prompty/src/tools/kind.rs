//! One trait per tool kind ([`ToolKindPlugin`]) and the one registry of kinds.
//!
//! A kind (`function`, `prompty`, `mcp`, `openapi`, or a host's own) says in one place what a
//! declared tool of that kind offers the model (wire projection), whether a call needs approval or
//! is withheld, how a call runs, and, for kinds whose tools a server or document lists, where that
//! list comes from (its loader). `register_tool_handler` and `register_tool_projector` are thin
//! adapters that override one part of a kind in the same registry.

use super::entry::CatalogEntry;
use super::handlers::{ToolContext, ToolHandler};
use super::projection::{FunctionDefinition, ToolProjector};
use super::source::ToolSource;
use crate::{Agent, BoxFuture, Error, Result, Tool, ToolCall};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

/// A call of the model resolved once: the call, the declaration it runs (none for a function
/// handed to the call), the kind of that declaration, and, for the tools of an MCP server or an
/// OpenAPI document, the namespace and name its wire name decodes to. The agent loop and
/// [`crate::execute_tool`] make it once per call and hand it to approval and execution.
///
/// ```
/// let call = prompty::ToolCall::new("1", "now", "{}");
/// let resolved = prompty::ResolvedCall::new(&call, None, None, None);
/// assert_eq!(resolved.wire_name(), "now");
/// assert_eq!(resolved.name(), "now");
/// assert!(resolved.tool().is_none());
/// ```
#[derive(Clone)]
pub struct ResolvedCall<'a> {
    call: &'a ToolCall,
    tool: Option<&'a Tool>,
    kind: Option<Arc<dyn ToolKindPlugin>>,
    qualified: Option<(String, String)>,
    withheld: Option<String>,
}

impl<'a> ResolvedCall<'a> {
    /// A resolved call (the resolution itself is [`crate::catalog::resolve_call`]).
    pub fn new(
        call: &'a ToolCall,
        tool: Option<&'a Tool>,
        kind: Option<Arc<dyn ToolKindPlugin>>,
        qualified: Option<(String, String)>,
    ) -> Self {
        ResolvedCall { call, tool, kind, qualified, withheld: None }
    }

    /// The same call, kept from the model by its declaration for `reason` (`allowedTools`).
    pub fn with_withheld(mut self, reason: Option<String>) -> Self {
        self.withheld = reason;
        self
    }

    /// Why the call is kept from the model although its wire name is in the namespace of a
    /// declaration (`allowedTools` leaves the tool out).
    pub fn withheld(&self) -> Option<&str> {
        self.withheld.as_deref()
    }

    /// Why the call needs approval before it runs, as its kind says.
    pub fn needs_approval(&self) -> Option<String> {
        self.kind.as_ref()?.needs_approval(self)
    }

    /// The model's call.
    pub fn call(&self) -> &'a ToolCall {
        self.call
    }

    /// The name the model called (`fs__read_file` for a tool of an MCP server).
    pub fn wire_name(&self) -> &'a str {
        &self.call.name
    }

    /// The declaration the call runs, if the agent declares it.
    pub fn tool(&self) -> Option<&'a Tool> {
        self.tool
    }

    /// The kind of the declaration.
    pub fn kind(&self) -> Option<&Arc<dyn ToolKindPlugin>> {
        self.kind.as_ref()
    }

    /// The namespace of a server's or document's tool (`fs`).
    pub fn namespace(&self) -> Option<&str> {
        self.qualified.as_ref().map(|(ns, _)| ns.as_str())
    }

    /// The tool's own name: in its namespace (`read_file`), else the called name.
    pub fn name(&self) -> &str {
        self.qualified.as_ref().map_or(self.call.name.as_str(), |(_, n)| n.as_str())
    }
}

impl std::fmt::Debug for ResolvedCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResolvedCall")
            .field("wire_name", &self.call.name)
            .field("tool", &self.tool.map(|t| &t.name))
            .field("qualified", &self.qualified)
            .finish()
    }
}

/// Everything a tool kind does, implemented once per kind: `function`, `prompty`, `mcp`,
/// `openapi`, and your own (register it with [`register_tool_kind`]).
///
/// ```
/// use prompty::{Agent, BoxFuture, CatalogEntry, FunctionDefinition, ResolvedCall, Result, Tool, ToolContext, ToolKindPlugin};
/// use serde_json::{json, Value};
/// use std::sync::Arc;
///
/// struct Clock;
/// impl ToolKindPlugin for Clock {
///     fn project(&self, tool: &Tool, _: &Agent, _: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>> {
///         Ok(vec![FunctionDefinition { name: tool.name.clone(), description: None,
///             parameters: json!({"type": "object", "properties": {}}), strict: false }])
///     }
///     fn execute<'a>(&'a self, _: &'a ResolvedCall<'a>, _: Option<Arc<CatalogEntry>>, _: Value,
///                    _: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async { Ok(json!("12:00")) })
///     }
/// }
/// prompty::register_tool_kind("clock", Clock);
/// let agent = Agent::from_value(json!({"tools": [{"name": "now", "kind": "clock"}]}))?;
/// assert_eq!(prompty::project_tools(&agent)?[0].name, "now");
/// let (inputs, tools) = (serde_json::Map::new(), prompty::Tools::new());
/// let out = prompty::execute_tool(&prompty::ToolCall::new("1", "now", "{}"), ToolContext::new(&agent, &inputs, &tools))?;
/// assert_eq!(out, "12:00");
/// # Ok::<(), prompty::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a tool kind",
    note = "implement `prompty::ToolKindPlugin` (`project` and `execute`)"
)]
pub trait ToolKindPlugin: Send + Sync + 'static {
    /// The function definitions a declared tool of this kind offers the model, bound parameters
    /// left out. `listed` holds the entries its [`source`](Self::source) lists (empty for kinds
    /// without one).
    fn project(&self, tool: &Tool, agent: &Agent, listed: &[Arc<CatalogEntry>]) -> Result<Vec<FunctionDefinition>>;

    /// Runs a call of a declared tool of this kind with its arguments (bindings injected).
    /// `entry` is the listed entry the call names, for kinds with a source.
    fn execute<'a>(
        &'a self,
        call: &'a ResolvedCall<'a>,
        entry: Option<Arc<CatalogEntry>>,
        args: Value,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<Value>>;

    /// Why a call needs approval before it runs (`None`: it does not).
    fn needs_approval(&self, call: &ResolvedCall<'_>) -> Option<String> {
        let _ = call;
        None
    }

    /// The namespace under which a declaration of this kind offers the tools its source lists
    /// (the MCP `serverName`, the OpenAPI tool's `name`); `None` for kinds without a source.
    fn namespace<'t>(&self, tool: &'t Tool) -> Option<&'t str> {
        let _ = tool;
        None
    }

    /// Why the declaration keeps its source's tool `name` from the model (`allowedTools`), or
    /// `None` when the model may call it.
    fn withheld(&self, tool: &Tool, name: &str) -> Option<String> {
        let _ = (tool, name);
        None
    }

    /// The loader of the tools a declaration's server or document lists, for kinds that have one
    /// (`None` otherwise).
    fn source(&self, tool: &Tool, agent: &Agent) -> Option<Result<ToolSource>> {
        let _ = (tool, agent);
        None
    }
}

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
        ("*", Arc::new(super::custom::NeedsClient)),
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
    Some(Arc::new(super::custom::Adapted { base, handler, projector }))
}

/// The kind that runs the declarations of `kind`: its own, else `*`.
pub(crate) fn kind_of(kind: &str) -> Arc<dyn ToolKindPlugin> {
    get_tool_kind(kind).or_else(|| get_tool_kind("*")).unwrap_or_else(|| Arc::new(super::custom::NeedsClient))
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

/// Overrides how calls of `kind` run (an adapter onto the kind registry).
pub(crate) fn set_handler(kind: String, handler: Arc<dyn ToolHandler>) {
    write().handlers.insert(kind, handler);
}

/// Overrides how declarations of `kind` are projected (an adapter onto the kind registry).
pub(crate) fn set_projector(kind: String, projector: Arc<ToolProjector>) {
    write().projectors.insert(kind, projector);
}

/// The projector a host registered for `kind`.
pub(crate) fn projector_override(kind: &str) -> Option<Arc<ToolProjector>> {
    read().projectors.get(kind).cloned()
}

/// Forgets the handlers hosts registered.
pub(crate) fn clear_handlers() {
    write().handlers.clear();
}

/// Forgets the projectors hosts registered.
pub(crate) fn clear_projectors() {
    write().projectors.clear();
}

/// Whether the host registered its own handler (or kind) for `kind`.
pub(crate) fn is_custom_handler(kind: &str) -> bool {
    let registry = read();
    registry.handlers.contains_key(kind) || registry.kinds.contains_key(kind)
}

/// The error of a call that reached a kind that cannot run it.
pub(crate) fn no_handler(tool: &Tool, hint: String) -> Error {
    Error::NoToolHandler { name: tool.name.clone(), kind: tool.kind.as_str().to_owned(), hint }
}
