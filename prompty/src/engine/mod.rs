//! The turn engine (the specification's `turn-engine.md`): one state machine for every agent
//! loop, with durable checkpoints, resume after a crash, permissions, reconciliation and replay.
//!
//! ```text
//! START → RESOLVE_PLAN → PREPARE_INVOCATION → INVOKE_MODEL
//!   → [FINAL]   COMMIT_TURN → RUN_POST_COMMIT_EFFECTS → END
//!   → [TOOLS]   AUTHORIZE_TOOLS → EXECUTE_TOOLS → CHECKPOINT → PREPARE_INVOCATION
//!   → [CANCEL]  COMMIT_CANCELLATION → END
//!   → [UNKNOWN] COMMIT_RECONCILIATION_REQUIRED → END
//!   → [FAULT]   COMMIT_FAILURE → END
//! ```
//!
//! A [`TurnEngine`] is built from ports — the model ([`ModelPort`]), the tools ([`ToolPort`]),
//! permissions ([`PermissionPort`]), context transforms, a final-output policy, post-commit
//! effects, a clock, identifiers — and a store ([`Durability`]): [`MemoryStore`] by default,
//! `SqliteStore` (feature `sqlite`) for one machine, `PostgresStore` (feature `postgres`) for
//! many. [`crate::turn`] and [`crate::run_turn`] are this engine with the ports of a `.prompty`
//! file.
//!
//! What the engine guarantees:
//! - one monotonic event stream per session ([`EngineEvent`], numbered from 1 without gaps);
//!   observers see an event once it is durable;
//! - every model response is committed with a checkpoint before any tool runs; resuming after
//!   it never invokes the model again;
//! - a tool's start is committed before it runs, and its result with a checkpoint right after;
//!   resuming runs the next uncommitted request. A request that started and never completed is
//!   run again only when the tool port calls it idempotent; otherwise the turn ends
//!   `reconciliation_required` naming it, and [`TurnEngine::resolve_tool`] continues it;
//! - retries of a model invocation reuse its context snapshot; tool results are committed in the
//!   model's request order, also when tools run in parallel;
//! - cancellation is checked before context preparation, before every model attempt, during
//!   the model call and retry waits, before every tool, and before every further iteration.
//!
//! ```
//! use prompty::engine::{ModelResponse, ScriptedModel, TurnEngine, TurnRequest, TurnStatus};
//! use prompty::{Message, Role};
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let engine = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(serde_json::json!("Hello back"))]));
//! let result = engine.run(TurnRequest::new("session-1", "turn-1", vec![Message::new(Role::User, "Hello")])).await?;
//! assert_eq!(result.commit.status, TurnStatus::Success);
//! assert_eq!(result.commit.output, Some(serde_json::json!("Hello back")));
//! # Ok::<(), prompty::Error>(()) }).unwrap();
//! ```

mod events;
mod machine;
mod ports;
pub mod replay;
mod scripted;
pub mod store;
mod types;
pub(crate) use types::model_text;

pub use events::{EngineEvent, EventKind};
pub use ports::{
    default_tool_messages, AllowAll, Clock, ContextDraft, ContextTransform, DenyAll, EventObserver, FinalOutputPolicy,
    FixedClock, IdGenerator, ModelFailure, ModelPort, PermissionPort, PostCommitEffect, RandomIds, SequentialIds,
    SystemClock, ToolContext, ToolPort,
};
pub use scripted::{NoTools, ScriptedModel};
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
#[cfg(feature = "sqlite")]
pub use store::SqliteStore;
pub use store::{Checkpoint, Commit, Durability, Lease, MemoryStore, Phase, SessionInfo, TurnStatus};
pub use types::{
    ContextDecision, ContextSnapshot, ContextState, DelegatedStateReference, Disposition, ModelReconciliation,
    ModelResponse, PermissionDecision, Portability, ToolOutcome, ToolOutput, ToolRequest, Usage,
};

use crate::{Message, TurnStop};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The default limit of model invocations in one turn.
pub const DEFAULT_MAX_ITERATIONS: u32 = 10;
/// The default number of attempts of one model invocation (the first and three retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 4;
/// The default time a worker holds a session's lease without committing.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// A turn to run: its identity, its conversation so far, and the host's data to keep with it.
///
/// ```
/// let request = prompty::engine::TurnRequest::new("session-1", "turn-1", Vec::new());
/// assert_eq!(request.session_id, "session-1");
/// ```
#[derive(Debug, Clone, Default)]
pub struct TurnRequest {
    /// The session (a conversation of many turns; the unit a store locks and lists).
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The conversation the first invocation sees.
    pub messages: Vec<Message>,
    /// The host's data, kept in every checkpoint (the CLI keeps the prompt's path and inputs).
    pub metadata: Map<String, Value>,
    /// The provider state the first invocation continues.
    pub context_state: ContextState,
    /// Cancels the turn at the next point the engine checks.
    pub cancel: Option<CancellationToken>,
}

impl TurnRequest {
    /// A request with no metadata, portable state and no cancellation token.
    ///
    /// ```
    /// let r = prompty::engine::TurnRequest::new("s", "t", vec![prompty::Message::new(prompty::Role::User, "Hi")]);
    /// assert_eq!(r.messages.len(), 1);
    /// ```
    pub fn new(session_id: impl Into<String>, turn_id: impl Into<String>, messages: Vec<Message>) -> Self {
        TurnRequest { session_id: session_id.into(), turn_id: turn_id.into(), messages, ..Default::default() }
    }

    /// The same request with a cancellation token.
    ///
    /// ```
    /// let token = prompty::CancellationToken::new();
    /// let r = prompty::engine::TurnRequest::new("s", "t", Vec::new()).cancel(token);
    /// assert!(r.cancel.is_some());
    /// ```
    pub fn cancel(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }
}

/// A turn's committed outcome, handed to post-commit effects (the specification's `TurnCommit`).
///
/// ```
/// use prompty::engine::{ContextState, TurnCommit, TurnStatus};
/// let c = TurnCommit { session_id: "s".into(), turn_id: "t".into(), status: TurnStatus::Success,
///     output: Some(serde_json::json!("hi")), messages: Vec::new(), iterations: 1, last_sequence: 8,
///     context_state: ContextState::default(), reason: None };
/// assert_eq!(serde_json::to_value(&c).unwrap()["lastSequence"], 8);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCommit {
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// How it ended.
    pub status: TurnStatus,
    /// The final output, on success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// The conversation at the end (the answer last, on success).
    pub messages: Vec<Message>,
    /// Model invocations completed.
    pub iterations: u32,
    /// The last event of the turn.
    pub last_sequence: u64,
    /// The provider state the turn ended with.
    pub context_state: ContextState,
    /// Why it failed, was cancelled, or needs reconciliation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What [`TurnEngine::run`] and [`TurnEngine::resume`] give (the specification's
/// `TurnEngineResult`).
#[derive(Debug)]
pub struct TurnEngineResult {
    /// The committed outcome.
    pub commit: TurnCommit,
    /// The context snapshots of the invocations this run made.
    pub snapshots: Vec<ContextSnapshot>,
    /// The tool results this run committed, in commit order.
    pub tool_results: Vec<ToolOutput>,
    /// A post-commit effect that failed, or whose completion could not be recorded; the turn
    /// itself stays committed.
    pub post_commit_error: Option<String>,
    /// Why the turn stopped, when it did not succeed (in this process; a resumed turn that had
    /// already ended has only [`TurnCommit::reason`]).
    pub stop: Option<TurnStop>,
}

/// The agent loop's state machine, built from ports and a store. See the [module](self).
pub struct TurnEngine {
    model: Arc<dyn ModelPort>,
    tools: Arc<dyn ToolPort>,
    permissions: Arc<dyn PermissionPort>,
    store: Arc<dyn Durability>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    transforms: Vec<Arc<dyn ContextTransform>>,
    final_output: Option<Arc<dyn FinalOutputPolicy>>,
    post_commit: Vec<Arc<dyn PostCommitEffect>>,
    observers: Vec<EventObserver>,
    max_iterations: u32,
    max_attempts: u32,
    retry_backoff: Duration,
    parallel_tools: bool,
    worker: Option<(String, Duration)>,
}

impl std::fmt::Debug for TurnEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnEngine")
            .field("store", &self.store.describe())
            .field("max_iterations", &self.max_iterations)
            .field("max_attempts", &self.max_attempts)
            .field("parallel_tools", &self.parallel_tools)
            .field("worker", &self.worker.as_ref().map(|(w, _)| w))
            .finish_non_exhaustive()
    }
}

impl TurnEngine {
    /// An engine with `model` and the defaults: no tools ([`NoTools`]), every request allowed
    /// ([`AllowAll`]), a [`MemoryStore`], the system clock, random identifiers, 10 iterations,
    /// 4 attempts per invocation, sequential tools, no lease.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()));
    /// # let _ = engine;
    /// ```
    pub fn new(model: impl ModelPort + 'static) -> Self {
        TurnEngine::from_model(Arc::new(model))
    }

    /// [`TurnEngine::new`] from a shared model port.
    ///
    /// ```
    /// let model = std::sync::Arc::new(prompty::engine::ScriptedModel::new(Vec::new()));
    /// let engine = prompty::engine::TurnEngine::from_model(model);
    /// # let _ = engine;
    /// ```
    pub fn from_model(model: Arc<dyn ModelPort>) -> Self {
        TurnEngine {
            model,
            tools: Arc::new(NoTools),
            permissions: Arc::new(AllowAll),
            store: Arc::new(MemoryStore::new()),
            clock: Arc::new(SystemClock),
            ids: Arc::new(RandomIds),
            transforms: Vec::new(),
            final_output: None,
            post_commit: Vec::new(),
            observers: Vec::new(),
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            retry_backoff: Duration::from_millis(500),
            parallel_tools: false,
            worker: None,
        }
    }

    /// The tools.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .tools(prompty::engine::NoTools);
    /// # let _ = engine;
    /// ```
    pub fn tools(mut self, tools: impl ToolPort + 'static) -> Self {
        self.tools = Arc::new(tools);
        self
    }

    /// The tools, shared.
    ///
    /// ```
    /// let tools: std::sync::Arc<dyn prompty::engine::ToolPort> = std::sync::Arc::new(prompty::engine::NoTools);
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).tools_arc(tools);
    /// # let _ = engine;
    /// ```
    pub fn tools_arc(mut self, tools: Arc<dyn ToolPort>) -> Self {
        self.tools = tools;
        self
    }

    /// The permission port.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .permissions(prompty::engine::DenyAll);
    /// # let _ = engine;
    /// ```
    pub fn permissions(mut self, permissions: impl PermissionPort + 'static) -> Self {
        self.permissions = Arc::new(permissions);
        self
    }

    /// The store.
    ///
    /// ```
    /// let store = std::sync::Arc::new(prompty::engine::MemoryStore::new());
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).store(store);
    /// # let _ = engine;
    /// ```
    pub fn store(mut self, store: Arc<dyn Durability>) -> Self {
        self.store = store;
        self
    }

    /// The clock.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .clock(prompty::engine::FixedClock("2026-07-21T00:00:00Z".into()));
    /// # let _ = engine;
    /// ```
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The identifier generator.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .ids(prompty::engine::SequentialIds::default());
    /// # let _ = engine;
    /// ```
    pub fn ids(mut self, ids: impl IdGenerator + 'static) -> Self {
        self.ids = Arc::new(ids);
        self
    }

    /// Adds a context transform, run before every invocation after the ones added before it.
    ///
    /// ```
    /// struct Keep;
    /// impl prompty::engine::ContextTransform for Keep {
    ///     fn transform(&self, _: &mut prompty::engine::ContextDraft<'_>) -> Result<(), prompty::TurnStop> { Ok(()) }
    /// }
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).transform(Keep);
    /// # let _ = engine;
    /// ```
    pub fn transform(mut self, transform: impl ContextTransform + 'static) -> Self {
        self.transforms.push(Arc::new(transform));
        self
    }

    /// The final-output policy.
    ///
    /// ```
    /// struct Any;
    /// impl prompty::engine::FinalOutputPolicy for Any {
    ///     fn check(&self, v: serde_json::Value) -> Result<serde_json::Value, String> { Ok(v) }
    /// }
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).final_output(Any);
    /// # let _ = engine;
    /// ```
    pub fn final_output(mut self, policy: impl FinalOutputPolicy + 'static) -> Self {
        self.final_output = Some(Arc::new(policy));
        self
    }

    /// Adds a post-commit effect.
    ///
    /// ```
    /// # use prompty::engine::*;
    /// struct Nothing;
    /// impl PostCommitEffect for Nothing {
    ///     fn name(&self) -> &str { "nothing" }
    ///     fn run<'a>(&'a self, _: &'a TurnCommit, _: &'a str) -> prompty::BoxFuture<'a, prompty::Result<()>> { Box::pin(async { Ok(()) }) }
    /// }
    /// let engine = TurnEngine::new(ScriptedModel::new(Vec::new())).post_commit(Nothing);
    /// # let _ = engine;
    /// ```
    pub fn post_commit(mut self, effect: impl PostCommitEffect + 'static) -> Self {
        self.post_commit.push(Arc::new(effect));
        self
    }

    /// Adds an observer, told about every event once it is durable.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .observe(|e| println!("{} {}", e.sequence, e.kind));
    /// # let _ = engine;
    /// ```
    pub fn observe(mut self, observer: impl Fn(&EngineEvent) + Send + Sync + 'static) -> Self {
        self.observers.push(Arc::new(observer));
        self
    }

    /// The limit of model invocations in one turn; the next one fails the turn with
    /// [`TurnStop::MaxIterations`] (with 0, the turn fails before its first invocation).
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).max_iterations(3);
    /// # let _ = engine;
    /// ```
    pub fn max_iterations(mut self, n: u32) -> Self {
        self.max_iterations = n;
        self
    }

    /// The attempts of one model invocation (at least 1); transient failures are retried with
    /// backoff until they are spent.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).max_attempts(1);
    /// # let _ = engine;
    /// ```
    pub fn max_attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// The base of the retry backoff: `min(base · 2ⁿ⁻¹ + jitter, 60 s)` before retry `n`.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .retry_backoff(std::time::Duration::from_millis(10));
    /// # let _ = engine;
    /// ```
    pub fn retry_backoff(mut self, base: Duration) -> Self {
        self.retry_backoff = base;
        self
    }

    /// Runs the tools of one response concurrently (their starts are committed together first;
    /// their results are committed in request order).
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new())).parallel_tools(true);
    /// # let _ = engine;
    /// ```
    pub fn parallel_tools(mut self, parallel: bool) -> Self {
        self.parallel_tools = parallel;
        self
    }

    /// Makes this engine a named worker: it takes a session's lease (held `ttl` past each commit)
    /// before running or resuming it, and refuses a session another live worker holds.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()))
    ///     .worker("worker-1", std::time::Duration::from_secs(30));
    /// # let _ = engine;
    /// ```
    pub fn worker(mut self, name: impl Into<String>, ttl: Duration) -> Self {
        self.worker = Some((name.into(), ttl));
        self
    }

    /// The store this engine writes to.
    ///
    /// ```
    /// let engine = prompty::engine::TurnEngine::new(prompty::engine::ScriptedModel::new(Vec::new()));
    /// assert_eq!(engine.durability().describe(), "memory");
    /// ```
    pub fn durability(&self) -> &Arc<dyn Durability> {
        &self.store
    }

    /// Runs a new turn to its end: committed, failed, cancelled, or waiting for reconciliation.
    /// `Err` only when the store fails or another worker holds the session; the turn can then be
    /// resumed from what was committed.
    pub async fn run(&self, request: TurnRequest) -> crate::Result<TurnEngineResult> {
        machine::run(self, request).await
    }

    /// Continues the session's last turn from its checkpoint and journal: tools not yet run are
    /// run, an answer already received is committed without invoking the model again, a turn
    /// that had ended is returned as it ended (its post-commit effects finished if they had not).
    pub async fn resume(&self, session_id: &str, cancel: Option<CancellationToken>) -> crate::Result<TurnEngineResult> {
        machine::resume(self, session_id, cancel, machine::Resolution::None).await
    }

    /// Continues a turn that stopped `reconciliation_required` on a tool: `output` is the result
    /// the host established for the pending request (its `request_id` must match).
    pub async fn resolve_tool(
        &self,
        session_id: &str,
        output: ToolOutput,
        cancel: Option<CancellationToken>,
    ) -> crate::Result<TurnEngineResult> {
        machine::resume(self, session_id, cancel, machine::Resolution::Tool(Box::new(output))).await
    }

    /// Continues a turn that stopped `reconciliation_required` on a model invocation:
    /// `response` is the response the host established; the model is not invoked again for it.
    pub async fn resolve_model(
        &self,
        session_id: &str,
        response: ModelResponse,
        cancel: Option<CancellationToken>,
    ) -> crate::Result<TurnEngineResult> {
        machine::resume(self, session_id, cancel, machine::Resolution::Model(Box::new(response))).await
    }
}
