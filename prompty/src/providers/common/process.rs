//! Processing helpers every provider's processor shares: the error of a response body, structured
//! outputs, tool calls as the processed result, and the driver that turns a provider's raw stream
//! events into typed chunks.

use crate::lookup::get;
use crate::{Agent, ChunkStream, Outcome, RawEvent, RawStream, StreamChunk, StreamFailure, ToolCall};
use futures_util::StreamExt;
use serde_json::Value;
use std::collections::VecDeque;

/// The vectors of an embeddings `list` response (`data[].embedding`, in `index` order): the one
/// vector of a single input, else an array of them.
pub(crate) fn embedding_vectors(response: &Value) -> crate::Result<Value> {
    let mut data: Vec<&Value> = response.get("data").and_then(Value::as_array).into_iter().flatten().collect();
    data.sort_by_key(|d| d.get("index").and_then(Value::as_u64).unwrap_or(0));
    match data.as_slice() {
        [] => Err(crate::Error::Execution { message: "Empty embedding response".into() }),
        [one] => Ok(one["embedding"].clone()),
        many => Ok(Value::Array(many.iter().map(|d| d["embedding"].clone()).collect())),
    }
}

/// The message of an `error` in a response body, when it has one.
pub(crate) fn error_message(response: &Value) -> Option<String> {
    match get(response, "error")? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        e => Some(e.get("message").and_then(Value::as_str).map_or_else(|| e.to_string(), str::to_owned)),
    }
}

/// The text, JSON-parsed when the agent declares outputs and it is JSON (spec §7.7).
pub(crate) fn structured(agent: &Agent, text: String) -> Value {
    if agent.outputs.as_ref().is_some_and(|o| !o.is_empty()) && !text.is_empty() {
        if let Ok(v) = serde_json::from_str(&text) {
            return v;
        }
    }
    Value::String(text)
}

/// Where a stream handler puts its chunks.
#[derive(Default)]
pub(crate) struct Sink {
    queue: VecDeque<StreamChunk>,
    /// Whether the model's output has started (text, thinking or tool-call deltas).
    started: bool,
    /// Whether the stream is over: nothing more is read or yielded after the queued chunks.
    closed: bool,
}

impl Sink {
    /// A piece of text (empty pieces are dropped).
    pub(crate) fn text(&mut self, text: &str) {
        if !text.is_empty() {
            self.started = true;
            self.queue.push_back(StreamChunk::Text(text.to_owned()));
        }
    }

    /// A piece of reasoning (empty pieces are dropped).
    pub(crate) fn thinking(&mut self, text: &str) {
        if !text.is_empty() {
            self.started = true;
            self.queue.push_back(StreamChunk::Thinking(text.to_owned()));
        }
    }

    /// Notes that output started without yielding anything (a tool-call delta).
    pub(crate) fn start(&mut self) {
        self.started = true;
    }

    pub(crate) fn usage(&mut self, usage: Value) {
        self.queue.push_back(StreamChunk::Usage(usage));
    }

    pub(crate) fn tool_call(&mut self, call: ToolCall) {
        self.queue.push_back(StreamChunk::ToolCall(call));
    }

    /// Ends the stream with a failure.
    pub(crate) fn fail(&mut self, outcome: Outcome, message: String) {
        self.queue.push_back(StreamChunk::Failure(StreamFailure { outcome, message }));
        self.closed = true;
    }

    /// Ends the stream with a failure that is indeterminate once output has started.
    pub(crate) fn fail_after_output(&mut self, message: String) {
        let outcome = if self.started { Outcome::Indeterminate } else { Outcome::Determinate };
        self.fail(outcome, message);
    }

    /// Ends the stream with a refusal (always determinate).
    pub(crate) fn refuse(&mut self, text: &str) {
        self.fail(Outcome::Determinate, format!("Model refused: {text}"));
    }

    /// Ends the stream normally.
    pub(crate) fn close(&mut self) {
        self.closed = true;
    }
}

/// What turns one provider's events into chunks.
pub(crate) trait StreamHandler: Send + 'static {
    /// Handles one event.
    fn on_event(&mut self, event: Value, sink: &mut Sink);

    /// The upstream ended (called once, unless the handler closed the sink before).
    fn on_end(&mut self, sink: &mut Sink);

    /// The transport failed.
    fn on_transport_error(&mut self, message: String, sink: &mut Sink) {
        sink.fail_after_output(message);
    }
}

/// Runs a handler over a raw event stream. After a failure or a close, the upstream is not read
/// again.
pub(crate) fn drive<H: StreamHandler>(events: RawStream, handler: H) -> ChunkStream {
    struct State<H> {
        events: RawStream,
        handler: H,
        sink: Sink,
    }
    let state = State { events, handler, sink: Sink::default() };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(chunk) = st.sink.queue.pop_front() {
                return Some((chunk, st));
            }
            if st.sink.closed {
                return None;
            }
            match st.events.next().await {
                Some(RawEvent::Data(event)) => st.handler.on_event(event, &mut st.sink),
                Some(RawEvent::TransportError(message)) => st.handler.on_transport_error(message, &mut st.sink),
                None => {
                    st.handler.on_end(&mut st.sink);
                    st.sink.close();
                }
            }
        }
    }))
}

/// A tool call being accumulated from deltas.
#[derive(Default)]
pub(crate) struct PartialCall {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) arguments: String,
    /// The provider's item id, when it differs from the call id (Responses API).
    pub(crate) item_id: String,
}

impl PartialCall {
    pub(crate) fn into_call(self) -> ToolCall {
        let arguments = if self.arguments.trim().is_empty() { "{}".to_owned() } else { self.arguments };
        ToolCall { id: self.id, name: self.name, arguments }
    }
}
