//! Streaming: the typed chunks a streamed model call yields, and the raw provider events they are
//! made from.

use crate::ToolCall;
use futures_core::Stream;
use serde::Serialize;
use serde_json::Value;
use std::pin::Pin;

/// Whether the model's output may have been committed when a stream failed.
///
/// ```
/// assert_eq!(serde_json::to_value(prompty::Outcome::Indeterminate).unwrap(), "indeterminate");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// Nothing was committed (a refusal, a failure before any output): safe to retry.
    Determinate,
    /// Output had started when the stream broke: the caller must reconcile before retrying.
    Indeterminate,
}

/// Why a stream ended early.
///
/// ```
/// let f = prompty::StreamFailure { outcome: prompty::Outcome::Determinate, message: "Model refused: no".into() };
/// assert!(f.message.starts_with("Model refused"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamFailure {
    /// Whether output may have been committed.
    pub outcome: Outcome,
    /// What happened.
    pub message: String,
}

/// One item of a streamed response.
///
/// ```
/// let c = prompty::StreamChunk::Text("Hel".into());
/// assert_eq!(c.text(), Some("Hel"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum StreamChunk {
    /// A piece of the answer's text.
    Text(String),
    /// A piece of the model's reasoning, when the provider shows it.
    Thinking(String),
    /// A whole tool call (its deltas are accumulated by index before it is yielded).
    ToolCall(ToolCall),
    /// Token usage, as the provider reports it.
    Usage(Value),
    /// The stream ended early; nothing follows.
    Failure(StreamFailure),
}

impl StreamChunk {
    /// The text of a text chunk.
    pub fn text(&self) -> Option<&str> {
        match self {
            StreamChunk::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// One event from a provider's stream, before processing.
///
/// ```
/// let e = prompty::RawEvent::Data(serde_json::json!({"choices": []}));
/// assert!(matches!(e, prompty::RawEvent::Data(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RawEvent {
    /// A parsed event payload.
    Data(Value),
    /// The connection broke or sent something unreadable.
    TransportError(String),
}

/// A provider's raw event stream, as an executor returns it.
///
/// ```
/// use futures_util::StreamExt;
/// use prompty::{RawEvent, RawStream};
/// use serde_json::json;
/// let mut events: RawStream = Box::pin(futures_util::stream::iter([RawEvent::Data(json!({"choices": []}))]));
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(events.next()), Some(RawEvent::Data(json!({"choices": []}))));
/// ```
pub type RawStream = Pin<Box<dyn Stream<Item = RawEvent> + Send>>;

/// A stream of typed chunks, as a processor returns it.
///
/// ```
/// use futures_util::StreamExt;
/// use prompty::{ChunkStream, StreamChunk};
/// let chunks: ChunkStream =
///     Box::pin(futures_util::stream::iter([StreamChunk::Text("Hel".into()), StreamChunk::Text("lo".into())]));
/// let text = chunks.filter_map(|c| async move { c.text().map(str::to_owned) }).collect::<String>();
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// assert_eq!(rt.block_on(text), "Hello");
/// ```
pub type ChunkStream = Pin<Box<dyn Stream<Item = StreamChunk> + Send>>;
