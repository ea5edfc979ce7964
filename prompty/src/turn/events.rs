//! What a turn tells its event sink (spec §13.1), and how a sink that fails is contained.

use crate::Message;
use serde::Serialize;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// One event of a turn. In JSON (`serde_json::to_value`) an event is `{"type": "<kind>", "data":
/// {...}}`.
///
/// Order: `done` is always the last event of a turn that answers, `cancelled` the last of a
/// cancelled one. `status` `Starting agent loop` comes when the model first asks for tools (a
/// turn answered at once shows only `done`), `status` `Injecting steering message` when steering
/// messages are appended, a `status` before each retry of a model call. `messages_updated` follows
/// every change of the conversation (a tool round, steering, trimming) — not the final answer,
/// which `done` carries. `token` and `thinking` come from a streamed turn
/// ([`crate::turn_stream`]), with the final answer's chunks.
///
/// ```
/// let e = prompty::AgentEvent::Status { message: "Starting agent loop".into() };
/// assert_eq!(e.kind(), "status");
/// assert_eq!(serde_json::to_value(&e)?, serde_json::json!(
///     {"type": "status", "data": {"message": "Starting agent loop"}}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentEvent {
    /// A piece of the final answer (streamed turns).
    Token {
        /// The text.
        text: String,
    },
    /// A piece of the model's reasoning in the final iteration (streamed turns).
    Thinking {
        /// The text.
        text: String,
    },
    /// A tool call is about to be checked and run.
    ToolCallStart {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model sent them.
        arguments: String,
    },
    /// A tool call's result, as the model will read it.
    ToolResult {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The result text.
        result: String,
        /// Whether the call failed or was denied.
        is_error: bool,
    },
    /// Progress of the loop.
    Status {
        /// What happens.
        message: String,
    },
    /// The conversation changed.
    MessagesUpdated {
        /// The whole conversation now.
        messages: Vec<Message>,
    },
    /// The turn answered.
    Done {
        /// The final answer (text, or the parsed structured output).
        response: Value,
        /// The whole conversation, the final answer last.
        messages: Vec<Message>,
    },
    /// Something failed and the loop goes on (a tool returned an error or panicked, its
    /// arguments were not JSON).
    Error {
        /// What failed.
        message: String,
        /// The tool concerned.
        tool: Option<String>,
    },
    /// The turn was cancelled; nothing follows.
    Cancelled {
        /// Where the loop noticed it.
        reason: String,
    },
    /// The conversation was trimmed to the context budget.
    ContextTrimmed {
        /// How many messages were dropped (and replaced by one summary).
        dropped: usize,
    },
}

impl AgentEvent {
    /// The event's kind as in JSON: `token`, `thinking`, `tool_call_start`, `tool_result`,
    /// `status`, `messages_updated`, `done`, `error`, `cancelled`, `context_trimmed`.
    ///
    /// ```
    /// assert_eq!(prompty::AgentEvent::Cancelled { reason: "user".into() }.kind(), "cancelled");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            AgentEvent::Token { .. } => "token",
            AgentEvent::Thinking { .. } => "thinking",
            AgentEvent::ToolCallStart { .. } => "tool_call_start",
            AgentEvent::ToolResult { .. } => "tool_result",
            AgentEvent::Status { .. } => "status",
            AgentEvent::MessagesUpdated { .. } => "messages_updated",
            AgentEvent::Done { .. } => "done",
            AgentEvent::Error { .. } => "error",
            AgentEvent::Cancelled { .. } => "cancelled",
            AgentEvent::ContextTrimmed { .. } => "context_trimmed",
        }
    }
}

/// What an event sink closure may return: `()`, or a `Result` whose error is logged.
///
/// ```
/// use prompty::SinkResult;
/// assert_eq!(().into_sink_result(), Ok(()));
/// assert_eq!(Err::<(), _>("disk full").into_sink_result(), Err("disk full".to_owned()));
/// ```
pub trait SinkResult {
    /// `Err(message)` when the sink failed.
    fn into_sink_result(self) -> Result<(), String>;
}

impl SinkResult for () {
    fn into_sink_result(self) -> Result<(), String> {
        Ok(())
    }
}

impl<E: std::fmt::Display> SinkResult for Result<(), E> {
    fn into_sink_result(self) -> Result<(), String> {
        self.map_err(|e| e.to_string())
    }
}

pub(crate) type EventSink = Arc<dyn Fn(&AgentEvent) -> Result<(), String> + Send + Sync>;

/// Hands events to the sink, if there is one; builds an event only then. A sink that fails or
/// panics is logged and the loop goes on.
#[derive(Clone)]
pub(crate) struct Emitter {
    sink: Option<EventSink>,
}

impl Emitter {
    pub(crate) fn new(sink: Option<EventSink>) -> Self {
        Emitter { sink }
    }

    /// Emits the event `make` builds (only called when there is a sink).
    pub(crate) fn emit(&self, make: impl FnOnce() -> AgentEvent) {
        let Some(sink) = &self.sink else { return };
        deliver(sink, make());
    }
}

/// Hands `event` to the sink; a failure or a panic of the sink is logged, never propagated.
/// (Apart from `Emitter::emit` so that it is compiled once, not once per kind of event.)
fn deliver(sink: &EventSink, event: AgentEvent) {
    match catch_unwind(AssertUnwindSafe(|| sink(&event))) {
        Ok(Ok(())) => {}
        Ok(Err(message)) => {
            tracing::warn!(target: "prompty::turn", event = event.kind(), "the event sink failed: {message}")
        }
        Err(payload) => tracing::warn!(
            target: "prompty::turn",
            event = event.kind(),
            "the event sink panicked: {}",
            crate::support::panic_text(payload.as_ref())
        ),
    }
}
