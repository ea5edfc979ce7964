//! Anthropic Messages API.

#[cfg(feature = "anthropic")]
mod executor;
mod process;
mod wire;

#[cfg(feature = "anthropic")]
pub use executor::*;
pub use process::*;
pub use wire::*;
