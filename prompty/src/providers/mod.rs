//! Model providers: request building ("wire") and response processing for OpenAI (chat, embeddings,
//! images, Responses; also Azure OpenAI / Foundry) and Anthropic Messages, plus model discovery.
//!
//! Wire building and processing are plain functions, always compiled; the processors are registered
//! for `openai`, `foundry` (alias `azure`) and `anthropic`. The HTTP executors that send requests
//! are behind the cargo features `openai` and `anthropic`.
//!
//! ```
//! for provider in ["openai", "foundry", "azure", "anthropic"] {
//!     assert!(prompty::get_processor(provider).is_ok());
//! }
//! ```

pub mod anthropic;
pub mod discovery;
pub mod openai;

// With only `mcp`/`openapi` on, the executors' request helpers are unused.
#[cfg(feature = "http")]
#[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
pub mod http;
#[cfg(feature = "http")]
#[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
mod sse;
