//! Kind handlers and tool dispatch: per-call tools, then the name registry, then the handler of the
//! tool's kind, then the error `No handler registered for tool: N (kind: K)`.

use super::args::parse_arguments;
use super::function::{get_tool, Tools};
use crate::registry::store::Store;
use crate::{Agent, BoxFuture, ContentPart, Error, Result, Tool, ToolCall};
use futures_util::FutureExt;
use serde_json::{Map, Value};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, LazyLock};

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

/// The built-in handler of `kind: function`: a function tool runs the function registered under its
/// name; reaching this handler means there is none.
struct FunctionHandler;

impl ToolHandler for FunctionHandler {
    fn execute<'a>(&'a self, tool: &'a Tool, _args: Value, _ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
        let err = Error::NoToolHandler {
            name: tool.name.clone(),
            kind: "function".into(),
            hint: format!(
                "Annotate a fn with `#[prompty::tool]` (named `{}`), pass it in the per-call tools, or call \
                 `prompty::register_tool(\"{}\", ...)`.",
                tool.name, tool.name
            ),
        };
        Box::pin(async move { Err(err) })
    }
}

/// The built-in handler of kinds that need a client prompty does not configure by itself.
struct NeedsClient(&'static str);

impl ToolHandler for NeedsClient {
    fn execute<'a>(&'a self, tool: &'a Tool, _args: Value, _ctx: ToolContext<'a>) -> BoxFuture<'a, Result<Value>> {
        let kind = tool.kind.as_str().to_owned();
        let err = Error::NoToolHandler {
            name: tool.name.clone(),
            hint: format!(
                "Tools of kind '{kind}' need {}: register a handler with `prompty::register_tool_handler(\"{kind}\", ...)`, \
                 or register the tool by name with `prompty::register_tool(\"{}\", ...)`.",
                self.0, tool.name
            ),
            kind,
        };
        Box::pin(async move { Err(err) })
    }
}

fn builtin_handlers() -> Vec<(&'static str, Arc<dyn ToolHandler>)> {
    vec![
        ("function", Arc::new(FunctionHandler)),
        ("prompty", Arc::new(super::prompty_tool::PromptyToolHandler)),
        ("mcp", Arc::new(crate::catalog::kinds::RemoteHandler)),
        ("openapi", Arc::new(crate::catalog::kinds::RemoteHandler)),
        ("*", Arc::new(NeedsClient("a handler for their kind"))),
    ]
}

static HANDLERS: LazyLock<Store<dyn ToolHandler>> = LazyLock::new(|| Store::new(builtin_handlers));

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
    HANDLERS.register(kind.into(), Arc::new(handler));
}

/// The handler of a tool kind.
///
/// ```
/// assert!(prompty::get_tool_handler("prompty").is_ok());
/// assert!(prompty::get_tool_handler("function").is_ok());
/// ```
pub fn get_tool_handler(kind: &str) -> Result<Arc<dyn ToolHandler>> {
    HANDLERS.get(kind).ok_or_else(|| Error::UnknownComponent {
        component: "tool handler",
        key: kind.to_owned(),
        known: HANDLERS.known(),
        register: "prompty::register_tool_handler(kind, ...)",
        hint: String::new(),
    })
}

/// Whether the host registered its own handler for `kind`.
pub(crate) fn is_custom_handler(kind: &str) -> bool {
    HANDLERS.is_explicit(kind)
}

/// Forgets registered kind handlers; the built-in ones come back.
///
/// ```
/// prompty::clear_tool_handlers();
/// assert!(prompty::get_tool_handler("mcp").is_ok());
/// ```
pub fn clear_tool_handlers() {
    HANDLERS.clear();
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

/// Runs a tool call of the model: parses its arguments (forgiving fences, surrounding text and
/// trailing commas), injects bound parameters, then runs the first of: the per-call function of
/// that name, the registered function of that name, the handler of the declared tool's kind (then
/// of `*`).
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
    let decl = declared_tool(ctx.agent, &call.name);
    if decl.is_none() && ctx.tools.get(&call.name).is_none() {
        if let Some(reason) =
            crate::catalog::kinds::withheld(ctx.agent.tools.as_deref().unwrap_or_default(), &call.name)
        {
            return Err(Error::Tool { name: call.name.clone(), message: reason });
        }
        return Err(undeclared(&call.name));
    }
    let mut args =
        parse_arguments(&call.arguments).map_err(|message| Error::Tool { name: call.name.clone(), message })?;
    if let Some(tool) = decl {
        inject_bindings(tool, &mut args, ctx.inputs);
        if let Some(reason) = crate::catalog::kinds::needs_approval(tool, ctx.agent, &call.name) {
            return Err(Error::Tool {
                name: call.name.clone(),
                message: format!("{reason}; outside the agent loop there is no approver, so it was not run"),
            });
        }
    }
    run_tool(&call.name, decl, args, ctx.with_function(&call.name)).await
}

/// The agent's declaration of the tool named `name`: a tool of that name, or the `mcp` /
/// `openapi` declaration one of whose tools (allowed by `allowedTools`) the wire name `name` names.
pub(crate) fn declared_tool<'a>(agent: &'a Agent, name: &str) -> Option<&'a Tool> {
    let tools = agent.tools.as_deref().unwrap_or_default();
    tools.iter().find(|t| t.name == name).or_else(|| crate::catalog::kinds::remote_declaration(tools, name))
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

/// Runs a tool with arguments already parsed (and bindings injected): the per-call function of
/// that name, the registered function of that name, the handler of the declared tool's kind (then
/// of `*`). A handler that panics is the error `Tool '<name>' failed: panicked: <message>`.
pub(crate) async fn run_tool(name: &str, decl: Option<&Tool>, args: Value, ctx: ToolContext<'_>) -> Result<Value> {
    match AssertUnwindSafe(dispatch(name, decl, args, ctx)).catch_unwind().await {
        Ok(result) => result,
        Err(payload) => Err(Error::Tool {
            name: name.to_owned(),
            message: format!("panicked: {}", crate::support::panic_text(payload.as_ref())),
        }),
    }
}

async fn dispatch(name: &str, decl: Option<&Tool>, args: Value, ctx: ToolContext<'_>) -> Result<Value> {
    if let Some(f) = ctx.tools.get(name) {
        return f.call_in(args, ctx).await;
    }
    let Some(tool) = decl else { return Err(undeclared(name)) };
    if let Some(f) = get_tool(name) {
        return f.call_in(args, ctx).await;
    }
    let handler = match get_tool_handler(tool.kind.as_str()) {
        Ok(h) => h,
        Err(_) => get_tool_handler("*")?,
    };
    handler.execute(tool, args, ctx).await
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
