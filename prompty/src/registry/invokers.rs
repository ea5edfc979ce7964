//! The four pipeline protocols ([`Renderer`], [`Parser`], [`Executor`], [`Processor`]) and their
//! registries, keyed by `template.format.kind`, `template.parser.kind` and `model.provider`.

use super::store::Store;
use super::stream::{ChunkStream, Outcome, RawStream, StreamChunk, StreamFailure};
use crate::{Agent, Error, Message, Result, ToolCall};
use serde_json::{Map, Value};
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

/// A boxed, sendable future: what the async methods of the protocols return.
///
/// ```
/// use prompty::BoxFuture;
/// fn length<'a>(text: &'a str) -> BoxFuture<'a, usize> {
///     Box::pin(async move { text.len() })
/// }
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(length("why?")), 4);
/// ```
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How a renderer writes interpolated values. Writing values through [`RenderContext::write_value`]
/// (instead of pushing them to the output directly) lets [`crate::prepare`] tell them from template
/// text, so a role marker inside a value never starts a message. A Unicode noncharacter in a value
/// (U+FDD0–U+FDEF, U+xFFFE, U+xFFFF) is written as U+FFFD, so a value can never forge the marks;
/// the messages `prepare` returns hold no noncharacter.
///
/// ```
/// let ctx = prompty::RenderContext::plain();
/// let mut out = String::from("Hello ");
/// ctx.write_value(&mut out, "World");
/// assert_eq!(out, "Hello World");
/// ```
#[derive(Clone, Copy)]
pub struct RenderContext {
    pub(crate) marks: Option<super::marks::Marks>,
}

impl RenderContext {
    /// A context that writes values as they are (what [`crate::render`] uses).
    pub fn plain() -> Self {
        RenderContext { marks: None }
    }

    /// Appends an interpolated value to `out`.
    pub fn write_value(&self, out: &mut String, text: &str) {
        match &self.marks {
            Some(m) => m.wrap(out, text),
            None => out.push_str(text),
        }
    }
}

/// A template engine: the `template.format.kind` of a prompt selects it.
///
/// Implement [`Renderer::render`]; the async form defaults to it. Register an implementation with
/// `#[prompty::renderer("key")]` on the type (it needs `Default`) or with [`register_renderer`].
///
/// ```
/// use prompty::{Agent, RenderContext, Renderer, Result};
/// use serde_json::{Map, Value};
///
/// #[derive(Default)]
/// struct Upper;
/// impl Renderer for Upper {
///     fn render(&self, agent: &Agent, _inputs: &Map<String, Value>, _ctx: &RenderContext) -> Result<String> {
///         Ok(agent.instructions.clone().unwrap_or_default().to_uppercase())
///     }
/// }
/// prompty::register_renderer("upper", Upper);
/// assert!(prompty::get_renderer("upper").is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is registered as a renderer but does not implement `prompty::Renderer`",
    label = "this type needs `impl prompty::Renderer for {Self}`",
    note = "implement `fn render(&self, agent: &prompty::Agent, inputs: &serde_json::Map<String, serde_json::Value>, ctx: &prompty::RenderContext) -> prompty::Result<String>`"
)]
pub trait Renderer: std::any::Any + Send + Sync {
    /// Renders the agent's template with validated inputs (rich inputs already replaced by nonces).
    /// Write every interpolated value with [`RenderContext::write_value`].
    fn render(&self, agent: &Agent, inputs: &Map<String, Value>, ctx: &RenderContext) -> Result<String>;

    /// Async form of [`Renderer::render`]; by default runs it.
    fn render_async<'a>(
        &'a self,
        agent: &'a Agent,
        inputs: &'a Map<String, Value>,
        ctx: &'a RenderContext,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move { self.render(agent, inputs, ctx) })
    }
}

/// Rendered text handed to a parser: the text, and the byte ranges of it that are interpolated
/// values (never message boundaries).
///
/// ```
/// let r = prompty::RenderedText { text: "user:\nHi", values: &[] };
/// assert_eq!(r.text.len(), 8);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RenderedText<'a> {
    /// The rendered text.
    pub text: &'a str,
    /// Interpolated byte ranges of `text`, sorted.
    pub values: &'a [Range<usize>],
}

/// A parser from rendered text to messages: the `template.parser.kind` of a prompt selects it.
///
/// ```
/// use prompty::{Agent, Message, Parser, RenderedText, Result, Role};
/// #[derive(Default)]
/// struct OneUserMessage;
/// impl Parser for OneUserMessage {
///     fn parse(&self, _agent: &Agent, rendered: RenderedText<'_>) -> Result<Vec<Message>> {
///         Ok(vec![Message::new(Role::User, rendered.text)])
///     }
/// }
/// prompty::register_parser("one-user", OneUserMessage);
/// assert!(prompty::get_parser("one-user").is_ok());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is registered as a parser but does not implement `prompty::Parser`",
    label = "this type needs `impl prompty::Parser for {Self}`",
    note = "implement `fn parse(&self, agent: &prompty::Agent, rendered: prompty::RenderedText<'_>) -> prompty::Result<Vec<prompty::Message>>`"
)]
pub trait Parser: std::any::Any + Send + Sync {
    /// Splits rendered text into messages.
    fn parse(&self, agent: &Agent, rendered: RenderedText<'_>) -> Result<Vec<Message>>;

    /// Async form of [`Parser::parse`]; by default runs it.
    fn parse_async<'a>(&'a self, agent: &'a Agent, rendered: RenderedText<'a>) -> BoxFuture<'a, Result<Vec<Message>>> {
        Box::pin(async move { self.parse(agent, rendered) })
    }
}

/// Calls a model: the `model.provider` of a prompt selects it. Returns the provider's raw response.
///
/// Implement [`Executor::execute_async`]; the sync [`Executor::execute`] runs it to completion,
/// also when called from inside a tokio runtime (on a helper thread).
///
/// ```
/// use prompty::{Agent, BoxFuture, Executor, Message, Result};
/// use serde_json::{json, Value};
/// #[derive(Default)]
/// struct Echo;
/// impl Executor for Echo {
///     fn execute_async<'a>(&'a self, _agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async move { Ok(json!(messages.last().map(|m| m.text()))) })
///     }
/// }
/// prompty::register_executor("echo", Echo);
/// let out = prompty::get_executor("echo")?.execute(&Agent::default(), &[prompty::Message::new(prompty::Role::User, "hi")])?;
/// assert_eq!(out, json!("hi"));
/// # Ok::<(), prompty::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is registered as an executor but does not implement `prompty::Executor`",
    label = "this type needs `impl prompty::Executor for {Self}`",
    note = "implement `fn execute_async<'a>(&'a self, agent: &'a prompty::Agent, messages: &'a [prompty::Message]) -> prompty::BoxFuture<'a, prompty::Result<serde_json::Value>>`"
)]
pub trait Executor: Send + Sync + 'static {
    /// Sends the messages to the model and returns the raw response.
    fn execute_async<'a>(&'a self, agent: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, Result<Value>>;

    /// Sync form of [`Executor::execute_async`].
    fn execute(&self, agent: &Agent, messages: &[Message]) -> Result<Value> {
        crate::blocking::block_on(self.execute_async(agent, messages))?
    }

    /// The messages one round of tool calling adds to the conversation, in this provider's shape
    /// (spec §9.4): the agent loop ([`crate::turn`]) never builds them itself. By default the
    /// provider-neutral shape of [`crate::tool_messages`], which every wire builder of prompty
    /// reads; a provider that must replay more of its response (reasoning items, thinking
    /// blocks) overrides it.
    ///
    /// ```
    /// use prompty::{Agent, BoxFuture, Executor, Message, Result, ToolCall, ToolResult, ToolRound};
    /// use serde_json::Value;
    /// struct Echo;
    /// impl Executor for Echo {
    ///     fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
    ///         Box::pin(async { Ok(Value::Null) })
    ///     }
    /// }
    /// let calls = [ToolCall::new("c1", "now", "{}")];
    /// let results = [ToolResult::ok("c1", "now", "12:00")];
    /// let round = ToolRound { response: None, text: None, calls: &calls, results: &results };
    /// let messages = Echo.format_tool_messages(&Agent::default(), &round)?;
    /// assert_eq!(messages.len(), 2);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    fn format_tool_messages(&self, _agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
        Ok(crate::tool_messages(round))
    }

    /// The whole response the events of a streamed call make, as [`Executor::execute_async`]
    /// would have returned it, when this provider can rebuild it. The agent loop hands it to
    /// [`Executor::format_tool_messages`] for a streamed tool round, so that the round replays
    /// what a whole one does (thinking blocks and their signatures). By default `None`.
    fn assemble_stream(&self, _agent: &Agent, _events: &[Value]) -> Option<Value> {
        None
    }

    /// Sends the messages and returns the provider's raw event stream. By default: a
    /// configuration error ([`Error::Config`], nothing sent) saying this executor does not stream.
    fn execute_stream<'a>(&'a self, agent: &'a Agent, _messages: &'a [Message]) -> BoxFuture<'a, Result<RawStream>> {
        let provider = agent.model.as_ref().and_then(|m| m.provider.clone()).unwrap_or_default();
        Box::pin(async move {
            Err(Error::Config {
                setting: "model.provider".to_owned(),
                message: format!("the '{provider}' executor does not stream: call it without streaming"),
            })
        })
    }
}

/// What a processor makes of a model's response: the model's answer, or the tools it asked for.
///
/// [`crate::run`] and the agent loop read it as it is: tool calls are never written to JSON and
/// parsed back. [`Processed::into_value`] gives the JSON form of spec §8.1 (the answer, or the
/// calls as a list of `{id, name, arguments}`), which is what [`crate::run`] returns.
///
/// ```
/// use prompty::{Processed, ToolCall};
/// use serde_json::json;
/// let answer: Processed = json!("Hi").into();
/// assert_eq!(answer, Processed::Answer(json!("Hi")));
/// let calls = Processed::ToolCalls(vec![ToolCall::new("c1", "get_weather", "{}")]);
/// assert_eq!(calls.tool_calls()[0].name, "get_weather");
/// assert_eq!(calls.into_value(), json!([{"id": "c1", "name": "get_weather", "arguments": "{}"}]));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Processed {
    /// The model's answer: text, structured output parsed from JSON, embeddings, image URLs...
    Answer(Value),
    /// The model asked for tools: the calls, in the order it made them (never empty when a
    /// built-in processor returns it).
    ToolCalls(Vec<ToolCall>),
}

impl Processed {
    /// The tool calls, empty for an answer.
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Processed::ToolCalls(calls) => calls,
            Processed::Answer(_) => &[],
        }
    }

    /// The JSON form (spec §8.1): the answer as it is, tool calls as a list of
    /// `{id, name, arguments}` objects.
    ///
    /// ```
    /// let p = prompty::Processed::Answer(serde_json::json!({"city": "Paris"}));
    /// assert_eq!(p.into_value()["city"], "Paris");
    /// ```
    pub fn into_value(self) -> Value {
        match self {
            Processed::Answer(value) => value,
            Processed::ToolCalls(calls) => Value::Array(calls.iter().map(call_value).collect()),
        }
    }

    /// [`Processed::into_value`] of a borrowed result.
    pub fn to_value(&self) -> Value {
        match self {
            Processed::Answer(value) => value.clone(),
            Processed::ToolCalls(calls) => Value::Array(calls.iter().map(call_value).collect()),
        }
    }
}

impl From<Value> for Processed {
    /// An answer.
    fn from(value: Value) -> Self {
        Processed::Answer(value)
    }
}

/// `{id, name, arguments}` of one call.
fn call_value(c: &ToolCall) -> Value {
    serde_json::json!({"id": c.id, "name": c.name, "arguments": c.arguments})
}

/// Turns a provider's raw response into the result: the answer (text, parsed structured output...)
/// or the tool calls the model asked for. The `model.provider` of a prompt selects it.
///
/// ```
/// use prompty::{Agent, Processed, Processor, Result};
/// use serde_json::{json, Value};
/// #[derive(Default)]
/// struct Field;
/// impl Processor for Field {
///     fn process(&self, _agent: &Agent, response: Value) -> Result<Processed> {
///         Ok(Processed::Answer(response["text"].clone()))
///     }
/// }
/// prompty::register_processor("field", Field);
/// let p = prompty::get_processor("field")?;
/// assert_eq!(p.process(&Agent::default(), json!({"text": "hi"}))?, Processed::Answer(json!("hi")));
/// # Ok::<(), prompty::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is registered as a processor but does not implement `prompty::Processor`",
    label = "this type needs `impl prompty::Processor for {Self}`",
    note = "implement `fn process(&self, agent: &prompty::Agent, response: serde_json::Value) -> prompty::Result<prompty::Processed>`"
)]
pub trait Processor: Send + Sync + 'static {
    /// Extracts the result from a raw response: [`Processed::Answer`], or
    /// [`Processed::ToolCalls`] when the model asked for tools.
    fn process(&self, agent: &Agent, response: Value) -> Result<Processed>;

    /// Async form of [`Processor::process`]; by default runs it.
    fn process_async<'a>(&'a self, agent: &'a Agent, response: Value) -> BoxFuture<'a, Result<Processed>> {
        Box::pin(async move { self.process(agent, response) })
    }

    /// Turns a raw event stream into typed chunks. By default: one determinate failure saying this
    /// processor does not stream.
    fn process_stream(&self, _agent: &Agent, _events: RawStream) -> ChunkStream {
        let failure = StreamChunk::Failure(StreamFailure {
            outcome: Outcome::Determinate,
            message: "this processor does not process streams".to_owned(),
        });
        Box::pin(futures_util::stream::iter([failure]))
    }
}

macro_rules! invoker_registry {
    ($trait:ident, $reg:ident, $store:ident, $component:literal, $get:ident, $register:ident, $doc_get:literal, $doc_reg:literal) => {
        /// A link-time registration, submitted by the plugin attribute macro.
        #[doc(hidden)]
        pub struct $reg {
            /// The keys the component answers to.
            pub keys: &'static [&'static str],
            /// Builds the component.
            pub make: fn() -> Arc<dyn $trait>,
        }

        inventory::collect!($reg);

        static $store: LazyLock<Store<dyn $trait>> = LazyLock::new(|| {
            Store::new(|| {
                inventory::iter::<$reg>
                    .into_iter()
                    .flat_map(|r| {
                        let instance = (r.make)();
                        r.keys.iter().map(move |k| (*k, Arc::clone(&instance)))
                    })
                    .collect()
            })
        });

        #[doc = $doc_get]
        pub fn $get(key: &str) -> Result<Arc<dyn $trait>> {
            $store.get(key).ok_or_else(|| {
                // The key comes from a prompt (`template.format`, `model.provider`, ...): a
                // secret that landed there is not shown.
                let key = crate::Secret::scrub(key);
                Error::UnknownComponent {
                    component: $component,
                    key: key.clone().into_owned(),
                    known: $store.known(),
                    register: concat!("prompty::", stringify!($register), "(key, ...)"),
                    hint: format!(
                        ", or annotate a type with `#[prompty::{}(\"{key}\")]`; if it lives in a crate the binary \
                     never names, link that crate with `prompty::link!(that_crate);`",
                        $component
                    ),
                }
            })
        }

        #[doc = $doc_reg]
        pub fn $register(key: impl Into<String>, component: impl $trait) {
            $store.register(key.into(), Arc::new(component));
        }
    };
}

invoker_registry!(
    Renderer,
    RendererRegistration,
    RENDERERS,
    "renderer",
    get_renderer,
    register_renderer,
    "The renderer registered under `key` (a `template.format.kind`).\n\n```\nassert!(prompty::get_renderer(\"jinja2\").is_ok());\nlet err = prompty::get_renderer(\"nope\").err().unwrap();\nassert!(err.to_string().contains(\"jinja2\"));\n```",
    "Registers a renderer under `key`, overriding a link-time registration with the same key.\n\nSee [`Renderer`] to write one.\n\n```\n// `jinja2` prompts rendered by the mustache engine:\nprompty::register_renderer(\"jinja2\", prompty::builtins::MustacheRenderer);\nlet agent = prompty::load_str(\"{{#names}}{{.}} {{/names}}\", \".\", \"<string>\")?;\nassert_eq!(prompty::render(&agent, &serde_json::json!({\"names\": [\"a\", \"b\"]}))?, \"a b \");\n# Ok::<(), prompty::Error>(())\n```"
);
invoker_registry!(
    Parser,
    ParserRegistration,
    PARSERS,
    "parser",
    get_parser,
    register_parser,
    "The parser registered under `key` (a `template.parser.kind`).\n\n```\nassert!(prompty::get_parser(\"prompty\").is_ok());\n```",
    "Registers a parser under `key`, overriding a link-time registration with the same key.\n\nSee [`Parser`] to write one.\n\n```\n// A second key for the built-in parser:\nprompty::register_parser(\"chat\", prompty::builtins::PromptyParser);\nlet text = prompty::RenderedText { text: \"system:\\nBe brief.\\nuser:\\nHi\", values: &[] };\nassert_eq!(prompty::get_parser(\"chat\")?.parse(&prompty::Agent::default(), text)?.len(), 2);\n# Ok::<(), prompty::Error>(())\n```"
);
invoker_registry!(
    Executor,
    ExecutorRegistration,
    EXECUTORS,
    "executor",
    get_executor,
    register_executor,
    "The executor registered under `key` (a `model.provider`).\n\n```\nassert!(prompty::get_executor(\"no-such-provider\").is_err());\n```",
    "Registers an executor under `key`, overriding a link-time registration with the same key.\n\nSee [`Executor`] to write one.\n\n```\nuse prompty::{Agent, BoxFuture, Executor, Message, Result};\nuse serde_json::{json, Value};\nstruct Canned;\nimpl Executor for Canned {\n    fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, Result<Value>> {\n        Box::pin(async { Ok(json!(\"canned\")) })\n    }\n}\nprompty::register_executor(\"canned\", Canned);\nassert_eq!(prompty::get_executor(\"canned\")?.execute(&Agent::default(), &[])?, json!(\"canned\"));\n# Ok::<(), prompty::Error>(())\n```"
);
invoker_registry!(
    Processor,
    ProcessorRegistration,
    PROCESSORS,
    "processor",
    get_processor,
    register_processor,
    "The processor registered under `key` (a `model.provider`).\n\n```\nassert!(prompty::get_processor(\"no-such-provider\").is_err());\n```",
    "Registers a processor under `key`, overriding a link-time registration with the same key.\n\nSee [`Processor`] to write one.\n\n```\n// A gateway that answers in OpenAI's format:\nprompty::register_processor(\"my-gateway\", prompty::providers::openai::OpenAiProcessor);\nlet agent = prompty::Agent::from_value(serde_json::json!({\"model\": \"gpt-4o\"}))?;\nlet response = serde_json::json!({\"choices\": [{\"message\": {\"content\": \"Hi\"}}]});\nassert_eq!(prompty::get_processor(\"my-gateway\")?.process(&agent, response)?, prompty::Processed::Answer(\"Hi\".into()));\n# Ok::<(), prompty::Error>(())\n```"
);

/// Forgets every explicit renderer, parser, executor and processor registration and every cached
/// instance; link-time registrations are instantiated again on next use.
///
/// ```
/// prompty::register_renderer("jinja2", prompty::builtins::MustacheRenderer);
/// prompty::clear_cache();
/// assert!(prompty::get_renderer("jinja2").is_ok()); // the built-in is back
/// ```
pub fn clear_cache() {
    RENDERERS.clear();
    PARSERS.clear();
    EXECUTORS.clear();
    PROCESSORS.clear();
}

#[doc(hidden)]
pub fn __make_renderer<T: Renderer + Default>() -> Arc<dyn Renderer> {
    Arc::new(T::default())
}
#[doc(hidden)]
pub fn __make_parser<T: Parser + Default>() -> Arc<dyn Parser> {
    Arc::new(T::default())
}
#[doc(hidden)]
pub fn __make_executor<T: Executor + Default>() -> Arc<dyn Executor> {
    Arc::new(T::default())
}
#[doc(hidden)]
pub fn __make_processor<T: Processor + Default>() -> Arc<dyn Processor> {
    Arc::new(T::default())
}
