//! The state machine itself: a run of a turn from a checkpoint to its end.

use super::events::{EngineEvent, EventKind};
use super::ports::{ContextDraft, ModelFailure, ToolContext};
use super::store::{Checkpoint, Commit, Phase, TurnStatus};
use super::types::{ContextSnapshot, ModelReconciliation, ModelResponse, ToolOutcome, ToolOutput, ToolRequest};
use super::{TurnCommit, TurnEngine, TurnEngineResult, TurnRequest};
use crate::{Error, Message, Result, Role, TurnStop};
use futures_util::future::{select, Either};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::pin::pin;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The longest wait before a retry of a model invocation.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// What a resume is given by its host.
pub(super) enum Resolution {
    None,
    Tool(Box<ToolOutput>),
    Model(Box<ModelResponse>),
}

/// How a run ends.
struct Ending {
    status: TurnStatus,
    output: Option<Value>,
    reason: Option<String>,
    stop: Option<TurnStop>,
}

impl Ending {
    fn failed(stop: TurnStop) -> Self {
        Ending { status: TurnStatus::Failed, output: None, reason: Some(stop.to_string()), stop: Some(stop) }
    }

    fn cancelled(reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Ending {
            status: TurnStatus::Cancelled,
            output: None,
            reason: Some(reason.clone()),
            stop: Some(TurnStop::Cancelled { reason }),
        }
    }
}

/// Runs `future`, unless the token is cancelled first (`None`).
async fn cancellable<F: Future>(token: Option<&CancellationToken>, future: F) -> Option<F::Output> {
    let Some(token) = token else { return Some(future.await) };
    let future = pin!(future);
    let cancelled = pin!(token.cancelled());
    match select(future, cancelled).await {
        Either::Left((output, _)) => Some(output),
        Either::Right(_) => None,
    }
}

/// Waits `duration` without needing a runtime with timers enabled (a helper thread sleeps).
pub(crate) async fn sleep(duration: Duration) {
    let (done, wait) = tokio::sync::oneshot::channel::<()>();
    let spawned = std::thread::Builder::new().name("prompty-retry-wait".into()).spawn(move || {
        std::thread::sleep(duration);
        let _ = done.send(());
    });
    if spawned.is_ok() {
        let _ = wait.await;
    }
}

/// The wait before retry `n` (1-based): `min(base · 2ⁿ⁻¹ + jitter, 60 s)`.
pub(crate) fn backoff(base: Duration, n: u32) -> Duration {
    crate::http::jittered(crate::http::exponential(base, n), base, MAX_BACKOFF)
}

/// The length of the common prefix of two conversations.
fn common_prefix(a: &[Message], b: &[Message]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// One run of a turn.
struct Run<'e> {
    engine: &'e TurnEngine,
    cp: Checkpoint,
    seq: u64,
    pending: Vec<EngineEvent>,
    snapshots: Vec<ContextSnapshot>,
    tool_results: Vec<ToolOutput>,
    cancel: Option<CancellationToken>,
    /// The leased worker, checked by the store on every commit.
    owner: Option<String>,
}

impl<'e> Run<'e> {
    fn new(engine: &'e TurnEngine, cp: Checkpoint, seq: u64, cancel: Option<CancellationToken>) -> Self {
        Run {
            engine,
            cp,
            seq,
            pending: Vec::new(),
            snapshots: Vec::new(),
            tool_results: Vec::new(),
            cancel,
            owner: engine.worker.as_ref().map(|(w, _)| w.clone()),
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancellationToken::is_cancelled)
    }

    /// Appends an event to the batch the next [`Run::flush`] commits.
    fn event(&mut self, kind: EventKind, invocation: Option<&str>, iteration: Option<u32>, payload: Value) {
        self.seq += 1;
        self.pending.push(EngineEvent {
            sequence: self.seq,
            id: self.engine.ids.next("event"),
            timestamp: self.engine.clock.now(),
            session_id: self.cp.session_id.clone(),
            turn_id: self.cp.turn_id.clone(),
            run_id: self.cp.run_id.clone(),
            invocation_id: invocation.map(str::to_owned),
            iteration,
            kind,
            payload,
        });
    }

    /// Commits the pending events atomically, with a checkpoint (and its `checkpoint_created`
    /// event) when `checkpoint`; then tells the observers.
    async fn flush(&mut self, checkpoint: bool) -> Result<()> {
        let checkpoint = if checkpoint {
            self.cp.sequence = self.seq;
            self.cp.id = self.engine.ids.next("checkpoint");
            self.cp.created_at = self.engine.clock.now();
            let payload = json!({
                "checkpointId": self.cp.id, "sequence": self.cp.sequence, "phase": phase_name(&self.cp.phase),
                "reason": checkpoint_reason(&self.cp.phase),
            });
            self.event(EventKind::CheckpointCreated, None, Some(self.cp.iterations), payload);
            Some(self.cp.clone())
        } else {
            None
        };
        if self.pending.is_empty() {
            return Ok(());
        }
        let commit = Commit {
            session_id: self.cp.session_id.clone(),
            events: std::mem::take(&mut self.pending),
            checkpoint,
            owner: self.owner.clone(),
        };
        self.engine.store.commit(&commit).await?;
        for event in &commit.events {
            for observer in &self.engine.observers {
                observer(event);
            }
        }
        Ok(())
    }

    /// Drives the turn from its checkpoint's phase to an end.
    async fn drive(mut self) -> Result<TurnEngineResult> {
        loop {
            let next = match std::mem::replace(&mut self.cp.phase, Phase::Ready) {
                Phase::Ready => self.invoke().await?,
                Phase::Tools { invocation_id, response, results } => {
                    self.tools(invocation_id, *response, results).await?
                }
                Phase::Final { invocation_id, response } => {
                    self.cp.phase = Phase::Final { invocation_id, response: response.clone() };
                    return self.commit_final(*response).await;
                }
                phase @ (Phase::ToolReconciliation { .. } | Phase::ModelReconciliation { .. }) => {
                    let (reason, stop) = (reconciliation_reason(&phase), reconciliation_stop(&phase));
                    self.cp.phase = phase;
                    let ending =
                        Ending { status: TurnStatus::ReconciliationRequired, output: None, reason: Some(reason), stop };
                    return Ok(self.result(ending));
                }
                Phase::Done { status, output, reason } => {
                    return Ok(self.result(Ending { status, output, reason, stop: None }))
                }
            };
            if let Some(ending) = next {
                return self.end(ending).await;
            }
        }
    }

    /// PREPARE_INVOCATION and INVOKE_MODEL: the context, the snapshot, the attempts, the
    /// response's checkpoint. `Some` when the turn ends.
    async fn invoke(&mut self) -> Result<Option<Ending>> {
        let i = self.cp.iterations;
        if self.is_cancelled() {
            return Ok(Some(Ending::cancelled(match i {
                0 => "Cancellation requested before first iteration".to_owned(),
                n => format!("Cancellation requested before iteration {}", n + 1),
            })));
        }
        let mut decisions = Vec::new();
        if !self.engine.transforms.is_empty() {
            let before = self.cp.messages.clone();
            for transform in &self.engine.transforms {
                let mut draft =
                    ContextDraft { messages: &mut self.cp.messages, decisions: &mut decisions, iteration: i };
                if let Err(stop) = transform.transform(&mut draft) {
                    return Ok(Some(Ending::failed(stop)));
                }
            }
            if self.cp.messages != before {
                let prefix = count(common_prefix(&before, &self.cp.messages));
                self.cp.stable_prefix_messages = self.cp.stable_prefix_messages.min(prefix);
                let payload = json!({"reason": "context", "messages": self.cp.messages.len()});
                self.event(EventKind::ConversationUpdated, None, Some(i), payload);
            }
        }
        if self.is_cancelled() {
            return Ok(Some(Ending::cancelled("Cancellation requested before the model call")));
        }
        if i >= self.engine.max_iterations {
            return Ok(Some(Ending::failed(TurnStop::MaxIterations { max: self.engine.max_iterations as usize })));
        }
        let invocation = self.engine.ids.next("invocation");
        let snapshot = ContextSnapshot {
            id: self.engine.ids.next("snapshot"),
            session_id: self.cp.session_id.clone(),
            turn_id: self.cp.turn_id.clone(),
            invocation_id: invocation.clone(),
            iteration: i,
            messages: self.cp.messages.clone(),
            decisions,
            stable_prefix_messages: self.cp.stable_prefix_messages,
            context_state: self.cp.context_state.clone(),
        };
        let payload = json!({
            "snapshotId": snapshot.id,
            "messages": snapshot.messages.len(),
            "stablePrefixMessages": snapshot.stable_prefix_messages,
            "portability": snapshot.context_state.portability,
            "decisions": snapshot.decisions,
        });
        self.event(EventKind::ContextPrepared, Some(&invocation), Some(i), payload);
        self.snapshots.push(snapshot.clone());
        let mut attempt = 0;
        let response = loop {
            if attempt > 0 && self.is_cancelled() {
                return Ok(Some(Ending::cancelled("Cancellation requested before the model call")));
            }
            let payload = json!({"snapshotId": snapshot.id, "attempt": attempt});
            self.event(EventKind::ModelInvocationStarted, Some(&invocation), Some(i), payload);
            self.flush(false).await?;
            let outcome = cancellable(self.cancel.as_ref(), self.engine.model.invoke(&snapshot, attempt)).await;
            let failure = match outcome {
                None => return Ok(Some(Ending::cancelled("Cancellation requested during the model call"))),
                Some(Ok(response)) => break response,
                Some(Err(failure)) => failure,
            };
            match failure {
                ModelFailure::Transient(e) if attempt + 1 < self.engine.max_attempts => {
                    let wait = backoff(self.engine.retry_backoff, attempt + 1);
                    let payload = json!({
                        "attempt": attempt, "error": e.to_string(), "retry": true,
                        "retryInMs": u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        "maxAttempts": self.engine.max_attempts,
                    });
                    self.event(EventKind::ModelInvocationFailed, Some(&invocation), Some(i), payload);
                    self.flush(false).await?;
                    if cancellable(self.cancel.as_ref(), sleep(wait)).await.is_none() {
                        return Ok(Some(Ending::cancelled(
                            "Cancellation requested while waiting to retry the model call",
                        )));
                    }
                    attempt += 1;
                }
                ModelFailure::Transient(e) => {
                    let payload = json!({"attempt": attempt, "error": e.to_string(), "retry": false});
                    self.event(EventKind::ModelInvocationFailed, Some(&invocation), Some(i), payload);
                    return Ok(Some(Ending::failed(TurnStop::Model { source: Box::new(e), attempts: attempt + 1 })));
                }
                ModelFailure::Fatal(stop) => {
                    let payload = json!({"attempt": attempt, "error": stop.to_string(), "retry": false});
                    self.event(EventKind::ModelInvocationFailed, Some(&invocation), Some(i), payload);
                    return Ok(Some(Ending::failed(stop)));
                }
                ModelFailure::Indeterminate(e) => {
                    let reconciliation = ModelReconciliation {
                        invocation_id: invocation.clone(),
                        snapshot_id: snapshot.id.clone(),
                        failed_attempt: attempt,
                        message: e.to_string(),
                        metadata: Map::new(),
                    };
                    let payload = serde_json::to_value(&reconciliation).unwrap_or(Value::Null);
                    self.event(EventKind::ModelReconciliationRequired, Some(&invocation), Some(i), payload);
                    self.cp.phase = Phase::ModelReconciliation { reconciliation, snapshot: Box::new(snapshot) };
                    return self.stop_for_reconciliation().await.map(Some);
                }
            }
        };
        self.accept_response(invocation, response, attempt).await
    }

    /// A model response, committed with its checkpoint: tool requests to run, or the answer.
    async fn accept_response(
        &mut self,
        invocation: String,
        response: ModelResponse,
        attempt: u32,
    ) -> Result<Option<Ending>> {
        let i = self.cp.iterations;
        self.cp.iterations += 1;
        if let Some(state) = &response.next_context_state {
            self.cp.context_state = state.clone();
        }
        let payload = json!({
            "attempt": attempt,
            "toolRequests": response.tool_requests,
            "usage": response.usage,
            "portability": self.cp.context_state.portability,
        });
        self.event(EventKind::ModelInvocationCompleted, Some(&invocation), Some(i), payload);
        if response.tool_requests.is_empty() {
            self.cp.phase = Phase::Final { invocation_id: invocation, response: Box::new(response) };
        } else {
            if let Err(stop) = self.engine.tools.check(&response.tool_requests) {
                return Ok(Some(Ending::failed(stop)));
            }
            self.cp.phase =
                Phase::Tools { invocation_id: invocation, response: Box::new(response), results: Vec::new() };
        }
        self.flush(true).await?;
        Ok(None)
    }

    /// AUTHORIZE_TOOLS, EXECUTE_TOOLS and CHECKPOINT for the requests not yet committed; then the
    /// round's messages. `Some` when the turn ends.
    async fn tools(
        &mut self,
        invocation: String,
        response: ModelResponse,
        mut results: Vec<ToolOutput>,
    ) -> Result<Option<Ending>> {
        let i = self.cp.iterations.saturating_sub(1);
        let requests = response.tool_requests.clone();
        let parallel = self.engine.parallel_tools && results.is_empty() && requests.len() > 1;
        if parallel {
            if let Some(ending) = self.parallel_batch(&invocation, &response, &requests, &mut results).await? {
                return Ok(Some(ending));
            }
        }
        let first = results.len();
        for (k, request) in requests.iter().enumerate().skip(results.len()) {
            if self.is_cancelled() {
                let reason = if k == first && first == 0 { "before" } else { "after" };
                self.cp.phase = tools_phase(&invocation, &response, &results);
                return Ok(Some(Ending::cancelled(format!("Cancellation requested {reason} tool execution"))));
            }
            let approved = self.authorize(&invocation, i, request, &mut results).await;
            if !approved {
                self.cp.phase = tools_phase(&invocation, &response, &results);
                self.flush(true).await?;
                continue;
            }
            self.started(&invocation, i, request);
            self.cp.phase = tools_phase(&invocation, &response, &results);
            self.flush(false).await?;
            let key = idempotency_key(&self.cp.session_id, &self.cp.turn_id, &request.id);
            let ctx = ToolContext {
                session_id: &self.cp.session_id,
                turn_id: &self.cp.turn_id,
                iteration: i,
                idempotency_key: &key,
            };
            let output = match self.engine.tools.execute(request, ctx).await {
                Ok(output) => output,
                Err(stop) => return Ok(Some(Ending::failed(stop))),
            };
            if let Some(ending) = self.completed(&invocation, &response, i, request, output, &mut results).await? {
                return Ok(Some(ending));
            }
        }
        self.commit_round(invocation, response, results).await
    }

    /// Asks the permission port about `request`; a denial is committed as its result.
    async fn authorize(
        &mut self,
        invocation: &str,
        i: u32,
        request: &ToolRequest,
        results: &mut Vec<ToolOutput>,
    ) -> bool {
        let permission_id = format!("{}-permission", request.id);
        let payload = json!({"requestId": permission_id, "toolRequestId": request.id, "toolName": request.name});
        self.event(EventKind::PermissionRequested, Some(invocation), Some(i), payload);
        let decision = self.engine.permissions.resolve(request).await;
        let payload = json!({
            "requestId": permission_id, "toolRequestId": request.id, "toolName": request.name,
            "approved": decision.approved, "reason": decision.reason,
        });
        self.event(EventKind::PermissionResolved, Some(invocation), Some(i), payload);
        if decision.approved {
            return true;
        }
        let reason = decision.reason.unwrap_or_else(|| format!("Permission denied for tool '{}'", request.name));
        let mut output = ToolOutput::failed(&request.id, &request.name, "permission_denied", reason);
        output.metadata = decision.metadata;
        self.tool_results.push(output.clone());
        results.push(output);
        false
    }

    fn started(&mut self, invocation: &str, i: u32, request: &ToolRequest) {
        let key = idempotency_key(&self.cp.session_id, &self.cp.turn_id, &request.id);
        let payload = json!({
            "requestId": request.id, "toolName": request.name, "arguments": request.arguments, "idempotencyKey": key,
        });
        self.event(EventKind::ToolExecutionStarted, Some(invocation), Some(i), payload);
    }

    /// A tool's output: committed with a checkpoint, or (indeterminate) the turn stops for
    /// reconciliation.
    async fn completed(
        &mut self,
        invocation: &str,
        response: &ModelResponse,
        i: u32,
        request: &ToolRequest,
        mut output: ToolOutput,
        results: &mut Vec<ToolOutput>,
    ) -> Result<Option<Ending>> {
        output.request_id.clone_from(&request.id);
        if output.outcome == ToolOutcome::Indeterminate {
            self.cp.phase = Phase::ToolReconciliation {
                invocation_id: invocation.to_owned(),
                response: Box::new(response.clone()),
                results: results.clone(),
                request: request.clone(),
            };
            return self.stop_for_reconciliation().await.map(Some);
        }
        let payload = json!({
            "requestId": output.request_id, "toolName": output.name, "outcome": output.outcome,
            "errorKind": output.error_kind, "output": output.output,
        });
        self.event(EventKind::ToolExecutionCompleted, Some(invocation), Some(i), payload);
        self.tool_results.push(output.clone());
        results.push(output);
        self.cp.phase = tools_phase(invocation, response, results);
        self.flush(true).await?;
        Ok(None)
    }

    /// Several requests at once: each authorized in order, the starts committed together, the
    /// tools run concurrently, the results committed in request order.
    async fn parallel_batch(
        &mut self,
        invocation: &str,
        response: &ModelResponse,
        requests: &[ToolRequest],
        results: &mut Vec<ToolOutput>,
    ) -> Result<Option<Ending>> {
        let i = self.cp.iterations.saturating_sub(1);
        if self.is_cancelled() {
            self.cp.phase = tools_phase(invocation, response, results);
            return Ok(Some(Ending::cancelled("Cancellation requested before tool execution")));
        }
        let mut decided: Vec<Option<ToolOutput>> = Vec::with_capacity(requests.len());
        for request in requests {
            let mut denied = Vec::new();
            let approved = self.authorize(invocation, i, request, &mut denied).await;
            if approved {
                self.started(invocation, i, request);
            }
            decided.push(denied.pop());
        }
        self.cp.phase = tools_phase(invocation, response, results);
        self.flush(false).await?;
        let keys: Vec<String> =
            requests.iter().map(|r| idempotency_key(&self.cp.session_id, &self.cp.turn_id, &r.id)).collect();
        let runs = requests.iter().zip(&decided).zip(&keys).map(|((request, denied), key)| {
            let ctx = ToolContext {
                session_id: &self.cp.session_id,
                turn_id: &self.cp.turn_id,
                iteration: i,
                idempotency_key: key,
            };
            let tools = &self.engine.tools;
            async move {
                match denied {
                    Some(_) => None,
                    None => Some(tools.execute(request, ctx).await),
                }
            }
        });
        let outcomes = futures_util::future::join_all(runs).await;
        for ((request, denied), outcome) in requests.iter().zip(decided).zip(outcomes) {
            match (denied, outcome) {
                (Some(output), _) => {
                    results.push(output);
                    self.cp.phase = tools_phase(invocation, response, results);
                    self.flush(true).await?;
                }
                (None, Some(Ok(output))) => {
                    if let Some(ending) = self.completed(invocation, response, i, request, output, results).await? {
                        return Ok(Some(ending));
                    }
                }
                (None, Some(Err(stop))) => return Ok(Some(Ending::failed(stop))),
                (None, None) => {}
            }
        }
        Ok(None)
    }

    /// Every result of the round committed to the conversation, in request order, with a
    /// checkpoint; the next invocation follows.
    async fn commit_round(
        &mut self,
        invocation: String,
        response: ModelResponse,
        results: Vec<ToolOutput>,
    ) -> Result<Option<Ending>> {
        let i = self.cp.iterations.saturating_sub(1);
        let messages = match self.engine.model.tool_messages(&response, &results) {
            Ok(messages) => messages,
            Err(e) => {
                self.cp.phase = Phase::Tools { invocation_id: invocation, response: Box::new(response), results };
                return Ok(Some(Ending::failed(TurnStop::Failed(Box::new(e)))));
            }
        };
        for result in &results {
            let payload = json!({
                "requestId": result.request_id, "toolName": result.name, "outcome": result.outcome,
                "errorKind": result.error_kind,
            });
            self.event(EventKind::ToolResultCommitted, Some(&invocation), Some(i), payload);
        }
        self.cp.messages.extend(messages);
        let payload = json!({"reason": "tool_results", "messages": self.cp.messages.len()});
        self.event(EventKind::ConversationUpdated, Some(&invocation), Some(i), payload);
        self.cp.phase = Phase::Ready;
        self.flush(true).await?;
        Ok(None)
    }

    /// Commits a reconciliation-required stop: the checkpoint with the marker, then the event.
    async fn stop_for_reconciliation(&mut self) -> Result<Ending> {
        self.flush(true).await?;
        let reason = reconciliation_reason(&self.cp.phase);
        let payload = json!({"status": TurnStatus::ReconciliationRequired, "reason": reason});
        self.event(EventKind::TurnReconciliationRequired, None, Some(self.cp.iterations), payload);
        self.flush(false).await?;
        Ok(Ending {
            status: TurnStatus::ReconciliationRequired,
            output: None,
            reason: Some(reason),
            stop: reconciliation_stop(&self.cp.phase),
        })
    }

    /// COMMIT_TURN and RUN_POST_COMMIT_EFFECTS.
    async fn commit_final(mut self, response: ModelResponse) -> Result<TurnEngineResult> {
        let mut output = response.output.clone().unwrap_or(Value::Null);
        if let Some(policy) = &self.engine.final_output {
            match policy.check(output) {
                Ok(checked) => output = checked,
                Err(reason) => return self.end(Ending::failed(TurnStop::OutputRejected { reason })).await,
            }
        }
        let payload = json!({"status": TurnStatus::Success, "output": output});
        self.event(EventKind::TurnCommitted, None, Some(self.cp.iterations), payload);
        self.flush(false).await?;
        self.append_answer(&response, &output);
        let ending = Ending { status: TurnStatus::Success, output: Some(output), reason: None, stop: None };
        let mut result = self.result_without_move(ending);
        result.post_commit_error = self.post_commit(&result.commit).await;
        result.commit.last_sequence = self.seq;
        result.snapshots = std::mem::take(&mut self.snapshots);
        result.tool_results = std::mem::take(&mut self.tool_results);
        Ok(result)
    }

    /// The answer's messages, appended to the conversation.
    fn append_answer(&mut self, response: &ModelResponse, output: &Value) {
        if response.assistant_messages.is_empty() {
            self.cp.messages.push(Message::new(Role::Assistant, super::types::model_text(output)));
        } else {
            self.cp.messages.extend(response.assistant_messages.iter().cloned());
        }
    }

    /// Runs the post-commit effects; a failure is reported, never turned into a failed turn.
    async fn post_commit(&mut self, commit: &TurnCommit) -> Option<String> {
        let i = Some(self.cp.iterations);
        let names: Vec<&str> = self.engine.post_commit.iter().map(|e| e.name()).collect();
        self.event(EventKind::PostCommitStarted, None, i, json!({"effects": names}));
        if let Err(e) = self.flush(false).await {
            // Without a durable start, no effect may run.
            return Some(format!("the post-commit effects did not run: their start could not be recorded: {e}"));
        }
        let mut errors = Vec::new();
        for effect in &self.engine.post_commit {
            let id = serde_json::to_string(&[&commit.session_id, &commit.turn_id, effect.name()]).unwrap_or_default();
            if let Err(e) = effect.run(commit, &id).await {
                errors.push(format!("{}: {e}", effect.name()));
                self.event(
                    EventKind::PostCommitFailed,
                    None,
                    i,
                    json!({"effect": effect.name(), "error": e.to_string()}),
                );
            }
        }
        self.event(EventKind::PostCommitCompleted, None, i, json!({"failed": errors.len()}));
        if let Err(e) = self.flush(false).await {
            errors.push(format!("the effects ran, but their completion could not be recorded: {e}"));
        }
        (!errors.is_empty()).then(|| errors.join("; "))
    }

    /// COMMIT_CANCELLATION, COMMIT_FAILURE: the event that ends the turn.
    async fn end(mut self, ending: Ending) -> Result<TurnEngineResult> {
        let kind = match ending.status {
            TurnStatus::Cancelled => EventKind::TurnCancelled,
            TurnStatus::Failed => EventKind::TurnFailed,
            TurnStatus::Success => EventKind::TurnCommitted,
            // Already committed by `stop_for_reconciliation`.
            TurnStatus::ReconciliationRequired => return Ok(self.result(ending)),
        };
        let payload =
            json!({"status": ending.status, "reason": ending.reason, "kind": ending.stop.as_ref().map(stop_kind)});
        self.event(kind, None, Some(self.cp.iterations), payload);
        self.flush(false).await?;
        Ok(self.result(ending))
    }

    fn result(self, ending: Ending) -> TurnEngineResult {
        TurnEngineResult {
            commit: TurnCommit {
                session_id: self.cp.session_id,
                turn_id: self.cp.turn_id,
                status: ending.status,
                output: ending.output,
                messages: self.cp.messages,
                iterations: self.cp.iterations,
                last_sequence: self.seq,
                context_state: self.cp.context_state,
                reason: ending.reason,
            },
            snapshots: self.snapshots,
            tool_results: self.tool_results,
            post_commit_error: None,
            stop: ending.stop,
        }
    }
}

fn tools_phase(invocation: &str, response: &ModelResponse, results: &[ToolOutput]) -> Phase {
    Phase::Tools {
        invocation_id: invocation.to_owned(),
        response: Box::new(response.clone()),
        results: results.to_vec(),
    }
}

/// The stable identity of a tool effect: unambiguous however the ids are spelt.
fn idempotency_key(session: &str, turn: &str, request: &str) -> String {
    format!("{}:{session}/{}:{turn}/{request}", session.len(), turn.len())
}

/// A short name of a stop, kept in the journal (`max_iterations`, `cancelled`, ...).
pub(crate) fn stop_kind(stop: &TurnStop) -> &'static str {
    match stop {
        TurnStop::Cancelled { .. } => "cancelled",
        TurnStop::Guardrail { .. } => "guardrail",
        TurnStop::MaxIterations { .. } => "max_iterations",
        TurnStop::UnknownTool { .. } => "unknown_tool",
        TurnStop::NoHandler(_) => "no_handler",
        TurnStop::Failed(_) => "failed",
        TurnStop::Model { .. } => "model",
        TurnStop::ReconciliationRequired { .. } => "reconciliation_required",
        TurnStop::OutputRejected { .. } => "output_rejected",
    }
}

fn phase_name(phase: &Phase) -> &'static str {
    match phase {
        Phase::Ready => "ready",
        Phase::Tools { .. } => "tools",
        Phase::Final { .. } => "final",
        Phase::ToolReconciliation { .. } => "tool_reconciliation",
        Phase::ModelReconciliation { .. } => "model_reconciliation",
        Phase::Done { .. } => "done",
    }
}

/// The `reason` of a checkpoint with the phase it saves: after a model response (its tool
/// requests not yet run, or its answer not yet committed), after one tool result, after a tool
/// round's results joined the conversation, or when the turn stops for reconciliation.
fn checkpoint_reason(phase: &Phase) -> &'static str {
    match phase {
        Phase::Final { .. } => CHECKPOINT_AFTER_MODEL_RESPONSE,
        Phase::Tools { results, .. } if results.is_empty() => CHECKPOINT_AFTER_MODEL_RESPONSE,
        Phase::Tools { .. } => "tool_result",
        Phase::Ready => "tool_round",
        Phase::ToolReconciliation { .. } | Phase::ModelReconciliation { .. } => "reconciliation",
        Phase::Done { .. } => "end",
    }
}

/// The `reason` of the checkpoint that follows a model response (what replay records count).
pub(super) const CHECKPOINT_AFTER_MODEL_RESPONSE: &str = "model_response";

fn reconciliation_reason(phase: &Phase) -> String {
    match phase {
        Phase::ToolReconciliation { request, .. } => {
            TurnStop::ReconciliationRequired { request_id: request.id.clone(), name: request.name.clone() }.to_string()
        }
        Phase::ModelReconciliation { reconciliation, .. } => format!(
            "the model invocation {} (attempt {}) may have been processed and its response was lost: {}; supply \
             the response with TurnEngine::resolve_model",
            reconciliation.invocation_id, reconciliation.failed_attempt, reconciliation.message
        ),
        _ => String::new(),
    }
}

fn reconciliation_stop(phase: &Phase) -> Option<TurnStop> {
    match phase {
        Phase::ToolReconciliation { request, .. } => {
            Some(TurnStop::ReconciliationRequired { request_id: request.id.clone(), name: request.name.clone() })
        }
        Phase::ModelReconciliation { reconciliation, .. } => Some(TurnStop::Model {
            source: Box::new(Error::Execution { message: reconciliation.message.clone() }),
            attempts: reconciliation.failed_attempt + 1,
        }),
        _ => None,
    }
}

/// Takes the session's lease when the engine is a named worker.
async fn lease(engine: &TurnEngine, session_id: &str) -> Result<()> {
    let Some((worker, ttl)) = &engine.worker else { return Ok(()) };
    let lease = engine.store.acquire(session_id, worker, *ttl).await?;
    if lease.acquired {
        return Ok(());
    }
    Err(Error::Durability {
        store: engine.store.describe(),
        message: format!(
            "session {session_id} is held by {} (its lease has not expired); try again after it ends or expires",
            lease.holder.as_deref().unwrap_or("another worker")
        ),
    })
}

async fn release(engine: &TurnEngine, session_id: &str) {
    if let Some((worker, _)) = &engine.worker {
        let _ = engine.store.release(session_id, worker).await;
    }
}

/// A new turn.
pub(super) async fn run(engine: &TurnEngine, request: TurnRequest) -> Result<TurnEngineResult> {
    lease(engine, &request.session_id).await?;
    let result = run_leased(engine, request.clone()).await;
    release(engine, &request.session_id).await;
    result
}

async fn run_leased(engine: &TurnEngine, request: TurnRequest) -> Result<TurnEngineResult> {
    let seq = engine.store.last_sequence(&request.session_id).await?;
    let mut cp = Checkpoint::new(&request.session_id, &request.turn_id, request.messages);
    cp.metadata = request.metadata;
    cp.context_state = request.context_state;
    cp.run_id = engine.ids.next("run");
    let mut run = Run::new(engine, cp, seq, request.cancel);
    let payload = json!({
        "resumed": false,
        "messages": run.cp.messages,
        "metadata": run.cp.metadata,
        "contextState": run.cp.context_state,
    });
    run.event(EventKind::TurnStarted, None, None, payload);
    if run.is_cancelled() {
        return run.end(Ending::cancelled("Cancellation requested before first iteration")).await;
    }
    run.flush(false).await?;
    run.drive().await
}

/// Whether an event ends a turn.
fn terminal(kind: EventKind) -> Option<TurnStatus> {
    match kind {
        EventKind::TurnCommitted => Some(TurnStatus::Success),
        EventKind::TurnFailed => Some(TurnStatus::Failed),
        EventKind::TurnCancelled => Some(TurnStatus::Cancelled),
        _ => None,
    }
}

/// A turn continued from the store.
pub(super) async fn resume(
    engine: &TurnEngine,
    session_id: &str,
    cancel: Option<CancellationToken>,
    resolution: Resolution,
) -> Result<TurnEngineResult> {
    lease(engine, session_id).await?;
    let result = resume_leased(engine, session_id, cancel, resolution).await;
    release(engine, session_id).await;
    result
}

fn store_error(engine: &TurnEngine, message: String) -> Error {
    Error::Durability { store: engine.store.describe(), message }
}

async fn resume_leased(
    engine: &TurnEngine,
    session_id: &str,
    cancel: Option<CancellationToken>,
    resolution: Resolution,
) -> Result<TurnEngineResult> {
    let saved = engine.store.checkpoint(session_id).await?;
    let after = saved.as_ref().map_or(0, |c| c.sequence);
    let mut tail = engine.store.events(session_id, after).await?;
    let last = tail.last().map_or(after, |e| e.sequence).max(engine.store.last_sequence(session_id).await?);
    // A turn that began after the checkpoint (or before any) is rebuilt from its start event.
    let started = tail.iter().rposition(|e| {
        e.kind == EventKind::TurnStarted
            && e.payload.get("resumed") == Some(&Value::Bool(false))
            && saved.as_ref().is_none_or(|c| c.turn_id != e.turn_id)
    });
    let mut cp = match (started, saved) {
        (Some(at), _) => {
            let start = tail[at].clone();
            tail.drain(..at);
            let messages: Vec<Message> = serde_json::from_value(start.payload["messages"].clone())
                .map_err(|e| store_error(engine, format!("the start of turn {} is unreadable: {e}", start.turn_id)))?;
            let mut cp = Checkpoint::new(session_id, &start.turn_id, messages);
            if let Some(Value::Object(m)) = start.payload.get("metadata") {
                cp.metadata = m.clone();
            }
            if let Some(state) = start.payload.get("contextState") {
                cp.context_state = serde_json::from_value(state.clone()).unwrap_or_default();
            }
            cp
        }
        (None, Some(cp)) => cp,
        (None, None) => {
            return Err(store_error(
                engine,
                format!("no turn of session {session_id} is recorded (check the session id and the store)"),
            ))
        }
    };
    tail.retain(|e| e.turn_id == cp.turn_id);
    cp.run_id = engine.ids.next("run");
    let mut run = Run::new(engine, cp, last, cancel);
    // A turn that has ended is given back as it ended.
    if let Some(end) = tail.iter().rev().find_map(|e| terminal(e.kind).map(|s| (s, e.clone()))) {
        if !matches!(resolution, Resolution::None) {
            return Err(store_error(
                engine,
                format!("the turn {} has ended; there is nothing to reconcile", run.cp.turn_id),
            ));
        }
        let (status, event) = end;
        let reason = event.payload.get("reason").and_then(Value::as_str).map(str::to_owned);
        let output =
            (status == TurnStatus::Success).then(|| event.payload.get("output").cloned().unwrap_or(Value::Null));
        if let (Some(output), Phase::Final { response, .. }) = (&output, run.cp.phase.clone()) {
            run.append_answer(&response, output);
        }
        let effects_done = tail.iter().any(|e| e.kind == EventKind::PostCommitCompleted);
        let mut result = run.result_without_move(Ending { status, output, reason, stop: None });
        if status == TurnStatus::Success && !effects_done {
            result.post_commit_error = run.post_commit(&result.commit).await;
            result.commit.last_sequence = run.seq;
        }
        return Ok(result);
    }
    run.event(EventKind::TurnStarted, None, None, json!({"resumed": true, "runId": run.cp.run_id}));
    match resolution {
        Resolution::None => {}
        Resolution::Tool(output) => run.resolve_tool(*output)?,
        Resolution::Model(response) => return run.resolve_model(*response).await,
    }
    // A tool that started and never completed: run again only if it is idempotent.
    if let Phase::Tools { invocation_id, response, results } = &run.cp.phase {
        if let Some(request) = response.tool_requests.get(results.len()) {
            let in_flight = tail.iter().any(|e| {
                e.kind == EventKind::ToolExecutionStarted
                    && e.payload.get("requestId").and_then(Value::as_str) == Some(&request.id)
            });
            if in_flight && !engine.tools.idempotent(&request.name) {
                run.cp.phase = Phase::ToolReconciliation {
                    invocation_id: invocation_id.clone(),
                    response: response.clone(),
                    results: results.clone(),
                    request: request.clone(),
                };
                let ending = run.stop_for_reconciliation().await?;
                return Ok(run.result(ending));
            }
        }
    }
    // A model invocation in flight is sent again, unless the port says it must not be.
    if matches!(run.cp.phase, Phase::Ready) && !engine.model.reinvocable() {
        let in_flight = tail.iter().rev().find(|e| {
            matches!(
                e.kind,
                EventKind::ModelInvocationStarted
                    | EventKind::ModelInvocationCompleted
                    | EventKind::ConversationUpdated
            )
        });
        if let Some(started) = in_flight.filter(|e| e.kind == EventKind::ModelInvocationStarted) {
            let snapshot = ContextSnapshot {
                id: started.payload.get("snapshotId").and_then(Value::as_str).unwrap_or_default().to_owned(),
                session_id: run.cp.session_id.clone(),
                turn_id: run.cp.turn_id.clone(),
                invocation_id: started.invocation_id.clone().unwrap_or_default(),
                iteration: run.cp.iterations,
                messages: run.cp.messages.clone(),
                decisions: Vec::new(),
                stable_prefix_messages: run.cp.stable_prefix_messages,
                context_state: run.cp.context_state.clone(),
            };
            let reconciliation = ModelReconciliation {
                invocation_id: snapshot.invocation_id.clone(),
                snapshot_id: snapshot.id.clone(),
                failed_attempt: started.payload.get("attempt").and_then(Value::as_u64).map_or(0, |a| a as u32),
                message: "the process stopped while the model invocation was in flight".into(),
                metadata: Map::new(),
            };
            run.cp.phase = Phase::ModelReconciliation { reconciliation, snapshot: Box::new(snapshot) };
            let ending = run.stop_for_reconciliation().await?;
            return Ok(run.result(ending));
        }
    }
    run.flush(false).await?;
    run.drive().await
}

impl Run<'_> {
    /// The result, leaving the run usable (for post-commit effects after it).
    fn result_without_move(&self, ending: Ending) -> TurnEngineResult {
        TurnEngineResult {
            commit: TurnCommit {
                session_id: self.cp.session_id.clone(),
                turn_id: self.cp.turn_id.clone(),
                status: ending.status,
                output: ending.output,
                messages: self.cp.messages.clone(),
                iterations: self.cp.iterations,
                last_sequence: self.seq,
                context_state: self.cp.context_state.clone(),
                reason: ending.reason,
            },
            snapshots: Vec::new(),
            tool_results: Vec::new(),
            post_commit_error: None,
            stop: ending.stop,
        }
    }

    /// A host's result for the tool whose outcome was unknown.
    fn resolve_tool(&mut self, mut output: ToolOutput) -> Result<()> {
        let (invocation_id, response, mut results, request) = match std::mem::replace(&mut self.cp.phase, Phase::Ready)
        {
            Phase::ToolReconciliation { invocation_id, response, results, request } => {
                (invocation_id, response, results, request)
            }
            other => {
                let what = match &other {
                    Phase::ModelReconciliation { .. } => "a model response (use resolve_model)",
                    _ => "no reconciliation",
                };
                self.cp.phase = other;
                return Err(store_error(
                    self.engine,
                    format!("session {} waits for {what}, not a tool result", self.cp.session_id),
                ));
            }
        };
        if output.request_id != request.id {
            let message =
                format!("the pending tool call is {} ({}), not {}", request.id, request.name, output.request_id);
            self.cp.phase = Phase::ToolReconciliation { invocation_id, response, results, request };
            return Err(store_error(self.engine, message));
        }
        if output.outcome == ToolOutcome::Indeterminate {
            output.outcome = ToolOutcome::Failed;
        }
        let payload = json!({"requestId": output.request_id, "toolName": output.name, "outcome": output.outcome});
        self.event(
            EventKind::ToolResultReconciled,
            Some(&invocation_id),
            Some(self.cp.iterations.saturating_sub(1)),
            payload,
        );
        self.tool_results.push(output.clone());
        results.push(output);
        self.cp.phase = Phase::Tools { invocation_id, response, results };
        Ok(())
    }

    /// A host's response for the model invocation whose outcome was unknown.
    async fn resolve_model(mut self, response: ModelResponse) -> Result<TurnEngineResult> {
        let Phase::ModelReconciliation { reconciliation, .. } = std::mem::replace(&mut self.cp.phase, Phase::Ready)
        else {
            return Err(store_error(
                self.engine,
                format!(
                    "session {} does not wait for a model response (use resolve_tool for a tool)",
                    self.cp.session_id
                ),
            ));
        };
        let i = self.cp.iterations;
        let payload = json!({"invocationId": reconciliation.invocation_id});
        self.event(EventKind::ModelInvocationReconciled, Some(&reconciliation.invocation_id), Some(i), payload);
        if let Some(ending) =
            self.accept_response(reconciliation.invocation_id, response, reconciliation.failed_attempt).await?
        {
            return self.end(ending).await;
        }
        self.drive().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        assert!(backoff(base, 1) >= base && backoff(base, 1) < base * 2);
        assert!(backoff(base, 3) >= base * 4);
        assert_eq!(backoff(Duration::from_secs(10), 30), MAX_BACKOFF);
        assert_eq!(backoff(Duration::MAX, u32::MAX), MAX_BACKOFF);
    }
}
