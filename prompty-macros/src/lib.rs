//! Procedural macros of prompty. This crate is a thin shell: each macro calls an ordinary function
//! of `prompty-build` ([`prompty_build::tool::expand`], [`prompty_build::plugin::expand`]), where
//! the logic lives and is tested, and turns its errors into `compile_error!`s (all of them, not
//! only the first). Use the macros through `prompty` (feature `macros`, on by default), which
//! re-exports them: `#[prompty::tool]`, `#[prompty::renderer("key")]`, `#[prompty::parser("key")]`,
//! `#[prompty::executor("key")]`, `#[prompty::processor("key")]`, `prompty::include_prompty!`
//! ([`prompty_build::include::expand`]) and `prompty::eval_tests!` ([`prompty_build::eval::expand`]).
//!
//! The generated code names `::prompty`, so the crate using the macros depends on `prompty`.
//! The examples, compiled as tests, are on `prompty`'s pages of the macros: prompty shows these
//! descriptions after them.

use proc_macro::TokenStream;
use prompty_build::plugin::{self, Component};

/// Emits the expansion, or every error followed by `fallback` (what the compiler should still see
/// of the item, so that the errors are not followed by "cannot find" errors where it is used).
fn emit(
    result: syn::Result<proc_macro2::TokenStream>,
    fallback: impl FnOnce() -> proc_macro2::TokenStream,
) -> TokenStream {
    match result {
        Ok(tokens) => tokens.into(),
        Err(errors) => {
            let mut tokens = fallback();
            tokens.extend(errors.into_compile_error());
            tokens.into()
        }
    }
}

fn plugin(component: Component, attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    emit(plugin::expand(component, attr.into(), item.clone()), || plugin::fallback(item))
}

/// Makes a fn a tool the model can call, registered at link time in prompty's tool name registry.
///
/// The fn may be sync or `async`; its arguments must be owned (`String`, not `&str`) and
/// implement `Deserialize` and `JsonSchema` (primitives, `String`, `Vec<T>`, maps, `Option<T>`,
/// and your own types deriving them); it returns any `Serialize` value, or a `Result<T, E>` whose
/// `Err` (any `E: Display`) becomes a tool error. The fn's doc comment is the tool's description
/// and each parameter's doc comment the parameter's description; `Option<T>` parameters are not
/// required. `#[serde(...)]` and `#[schemars(...)]` attributes on a parameter apply to its
/// argument field (e.g. `#[serde(default)]`).
///
/// The fn stays a normal fn. The macro adds a unit struct with the fn's name (types and functions
/// live in different namespaces) that carries the tool: `get_weather::NAME`,
/// `get_weather::definition()` (a `prompty::Tool`), and `impl prompty::ToolFunction`
/// (`get_weather {}` is a value to hand to `prompty::Tools`).
///
/// Options: `#[tool(name = "weather")]` (default: the fn's name), `#[tool(description = "...")]`
/// (default: the doc comment), `#[tool(namespace = "...")]` (its namespace in the tool catalog;
/// default: the crate's name), `#[tool(idempotent)]` (running it twice has the effect of running
/// it once: a durable turn resumed after an interruption during a call of it runs the call again,
/// where another tool's call needs reconciliation).
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let item = proc_macro2::TokenStream::from(item);
    emit(prompty_build::tool::expand(attr.into(), item.clone()), || prompty_build::tool::fallback(item))
}

/// Turns a `.prompty` file into a module of Rust types and functions the compiler checks:
/// `include_prompty!("prompts/chat.prompty")` at item position generates `pub mod chat`
/// (`include_prompty!("prompts/chat.prompty" as support)` names it `support`). The path is
/// relative to the folder of the crate's `Cargo.toml`.
///
/// The module is the one `prompty_build::compile` writes from a `build.rs`: `Inputs`, `Output`,
/// `agent()`, `prepare`, `invoke`, `invoke_stream`, `tools()`, `turn` (with tools), `LOCALES` and
/// the `_in` functions. [The generated module] on `prompty-build`'s page lists every item, its
/// signature and when it is generated. A prompt
/// included this way has no locale variants: `LOCALES` is empty and the `_in` functions check the
/// tag and run the prompt.
///
/// Every problem of the file (YAML, unknown kinds, template syntax, undeclared template
/// variables, bindings to missing inputs, function tools without a matching `#[prompty::tool]`
/// handler in scope) is a compile error naming the file, line and column. Editing the file, or a
/// file it references with `${file:}`, rebuilds the crate. `${env:}` references are never
/// resolved at compile time: `agent()` resolves them from the environment of the running program
/// at its first call.
///
/// [The generated module]: https://docs.rs/prompty-build/latest/prompty_build/#the-generated-module
#[proc_macro]
pub fn include_prompty(input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    let dirs = prompty_build::include::crate_dirs();
    emit(prompty_build::include::expand(input.clone(), &dirs), || prompty_build::include::fallback(input))
}

/// Turns every case of an eval file into a `#[test]` of `cargo test`, checked at compile time:
/// `eval_tests!("evals/chat.eval.yaml")` generates `mod chat_eval` with one test fn per case
/// (named after the case), each running its case against the response cache. The path is
/// relative to the folder of the crate's `Cargo.toml`, as for `include_prompty!`.
///
/// The eval file and its datasets are read when the crate compiles and checked against the
/// prompts they name: a misspelt var or dataset column (with the closest input), a missing
/// required input, a judge declaring an input the runner does not pass, an assertion the prompt
/// cannot meet are compile errors naming the file and line, all of them at once. Editing the eval
/// file, a dataset or a prompt rebuilds the crate. The logic is
/// `prompty_build::eval::expand`.
#[proc_macro]
pub fn eval_tests(input: TokenStream) -> TokenStream {
    let input = proc_macro2::TokenStream::from(input);
    let dirs = prompty_build::include::crate_dirs();
    emit(prompty_build::eval::expand(input.clone(), &dirs), || prompty_build::eval::fallback(input))
}

/// Registers a type as a renderer (template engine) under one or more keys, at link time: a
/// prompt whose `template.format.kind` is one of the keys is rendered with it.
///
/// Put it on the type (a `struct`, `enum` or `union`) or on its `impl prompty::Renderer for Type`
/// block. The type implements `prompty::Renderer` and `Default` (the registry builds it with
/// `Default::default()`), and is not generic. `prompty::register_renderer` overrides a key at
/// run time.
#[proc_macro_attribute]
pub fn renderer(attr: TokenStream, item: TokenStream) -> TokenStream {
    plugin(Component::Renderer, attr, item)
}

/// Registers a type as a parser (rendered text to messages) under one or more keys, at link
/// time: a prompt whose `template.parser.kind` is one of the keys is parsed with it.
///
/// Put it on the type or on its `impl prompty::Parser for Type` block; the type implements
/// `prompty::Parser` and `Default`, and is not generic.
#[proc_macro_attribute]
pub fn parser(attr: TokenStream, item: TokenStream) -> TokenStream {
    plugin(Component::Parser, attr, item)
}

/// Registers a type as an executor (calls a model) under one or more keys, at link time: a
/// prompt whose `model.provider` is one of the keys is executed with it. Aliases share one
/// instance: `#[executor("foundry", "azure")]`.
///
/// Put it on the type or on its `impl prompty::Executor for Type` block; the type implements
/// `prompty::Executor` and `Default`, and is not generic.
#[proc_macro_attribute]
pub fn executor(attr: TokenStream, item: TokenStream) -> TokenStream {
    plugin(Component::Executor, attr, item)
}

/// Registers a type as a processor (turns a provider's raw response into the result) under one or
/// more keys, at link time: a prompt whose `model.provider` is one of the keys is processed with
/// it.
///
/// Put it on the type or on its `impl prompty::Processor for Type` block; the type implements
/// `prompty::Processor` and `Default`, and is not generic.
#[proc_macro_attribute]
pub fn processor(attr: TokenStream, item: TokenStream) -> TokenStream {
    plugin(Component::Processor, attr, item)
}

/// Registers a type as a tool loader of prompty's tool catalog under one or more names, at link
/// time. The type implements `prompty::catalog::ToolLoader` and `Default`.
#[proc_macro_attribute]
pub fn loader(attr: TokenStream, item: TokenStream) -> TokenStream {
    plugin(Component::Loader, attr, item)
}
