//! Process-wide, thread-safe registries: renderers, parsers, executors, processors and connections,
//! with the data their traits exchange (stream chunks, tool rounds, the value-mark format).
//! Components registered at link time with the plugin attributes (`#[prompty::renderer("key")]`,
//! ...) are collected lazily on first lookup; explicit `register_*` calls override them.

mod connections;
mod functions;
mod invokers;
pub(crate) mod marks;
pub(crate) mod store;
mod stream;
mod tool_round;

pub use connections::{clear_connections, get_connection, get_connection_as, register_connection};
pub use functions::FunctionDefinition;
pub(crate) use functions::{declared_functions, FunctionProjection, Unprojectable};
#[doc(hidden)]
pub use invokers::{
    __make_executor, __make_parser, __make_processor, __make_renderer, ExecutorRegistration, ParserRegistration,
    ProcessorRegistration, RendererRegistration,
};
pub use invokers::{
    clear_cache, get_executor, get_parser, get_processor, get_renderer, register_executor, register_parser,
    register_processor, register_renderer, BoxFuture, Executor, Parser, Processed, Processor, RenderContext,
    RenderedText, Renderer,
};
pub use stream::{ChunkStream, Outcome, RawEvent, RawStream, StreamChunk, StreamFailure};
pub use tool_round::{tool_messages, ToolResult, ToolRound};
