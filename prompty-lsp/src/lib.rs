//! A language server for `.prompty` files: `prompty lsp` gives every editor the checks the
//! compiler runs on typed prompts, as you type.
//!
//! Every diagnostic comes from `prompty_core::analysis`, the one analysis behind
//! `include_prompty!`, the `prompty-build` build script, `prompty::check` and `prompty check`:
//! what the editor underlines is what the build refuses. On top of it:
//!
//! - **Diagnostics** on open and on every change (after a quiet moment of
//!   [`server::DEFAULT_DEBOUNCE`], only for the documents that changed and those that read them),
//!   each with the exact range of its token, its rule's code, severity and related places (a locale
//!   variant's default file, a child prompt and the tool that runs it).
//! - **Completion** of inputs, their properties, Jinja filters and tests inside `{{ }}` and
//!   `{% %}`; frontmatter keys and values (kinds, providers, API types, the chosen provider's model
//!   options); role markers at a line's start; tool names in `toolChoice`.
//! - **Hover**, **go to definition**, **document symbols**, **quick fixes** for every "did you
//!   mean" and for declaring an undeclared variable, and **semantic tokens** for role markers and
//!   template expressions.
//!
//! The protocol runs on [`lsp_server`] (stdio, JSON-RPC) with [`lsp_types`]. Positions are counted
//! in UTF-16 code units, or UTF-8 bytes when the client offers them. Bounds: documents up to
//! [`analysis::MAX_DOCUMENT_BYTES`] are analyzed, [`server::MAX_OPEN_DOCUMENTS`] kept open, messages
//! up to [`transport::MAX_MESSAGE_BYTES`] read (a frame that cannot be read is answered with an
//! error and skipped: no input stops the server).
//!
//! ```no_run
//! // What `prompty lsp` runs.
//! prompty_lsp::run_stdio()?;
//! # Ok::<(), prompty_lsp::ServerError>(())
//! ```

#![warn(missing_docs)]

mod actions;
pub mod analysis;
mod completion;
mod definition;
mod diagnostics;
pub mod document;
mod hover;
pub mod position;
mod schema;
pub mod server;
mod symbols;
mod tokens;
pub mod transport;
pub mod yaml_path;

pub use document::{path_to_uri, uri_to_path, Document};
pub use server::{run, run_stdio, Server, ServerError};
