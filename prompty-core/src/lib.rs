//! # prompty-core
//!
//! The `.prompty` format, shared by prompty's compile-time side (`prompty-build`,
//! `include_prompty!`) and its runtime (`prompty`), so that a compile-time check and a runtime
//! behaviour can never disagree:
//!
//! - the typed model of a prompt: [`Agent`], [`Model`], [`Connection`], [`Property`], [`Tool`],
//!   [`Template`], and the [`Message`]s a prompt becomes;
//! - the loader: [`load`], [`load_str`] and their `_with` forms taking [`LoadOptions`]: frontmatter
//!   splitting, every shorthand of the format, `${env:}`/`${file:}` references (confined to the
//!   prompt's folder), errors that name the file, line and field;
//! - [`validate_inputs`];
//! - [`analysis`]: every mistake knowable from the files, as diagnostics naming `file:line:column`
//!   (the checks behind `include_prompty!`, `prompty::check` and the command line);
//! - [`locale`]: BCP 47 locale tags and the lookup order of a prompt's locale variants;
//! - [`openapi`]: the reader of OpenAPI 3.0/3.1 and Swagger 2.0 documents behind `kind: openapi` tools.
//!
//! No async, no HTTP, no runtime errors: those live in `prompty`.
//!
//! ```
//! let agent = prompty_core::load_str(
//!     "---\nname: greet\nmodel: gpt-4o\ninputs:\n  name: World\n---\nuser:\nHello {{name}}",
//!     ".", "greet.prompty")?;
//! let inputs = prompty_core::validate_inputs(&agent, &serde_json::json!({}))?;
//! assert_eq!(inputs["name"], "World");
//! # Ok::<(), prompty_core::Error>(())
//! ```
#![deny(missing_docs)]

pub mod analysis;
mod cache;
mod error;
pub mod eval;
mod finished;
mod frontmatter;
pub mod jinja;
mod keypath;
mod loader;
pub mod locale;
pub mod marker;
mod model;
pub mod mustache;
pub mod openapi;
mod options;
mod origin;
mod references;
pub mod text;
mod validate;
mod yaml;
mod yaml_block;

pub use cache::RuntimeCache;
pub use error::{Error, Location, Result};
pub use loader::{confine_path, load, load_str, load_str_tracked, load_str_with, load_with, locate_field};
pub use model::*;
pub use options::LoadOptions;
pub use validate::{check_input_depth, validate_input_map, validate_inputs, MAX_INPUT_DEPTH};
pub use yaml::parse_yaml;
