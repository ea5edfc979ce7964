//! What a turn tells its event sink (spec §13.1), and how a sink that fails is contained.

use crate::Message;
use serde::Serialize;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

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
/// Parallel tool calls ([`crate::TurnOptions::parallel_tool_calls`]): the `tool_call_start` events
/// of one response come in call order, but its `tool_result` (and `error`) events come as the
/// calls finish, in completion order; the conversation (`messages_updated`, `done`,
/// [`crate::TurnOutput::messages`]) keeps the tool results in call order. Match a result to its
/// call by `id`, not by position.
///
/// A resumed turn ([`crate::resume_turn`]) emits the events of what it does after the
/// interruption only (a tool round resumed from its checkpoint has no `Starting agent loop`).
///
/// [`crate::TurnOptions::record_events`] collects the events of a turn;
/// [`crate::TurnOptions::on_event`] hands each to a function as it happens.
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
    /// Something failed and the loop goes on: a tool returned an error or panicked, its
    /// arguments were not JSON, or a declared MCP server or OpenAPI document could not be
    /// started, reached or listed (`tool`: the declaration; its tools are left out of this turn's
    /// requests and it is tried again in the next turn; the same text goes to `tracing`, target
    /// `prompty::tools`). A declaration with `required: true` fails the turn instead.
    Error {
        /// What failed.
        message: String,
        /// The tool concerned.
        tool: Option<String>,
    },
    /// Something the prompt declares is not what its server offers, and the turn goes on: a name
    /// in `allowedTools` / `approvalMode` that the server does not offer (said once per
    /// declaration and tool list). The same text goes to `tracing` (target `prompty::tools`).
    ///
    /// ```
    /// let e = prompty::AgentEvent::Warning { message: "MCP server 'fs' ...".into(), tool: Some("files".into()) };
    /// assert_eq!(e.kind(), "warning");
    /// assert_eq!(serde_json::to_value(&e)?["data"]["tool"], "files");
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    Warning {
        /// What happened, and what to do.
        message: String,
        /// The declared tool concerned (its `name`).
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
    /// `status`, `messages_updated`, `done`, `error`, `warning`, `cancelled`, `context_trimmed`.
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
            AgentEvent::Warning { .. } => "warning",
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

/// The events of a turn, recorded in the order they happened: the handle
/// [`crate::TurnOptions::record_events`] returns with its options. Read it while the turn runs
/// (from another task) or after it ends. Clones share the same log.
///
/// The `tool_result` events of parallel tool calls are recorded in completion order, while the
/// conversation keeps call order (see [`AgentEvent`]).
///
/// ```
/// use prompty::{Agent, AgentEvent, BoxFuture, Executor, Message, Role, TurnOptions};
/// use serde_json::{json, Value};
/// struct Hello;
/// impl Executor for Hello {
///     fn execute_async<'a>(&'a self, _: &'a Agent, _: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
///         Box::pin(async { Ok(json!({"choices": [{"message": {"content": "Hello"}}]})) })
///     }
/// }
/// prompty::register_executor("hello-events-doc", Hello);
/// prompty::register_processor("hello-events-doc", prompty::providers::openai::OpenAiProcessor);
/// let agent = Agent::from_value(json!({"model": {"id": "m", "provider": "hello-events-doc"}}))?;
///
/// let (options, events) = TurnOptions::new().max_iterations(3).record_events();
/// let out = prompty::run_turn(&agent, vec![Message::new(Role::User, "Hi")], &json!({}), options)?;
/// assert_eq!(out.result, "Hello");
/// assert_eq!(events.kinds(), ["done"]);
/// let recorded = events.take(); // the log is now empty
/// assert!(matches!(&recorded[0], AgentEvent::Done { response, .. } if response == "Hello"));
/// assert!(events.is_empty());
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Clone)]
pub struct EventLog(Arc<Mutex<Vec<AgentEvent>>>);

impl EventLog {
    pub(crate) fn new() -> Self {
        EventLog(Arc::default())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<AgentEvent>> {
        // Nothing panics while holding the lock; a poisoned one still holds whole events.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn push(&self, event: AgentEvent) {
        self.lock().push(event);
    }

    /// A copy of the events recorded so far, oldest first.
    ///
    /// ```
    /// let (_options, events) = prompty::TurnOptions::new().record_events();
    /// assert!(events.events().is_empty()); // no turn has run
    /// ```
    pub fn events(&self) -> Vec<AgentEvent> {
        self.lock().clone()
    }

    /// The events recorded so far, oldest first, removed from the log (a later turn with the
    /// same options records from empty).
    ///
    /// ```
    /// let (_options, events) = prompty::TurnOptions::new().record_events();
    /// assert_eq!(events.take(), Vec::new());
    /// ```
    pub fn take(&self) -> Vec<AgentEvent> {
        std::mem::take(&mut *self.lock())
    }

    /// The [`AgentEvent::kind`] of each event recorded so far, oldest first.
    ///
    /// ```
    /// let (_options, events) = prompty::TurnOptions::new().record_events();
    /// assert_eq!(events.kinds(), Vec::<&str>::new());
    /// ```
    pub fn kinds(&self) -> Vec<&'static str> {
        self.lock().iter().map(AgentEvent::kind).collect()
    }

    /// How many events are recorded.
    ///
    /// ```
    /// let (_options, events) = prompty::TurnOptions::new().record_events();
    /// assert_eq!(events.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no event is recorded.
    ///
    /// ```
    /// let (_options, events) = prompty::TurnOptions::new().record_events();
    /// assert!(events.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog").field("kinds", &self.kinds()).finish()
    }
}

/// Hands events to the sink and the log, if there are any; builds an event only then. A sink that
/// fails or panics is logged and the loop goes on.
#[derive(Clone)]
pub(crate) struct Emitter {
    sink: Option<EventSink>,
    log: Option<EventLog>,
}

impl Emitter {
    pub(crate) fn new(sink: Option<EventSink>, log: Option<EventLog>) -> Self {
        Emitter { sink, log }
    }

    /// Whether events go anywhere (a sink or a log).
    pub(crate) fn is_active(&self) -> bool {
        self.sink.is_some() || self.log.is_some()
    }

    /// Emits the event `make` builds (only called when there is a sink or a log).
    pub(crate) fn emit(&self, make: impl FnOnce() -> AgentEvent) {
        if self.sink.is_none() && self.log.is_none() {
            return;
        }
        let event = make();
        if let Some(sink) = &self.sink {
            deliver(sink, &event);
        }
        if let Some(log) = &self.log {
            log.push(event);
        }
    }
}

/// Hands `event` to the sink; a failure or a panic of the sink is logged, never propagated.
/// (Apart from `Emitter::emit` so that it is compiled once, not once per kind of event.)
fn deliver(sink: &EventSink, event: &AgentEvent) {
    match catch_unwind(AssertUnwindSafe(|| sink(event))) {
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
