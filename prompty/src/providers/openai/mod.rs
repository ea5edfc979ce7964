//! OpenAI: chat completions, embeddings, images and the Responses API; Azure OpenAI / Foundry use the
//! same wire format.
//!
//! Structured output works on any OpenAI-compatible server: the mode comes from
//! `--structured-output`, `PROMPTY_STRUCTURED_OUTPUT` or the prompt, and a server that refuses
//! the default gets the request once more in the next mode, remembered for its endpoint (see
//! [`structured`], with the `openai` feature). [`request_body`] shows what the executor sends.
//!
//! ```
//! use prompty::providers::openai::{chat_request, process_response};
//! use prompty::{Agent, Message, Role};
//! use serde_json::json;
//! let agent = Agent::from_value(json!({"model": "gpt-4o"}))?;
//! let body = chat_request(&agent, &[Message::new(Role::User, "Hi")])?;
//! assert_eq!(body["model"], "gpt-4o");
//! let answer = process_response(&agent, json!({"choices": [{"message": {"content": "Hello!"}}]}))?;
//! assert_eq!(answer, prompty::Processed::Answer("Hello!".into()));
//! # Ok::<(), prompty::Error>(())
//! ```
//!
// Without the `openai` feature the module is not compiled: its link leads to the features.
#![cfg_attr(not(feature = "openai"), doc = "[`structured`]: crate#cargo-features")]

#[cfg(feature = "openai")]
mod executor;
mod inspect;
mod process;
#[cfg(feature = "openai")]
pub mod structured;
mod wire;

#[cfg(feature = "openai")]
pub use executor::*;
pub use inspect::*;
pub use process::*;
#[cfg(feature = "openai")]
pub use structured::{
    forget_structured_output_fallbacks, set_structured_output, set_structured_output_fallback,
    MAX_REMEMBERED_ENDPOINTS, STRUCTURED_OUTPUT_ENV, STRUCTURED_OUTPUT_FALLBACK_ENV,
};
pub use wire::*;
