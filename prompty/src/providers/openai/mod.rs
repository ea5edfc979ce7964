//! OpenAI: chat completions, embeddings, images and the Responses API; Azure OpenAI / Foundry use the
//! same wire format.

#[cfg(feature = "openai")]
mod executor;
mod process;
mod wire;

#[cfg(feature = "openai")]
pub use executor::*;
pub use process::*;
pub use wire::*;
