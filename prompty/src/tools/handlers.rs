//! [`ToolHandler`]: the execution part of a tool kind, which [`crate::register_tool_handler`] puts
//! over a kind of the one kind registry ([`super::kinds`]); and the helpers every kind's execution
//! uses (bindings, the error of an undeclared call).

use super::function::{get_tool, ToolContext};
use crate::{BoxFuture, Error, Result, Tool};
use serde_json::{Map, Value};

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
