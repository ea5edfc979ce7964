//! Compile-time side of prompty: turns `.prompty` files into Rust code from a `build.rs` (through
//! [`compile`]) and from `include_prompty!` ([`include::expand`]), sharing one code generator
//! ([`codegen`]) and reading files with the same `prompty-core` loader the runtime uses
//! ([`typed::analyze`]), so a compile-time check and a runtime behaviour never disagree.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), prompty_build::CompileError> {
//!     prompty_build::compile("prompts")
//! }
//! ```
//!
//! and in the crate, where the prompts' `#[prompty::tool]` handlers are in scope:
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/prompty.rs"));
//! ```
//!
//! Each prompt becomes a module with `Inputs`, `Output` (when `outputs:` is declared), `agent()`,
//! `prepare`, `invoke`, `invoke_stream` and `tools()`. `${env:}` references are never resolved at
//! compile time: `agent()` resolves them from the environment of the running program at its first
//! call.
//!
//! It also holds the logic of prompty's attribute macros, as ordinary functions over
//! [`proc_macro2::TokenStream`] that `prompty-macros` calls (and that tests call without a
//! compiler):
//!
//! - [`tool::expand`]: `#[prompty::tool]` on a fn;
//! - [`plugin::expand`]: `#[prompty::renderer("key")]`, `#[prompty::parser("key")]`,
//!   `#[prompty::executor("key")]` and `#[prompty::processor("key")]` on a type or its trait impl.
//!
//! Errors are [`syn::Error`]s spanned on the offending tokens, every problem of an input combined
//! into one error (the macro reports them all at once).
//!
//! ```
//! use quote::quote;
//! use prompty_build::plugin::{self, Component};
//!
//! let out = plugin::expand(Component::Renderer, quote!("upper"), quote!(#[derive(Default)] struct Upper;))?;
//! assert!(out.to_string().contains("RendererRegistration"));
//! # Ok::<(), syn::Error>(())
//! ```
//!
//! The crate also re-exports the format library it builds on:
//!
//! ```
//! let agent = prompty_build::core::load_str("---\nname: x\n---\nHi", ".", "x.prompty")?;
//! assert_eq!(agent.name, "x");
//! # Ok::<(), prompty_build::core::Error>(())
//! ```

pub use prompty_core as core;

pub mod codegen;
mod compile;
mod errors;
pub mod include;
mod names;
pub mod plugin;
pub mod tool;
pub mod typed;

pub use compile::{compile, CompileError, Config, Generated};
