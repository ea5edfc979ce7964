//! Streamed model calls: [`run_stream`] (prepared messages) and [`invoke_stream`] (inputs).

use crate::{get_executor, get_processor, Agent, ChunkStream, Message, Result};
use serde_json::Value;

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
    let provider = crate::pipeline::provider(agent)?;
    let executor = get_executor(provider)?;
    let processor = get_processor(provider)?;
    let events = executor.execute_stream(agent, messages).await?;
    let chunks = processor.process_stream(agent, events);
    let stage = crate::trace::Stage::client("stream", "prompty.stream");
    let recorded = |attributes: &mut crate::trace::Attributes| {
        crate::trace::genai::request(agent, attributes);
        serde_json::json!({"messages": messages})
    };
    Ok(crate::trace::traced_stream(stage, recorded, chunks))
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
