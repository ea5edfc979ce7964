//! Compile-time side of prompty: turns `.prompty` files into Rust code from a `build.rs` (through
//! `prompty_build::compile`) and from `include_prompty!`, sharing one code generator and reading
//! files with the same `prompty-core` loader the runtime uses, so a compile-time check and a
//! runtime behaviour never disagree.
//!
//! Code generation arrives with the typed-prompts milestone; until then the crate only re-exports
//! the format library it builds on.

pub use prompty_core as core;
