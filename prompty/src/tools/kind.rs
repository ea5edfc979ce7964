//! One trait per tool kind ([`ToolKindPlugin`]) and the resolved call it is handed
//! ([`ResolvedCall`]); the registry that names the kinds is [`super::kinds`].
//!
//! A kind (`function`, `prompty`, `mcp`, `openapi`, or a host's own) says in one place what a
//! declared tool of that kind offers the model (wire projection), whether a call needs approval or
//! is withheld, how a call runs, and, for kinds whose tools a server or document lists, where that
//! list comes from (its loader).

use super::entry::CatalogEntry;
use super::function::ToolContext;
use super::source::ToolSource;
use crate::{Agent, BoxFuture, Error, FunctionDefinition, Result, Tool, ToolCall};
use serde_json::Value;
use std::sync::Arc;

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
/// `openapi`, and your own (register it with [`crate::register_tool_kind`]).
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

    /// The namespace under which a declaration of this kind offers the tools its source lists;
    /// `None` for kinds without a source. The built-in `mcp` and `openapi` kinds say
    /// [`Tool::namespace`]: the declaration's `name`.
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

/// The error of a call that reached a kind that cannot run it.
pub(crate) fn no_handler(tool: &Tool, hint: String) -> Error {
    // The kind comes from the prompt: a secret that landed there is not shown.
    let kind = crate::Secret::scrub(tool.kind.as_str()).into_owned();
    Error::NoToolHandler { name: crate::Secret::scrub(&tool.name).into_owned(), kind, hint }
}

/// The execution of a kind that cannot run `call`: [`no_handler`] with `hint` for a declared tool,
/// the undeclared-tool error otherwise.
pub(crate) fn refuse<'a>(call: &ResolvedCall<'_>, hint: impl FnOnce(&Tool) -> String) -> BoxFuture<'a, Result<Value>> {
    let err = match call.tool() {
        Some(tool) => no_handler(tool, hint(tool)),
        None => super::handlers::undeclared(call.wire_name()),
    };
    Box::pin(async move { Err(err) })
}

#[cfg(any(feature = "mcp", feature = "openapi"))]
/// Runs the listed entry a call names: its function, or the error that it has none (any more).
pub(crate) fn run_listed<'a>(
    call: &'a ResolvedCall<'a>,
    entry: Option<Arc<CatalogEntry>>,
    args: Value,
    ctx: ToolContext<'a>,
) -> BoxFuture<'a, Result<Value>> {
    Box::pin(async move {
        let wire = call.wire_name();
        let Some(entry) = entry else {
            let ns = call.namespace().or_else(|| call.tool().and_then(Tool::namespace)).unwrap_or_default();
            return Err(crate::Error::Tool {
                name: wire.to_owned(),
                message: format!("'{ns}' has no tool of that name (any more): its list may have changed"),
            });
        };
        let Some(f) = &entry.function else {
            return Err(crate::Error::Tool {
                name: wire.to_owned(),
                message: "the catalog entry has no function".into(),
            });
        };
        f.call_in(args, ctx.with_function(wire)).await
    })
}
