//! Compile-time side of prompty: turns `.prompty` files into Rust code the compiler checks, from
//! a `build.rs` (through [`compile`]) and from `prompty::include_prompty!` ([`include::expand`]),
//! sharing one code generator ([`codegen`]) and reading files with the same `prompty-core` loader
//! the runtime uses ([`typed::analyze`]), so a compile-time check and a runtime behaviour never
//! disagree.
//!
//! ## A folder of prompts from `build.rs`
//!
//! ```toml
//! [dependencies]
//! prompty = { version = "0.1", features = ["openai"] }
//!
//! [build-dependencies]
//! prompty-build = "0.1"
//! ```
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), prompty_build::CompileError> {
//!     prompty_build::compile("prompts")
//! }
//! ```
//!
//! and in the crate, in the module where the prompts' `#[prompty::tool]` handlers are in scope
//! (this line only compiles in a crate whose build script wrote the file):
//!
//! ```ignore
//! include!(concat!(env!("OUT_DIR"), "/prompty.rs"));
//! ```
//!
//! Every `.prompty` file below the folder becomes a module: `prompts/chat.prompty` is `mod chat`,
//! `prompts/support/triage.prompty` is `mod support { mod triage }`, and locale variants
//! (`greeting.fr.prompty`) join their default's module. Problems are `cargo::error=` lines naming
//! file, line and column; Cargo reruns the script when a prompt changes, and the script regenerates
//! only the modules of the prompts that changed (each module is a file of its own in `OUT_DIR`). [`Config`] has the
//! options (output file, where the tool handlers are). For one file, `prompty::include_prompty!`
//! generates the same module at the place it is written.
//!
//! ## The generated module
//!
//! What `prompty_build::compile` and `include_prompty!` generate for a prompt `<name>.prompty`,
//! in `pub mod <name>`:
//!
//! | item | what it is | generated |
//! |---|---|---|
//! | `Inputs` | a struct with one field per declared input (snake_case, serialized under the input's name): a required input without a default is a plain field, an optional or defaulted one an `Option` (`None` lets the prompt's default apply). Derives `Debug`, `Clone`, `PartialEq`, `Serialize`, `Deserialize`, and `Default` when every field is an `Option` | always |
//! | `Output` | the structured output: a struct with one field per `outputs:` property | when the prompt declares `outputs:` |
//! | nested structs | one per `object` input or output with `properties`, named in PascalCase after it (`address` → `Address`, an output's `place` → `OutputPlace`, array items → `…Item`) | when there are such objects |
//! | `PATH` | `&str`: the prompt file, as named in error messages | always |
//! | `agent()` | `&'static prompty::Agent`: the prompt, loaded once from the JSON compiled into the binary (no file read, no YAML parsed at run time); its `${env:}` references resolved from the running program's environment at the first call | always |
//! | `prepare(&Inputs)` | `prompty::Result<Vec<prompty::Message>>`: the messages a model would receive, as `prompty::prepare` gives them | always |
//! | `invoke(&Inputs)` | async; `prompty::Result<Output>`, or `prompty::Result<String>` without `outputs:`: one model call with the provider of `model.provider` | always |
//! | `invoke_stream(&Inputs)` | async; `prompty::Result<prompty::ChunkStream>`: the answer's chunks as they arrive | always |
//! | `tools()` | `prompty::Tools`: the `#[prompty::tool]` handlers of the prompt's `kind: function` tools (and of its `kind: prompty` children), checked against their declared parameters at compile time | always |
//! | `turn(&Inputs, prompty::TurnOptions)` | async; the agent loop with the handlers of `tools()`, until the model answers (`Output` or `String`) | when the prompt declares tools |
//! | `LOCALES` | `&[&str]`: the locale tags of the variants, in conventional case, sorted (`["fr", "pt-BR"]`; empty without variants, always for `include_prompty!`) | always |
//! | `LOCALE_PATHS` | `&[&str]`: the variants' files, in the order of `LOCALES` | always |
//! | `agent_in(locale)` | `prompty::Result<&'static prompty::Agent>`: the variant a locale picks (exact tag, its truncations, the fallback locale of `prompty::PromptRegistry::global()`, then the default prompt); a tag that is not BCP 47 is an error | always |
//! | `prepare_in(&Inputs, locale)`, `invoke_in(&Inputs, locale)`, `invoke_stream_in(&Inputs, locale)` | `prepare`, `invoke`, `invoke_stream` on the prompt of `agent_in(locale)`; the variants share `Inputs`, `Output` and `tools()` | always |
//! | `turn_in(&Inputs, locale, prompty::TurnOptions)` | `turn` on the prompt of `agent_in(locale)` | when the prompt declares tools |
//!
//! Field types: `string` → `String`, `integer` → `i64`, `float` → `f64`, `boolean` → `bool`,
//! `array` → `Vec<_>`, `thread` → `Vec<prompty::Message>`, `image`/`file`/`audio` →
//! `prompty::Media`, an `object` without `properties` → `serde_json::Value`. Hidden items hold the
//! compiled JSON and the compile-time checks of the tools; the module's own rustdoc names the
//! file and, with variants, their locales. `${env:}` references are never resolved at compile
//! time: no value of the build machine reaches the binary.
//!
//! ```
//! let root = std::env::temp_dir().join(format!("prompty-doc-crate-{}", std::process::id()));
//! std::fs::create_dir_all(root.join("prompts")).unwrap();
//! let weather = |hello: &str| format!("---\ninputs:\n  city: {{kind: string, required: true}}\n\
//!     outputs:\n  place: {{kind: object, properties: {{name: {{kind: string}}}}}}\n\
//!     tools:\n  - {{name: get_weather, kind: function, parameters: [{{name: city, kind: string}}]}}\n\
//!     ---\nuser:\n{hello} {{{{ city }}}}");
//! std::fs::write(root.join("prompts/weather.prompty"), weather("Weather in")).unwrap();
//! std::fs::write(root.join("prompts/weather.fr.prompty"), weather("Météo à")).unwrap();
//! let code = prompty_build::Config::new("prompts").manifest_dir(&root).generate()?.code;
//! for item in [
//!     "pub mod weather {", "pub struct Inputs", "pub city: ::std::string::String,", "pub struct Output",
//!     "pub struct OutputPlace", "pub const PATH: &str", "pub fn agent()", "pub fn prepare(",
//!     "pub async fn invoke(", "pub async fn invoke_stream(", "pub fn tools()", "pub async fn turn(",
//!     r#"pub const LOCALES: &[&str] = &["fr"];"#, "pub const LOCALE_PATHS", "pub fn agent_in(",
//!     "pub fn prepare_in(", "pub async fn invoke_in(", "pub async fn invoke_stream_in(", "pub async fn turn_in(",
//! ] {
//!     assert!(code.contains(item), "{item}");
//! }
//! # Ok::<(), prompty_build::CompileError>(())
//! ```
//!
//! ## The attribute macros
//!
//! It also holds the logic of prompty's attribute macros, as ordinary functions over
//! [`proc_macro2::TokenStream`] that `prompty-macros` calls (and that tests call without a
//! compiler):
//!
//! - [`tool::expand`]: `#[prompty::tool]` on a fn;
//! - [`eval::expand`]: `prompty::eval_tests!("evals/chat.eval.yaml")`, one `#[test]` per case of an
//!   eval file, checked against its prompts at compile time;
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

mod cache;
pub mod codegen;
mod compile;
mod errors;
pub mod eval;
pub mod include;
mod names;
pub mod plugin;
pub mod tool;
pub mod typed;

pub use compile::{compile, CompileError, Config, Generated};
