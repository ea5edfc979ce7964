//! The data of the turn engine (the specification's `turn-engine.tsp` and `invocation.tsp`):
//! tool requests and results, provider state, context snapshots, model invocations, permission
//! decisions. Every type serializes to the specification's camelCase JSON, which is what
//! checkpoints and journals store.

use crate::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How completely an invocation can be rebuilt outside its provider.
///
/// ```
/// use prompty::engine::Portability;
/// assert_eq!(serde_json::to_value(Portability::Delegated).unwrap(), "delegated");
/// assert_eq!(Portability::default(), Portability::Portable);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Portability {
    /// Every model-visible message is held locally.
    #[default]
    Portable,
    /// The provider holds state, referenced explicitly ([`DelegatedStateReference`]); re-running
    /// needs that provider.
    Delegated,
    /// The provider holds state that cannot be rebuilt.
    Opaque,
}

/// A reference to model-visible state a provider keeps (a previous response id, a conversation).
///
/// ```
/// let r = prompty::engine::DelegatedStateReference::new("openai", "previous_response", "resp_1");
/// assert_eq!(serde_json::to_value(&r).unwrap()["kind"], "previous_response");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelegatedStateReference {
    /// The provider that keeps the state.
    pub provider: String,
    /// The provider's kind of state.
    pub kind: String,
    /// The provider's identifier of it.
    pub id: String,
    /// Anything else the provider needs.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl DelegatedStateReference {
    /// A reference without metadata.
    ///
    /// ```
    /// let r = prompty::engine::DelegatedStateReference::new("openai", "previous_response", "resp_1");
    /// assert_eq!(r.id, "resp_1");
    /// ```
    pub fn new(provider: impl Into<String>, kind: impl Into<String>, id: impl Into<String>) -> Self {
        DelegatedStateReference { provider: provider.into(), kind: kind.into(), id: id.into(), metadata: Map::new() }
    }
}

/// Provider state carried into or out of an invocation.
///
/// ```
/// let state = prompty::engine::ContextState::default();
/// assert_eq!(serde_json::to_value(&state).unwrap(), serde_json::json!({"portability": "portable"}));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextState {
    /// Whether the model-visible context is held locally.
    #[serde(default)]
    pub portability: Portability,
    /// The provider-held state it depends on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delegated_state: Vec<DelegatedStateReference>,
}

/// Whether a context candidate went into an invocation.
///
/// ```
/// assert_eq!(serde_json::to_value(prompty::engine::Disposition::Excluded).unwrap(), "excluded");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Disposition {
    /// Sent to the model.
    Included,
    /// Left out; the decision says why.
    Excluded,
}

/// An auditable decision made while preparing an invocation's context: a message kept, a message
/// trimmed, a steering message added.
///
/// ```
/// use prompty::engine::{ContextDecision, Disposition};
/// let d = ContextDecision::new("message-3", Disposition::Excluded, "over the context budget");
/// assert_eq!(serde_json::to_value(&d).unwrap()["candidateId"], "message-3");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextDecision {
    /// The candidate, unique within the invocation.
    pub candidate_id: String,
    /// Included or excluded.
    pub disposition: Disposition,
    /// Why.
    pub reason: String,
    /// Anything else the transform records.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ContextDecision {
    /// A decision without metadata.
    ///
    /// ```
    /// use prompty::engine::{ContextDecision, Disposition};
    /// assert_eq!(ContextDecision::new("m1", Disposition::Included, "kept").reason, "kept");
    /// ```
    pub fn new(candidate_id: impl Into<String>, disposition: Disposition, reason: impl Into<String>) -> Self {
        ContextDecision { candidate_id: candidate_id.into(), disposition, reason: reason.into(), metadata: Map::new() }
    }
}

/// The immutable model-visible context of one model invocation. Retries of the invocation reuse
/// it.
///
/// ```
/// use prompty::engine::{ContextSnapshot, ContextState};
/// let s = ContextSnapshot {
///     id: "snapshot-1".into(), session_id: "s".into(), turn_id: "t".into(), invocation_id: "invocation-1".into(),
///     iteration: 0, messages: vec![prompty::Message::new(prompty::Role::User, "Hi")], decisions: Vec::new(),
///     stable_prefix_messages: 1, context_state: ContextState::default(),
/// };
/// assert_eq!(serde_json::to_value(&s).unwrap()["stablePrefixMessages"], 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextSnapshot {
    /// This snapshot.
    pub id: String,
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The model invocation it is for.
    pub invocation_id: String,
    /// The model round, from 0.
    pub iteration: u32,
    /// What the model sees, in order.
    pub messages: Vec<Message>,
    /// The decisions that assembled it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<ContextDecision>,
    /// How many leading messages are unchanged since the turn began (eligible for a provider's
    /// prefix cache).
    #[serde(default)]
    pub stable_prefix_messages: u32,
    /// The provider state the invocation continues.
    #[serde(default)]
    pub context_state: ContextState,
}

/// A tool call the model asked for, normalized by the model port.
///
/// ```
/// let r = prompty::engine::ToolRequest::new("call-1", "add", serde_json::json!({"a": 2}));
/// assert_eq!(serde_json::to_value(&r).unwrap()["arguments"]["a"], 2);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRequest {
    /// The provider's id of the call; also the stable identity of its effect (an idempotency key
    /// for the tool's host).
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments: an object, or the provider's JSON text of one.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub arguments: Value,
    /// Anything else the provider sent with it.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ToolRequest {
    /// A request without metadata.
    ///
    /// ```
    /// let r = prompty::engine::ToolRequest::new("c", "now", serde_json::json!({}));
    /// assert_eq!(r.name, "now");
    /// ```
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: Value) -> Self {
        ToolRequest { id: id.into(), name: name.into(), arguments, metadata: Map::new() }
    }
}

/// What came of a tool effect.
///
/// ```
/// assert_eq!(serde_json::to_value(prompty::engine::ToolOutcome::Indeterminate).unwrap(), "indeterminate");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolOutcome {
    /// It ran and returned.
    Success,
    /// It failed, or was refused; the model reads why.
    Failed,
    /// Nobody knows whether the effect happened: the turn needs reconciliation.
    Indeterminate,
}

/// The result of one tool request, as the model will read it.
///
/// ```
/// use prompty::engine::{ToolOutcome, ToolOutput};
/// let r = ToolOutput::success("call-1", "add", serde_json::json!(5));
/// assert_eq!(r.outcome, ToolOutcome::Success);
/// let d = ToolOutput::failed("call-2", "rm", "permission_denied", "Permission denied");
/// assert_eq!(serde_json::to_value(&d).unwrap()["errorKind"], "permission_denied");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// The [`ToolRequest::id`] it answers.
    pub request_id: String,
    /// The tool.
    pub name: String,
    /// What came of it.
    pub outcome: ToolOutcome,
    /// What it returned (or the text of its failure).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub output: Value,
    /// A stable category of failure: `permission_denied`, `exception`, `invalid_arguments`, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// Anything else the tool host records (attachments, timings).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ToolOutput {
    /// A successful result.
    ///
    /// ```
    /// assert!(prompty::engine::ToolOutput::success("c", "t", serde_json::json!("ok")).error_kind.is_none());
    /// ```
    pub fn success(request_id: impl Into<String>, name: impl Into<String>, output: Value) -> Self {
        ToolOutput {
            request_id: request_id.into(),
            name: name.into(),
            outcome: ToolOutcome::Success,
            output,
            error_kind: None,
            metadata: Map::new(),
        }
    }

    /// A failed result whose `message` the model reads.
    ///
    /// ```
    /// let r = prompty::engine::ToolOutput::failed("c", "t", "exception", "boom");
    /// assert_eq!(r.output, "boom");
    /// ```
    pub fn failed(
        request_id: impl Into<String>,
        name: impl Into<String>,
        error_kind: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ToolOutput {
            request_id: request_id.into(),
            name: name.into(),
            outcome: ToolOutcome::Failed,
            output: Value::String(message.into()),
            error_kind: Some(error_kind.into()),
            metadata: Map::new(),
        }
    }

    /// The output as the text the model reads: a string as it is, other JSON compactly.
    ///
    /// ```
    /// let r = prompty::engine::ToolOutput::success("c", "t", serde_json::json!({"a": 1}));
    /// assert_eq!(r.text(), r#"{"a":1}"#);
    /// ```
    pub fn text(&self) -> String {
        model_text(&self.output)
    }
}

/// A JSON value as the text a model reads: a string as it is, anything else compactly (`null` too).
/// The one rendering of tool results and final answers into messages.
pub(crate) fn model_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Token counts of one model invocation.
///
/// ```
/// let u = prompty::engine::Usage { input_tokens: 10, output_tokens: 2 };
/// assert_eq!(serde_json::to_value(u).unwrap()["inputTokens"], 10);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens read.
    pub input_tokens: u64,
    /// Tokens written.
    pub output_tokens: u64,
}

/// What one model invocation gave: a final output, or tool requests (with the assistant messages
/// that carry them), and the provider state the next invocation continues.
///
/// ```
/// use prompty::engine::{ModelResponse, ToolRequest};
/// let answer = ModelResponse::output(serde_json::json!("Hello back"));
/// assert!(answer.tool_requests.is_empty());
/// let tools = ModelResponse::tools(vec![ToolRequest::new("c1", "echo", serde_json::json!({}))]);
/// assert!(tools.output.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelResponse {
    /// The final output, when the model asked for no tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Token counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Assistant messages committed to the conversation before the tool results (the tool calls,
    /// and any text the model wrote beside them). Empty: the engine writes one from the output or
    /// the requests.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assistant_messages: Vec<Message>,
    /// The tools the model asked for, in its order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_requests: Vec<ToolRequest>,
    /// The provider state the next invocation continues (`None`: unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_context_state: Option<ContextState>,
    /// Anything the model port needs again to format the tool round (the raw response), kept in
    /// the checkpoint.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl ModelResponse {
    /// A final output.
    ///
    /// ```
    /// assert_eq!(prompty::engine::ModelResponse::output(serde_json::json!(1)).output, Some(serde_json::json!(1)));
    /// ```
    pub fn output(output: Value) -> Self {
        ModelResponse { output: Some(output), ..Default::default() }
    }

    /// Tool requests.
    ///
    /// ```
    /// let r = prompty::engine::ModelResponse::tools(Vec::new());
    /// assert!(r.output.is_none());
    /// ```
    pub fn tools(requests: Vec<ToolRequest>) -> Self {
        ModelResponse { tool_requests: requests, ..Default::default() }
    }
}

/// A permission decision for one tool request.
///
/// ```
/// let d = prompty::engine::PermissionDecision::deny("writes are not allowed here");
/// assert!(!d.approved);
/// assert!(prompty::engine::PermissionDecision::allow().approved);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionDecision {
    /// Whether the tool may run.
    pub approved: bool,
    /// Why; for a denial, the text the model reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Anything else the resolver records.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl PermissionDecision {
    /// The tool may run.
    ///
    /// ```
    /// assert!(prompty::engine::PermissionDecision::allow().reason.is_none());
    /// ```
    pub fn allow() -> Self {
        PermissionDecision { approved: true, reason: None, metadata: Map::new() }
    }

    /// The tool may not run; the model reads `reason`.
    ///
    /// ```
    /// assert_eq!(prompty::engine::PermissionDecision::deny("no").reason.as_deref(), Some("no"));
    /// ```
    pub fn deny(reason: impl Into<String>) -> Self {
        PermissionDecision { approved: false, reason: Some(reason.into()), metadata: Map::new() }
    }
}

/// What a host needs to reconcile a model invocation whose outcome is unknown: the invocation,
/// its exact context, the attempt that failed and why.
///
/// ```
/// # use prompty::engine::*;
/// let s = ModelReconciliation { invocation_id: "invocation-1".into(), snapshot_id: "snapshot-1".into(),
///     failed_attempt: 0, message: "the connection dropped after the request was sent".into(),
///     metadata: Default::default() };
/// assert_eq!(serde_json::to_value(&s).unwrap()["failedAttempt"], 0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelReconciliation {
    /// The invocation.
    pub invocation_id: String,
    /// Its context snapshot (in the checkpoint).
    pub snapshot_id: String,
    /// The attempt (from 0) whose outcome is unknown.
    pub failed_attempt: u32,
    /// Why it is unknown.
    pub message: String,
    /// Anything the model port recorded (a provider request id to look the response up by).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}
