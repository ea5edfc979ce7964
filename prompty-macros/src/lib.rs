//! Procedural macros of prompty. This crate is a thin shell: each macro parses its input and calls
//! an ordinary function of `prompty-build`, where the logic lives and is tested. Use the macros
//! through `prompty` (feature `macros`, on by default), which re-exports them.
//!
//! The macros (`include_prompty!`, `#[tool]` and the plugin attributes) arrive with the typed
//! prompts and registries of the following milestones; until then this crate exports nothing.
