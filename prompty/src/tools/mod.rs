//! Tools: functions the model can call, the name registry, kind handlers, dispatch, and the
//! projection of tool declarations into function definitions.

pub(crate) mod args;
mod bind;
pub(crate) mod derive;
mod function;
pub(crate) mod handlers;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "openapi")]
pub mod openapi;
pub(crate) mod projection;
pub(crate) mod prompty_tool;

pub use bind::{bind_tools, BoundTools};
#[doc(hidden)]
pub use function::ToolRegistration;
pub use function::{
    clear_tools, get_tool, register_tool, registered_tools, tool_fn, tool_fn_sync, ToolFunction, Tools,
};
pub use handlers::{
    clear_tool_handlers, execute_tool, execute_tool_async, get_tool_handler, register_tool_handler, ToolContext,
    ToolHandler, MAX_ATTACHMENTS,
};

pub use projection::{
    clear_tool_projectors, get_tool_projector, project_tools, register_tool_projector, FunctionDefinition,
    ToolProjector,
};
