//! What a tool call knows ([`ToolContext`]), and [`ToolHandler`]: the execution part of a tool
//! kind, which [`register_tool_handler`] puts over a kind of the one kind registry
//! ([`crate::ToolKindPlugin`]).

use super::function::{get_tool, Tools};
use crate::{Agent, BoxFuture, ContentPart, Error, Result, Tool};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The most content parts one tool call may attach to its result ([`ToolContext::attach`]).
pub const MAX_ATTACHMENTS: usize = 32;

/// What a tool handler knows about the call: the agent that declared the tool, the inputs it was
/// prepared with (binding sources), and the per-call tool functions.
///
/// ```
/// let agent = prompty::Agent::default();
/// let inputs = serde_json::Map::new();
/// let tools = prompty::Tools::new();
/// let ctx = prompty::ToolContext::new(&agent, &inputs, &tools);
/// assert!(ctx.tools.is_empty());
/// ```
#[derive(Clone, Copy)]
pub struct ToolContext<'a> {
    /// The agent whose model called the tool.
    pub agent: &'a Agent,
    /// The agent's (validated) inputs.
    pub inputs: &'a Map<String, Value>,
    /// Tool functions handed to this call.
    pub tools: &'a Tools,
    /// The name the model called: the tool's name, or for the tools of an MCP server or an
    /// OpenAPI document, the wire name of one of them (`fs__read_file`). Empty when unknown.
    pub function: &'a str,
    /// The agent loop the call runs in, when it runs in one (nesting depth, cancellation).
    pub(crate) scope: Option<&'a crate::turn::Scope>,
    /// Where content parts a tool attaches to its result go.
    pub(crate) attachments: Option<&'a std::sync::Mutex<Vec<ContentPart>>>,
}

impl<'a> ToolContext<'a> {
    /// A context.
    pub fn new(agent: &'a Agent, inputs: &'a Map<String, Value>, tools: &'a Tools) -> Self {
        ToolContext { agent, inputs, tools, function: "", scope: None, attachments: None }
    }

    /// The same context for a call of `function` (see [`ToolContext::function`]).
    ///
    /// ```
    /// let (agent, inputs, tools) = (prompty::Agent::default(), serde_json::Map::new(), prompty::Tools::new());
    /// let ctx = prompty::ToolContext::new(&agent, &inputs, &tools).with_function("fs__read_file");
    /// assert_eq!(ctx.function, "fs__read_file");
    /// ```
    pub fn with_function(mut self, function: &'a str) -> Self {
        self.function = function;
        self
    }

    /// Attaches a content part (an image a tool produced) to the call's result: the agent loop
    /// sends it to the model with the result's text. Outside the loop it is dropped, and so is
    /// every part beyond [`MAX_ATTACHMENTS`] of one call.
    ///
    /// ```
    /// let (agent, inputs, tools) = (prompty::Agent::default(), serde_json::Map::new(), prompty::Tools::new());
    /// let ctx = prompty::ToolContext::new(&agent, &inputs, &tools);
    /// ctx.attach(prompty::ContentPart::Text { value: "dropped".into() });
    /// ```
    pub fn attach(&self, part: ContentPart) {
        if let Some(sink) = self.attachments {
            let mut parts = sink.lock().unwrap_or_else(|e| e.into_inner());
            if parts.len() < MAX_ATTACHMENTS {
                parts.push(part);
            }
        }
    }
}

/// Runs the tools of one kind (`function`, `prompty`, `mcp`, `openapi`, or `*` for any other kind).
///
/// ```
/// use prompty::{BoxFuture, Result, Tool, ToolContext, ToolHandler};
/// use serde_json::Value;
/// struct Echo;
/// impl ToolHandler for Echo {
///     fn execute<'a>(&'a self, _tool: &'a Tool, args: Value, _ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async move { Ok(args) })
///     }
/// }
/// prompty::register_tool_handler("my_kind", Echo);
/// assert!(prompty::get_tool_handler("my_kind").is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as a tool kind handler",
    note = "implement `prompty::ToolHandler` (`fn execute(&self, tool, args, ctx) -> BoxFuture<Result<Value>>`)"
)]
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs `tool` with `args` (bindings already injected).
    fn execute<'a>(&'a self, tool: &'a Tool, args: Value, ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>>;
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
    super::kind::set_handler(kind.into(), Arc::new(handler));
}

pub(crate) use super::kind::is_custom_handler;

/// Forgets registered kind handlers; the built-in ones come back.
///
/// ```
/// prompty::clear_tool_handlers();
/// assert!(prompty::get_tool_handler("mcp").is_ok());
/// ```
pub fn clear_tool_handlers() {
    super::kind::clear_handlers();
}

/// Injects bound parameters: `args[param] = inputs[binding.input]`, overriding the model's value.
pub(crate) fn inject_bindings(tool: &Tool, args: &mut Value, inputs: &Map<String, Value>) {
    if tool.bindings.is_empty() {
        return;
    }
    if !args.is_object() {
        *args = Value::Object(Map::new());
    }
    if let Value::Object(map) = args {
        for b in &tool.bindings {
            if let Some(v) = inputs.get(&b.input) {
                map.insert(b.name.clone(), v.clone());
            }
        }
    }
}

/// Why a call of a tool the agent does not declare (and that was not handed) is not run: refused
/// when a function of that name is registered ([`Error::ToolNotDeclared`]), unknown otherwise.
pub(crate) fn undeclared(name: &str) -> Error {
    if get_tool(name).is_some() {
        return Error::ToolNotDeclared { name: name.to_owned() };
    }
    Error::NoToolHandler {
        name: name.to_owned(),
        kind: "unknown".into(),
        hint: "The agent declares no tool of that name and none was handed to the call.".into(),
    }
}
