//! [`TurnStream`]: a turn run with streamed model calls, read as a stream of the final answer's
//! chunks.

use super::run::PromptTurn;
use super::{TurnOptions, TurnOutput};
use crate::{Agent, BoxFuture, Error, Message, Outcome, Result, StreamChunk, StreamFailure};
use futures_core::Stream;
use serde_json::{Map, Value};
use std::borrow::Cow;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

/// The chunks of a streamed turn's final answer ([`crate::turn_stream`]): text, thinking and
/// usage, released once the model's last response has ended; tool rounds happen before and never
/// show here. A turn that stops without an answer ends the stream with one
/// [`StreamChunk::Failure`]; [`TurnStream::finish`] then gives the error itself.
///
/// The turn runs as the stream is polled: stop polling and it pauses; drop the stream and it is
/// abandoned.
///
/// ```
/// use futures_util::StreamExt;
/// use prompty::{Agent, BoxFuture, Executor, Message, RawEvent, RawStream, Role, TurnOptions};
/// use serde_json::{json, Value};
/// struct Streamed;
/// impl Executor for Streamed {
///     fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
///         Box::pin(async { Ok(Value::Null) })
///     }
///     fn execute_stream<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, prompty::Result<RawStream>> {
///         let events = ["Hel", "lo"].map(|t| RawEvent::Data(json!({"choices": [{"delta": {"content": t}}]})));
///         Box::pin(async move { Ok(Box::pin(futures_util::stream::iter(events)) as RawStream) })
///     }
/// }
/// prompty::register_executor("streamed-doc", Streamed);
/// prompty::register_processor("streamed-doc", prompty::providers::openai::OpenAiProcessor);
/// let agent = Agent::from_value(json!({"model": {"id": "m", "provider": "streamed-doc"}}))?;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut stream = prompty::run_turn_stream(&agent, vec![Message::new(Role::User, "hi")], &json!({}), TurnOptions::new());
/// let mut text = String::new();
/// while let Some(chunk) = stream.next().await {
///     text.push_str(chunk.text().unwrap_or(""));
/// }
/// assert_eq!(text, "Hello");
/// assert_eq!(stream.finish().await?.iterations, 1);
/// # Ok::<(), prompty::Error>(()) })?;
/// # Ok::<(), prompty::Error>(())
/// ```
pub struct TurnStream<'a> {
    chunks: UnboundedReceiver<StreamChunk>,
    run: Option<BoxFuture<'a, Result<TurnOutput>>>,
    outcome: Option<Result<TurnOutput>>,
    failure: Option<StreamChunk>,
}

impl<'a> TurnStream<'a> {
    pub(crate) fn new(
        agent: Cow<'a, Agent>,
        messages: Vec<Message>,
        inputs: Map<String, Value>,
        options: TurnOptions,
    ) -> Self {
        let (tx, chunks) = unbounded_channel();
        let count = messages.len();
        let run: BoxFuture<'a, Result<TurnOutput>> = Box::pin(async move {
            let run = async { PromptTurn::new(&agent, inputs, options, Some(tx))?.run(messages).await };
            let stage = crate::trace::Stage::new("turn", "prompty.turn");
            crate::trace::in_span_async(
                stage,
                |_| serde_json::json!({"messages": count}),
                run,
                |out, _| serde_json::json!({"result": out.result, "iterations": out.iterations}),
            )
            .await
        });
        TurnStream { chunks, run: Some(run), outcome: None, failure: None }
    }

    /// Runs the turn to its end (chunks not read yet are dropped) and gives its output: the
    /// answer, the conversation, the iterations; or the error that stopped it.
    ///
    /// ```no_run
    /// # async fn f(stream: prompty::TurnStream<'_>) -> prompty::Result<()> {
    /// let out = stream.finish().await?;
    /// println!("{} messages", out.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn finish(mut self) -> Result<TurnOutput> {
        while futures_util::StreamExt::next(&mut self).await.is_some() {}
        self.outcome.take().unwrap_or_else(|| Err(Error::Task("the streamed turn already gave its output".into())))
    }
}

impl Stream for TurnStream<'_> {
    type Item = StreamChunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<StreamChunk>> {
        let this = &mut *self;
        if let Poll::Ready(Some(chunk)) = this.chunks.poll_recv(cx) {
            return Poll::Ready(Some(chunk));
        }
        if let Some(run) = this.run.as_mut() {
            match run.as_mut().poll(cx) {
                Poll::Pending => {
                    return match this.chunks.poll_recv(cx) {
                        Poll::Ready(Some(chunk)) => Poll::Ready(Some(chunk)),
                        _ => Poll::Pending,
                    }
                }
                Poll::Ready(outcome) => {
                    this.run = None;
                    if let Err(e) = &outcome {
                        this.failure = Some(StreamChunk::Failure(StreamFailure {
                            outcome: Outcome::Determinate,
                            message: e.to_string(),
                        }));
                    }
                    this.outcome = Some(outcome);
                }
            }
        }
        if let Poll::Ready(Some(chunk)) = this.chunks.poll_recv(cx) {
            return Poll::Ready(Some(chunk));
        }
        Poll::Ready(this.failure.take())
    }
}

impl std::fmt::Debug for TurnStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnStream").field("running", &self.run.is_some()).finish()
    }
}
