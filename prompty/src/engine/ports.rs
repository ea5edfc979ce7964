//! The engine's ports (the specification's runtime-local interfaces): everything outside the
//! state machine — the model, the tools, permissions, context, the final-output policy, post-commit
//! effects, the clock and identifiers — is reached through one of these traits.

use super::types::{ContextDecision, ContextSnapshot, ModelResponse, PermissionDecision, ToolOutput, ToolRequest};
use super::TurnCommit;
use crate::{BoxFuture, Error, Message, Result, Role, ToolCall, TurnStop};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why a model attempt failed, which decides what the engine does next.
///
/// ```
/// let f = prompty::engine::ModelFailure::Transient(prompty::Error::Task("connection reset".into()));
/// assert!(matches!(f, prompty::engine::ModelFailure::Transient(_)));
/// ```
#[derive(Debug)]
pub enum ModelFailure {
    /// Nothing was generated, or nothing that matters: the engine tries again with the same
    /// snapshot, up to its attempt limit.
    Transient(Error),
    /// The turn ends with this reason (a 4xx, a response that cannot be processed, a guardrail).
    Fatal(TurnStop),
    /// The provider may have acted on the request, and its answer was lost: the turn stops with
    /// `reconciliation_required` and a host supplies the response
    /// ([`crate::engine::TurnEngine::resolve_model`]).
    Indeterminate(Error),
}

/// The model (the specification's `ModelPort`): one invocation from an immutable context
/// snapshot, and the messages a tool round adds to the conversation.
///
/// ```
/// use prompty::engine::{ContextSnapshot, ModelFailure, ModelPort, ModelResponse};
/// use prompty::BoxFuture;
/// struct Echo;
/// impl ModelPort for Echo {
///     fn invoke<'a>(&'a self, snapshot: &'a ContextSnapshot, _attempt: u32)
///         -> BoxFuture<'a, Result<ModelResponse, ModelFailure>> {
///         let last = snapshot.messages.last().map(|m| m.text()).unwrap_or_default();
///         Box::pin(async move { Ok(ModelResponse::output(serde_json::json!(last))) })
///     }
/// }
/// # let _ = Echo;
/// ```
pub trait ModelPort: Send + Sync {
    /// Invokes the model with `snapshot`; `attempt` counts from 0 (a retry reuses the snapshot).
    fn invoke<'a>(
        &'a self,
        snapshot: &'a ContextSnapshot,
        attempt: u32,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelFailure>>;

    /// The messages one tool round adds to the conversation: by default the response's assistant
    /// messages (or one assistant message carrying the tool calls), then one `tool` message per
    /// result, in request order. A provider that formats its rounds itself overrides this (the
    /// response's `metadata` keeps what it needs).
    fn tool_messages(&self, response: &ModelResponse, results: &[ToolOutput]) -> Result<Vec<Message>> {
        Ok(default_tool_messages(response, results))
    }

    /// Whether an invocation interrupted by a crash may be sent again on resume (true: a model call
    /// has no effect outside the response, which was never committed). A port whose provider keeps
    /// state per request answers false, and such an invocation needs reconciliation.
    fn reinvocable(&self) -> bool {
        true
    }
}

/// The default messages of a tool round (see [`ModelPort::tool_messages`]).
///
/// ```
/// use prompty::engine::{default_tool_messages, ModelResponse, ToolOutput, ToolRequest};
/// let response = ModelResponse::tools(vec![ToolRequest::new("c1", "add", serde_json::json!({"a": 1}))]);
/// let messages = default_tool_messages(&response, &[ToolOutput::success("c1", "add", serde_json::json!(2))]);
/// assert_eq!(messages.len(), 2);
/// assert_eq!(messages[0].tool_calls[0].arguments, r#"{"a":1}"#);
/// assert_eq!(messages[1].tool_call_id.as_deref(), Some("c1"));
/// assert_eq!(messages[1].text(), "2");
/// ```
pub fn default_tool_messages(response: &ModelResponse, results: &[ToolOutput]) -> Vec<Message> {
    let mut messages = response.assistant_messages.clone();
    if messages.is_empty() {
        let mut assistant = Message::with_content(Role::Assistant, Vec::new());
        assistant.tool_calls = response
            .tool_requests
            .iter()
            .map(|r| {
                let arguments = match &r.arguments {
                    Value::String(s) => s.clone(),
                    Value::Null => "{}".to_owned(),
                    other => other.to_string(),
                };
                ToolCall::new(&r.id, &r.name, arguments)
            })
            .collect();
        messages.push(assistant);
    }
    for result in results {
        let mut m = Message::new(Role::Tool, result.text());
        m.tool_call_id = Some(result.request_id.clone());
        m.metadata.insert("name".into(), Value::String(result.name.clone()));
        messages.push(m);
    }
    messages
}

/// What a tool execution knows of its place in the turn.
///
/// ```
/// let ctx = prompty::engine::ToolContext { session_id: "s", turn_id: "t", iteration: 0, idempotency_key: "s/t/c1" };
/// assert_eq!(ctx.idempotency_key, "s/t/c1");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    /// The session.
    pub session_id: &'a str,
    /// The turn.
    pub turn_id: &'a str,
    /// The model round that asked.
    pub iteration: u32,
    /// The effect's stable identity (`session/turn/request id`): the same on every retry and
    /// after a resume, for a tool host that deduplicates.
    pub idempotency_key: &'a str,
}

/// The tools (the specification's `ToolPort` / `HostToolExecutor`).
///
/// ```
/// use prompty::engine::{ToolContext, ToolOutput, ToolPort, ToolRequest};
/// use prompty::{BoxFuture, TurnStop};
/// struct Echo;
/// impl ToolPort for Echo {
///     fn execute<'a>(&'a self, request: &'a ToolRequest, _: ToolContext<'a>) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
///         Box::pin(async move { Ok(ToolOutput::success(&request.id, &request.name, request.arguments.clone())) })
///     }
/// }
/// # let _ = Echo;
/// ```
pub trait ToolPort: Send + Sync {
    /// Checks a response's requests before any is authorized: an unknown tool, or too many calls,
    /// ends the turn (a plan failure, not a tool result).
    fn check(&self, requests: &[ToolRequest]) -> std::result::Result<(), TurnStop> {
        let _ = requests;
        Ok(())
    }

    /// Runs one request. A failure the model should read is an `Ok` [`ToolOutput`] with outcome
    /// `failed`; an outcome nobody can know is `indeterminate`; `Err` ends the turn.
    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        context: ToolContext<'a>,
    ) -> BoxFuture<'a, std::result::Result<ToolOutput, TurnStop>>;

    /// Whether running the tool twice has the effect of running it once: an interrupted call of
    /// such a tool is run again on resume instead of needing reconciliation.
    fn idempotent(&self, name: &str) -> bool {
        let _ = name;
        false
    }
}

/// Permissions (the specification's `PermissionPort`): whether a tool request may run. A denial
/// becomes the request's result, which the model reads.
///
/// ```
/// use prompty::engine::{PermissionDecision, PermissionPort, ToolRequest};
/// use prompty::BoxFuture;
/// struct NoDeletes;
/// impl PermissionPort for NoDeletes {
///     fn resolve<'a>(&'a self, request: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision> {
///         let denied = request.name.starts_with("delete");
///         Box::pin(async move { if denied { PermissionDecision::deny("deleting is not allowed") } else { PermissionDecision::allow() } })
///     }
/// }
/// # let _ = NoDeletes;
/// ```
pub trait PermissionPort: Send + Sync {
    /// The decision for `request`.
    fn resolve<'a>(&'a self, request: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision>;
}

/// Allows every request: the default permission port.
///
/// ```
/// let _ = prompty::engine::AllowAll;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl PermissionPort for AllowAll {
    fn resolve<'a>(&'a self, _: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision> {
        Box::pin(async { PermissionDecision::allow() })
    }
}

/// Denies every request.
///
/// ```
/// let _ = prompty::engine::DenyAll;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyAll;

impl PermissionPort for DenyAll {
    fn resolve<'a>(&'a self, request: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision> {
        let reason = format!("Permission denied for tool '{}'", request.name);
        Box::pin(async move { PermissionDecision::deny(reason) })
    }
}

/// The conversation an invocation's context is assembled from, handed to each
/// [`ContextTransform`] in turn.
///
/// ```
/// let mut messages = vec![prompty::Message::new(prompty::Role::User, "Hi")];
/// let mut decisions = Vec::new();
/// let draft = prompty::engine::ContextDraft { messages: &mut messages, decisions: &mut decisions, iteration: 0 };
/// assert_eq!(draft.messages.len(), 1);
/// ```
#[derive(Debug)]
pub struct ContextDraft<'a> {
    /// The conversation; a transform may add (steering, recalled memory) or remove (trimming).
    /// What it leaves is committed to the conversation.
    pub messages: &'a mut Vec<Message>,
    /// The decisions recorded so far; a transform that removes a message records why.
    pub decisions: &'a mut Vec<ContextDecision>,
    /// The model round being prepared.
    pub iteration: u32,
}

/// One step of context assembly (the specification's `ContextSource`, `ContextTransform` and
/// packing strategy share this shape here): runs before every model invocation.
///
/// ```
/// use prompty::engine::{ContextDraft, ContextTransform};
/// struct Reminder;
/// impl ContextTransform for Reminder {
///     fn transform(&self, draft: &mut ContextDraft<'_>) -> Result<(), prompty::TurnStop> {
///         if draft.iteration == 0 { draft.messages.push(prompty::Message::new(prompty::Role::User, "Be brief.")); }
///         Ok(())
///     }
/// }
/// # let _ = Reminder;
/// ```
pub trait ContextTransform: Send + Sync {
    /// Adds, removes or checks; `Err` ends the turn (an input guardrail's denial).
    fn transform(&self, draft: &mut ContextDraft<'_>) -> std::result::Result<(), TurnStop>;
}

/// The final-output policy: validates or rewrites the answer before it is committed. A rejection
/// is a durable failed turn ([`TurnStop::OutputRejected`]).
///
/// ```
/// use prompty::engine::FinalOutputPolicy;
/// struct NonEmpty;
/// impl FinalOutputPolicy for NonEmpty {
///     fn check(&self, output: serde_json::Value) -> Result<serde_json::Value, String> {
///         if output == "" { Err("the answer is empty".into()) } else { Ok(output) }
///     }
/// }
/// assert!(NonEmpty.check(serde_json::json!("")).is_err());
/// ```
pub trait FinalOutputPolicy: Send + Sync {
    /// The output to commit, or why it is rejected.
    fn check(&self, output: Value) -> std::result::Result<Value, String>;
}

/// An effect run after a turn is committed (consolidating memory, sending a notification). It
/// receives an identity derived from the session and turn, the same on every resume, and must be
/// idempotent: a resumed turn whose effects never recorded completion runs them again.
///
/// ```
/// use prompty::engine::{PostCommitEffect, TurnCommit};
/// use prompty::BoxFuture;
/// struct Log;
/// impl PostCommitEffect for Log {
///     fn name(&self) -> &str { "log" }
///     fn run<'a>(&'a self, commit: &'a TurnCommit, effect_id: &'a str) -> BoxFuture<'a, prompty::Result<()>> {
///         println!("{effect_id}: {:?}", commit.status);
///         Box::pin(async { Ok(()) })
///     }
/// }
/// # let _ = Log;
/// ```
pub trait PostCommitEffect: Send + Sync {
    /// The effect's name (part of its identity).
    fn name(&self) -> &str;
    /// Runs it.
    fn run<'a>(&'a self, commit: &'a TurnCommit, effect_id: &'a str) -> BoxFuture<'a, Result<()>>;
}

/// The clock events and checkpoints are stamped with.
///
/// ```
/// use prompty::engine::{Clock, FixedClock};
/// assert_eq!(FixedClock("2026-07-21T00:00:00Z".into()).now(), "2026-07-21T00:00:00Z");
/// ```
pub trait Clock: Send + Sync {
    /// Now, RFC 3339.
    fn now(&self) -> String;
}

/// The system clock (UTC, microseconds).
///
/// ```
/// use prompty::engine::Clock;
/// assert!(prompty::engine::SystemClock.now().ends_with('Z'));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> String {
        crate::trace::time::rfc3339(std::time::SystemTime::now())
    }
}

/// A clock that always says the same time (deterministic tests and replays).
///
/// ```
/// use prompty::engine::Clock;
/// assert_eq!(prompty::engine::FixedClock("t".into()).now(), "t");
/// ```
#[derive(Debug, Clone, Default)]
pub struct FixedClock(pub String);

impl Clock for FixedClock {
    fn now(&self) -> String {
        self.0.clone()
    }
}

/// Where the engine's identifiers (runs, events, snapshots, invocations, checkpoints) come from.
///
/// ```
/// use prompty::engine::{IdGenerator, SequentialIds};
/// let ids = SequentialIds::default();
/// assert_eq!(ids.next("event"), "event-1");
/// assert_eq!(ids.next("snapshot"), "snapshot-2");
/// ```
pub trait IdGenerator: Send + Sync {
    /// A new identifier for something of `kind`.
    fn next(&self, kind: &str) -> String;
}

/// `{kind}-{n}` with one counter: deterministic, for tests and replays.
///
/// ```
/// use prompty::engine::IdGenerator;
/// assert_eq!(prompty::engine::SequentialIds::default().next("run"), "run-1");
/// ```
#[derive(Debug, Default)]
pub struct SequentialIds(AtomicU64);

impl IdGenerator for SequentialIds {
    fn next(&self, kind: &str) -> String {
        format!("{kind}-{}", self.0.fetch_add(1, Ordering::Relaxed) + 1)
    }
}

/// `{kind}-{32 random hex digits}`: unique across processes and machines. The default.
///
/// ```
/// use prompty::engine::IdGenerator;
/// let id = prompty::engine::RandomIds.next("run");
/// assert!(id.starts_with("run-") && id.len() == 4 + 32);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct RandomIds;

impl IdGenerator for RandomIds {
    fn next(&self, kind: &str) -> String {
        let (a, b): (u64, u64) = (rand::random(), rand::random());
        format!("{kind}-{a:016x}{b:016x}")
    }
}

/// Something told about every event once it is durable (a UI, the legacy event stream, a trace).
pub type EventObserver = Arc<dyn Fn(&super::EngineEvent) + Send + Sync>;
