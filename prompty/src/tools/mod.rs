//! Tools: one folder per tool kind (`function/`, `prompty/`, `mcp/`, `openapi/`, and custom kinds)
//! behind one trait, [`ToolKindPlugin`] (projection, approval, execution, loader), one registry
//! of kinds, and the catalog ([`catalog`]) built on them: namespaced names, overloads, loaders,
//! the resolution and dispatch of a model's call.
//!
//! From the bottom up: `entry`, `source`, `projection` and `function` (with the call's
//! [`ToolContext`], which names the [`scope`] of an agent loop) are shared by every kind; `kind`
//! is the trait the kinds implement; the kinds' folders; `kinds`, the registry naming the
//! built-in kinds; `catalog` on top. The agent loop (`crate::turn`) sits above the tools: it hands
//! its child-loop runner down in each call's scope, so no tool names it.

pub(crate) mod args;
mod bind;
pub mod catalog;
#[cfg(any(not(feature = "mcp"), not(feature = "openapi")))]
mod custom;
pub(crate) mod derive;
pub(crate) mod entry;
pub(crate) mod function;
pub(crate) mod handlers;
pub(crate) mod kind;
pub(crate) mod kinds;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "openapi")]
pub mod openapi;
pub(crate) mod projection;
pub(crate) mod prompty;
pub(crate) mod scope;
pub(crate) mod source;
pub(crate) mod wire;

pub use bind::{bind_tools, BoundTools};
pub use entry::CatalogEntry;
#[doc(hidden)]
pub use function::ToolRegistration;
pub use function::{
    clear_tools, get_tool, register_tool, registered_tools, tool_fn, tool_fn_sync, ToolContext, ToolFunction, Tools,
    MAX_ATTACHMENTS,
};
pub use handlers::ToolHandler;
pub use kind::{ResolvedCall, ToolKindPlugin};
pub use kinds::{
    clear_tool_handlers, clear_tool_kinds, clear_tool_projectors, get_tool_kind, register_tool_handler,
    register_tool_kind, register_tool_projector,
};
pub use projection::ToolProjector;
pub use source::{ToolLoader, ToolSource};
