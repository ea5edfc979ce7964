//! Helpers shared by the providers (`openai`, `anthropic`): no provider imports a sibling
//! provider, they all import these.

mod process;
mod wire;

pub(crate) use process::*;
pub(crate) use wire::*;
