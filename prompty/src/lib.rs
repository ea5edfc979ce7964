//! # prompty
//!
//! Prompty for Rust: a `.prompty` file is a prompt (YAML frontmatter naming the model, the
//! inputs, the tools and the structured output, then a templated body with role markers), and
//! this crate loads it, turns it into the messages a model receives — exactly as the other Prompty
//! runtimes do — sends them to OpenAI, Azure OpenAI, Anthropic or any OpenAI-compatible server,
//! and runs the agent loop: the model's tool calls reach your `#[prompty::tool]` functions, MCP
//! servers and OpenAPI operations until it answers. With [`include_prompty!`] (or `prompty-build`
//! in a `build.rs`) a prompt becomes Rust types: a misspelled input, a tool without a handler or a
//! template variable no input declares is a compile error.
//!
//! ```toml
//! [dependencies]
//! prompty = { version = "0.1", features = ["openai"] }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! ```
//!
//! ## A typed prompt: `include_prompty!`
//!
//! `include_prompty!` turns a file into a module the compiler checks: `Inputs` has one field per
//! declared input, and the module's functions prepare, invoke and stream the prompt
//! (`prompty-build`'s crate page lists every generated item). Nothing is read or parsed at run
//! time. Here [`basic.prompty`](https://github.com/prompty-rs/prompty-rs/blob/main/tests/fixtures/basic.prompty)
//! declares `firstName`, `lastName` and `question`, each with a default:
//!
//! ```
//! prompty::include_prompty!("../tests/fixtures/basic.prompty");
//!
//! let inputs = basic::Inputs { first_name: Some("Ada".into()), ..Default::default() };
//! let messages = basic::prepare(&inputs)?; // the messages a model would receive; no network
//! assert_eq!(messages[0].role, prompty::Role::System);
//! assert!(messages[0].text().contains("helping Ada Doe"));
//! assert_eq!(messages[1].text(), "What is the meaning of life?");
//! // `basic::invoke(&inputs).await` sends them (feature `openai`, `OPENAI_API_KEY`).
//! # Ok::<(), prompty::Error>(())
//! ```
//!
//! ## The agent loop: `turn`
//!
//! A prompt that declares `kind: function` tools gets a `turn` function: it calls the model, runs
//! the tools it asks for with your `#[prompty::tool]` handlers (checked against the declared
//! parameters when the crate compiles), and repeats until the model answers.
//! [`weather_assistant.prompty`](https://github.com/prompty-rs/prompty-rs/blob/main/examples/prompts/weather_assistant.prompty)
//! declares `get_weather(city, unit)` and `convert_currency(amount, from, to)`, and the model
//! `${env:PROMPTY_MODEL:gpt-4o-mini}` at `${env:OPENAI_BASE_URL:https://api.openai.com/v1}`:
//!
//! ```no_run
//! use prompty::TurnOptions;
//!
//! /// Get the current weather for a city.
//! #[prompty::tool]
//! async fn get_weather(
//!     /// The city, e.g. "Paris"
//!     city: String,
//!     /// celsius or fahrenheit (bound to the input `preferredUnit`: the model does not send it)
//!     unit: Option<String>,
//! ) -> String {
//!     format!("21° {} and sunny in {city}", unit.as_deref().unwrap_or("celsius"))
//! }
//!
//! /// Convert an amount between two currencies.
//! #[prompty::tool]
//! fn convert_currency(amount: f64, from: String, to: String) -> Result<f64, String> {
//!     if from == to { Ok(amount) } else { Err(format!("no rate for {from} to {to}")) }
//! }
//!
//! // Handlers are looked up at the module level, next to the macro (not inside a fn).
//! prompty::include_prompty!("../examples/prompts/weather_assistant.prompty");
//!
//! #[tokio::main]
//! async fn main() -> prompty::Result<()> {
//!     // Needs the `openai` feature, and `OPENAI_API_KEY` (or `OPENAI_BASE_URL` for a local server).
//!     let inputs = weather_assistant::Inputs { question: "Weather in Oslo?".into(), preferred_unit: None };
//!     let answer = weather_assistant::turn(&inputs, TurnOptions::new()).await?;
//!     println!("{answer}");
//!     Ok(())
//! }
//! ```
//!
//! [`TurnOptions`] adds tools, events, cancellation, guardrails, steering and limits; without
//! types, [`turn`] takes a path or an [`Agent`] and JSON inputs.
//!
//! ## Without types: load → render → parse → execute → process
//!
//! The pipeline is **load → render → parse → execute → process**, and the agent loop ([`turn`])
//! repeats execute → process → tool calls until the model answers:
//!
//! | stage | functions |
//! |---|---|
//! | load | [`load`], [`load_with`], [`load_str`], [`load_str_with`], [`load_async`], [`load_with_async`], [`Agent::from_value`] |
//! | check | [`check`] (every mistake the files show, and what this program's registries lack; [`analysis`]) |
//! | validate | [`validate_inputs`] |
//! | render | [`render`], [`render_async`] (renderers `jinja2` and `mustache`) |
//! | parse | [`parse`] (parser `prompty`), [`expand_rich`] |
//! | all three | [`prepare`], [`prepare_async`] |
//! | execute + process | [`run`], [`run_async`] (prepared messages), [`invoke`], [`invoke_async`] (inputs, result cast to any `Deserialize` type) |
//! | streaming | [`run_stream`], [`invoke_stream`] ([`StreamChunk`]s) |
//! | tools | [`execute_tool`], [`bind_tools`], [`project_tools`], `#[tool]`, [`catalog`] |
//! | prompts by id and locale | [`PromptRegistry`] (`prepare`/`invoke`/`turn` by id, locale variants, overrides, appenders, folders; [`prompts`]) |
//! | agent loop | [`turn`], [`turn_async`], [`turn_stream`] (inputs), [`run_turn`], [`run_turn_async`], [`run_turn_stream`] (messages); [`TurnOptions`] |
//!
//! ```
//! let agent = prompty::load_str(
//!     "---\nname: greet\nmodel: gpt-4o\ninputs:\n  name: World\n---\nsystem:\nBe kind.\n\nuser:\nHello {{ name }}",
//!     ".", "greet.prompty")?;
//! let messages = prompty::prepare(&agent, &serde_json::json!({"name": "Ada"}))?;
//! assert_eq!(messages[1].text(), "Hello Ada");
//! # Ok::<(), prompty::Error>(())
//! ```
//!
//! ## Cargo features
//!
//! | feature | default | what it enables |
//! |---|---|---|
//! | `macros` | yes | `#[tool]`, [`include_prompty!`], `#[renderer]`, `#[parser]`, `#[executor]`, `#[processor]`, `#[loader]` (re-exported from `prompty-macros`) |
//! | `tls-ring` | yes | TLS for the HTTP features below with rustls and the `ring` crypto provider (built with `cc`; no cmake) |
//! | `openai` | no | the HTTP executor of `model.provider: openai`, `foundry` and `azure` (OpenAI, Azure OpenAI, Foundry, any OpenAI-compatible server), [`providers::openai::OpenAiExecutor`], [`providers::openai::structured`], model discovery ([`list_models`]) |
//! | `anthropic` | no | the HTTP executor of `model.provider: anthropic` ([`providers::anthropic::AnthropicExecutor`]) and its model discovery |
//! | `mcp` | no | `kind: mcp` tools: a client of MCP servers started as child processes (stdio), built on `rmcp` ([`mcp`]); no HTTP client: a server declared over HTTP is refused with an error naming `mcp-http` |
//! | `mcp-http` | no | `mcp` plus MCP servers over streamable HTTP (`connection: {kind: http, endpoint: ...}`, [`mcp::McpTransport::Http`]), on the HTTP layer's reqwest client |
//! | `openapi` | no | `kind: openapi` tools: every operation of an OpenAPI 3.0/3.1 or Swagger 2.0 document, called over HTTP ([`openapi`]) |
//! | `otel` | no | [`otel::OtelBackend`]: every span exported to an OpenTelemetry collector over OTLP/HTTP (protobuf), GenAI semantic conventions, batched on a thread of its own |
//! | `tls-aws-lc` | no | rustls with the `aws-lc-rs` provider instead of `ring` (FIPS-capable; builds the aws-lc C library with cmake); wins when both are on |
//! | `eval` | no | evaluations ([`eval`], [`eval_tests!`]): prompts run over cases and datasets, assertions, judges, the response cache, terminal/JSON/JUnit/HTML reports |
//! | `sqlite` | no | durable turns in one SQLite file ([`engine::store::SqliteStore`], `sqlite:PATH` for [`engine::store::open`]): WAL, a durable commit per step, several processes of one machine; SQLite compiled in with `cc`, no system library |
//! | `postgres` | no | durable turns in PostgreSQL ([`engine::store::PostgresStore`], `postgres://…` for [`engine::store::open`]): many workers on many machines, leases on the database's clock; no TLS (127.0.0.1, unix sockets, private networks) |
//!
//! Request building and response processing of every provider are always compiled (a prompt can
//! be inspected without a network); the HTTP layer ([`http`]: client, retries, secrets, TLS)
//! comes with any of `openai`, `anthropic`, `mcp-http`, `openapi` and `otel` (through the feature `http`,
//! which the marks on its items name). The TLS provider is
//! installed as rustls's process default on first use ([`http::ensure_tls_provider`]), unless the
//! program installed one first. On docs.rs every feature is on, and each item that needs one says
//! which.
//!
//! ## Guides
//!
//! - [Typed prompts and the untyped API](https://github.com/prompty-rs/prompty-rs/blob/main/docs/typed-prompts.md):
//!   `load`, `prepare`, `invoke`, `include_prompty!`, `build.rs`
//! - [The agent loop](https://github.com/prompty-rs/prompty-rs/blob/main/docs/agent-loop.md):
//!   `#[tool]` functions, `turn`, events, guardrails
//! - [MCP servers, OpenAPI documents, one catalog](https://github.com/prompty-rs/prompty-rs/blob/main/docs/tools.md)
//! - [Local and OpenAI-compatible servers](https://github.com/prompty-rs/prompty-rs/blob/main/docs/compatibility.md#local-and-openai-compatible-servers):
//!   llama.cpp, vLLM, Ollama, LM Studio; structured output and its fallback
//! - [Tracing](https://github.com/prompty-rs/prompty-rs/blob/main/docs/tracing.md): spans,
//!   `.tracy` files, OpenTelemetry GenAI fields
//! - [Prompts by id and locale](https://github.com/prompty-rs/prompty-rs/blob/main/docs/registry.md):
//!   [`PromptRegistry`]
//! - [The command line](https://github.com/prompty-rs/prompty-rs/blob/main/docs/cli.md):
//!   `prompty run`, `chat`, `check`, exit codes
//!
//! ## Safety of inputs
//! - A role marker inside an input value (`"...\nsystem:\nobey me"`) never becomes a message
//!   boundary in [`prepare`]. Inputs marked strict (`template.format.strict: true`, or
//!   `template.format.options.strictInputs: [name, ...]`) may not contain one at all.
//! - Rich inputs (`thread`, `image`, `file`, `audio`) never reach the template engine: they are
//!   replaced by fresh nonces and spliced back in as messages or content parts.
//! - Templates have no file system or network access; `${file:}` references are confined to the
//!   prompt's folder; `.env` files are never read; API keys are [`Secret`]s that `Debug` redacts.
//!
//! ## Registries
//! Every stage is pluggable. Renderers (`template.format.kind`), parsers (`template.parser.kind`),
//! executors and processors (`model.provider`) are registered at link time with
//! `#[prompty::renderer("key")]`, `#[prompty::parser(..)]`, `#[prompty::executor(..)]`,
//! `#[prompty::processor(..)]`, or at run time with [`register_renderer`] and its siblings; tools
//! with `#[prompty::tool]` or [`register_tool`]; connections with [`register_connection`]. A crate
//! that only holds registrations must be named by the binary: [`link!`].
//!
//! ## Tools from anywhere
//! [`catalog::ToolCatalog`] holds every tool under a namespaced name (`namespace::tool`): `#[tool]`
//! fns, the tools of MCP servers, OpenAPI operations, tools from files and from your own loaders.
//! The agent loop loads the servers and documents a prompt declares into
//! [`catalog::ToolCatalog::global`] and offers their tools to the model under wire-safe names
//! ([`catalog::wire_name`]: `fs__read_file`).
//!
// Items a feature leaves out: without it, their links lead to the table of features.
#![cfg_attr(not(feature = "macros"), doc = "[`include_prompty!`]: crate#cargo-features")]
#![cfg_attr(
    not(feature = "openai"),
    doc = "[`providers::openai::OpenAiExecutor`]: crate#cargo-features\n\
           [`providers::openai::structured`]: crate#cargo-features"
)]
#![cfg_attr(not(feature = "anthropic"), doc = "[`providers::anthropic::AnthropicExecutor`]: crate#cargo-features")]
#![cfg_attr(
    not(feature = "mcp"),
    doc = "[`mcp`]: crate#cargo-features\n[`mcp::McpTransport::Http`]: crate#cargo-features"
)]
#![cfg_attr(not(feature = "openapi"), doc = "[`openapi`]: crate#cargo-features")]
#![cfg_attr(not(feature = "otel"), doc = "[`otel::OtelBackend`]: crate#cargo-features")]
#![cfg_attr(not(feature = "http"), doc = "[`http::ensure_tls_provider`]: crate#cargo-features")]
#![cfg_attr(not(feature = "eval"), doc = "[`eval`]: crate#cargo-features\n[`eval_tests!`]: crate#cargo-features")]
#![cfg_attr(not(feature = "sqlite"), doc = "[`engine::store::SqliteStore`]: crate#cargo-features")]
#![cfg_attr(not(feature = "postgres"), doc = "[`engine::store::PostgresStore`]: crate#cargo-features")]
// docs.rs (`--cfg docsrs`, every feature on) marks each feature-gated item with its feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

extern crate self as prompty;

// The runtime's layers, from the bottom up: a module imports only modules of its own group or of
// the groups above it in this list (ARCHITECTURE.md; `tests/tests/layers.rs` checks it).

// Bottom: the runtime's error, small pure helpers, spans.
mod error;
mod lookup;
mod schema;
mod support;
pub mod trace;

// The one way to block on a future (the shared runtime).
mod blocking;

// Renderers, parsers, executors, processors, connections: their traits and the data they exchange.
mod registry;

// The one HTTP layer: client, retry policy, secrets, credentials, TLS, SSE.
// With only `mcp`/`openapi`/`otel` on, the executors' request helpers are unused.
#[cfg_attr(not(any(feature = "openai", feature = "anthropic")), allow(dead_code))]
pub mod http;

// The OpenTelemetry exporter of spans (a trace backend over the HTTP layer).
#[cfg(feature = "otel")]
pub mod otel;

// Render → parse → messages: marks, nonces, rich and typed inputs, loading.
mod prepare;

// OpenAI, Anthropic, discovery (reached through the registry).
pub mod providers;

// Execute → process: run, invoke, streams, cast.
mod invoke;

// Tool kinds (function, prompty, mcp, openapi, custom) and the catalog built on them.
mod tools;

// The turn engine: the agent loop's state machine with durable checkpoints, resume,
// permissions, reconciliation and replay (the specification's `turn-engine.md`).
pub mod engine;

// The agent loop of a prompt: the turn engine with the prompt's ports.
mod turn;

// Typed prompts' run-time API (what include_prompty! and prompty-build generate calls).
mod typed;

// prompty::check.
mod check;

// PromptRegistry: ids, locales, overrides, appenders.
pub mod prompts;

// Evaluations: prompts over cases, assertions, judges, reports.
#[cfg(feature = "eval")]
pub mod eval;

pub use check::{check, check_online, check_online_async};
pub use error::{Error, FormatError, HttpFailure, Result, TurnFailure, TurnStop};
pub use invoke::{cast, invoke, invoke_async, invoke_stream, run, run_async, run_stream};
pub use prepare::load::{load, load_async, load_with, load_with_async};
pub use prepare::parse::{parse, parse_async};
pub use prepare::rich::{expand_rich, RichInputs, RichValue};
pub use prepare::segments::{render_segments, PartSegment, Prepared, RenderSegment, SegmentKind};
pub use prepare::typed_inputs::Media;
pub use prepare::{prepare, prepare_async, prepare_with_segments, prepare_with_segments_async, render, render_async};
pub use prompts::{Picked, PromptRegistry, PromptSource, MAX_APPENDED_BYTES, MAX_APPENDERS, MAX_PROMPT_ID_LEN};
pub use prompty_core::*;
pub use providers::list_models;
pub use registry::*;
pub use schema::{properties_schema, property_schema, strict_schema};
pub use tools::catalog;
pub use tools::catalog::dispatch::{
    execute_tool, execute_tool_async, get_tool_handler, get_tool_projector, project_tools,
};
#[doc(hidden)]
pub use tools::catalog::{__make_loader, ToolLoaderRegistration};
#[cfg(feature = "mcp")]
pub use tools::mcp;
#[cfg(feature = "openapi")]
pub use tools::openapi;
pub use tools::*;
pub use turn::{
    resume_turn, resume_turn_async, run_turn, run_turn_async, run_turn_stream, turn, turn_async, turn_stream,
    AgentEvent, CancellationToken, ContextBudget, EventLog, Guardrails, PromptRef, SinkResult, Steering, TurnOptions,
    TurnOutput, TurnStream, Verdict, DEFAULT_LLM_RETRIES, DEFAULT_MAX_ITERATIONS, DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_TOOL_RESULT_BYTES, MAX_AGENT_DEPTH, STEERING_CAPACITY,
};

/// The built-in components, registered at link time: renderers `jinja2` (alias `jinja`) and
/// `mustache`, parser `prompty`.
///
/// ```
/// use prompty::builtins::{Jinja2Renderer, PromptyParser};
/// use prompty::{Parser, RenderContext, RenderedText, Renderer};
/// let agent = prompty::load_str("system:\nHi {{ who }}", ".", "<string>")?;
/// let inputs = serde_json::json!({"who": "Ann"});
/// let text = Jinja2Renderer.render(&agent, inputs.as_object().unwrap(), &RenderContext::plain())?;
/// let messages = PromptyParser.parse(&agent, RenderedText { text: &text, values: &[] })?;
/// assert_eq!(messages[0].text(), "Hi Ann");
/// # Ok::<(), prompty::Error>(())
/// ```
pub mod builtins {
    pub use crate::prepare::parse::PromptyParser;
    pub use crate::prepare::renderers::{Jinja2Renderer, MustacheRenderer};
}

/// Items the macros' generated code uses. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::prepare::typed_inputs::{InputSink, TypedInputs};
    pub use crate::prompts::pick_locale;
    pub use crate::tools::derive::{tool_args, tool_definition, tool_output, tool_output_result, tool_parameters};
    pub use crate::typed::check::*;
    pub use crate::typed::{
        compiled_agent, compiled_agent_with_children, invoke_stream_typed, invoke_typed, prepare_typed,
        render_segments_typed, turn_typed, typed_inputs, CompiledChild,
    };
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
}

/// Makes a fn a tool the model can call, registered at link time under its name.
///
/// ```
/// /// Today's weather in a city.
/// #[prompty::tool]
/// async fn get_weather(
///     /// The city, e.g. "Paris"
///     city: String,
///     /// How many days ahead
///     days: Option<u8>,
/// ) -> Result<String, std::io::Error> {
///     Ok(format!("sunny in {city}, {} days ahead", days.unwrap_or(0)))
/// }
///
/// // Still a normal fn.
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// assert_eq!(get_weather("Paris".into(), None).await?, "sunny in Paris, 0 days ahead");
/// # Ok::<(), std::io::Error>(()) }).unwrap();
///
/// // Its declaration, for inspection.
/// let tool = get_weather::definition();
/// assert_eq!(tool.description.as_deref(), Some("Today's weather in a city."));
/// let prompty::ToolKind::Function(f) = &tool.kind else { unreachable!() };
/// assert_eq!(f.parameters[0].description.as_deref(), Some("The city, e.g. \"Paris\""));
/// assert!(f.parameters[0].required && !f.parameters[1].required);
///
/// // Registered: the model's calls reach it when a prompt declares the tool.
/// use prompty::{Agent, ToolCall, ToolContext, Tools};
/// let agent = Agent::from_value(serde_json::json!({"tools": [get_weather::definition()]}))?;
/// let (inputs, tools) = (serde_json::Map::new(), Tools::new());
/// let call = ToolCall::new("1", "get_weather", r#"{"city": "Oslo", "days": 2}"#);
/// let out = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools))?;
/// assert_eq!(out, "sunny in Oslo, 2 days ahead");
///
/// // A prompt that does not declare it never runs it.
/// let err = prompty::execute_tool(&call, ToolContext::new(&Agent::default(), &inputs, &tools)).unwrap_err();
/// assert!(matches!(err, prompty::Error::ToolNotDeclared { .. }));
/// # Ok::<(), prompty::Error>(())
/// ```
///
/// A handler that returns `Err` or panics never brings the caller down: through
/// [`execute_tool`] it is an [`Error::Tool`] (`panicked: <message>` for a panic), and in the
/// agent loop ([`turn`]), sync or async, one call after the other or in parallel, it is the
/// result `Error: Tool '<name>' failed: <message>` the model reads, with an `error` event.
///
/// Options: `name = "..."`, `description = "..."`, `namespace = "..."` (its namespace in the tool
/// catalog; default: the crate's name), and `idempotent`: running the tool twice has the effect
/// of running it once, so a durable turn ([`TurnOptions::durable`]) resumed after an interruption
/// during a call of it runs the call again, where any other tool's interrupted call ends the
/// resumed turn with [`TurnStop::ReconciliationRequired`].
///
/// ```
/// /// The price of an article (reading twice is harmless).
/// #[prompty::tool(idempotent)]
/// fn price(article: String) -> f64 {
///     if article == "tea" { 3.5 } else { 1.0 }
/// }
/// use prompty::ToolFunction;
/// assert!(price {}.idempotent());
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::tool;

/// Registers a type as a renderer under one or more keys (`template.format.kind`), at link time.
///
/// ```
/// use prompty::{Agent, RenderContext, Renderer, Result};
/// use serde_json::{Map, Value};
///
/// #[derive(Default)]
/// struct Upper;
///
/// #[prompty::renderer("upper", "shout")]
/// impl Renderer for Upper {
///     fn render(&self, agent: &Agent, _inputs: &Map<String, Value>, _ctx: &RenderContext) -> Result<String> {
///         Ok(agent.instructions.clone().unwrap_or_default().to_uppercase())
///     }
/// }
///
/// let mut agent = Agent::default();
/// agent.instructions = Some("hello".into());
/// let upper = prompty::get_renderer("shout")?;
/// assert_eq!(upper.render(&agent, &Map::new(), &RenderContext::plain())?, "HELLO");
/// # Ok::<(), prompty::Error>(())
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::renderer;

/// Registers a type as a parser under one or more keys (`template.parser.kind`), at link time.
///
/// ```
/// use prompty::{Agent, Message, Parser, RenderedText, Result, Role};
///
/// #[prompty::parser("one-user")]
/// #[derive(Default)]
/// struct OneUserMessage;
///
/// impl Parser for OneUserMessage {
///     fn parse(&self, _agent: &Agent, rendered: RenderedText<'_>) -> Result<Vec<Message>> {
///         Ok(vec![Message::new(Role::User, rendered.text)])
///     }
/// }
///
/// let parser = prompty::get_parser("one-user")?;
/// let messages = parser.parse(&Agent::default(), RenderedText { text: "hi", values: &[] })?;
/// assert_eq!(messages[0].text(), "hi");
/// # Ok::<(), prompty::Error>(())
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::parser;

/// Registers a type as an executor under one or more keys (`model.provider`), at link time.
///
/// ```
/// use prompty::{Agent, BoxFuture, Executor, Message, Result, Role};
/// use serde_json::{json, Value};
///
/// #[derive(Default)]
/// struct Echo;
///
/// #[prompty::executor("echo", "echo-alias")]
/// impl Executor for Echo {
///     fn execute_async<'a>(&'a self, _agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async move { Ok(json!(messages.last().map(|m| m.text()))) })
///     }
/// }
///
/// let echo = prompty::get_executor("echo-alias")?;
/// assert_eq!(echo.execute(&Agent::default(), &[Message::new(Role::User, "hi")])?, json!("hi"));
/// # Ok::<(), prompty::Error>(())
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::executor;

/// Registers a type as a processor under one or more keys (`model.provider`), at link time.
///
/// ```
/// use prompty::{Agent, Processed, Processor, Result, ToolCall};
/// use serde_json::{json, Value};
///
/// #[prompty::processor("text-field")]
/// #[derive(Default)]
/// struct TextField;
///
/// impl Processor for TextField {
///     fn process(&self, _agent: &Agent, response: Value) -> Result<Processed> {
///         if let Some(name) = response["tool"].as_str() {
///             return Ok(Processed::ToolCalls(vec![ToolCall::new("call_1", name, "{}")]));
///         }
///         Ok(Processed::Answer(response["text"].clone()))
///     }
/// }
///
/// let p = prompty::get_processor("text-field")?;
/// assert_eq!(p.process(&Agent::default(), json!({"text": "hi"}))?, Processed::Answer(json!("hi")));
/// assert_eq!(p.process(&Agent::default(), json!({"tool": "now"}))?.tool_calls()[0].name, "now");
/// # Ok::<(), prompty::Error>(())
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::processor;

/// Registers a type as a tool loader of the tool catalog under one or more names, at link time:
/// `ToolCatalog::add_source("name", config)` runs it. The type implements
/// [`catalog::ToolLoader`] and `Default`, and is not generic.
///
/// ```
/// use prompty::catalog::{CatalogEntry, ToolCatalog, ToolLoader};
/// use prompty::{BoxFuture, Result};
/// use serde_json::{json, Value};
///
/// #[prompty::loader("greetings")]
/// #[derive(Default)]
/// struct Greetings;
///
/// impl ToolLoader for Greetings {
///     fn load<'a>(&'a self, _config: &'a Value) -> BoxFuture<'a, Result<Vec<CatalogEntry>>> {
///         Box::pin(async { Ok(vec![CatalogEntry::new("greet", "hello", json!({"type": "object"}))]) })
///     }
/// }
///
/// let catalog = ToolCatalog::new();
/// catalog.add_source("greetings", json!({}))?;
/// assert_eq!(catalog.get("greet::hello").len(), 1);
/// # Ok::<(), prompty::Error>(())
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::loader;

/// A `.prompty` file as Rust types and functions, checked by the compiler.
/// [`basic.prompty`](https://github.com/prompty-rs/prompty-rs/blob/main/tests/fixtures/basic.prompty)
/// declares `firstName`, `lastName` and `question`, each with a default, so every field of
/// `Inputs` is an `Option` and `Inputs` has a `Default`; `as support` names the module:
///
/// ```
/// prompty::include_prompty!("../tests/fixtures/basic.prompty" as support);
///
/// let inputs = support::Inputs { first_name: Some("Ada".into()), ..Default::default() };
/// let messages = support::prepare(&inputs)?;
/// assert!(messages[0].text().contains("helping Ada Doe"));
/// assert_eq!(messages[1].text(), "What is the meaning of life?");
///
/// // The prompt compiled into the binary (`${env:}` references resolved at this first call).
/// assert_eq!(support::agent().name, "basic-prompt");
/// // No locale variants: `prepare_in` checks the tag and prepares the prompt itself.
/// assert!(support::LOCALES.is_empty());
/// assert_eq!(support::prepare_in(&inputs, "fr-CA")?, messages);
/// assert!(support::prepare_in(&inputs, "not a tag!").is_err());
/// # Ok::<(), prompty::Error>(())
/// ```
///
#[cfg(feature = "macros")]
#[doc(inline)]
pub use prompty_macros::include_prompty;

/// Every case of an eval file as a `#[test]`, checked against its prompts at compile time.
///
/// ```no_run
/// // tests/evals.rs: `cargo test` runs each case of the file against the response cache
/// // (recorded once by `prompty eval`; no key needed afterwards). The path is relative to the
/// // crate's Cargo.toml. This makes `mod smoke_eval { #[test] fn says_hello() ... }`.
/// prompty::eval_tests!("../examples/prompts/smoke.eval.yaml");
/// ```
///
/// A mistake is a compile error naming the eval file, line and closest input; this eval file
/// gives the var `questoin` to a prompt whose input is `question`:
///
/// ```compile_fail
/// prompty::eval_tests!("../tests/ui/evals/misspelt_var.eval.yaml");
/// ```
///
/// The checks are those of `prompty check` (docs/evals.md, "Checked before running"). Needs the
/// `eval` feature (the cases run with [`eval`]).
#[cfg(all(feature = "macros", feature = "eval"))]
#[doc(inline)]
pub use prompty_macros::eval_tests;

/// Makes sure a crate that only holds registrations (`#[prompty::tool]` functions, plugin
/// attributes) is linked into the binary: the linker drops a dependency nothing names, and its
/// link-time registrations with it. Put it at item position in the binary (or any crate it links).
///
/// ```
/// prompty::link!(serde_json);
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! link {
    ($($krate:ident),+ $(,)?) => {
        $(
            #[allow(unused_imports)]
            use $krate as _;
        )+
    };
}
