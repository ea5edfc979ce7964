//! The engine's one monotonic event stream (the specification's `EngineEvent`): what a journal
//! stores, what a checkpoint points into, what UIs, traces and replay records are projected from.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of an [`EngineEvent`], as the specification names them.
///
/// ```
/// use prompty::engine::EventKind;
/// assert_eq!(EventKind::CheckpointCreated.as_str(), "checkpoint_created");
/// assert_eq!(serde_json::to_value(EventKind::TurnStarted).unwrap(), "turn_started");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// The turn began (or resumed: the payload says `resumed`).
    TurnStarted,
    /// The context of an invocation was assembled; the payload names its snapshot.
    ContextPrepared,
    /// A model attempt began.
    ModelInvocationStarted,
    /// A model invocation answered.
    ModelInvocationCompleted,
    /// A model attempt failed; the payload says whether it is retried.
    ModelInvocationFailed,
    /// A model invocation's outcome is unknown.
    ModelReconciliationRequired,
    /// A host supplied the response of an invocation whose outcome was unknown.
    ModelInvocationReconciled,
    /// A tool request awaits permission.
    PermissionRequested,
    /// A tool request was allowed or denied.
    PermissionResolved,
    /// A tool began to run (committed before it runs).
    ToolExecutionStarted,
    /// A tool returned (or failed).
    ToolExecutionCompleted,
    /// A tool result became part of the conversation.
    ToolResultCommitted,
    /// A host supplied the result of a tool whose outcome was unknown.
    ToolResultReconciled,
    /// The conversation changed (tool results, steering, trimming).
    ConversationUpdated,
    /// A checkpoint was written with the events before it.
    CheckpointCreated,
    /// The turn succeeded.
    TurnCommitted,
    /// The turn was cancelled.
    TurnCancelled,
    /// The turn failed.
    TurnFailed,
    /// The turn stopped on an effect whose outcome is unknown.
    TurnReconciliationRequired,
    /// The post-commit effects began.
    PostCommitStarted,
    /// The post-commit effects finished.
    PostCommitCompleted,
    /// A post-commit effect failed (the turn stays committed).
    PostCommitFailed,
}

impl EventKind {
    /// The specification's name.
    ///
    /// ```
    /// assert_eq!(prompty::engine::EventKind::PostCommitFailed.as_str(), "post_commit_failed");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::TurnStarted => "turn_started",
            EventKind::ContextPrepared => "context_prepared",
            EventKind::ModelInvocationStarted => "model_invocation_started",
            EventKind::ModelInvocationCompleted => "model_invocation_completed",
            EventKind::ModelInvocationFailed => "model_invocation_failed",
            EventKind::ModelReconciliationRequired => "model_reconciliation_required",
            EventKind::ModelInvocationReconciled => "model_invocation_reconciled",
            EventKind::PermissionRequested => "permission_requested",
            EventKind::PermissionResolved => "permission_resolved",
            EventKind::ToolExecutionStarted => "tool_execution_started",
            EventKind::ToolExecutionCompleted => "tool_execution_completed",
            EventKind::ToolResultCommitted => "tool_result_committed",
            EventKind::ToolResultReconciled => "tool_result_reconciled",
            EventKind::ConversationUpdated => "conversation_updated",
            EventKind::CheckpointCreated => "checkpoint_created",
            EventKind::TurnCommitted => "turn_committed",
            EventKind::TurnCancelled => "turn_cancelled",
            EventKind::TurnFailed => "turn_failed",
            EventKind::TurnReconciliationRequired => "turn_reconciliation_required",
            EventKind::PostCommitStarted => "post_commit_started",
            EventKind::PostCommitCompleted => "post_commit_completed",
            EventKind::PostCommitFailed => "post_commit_failed",
        }
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One event of a session's monotonic stream.
///
/// ```
/// use prompty::engine::{EngineEvent, EventKind};
/// let e = EngineEvent { sequence: 1, id: "event-1".into(), timestamp: "2026-07-21T00:00:00Z".into(),
///     session_id: "s".into(), turn_id: "t".into(), run_id: "run-1".into(), invocation_id: None,
///     iteration: None, kind: EventKind::TurnStarted, payload: serde_json::Value::Null };
/// assert_eq!(serde_json::to_value(&e).unwrap()["kind"], "turn_started");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EngineEvent {
    /// Position in the session's stream, from 1, without gaps.
    pub sequence: u64,
    /// This event.
    pub id: String,
    /// When it was emitted (RFC 3339).
    pub timestamp: String,
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The engine run that emitted it (a resumed turn has a new run).
    pub run_id: String,
    /// The model invocation it belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation_id: Option<String>,
    /// The model round (from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// What happened.
    pub kind: EventKind,
    /// The event's data (a tool request, a result, a snapshot id, an error).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub payload: Value,
}
