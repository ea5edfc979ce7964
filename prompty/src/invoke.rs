//! The invoke layer: execute → process. [`run`] and [`run_stream`] send prepared messages to the
//! executor and processor registered for `model.provider`; [`invoke`] and [`invoke_stream`] prepare
//! first; [`cast`] turns a result into a Rust type. Imports `prepare`, the registries and `trace`;
//! providers are reached only through the registry, never `turn` or `tools`.

use crate::prepare::load::env_resolved;
use crate::trace::{genai, in_span, in_span_async, Seen, Stage};
use crate::{
    get_executor, get_processor, prepare, prepare_async, Agent, ChunkStream, Error, Message, Processed, Result,
    StreamChunk,
};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

/// The provider key of the agent's model, which selects its executor and processor.
pub(crate) fn provider(agent: &Agent) -> Result<&str> {
    agent.model.as_ref().and_then(|m| m.provider.as_deref()).ok_or_else(|| Error::Config {
        setting: "model.provider".to_owned(),
        message: format!(
            "agent '{}' names no model provider: set `model.provider` (openai, anthropic, foundry, ...) in its frontmatter",
            agent.name
        ),
    })
}

/// Sends already prepared messages to the model with the executor registered for `model.provider`,
/// and returns what that provider's processor makes of the response, as JSON
/// ([`Processed::into_value`]: the answer, or the tool calls as a list of `{id, name, arguments}`).
///
/// ```
/// use prompty::{Agent, BoxFuture, Executor, Message, Processed, Processor, Result, Role};
/// use serde_json::{json, Value};
/// #[derive(Default)]
/// struct Canned;
/// impl Executor for Canned {
///     fn execute_async<'a>(&'a self, _: &'a Agent, m: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async move { Ok(json!({"echo": m.last().map(|m| m.text())})) })
///     }
/// }
/// impl Processor for Canned {
///     fn process(&self, _: &Agent, r: Value) -> Result<Processed> { Ok(r["echo"].clone().into()) }
/// }
/// prompty::register_executor("canned", Canned);
/// prompty::register_processor("canned", Canned);
/// let agent = prompty::load_str("---\nmodel: {id: m, provider: canned}\n---\n", ".", "<string>")?;
/// assert_eq!(prompty::run(&agent, &[Message::new(Role::User, "Hi")])?, json!("Hi"));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn run(agent: &Agent, messages: &[Message]) -> Result<Value> {
    run_processed(agent, messages).map(Processed::into_value)
}

/// [`run`], typed: the answer or the tool calls as the processor made them.
pub(crate) fn run_processed(agent: &Agent, messages: &[Message]) -> Result<Processed> {
    let run = || {
        let agent = &*env_resolved(agent)?;
        let provider = provider(agent)?;
        let executor = get_executor(provider)?;
        let raw = in_span(
            Stage::client("execute", "prompty.execute"),
            genai::execute_inputs(agent, messages),
            || executor.execute(agent, messages),
            genai::execute_result,
        )?;
        let processor = get_processor(provider)?;
        in_span(
            Stage::new("process", "prompty.process"),
            |_| json!({"provider": provider}),
            || processor.process(agent, raw),
            |result, _| result.to_value(),
        )
    };
    in_span(Stage::new("run", "prompty.run"), |_| json!({"messages": messages}), run, |result, _| result.to_value())
}

/// Async form of [`run`]; gives the same result.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/chat.prompty").await?;
/// let messages = prompty::prepare_async(&agent, &serde_json::json!({"question": "Hi"})).await?;
/// let answer = prompty::run_async(&agent, &messages).await?;
/// # Ok(()) }
/// ```
pub async fn run_async(agent: &Agent, messages: &[Message]) -> Result<Value> {
    run_processed_async(agent, messages).await.map(Processed::into_value)
}

/// [`run_async`], typed: the answer or the tool calls as the processor made them.
pub(crate) async fn run_processed_async(agent: &Agent, messages: &[Message]) -> Result<Processed> {
    in_span_async(
        Stage::new("run", "prompty.run"),
        |_| json!({"messages": messages}),
        run_stages(agent, messages),
        |result, _| result.to_value(),
    )
    .await
}

/// `execute` then `process`, each in its span.
async fn run_stages(agent: &Agent, messages: &[Message]) -> Result<Processed> {
    let agent = &*env_resolved(agent)?;
    let provider = provider(agent)?;
    let executor = get_executor(provider)?;
    let raw = in_span_async(
        Stage::client("execute", "prompty.execute"),
        genai::execute_inputs(agent, messages),
        executor.execute_async(agent, messages),
        genai::execute_result,
    )
    .await?;
    let processor = get_processor(provider)?;
    in_span_async(
        Stage::new("process", "prompty.process"),
        |_| json!({"provider": provider}),
        processor.process_async(agent, raw),
        |result, _| result.to_value(),
    )
    .await
}

/// Prepares the prompt with `inputs` and runs it ([`prepare`] then [`run`]), returning the result
/// as a `T` through [`crate::cast`]: `serde_json::Value`, `String`, or your own `Deserialize` type
/// for structured output.
///
/// ```
/// use prompty::{Agent, BoxFuture, Executor, Message, Processed, Processor, Result};
/// use serde_json::{json, Value};
/// #[derive(Default)]
/// struct Last;
/// impl Executor for Last {
///     fn execute_async<'a>(&'a self, _: &'a Agent, m: &'a [Message]) -> BoxFuture<'a, Result<Value>> {
///         Box::pin(async move { Ok(json!(m.last().map(|m| m.text()))) })
///     }
/// }
/// impl Processor for Last {
///     fn process(&self, _: &Agent, r: Value) -> Result<Processed> { Ok(Processed::Answer(r)) }
/// }
/// prompty::register_executor("last", Last);
/// prompty::register_processor("last", Last);
/// let agent = prompty::load_str("---\nmodel: {id: m, provider: last}\n---\nuser:\nHi {{ who }}", ".", "<string>")?;
/// let answer: String = prompty::invoke(&agent, &json!({"who": "Ann"}))?;
/// assert_eq!(answer, "Hi Ann");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn invoke<T: DeserializeOwned>(agent: &Agent, inputs: &Value) -> Result<T> {
    let answer = in_span(
        Stage::new("invoke", "prompty.invoke"),
        |_| json!({"agent": agent, "inputs": inputs}),
        || run_processed(agent, &prepare(agent, inputs)?),
        |result, _| result.to_value(),
    )?;
    cast_answer(answer)
}

/// Async form of [`invoke`]; gives the same result.
///
/// ```no_run
/// # async fn f() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/chat.prompty").await?;
/// let answer: String = prompty::invoke_async(&agent, &serde_json::json!({"question": "Hi"})).await?;
/// # Ok(()) }
/// ```
pub async fn invoke_async<T: DeserializeOwned>(agent: &Agent, inputs: &Value) -> Result<T> {
    let invoke = async { run_processed_async(agent, &prepare_async(agent, inputs).await?).await };
    let answer = in_span_async(
        Stage::new("invoke", "prompty.invoke"),
        |_| json!({"agent": agent, "inputs": inputs}),
        invoke,
        |result, _| result.to_value(),
    )
    .await?;
    cast_answer(answer)
}

/// Sends already prepared messages to the model as a streamed request, with the executor
/// registered for `model.provider`, and returns the typed chunks that provider's processor makes of
/// the events: text deltas, thinking, whole tool calls (their deltas accumulated), usage, and at
/// most one [`crate::StreamChunk::Failure`], which ends the stream.
///
/// The future fails (with nothing streamed) when the request cannot be sent or the server refuses
/// it; once the stream has started, a broken connection arrives as a failure chunk whose outcome
/// says whether output had already been produced.
///
/// ```no_run
/// use futures_util::StreamExt;
/// # async fn f() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/chat.prompty").await?;
/// let messages = prompty::prepare_async(&agent, &serde_json::json!({"question": "Hi"})).await?;
/// let mut chunks = prompty::run_stream(&agent, &messages).await?;
/// while let Some(chunk) = chunks.next().await {
///     match chunk {
///         prompty::StreamChunk::Text(t) => print!("{t}"),
///         prompty::StreamChunk::Failure(f) => eprintln!("stream failed: {}", f.message),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
pub async fn run_stream(agent: &Agent, messages: &[Message]) -> Result<ChunkStream> {
    let agent = &*env_resolved(agent)?;
    let provider = provider(agent)?;
    let executor = get_executor(provider)?;
    let processor = get_processor(provider)?;
    let events = executor.execute_stream(agent, messages).await?;
    let chunks = processor.process_stream(agent, events);
    let stage = crate::trace::Stage::client("stream", "prompty.stream");
    let recorded = |attributes: &mut crate::trace::Attributes| {
        crate::trace::genai::request(agent, attributes);
        serde_json::json!({"messages": messages})
    };
    Ok(crate::trace::traced_stream(stage, recorded, chunks, seen))
}

/// Prepares the prompt with `inputs` and runs it streamed: [`crate::prepare_async`] then
/// [`run_stream`].
///
/// ```no_run
/// use futures_util::StreamExt;
/// # async fn f() -> prompty::Result<()> {
/// let agent = prompty::load_async("prompts/chat.prompty").await?;
/// let mut chunks = prompty::invoke_stream(&agent, &serde_json::json!({"question": "Hi"})).await?;
/// let mut answer = String::new();
/// while let Some(chunk) = chunks.next().await {
///     if let Some(text) = chunk.text() {
///         answer.push_str(text);
///     }
/// }
/// # Ok(()) }
/// ```
pub async fn invoke_stream(agent: &Agent, inputs: &Value) -> Result<ChunkStream> {
    let messages = crate::prepare_async(agent, inputs).await?;
    run_stream(agent, &messages).await
}

/// Converts a result into `T`: directly from the JSON value, or, when the value is a string (a
/// processor's raw fallback for structured output), by parsing that string as JSON.
///
/// ```
/// #[derive(serde::Deserialize, Debug, PartialEq)]
/// struct Weather { city: String, temperature: i64 }
/// let parsed = serde_json::json!({"city": "Paris", "temperature": 21});
/// let raw = serde_json::json!(r#"{"city": "Paris", "temperature": 21}"#);
/// assert_eq!(prompty::cast::<Weather>(&parsed)?, prompty::cast::<Weather>(&raw)?);
/// assert!(prompty::cast::<Weather>(&serde_json::json!("not json")).is_err());
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn cast<T: DeserializeOwned>(value: &Value) -> Result<T> {
    match T::deserialize(value) {
        Ok(v) => Ok(v),
        Err(direct) => match value {
            Value::String(raw) => serde_json::from_str(raw)
                .map_err(|e| Error::Cast { target: std::any::type_name::<T>(), message: e.to_string() }),
            _ => Err(Error::Cast { target: std::any::type_name::<T>(), message: direct.to_string() }),
        },
    }
}

/// [`cast`] of an owned value: moves instead of cloning when the value fits `T` directly.
pub(crate) fn cast_owned<T: DeserializeOwned>(value: Value) -> Result<T> {
    match value {
        Value::String(_) => cast(&value),
        other => T::deserialize(other)
            .map_err(|e| Error::Cast { target: std::any::type_name::<T>(), message: e.to_string() }),
    }
}

/// [`cast_owned`] of a model's answer: tool calls that do not fit `T` (in their JSON form, spec
/// §8.1) are the error saying the model asked for tools (and that `turn` runs them), not a cast
/// error.
pub(crate) fn cast_answer<T: DeserializeOwned>(processed: Processed) -> Result<T> {
    match processed {
        Processed::Answer(value) => cast_owned(value),
        calls => {
            let names = calls.tool_calls().iter().map(|c| c.name.clone()).collect();
            cast_owned(calls.into_value()).map_err(|_| Error::UnexpectedToolCalls { names })
        }
    }
}

/// What the `prompty.stream` span records of a chunk.
fn seen(chunk: &StreamChunk) -> Seen<'_> {
    match chunk {
        StreamChunk::Text(t) => Seen::Text(t),
        StreamChunk::Usage(Value::Object(u)) => Seen::Usage(u),
        StreamChunk::ToolCall(call) => {
            Seen::ToolCall(json!({"id": call.id, "name": call.name, "arguments": call.arguments}))
        }
        StreamChunk::Failure(f) => Seen::Failure(&f.message),
        StreamChunk::Thinking(_) | StreamChunk::Usage(_) => Seen::Other,
    }
}
