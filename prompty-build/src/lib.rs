//! Compile-time side of prompty: turns `.prompty` files into Rust code from a `build.rs` (through
//! `prompty_build::compile`) and from `include_prompty!`, sharing one code generator and reading
//! files with the same `prompty-core` loader the runtime uses, so a compile-time check and a
//! runtime behaviour never disagree.
//!
//! Code generation arrives with the typed-prompts milestone; until then the crate re-exports the
//! format library it builds on:
//!
//! ```
//! let agent = prompty_build::core::load_str("---\nname: x\n---\nHi", ".", "x.prompty")?;
//! assert_eq!(agent.name, "x");
//! # Ok::<(), prompty_build::core::Error>(())
//! ```

pub use prompty_core as core;
