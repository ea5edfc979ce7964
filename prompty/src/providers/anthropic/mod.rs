//! Anthropic Messages API.
//!
//! ```
//! use prompty::providers::anthropic::{messages_request, process_response};
//! use prompty::{Agent, Message, Role};
//! use serde_json::json;
//! let agent = Agent::from_value(json!({"model": "claude-sonnet-4-20250514"}))?;
//! let body = messages_request(&agent, &[Message::new(Role::User, "Hi")])?;
//! assert_eq!(body["max_tokens"], 4096);
//! let answer = process_response(&agent, json!({"content": [{"type": "text", "text": "Hello!"}]}))?;
//! assert_eq!(answer, prompty::Processed::Answer("Hello!".into()));
//! # Ok::<(), prompty::Error>(())
//! ```

#[cfg(feature = "anthropic")]
mod executor;
mod process;
mod wire;

#[cfg(feature = "anthropic")]
pub use executor::*;
pub use process::*;
pub use wire::*;
