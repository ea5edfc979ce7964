//! A prompt's turn on the turn engine: the engine built from the prompt's ports
//! ([`super::ports`]) and the options, run or resumed, and its result read as a [`TurnOutput`] or
//! a [`TurnFailure`].

use super::events::AgentEvent;
use super::options::TurnOptions;
use super::ports::{PromptContext, PromptModel, PromptPermissions, PromptTools, Shared};
use super::{with_call_tools, TurnOutput};
use crate::engine::store::check_sequence;
use crate::engine::{
    Checkpoint, Commit, Durability, EngineEvent, FixedClock, IdGenerator, Lease, RandomIds, SequentialIds, SessionInfo,
    TurnEngine, TurnEngineResult, TurnRequest, TurnStatus,
};
use crate::{Agent, BoxFuture, Error, Message, Result, StreamChunk, TurnFailure, TurnStop};
use serde_json::{Map, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// The session of a turn that is not durable (its journal is not kept: [`Unkept`]).
const LOCAL_SESSION: &str = "local";

/// One turn of a prompt: its ports, the engine they make, and where a streamed answer goes.
pub(crate) struct PromptTurn {
    shared: Arc<Shared>,
    engine: TurnEngine,
    /// The final answer's chunks go here (a streamed turn).
    chunks: Option<UnboundedSender<StreamChunk>>,
}

impl PromptTurn {
    /// The turn of `agent` (its `${env:}` references resolved, the handed functions it does not
    /// declare offered to the model) with `options`; streamed when `chunks` is given. Fails when the
    /// prompt names no usable provider.
    pub(crate) fn new(
        agent: &Agent,
        inputs: Map<String, Value>,
        options: TurnOptions,
        chunks: Option<UnboundedSender<StreamChunk>>,
    ) -> Result<Self> {
        let agent = crate::prepare::load::env_resolved(agent)?;
        let agent = with_call_tools(&agent, &options).into_owned();
        let store: Arc<dyn Durability> = match &options.durable {
            Some(durable) => Arc::clone(&durable.store),
            None => Arc::new(Unkept::default()),
        };
        let local = options.durable.is_none();
        let shared = Arc::new(Shared::new(agent, inputs, options, chunks.is_some())?);
        let options = &shared.options;
        let mut engine = TurnEngine::from_model(Arc::new(PromptModel(Arc::clone(&shared))))
            .tools(PromptTools(Arc::clone(&shared)))
            .permissions(PromptPermissions(Arc::clone(&shared)))
            .transform(PromptContext(Arc::clone(&shared)))
            .store(store)
            .max_iterations(u32::try_from(options.max_iterations).unwrap_or(u32::MAX))
            .max_attempts(options.llm_retries.saturating_add(1))
            .retry_backoff(options.retry_backoff)
            .parallel_tools(options.parallel_tool_calls);
        if local {
            // Nobody reads the identifiers and times of a journal that lives for one turn in
            // memory: counters and no clock (the system clock's timestamps cost a tenth of the
            // loop's own CPU).
            engine = engine.ids(SequentialIds::default()).clock(FixedClock(String::new()));
        }
        if let (Some((name, ttl)), false) = (&options.worker, local) {
            engine = engine.worker(name.clone(), *ttl);
        }
        for effect in &options.post_commit {
            engine = engine.post_commit(SharedEffect(Arc::clone(effect)));
        }
        if shared.emitter.is_active() {
            let observer = Arc::clone(&shared);
            engine = engine.observe(move |event| observer.observe(event));
        }
        Ok(PromptTurn { shared, engine, chunks })
    }

    /// Runs a new turn on `messages`.
    pub(crate) async fn run(self, messages: Vec<Message>) -> Result<TurnOutput> {
        let options = &self.shared.options;
        let session = options.durable.as_ref().map_or(LOCAL_SESSION, |d| d.session_id.as_str());
        let turn = match &options.turn_id {
            Some(id) => id.clone(),
            None => RandomIds.next("turn"),
        };
        let mut request = TurnRequest::new(session, turn, messages);
        request.cancel = options.cancel.clone();
        request.metadata = options.metadata.clone();
        let result = self.engine.run(request).await;
        self.outcome(result)
    }

    /// Continues the last turn of the durable session `session_id` from its store.
    pub(crate) async fn resume(self, session_id: &str) -> Result<TurnOutput> {
        let Some(durable) = &self.shared.options.durable else {
            return Err(Error::Config {
                setting: "TurnOptions::durable".into(),
                message: format!(
                    "resuming session {session_id} needs the store it was written to: give the options \
                     TurnOptions::durable(store, \"{session_id}\")"
                ),
            });
        };
        if durable.session_id != session_id {
            return Err(Error::Config {
                setting: "TurnOptions::durable".into(),
                message: format!(
                    "the options name session {} and the resume session {session_id}: give both the same session",
                    durable.session_id
                ),
            });
        }
        if self.shared.emitter.is_active() {
            // The conversation a round resumed from its checkpoint extends (messages_updated).
            if let Some(checkpoint) = durable.store.checkpoint(session_id).await? {
                self.shared.seed_conversation(checkpoint.messages);
            }
        }
        let result = self.engine.resume(session_id, self.shared.options.cancel.clone()).await;
        self.outcome(result)
    }

    /// The engine's result as the turn's: on success the held-back chunks released and `done`;
    /// otherwise the failure, counting the iterations as [`TurnFailure::iterations`] documents.
    fn outcome(&self, result: Result<TurnEngineResult>) -> Result<TurnOutput> {
        let shared = &self.shared;
        let result = match result {
            Ok(result) => result,
            Err(e) => return shared.failed(e),
        };
        let TurnEngineResult { commit, stop, .. } = result;
        if commit.status == TurnStatus::Success {
            let output = commit.output.unwrap_or(Value::Null);
            for chunk in shared.take_held() {
                match &chunk {
                    StreamChunk::Text(t) => shared.emitter.emit(|| AgentEvent::Token { text: t.clone() }),
                    StreamChunk::Thinking(t) => shared.emitter.emit(|| AgentEvent::Thinking { text: t.clone() }),
                    _ => {}
                }
                if let Some(tx) = &self.chunks {
                    let _ = tx.send(chunk);
                }
            }
            shared.emitter.emit(|| AgentEvent::Done { response: output.clone(), messages: commit.messages.clone() });
            let iterations = usize::try_from(commit.iterations).unwrap_or(usize::MAX);
            return Ok(TurnOutput { result: output, messages: commit.messages, iterations });
        }
        let stop = stop.unwrap_or_else(|| ended(commit.status, commit.reason.unwrap_or_default()));
        if let TurnStop::Cancelled { reason } = &stop {
            shared.emitter.emit(|| AgentEvent::Cancelled { reason: reason.clone() });
        }
        // A model call in flight counts; so does the call the iteration limit refused.
        let reached = matches!(stop, TurnStop::MaxIterations { .. }) || shared.in_flight();
        let iterations = usize::try_from(commit.iterations).unwrap_or(usize::MAX).saturating_add(usize::from(reached));
        shared.failed(Error::Turn(Box::new(TurnFailure { stop, iterations, messages: commit.messages })))
    }
}

/// Why a turn that had ended before it was resumed stopped, from what its journal recorded.
fn ended(status: TurnStatus, reason: String) -> TurnStop {
    match status {
        TurnStatus::Cancelled => TurnStop::Cancelled { reason },
        _ => TurnStop::Failed(Box::new(Error::Execution { message: reason })),
    }
}

/// The journal of a turn that is not durable, which nothing resumes: it keeps only where the
/// session's sequence stands, so that the engine's rule (each commit follows the last without a
/// gap) still holds, and none of the events and checkpoints (a [`crate::engine::MemoryStore`]
/// would clone and keep every one of them for the turn's length, several times the loop's own
/// CPU).
#[derive(Default)]
struct Unkept {
    tail: Mutex<u64>,
}

impl Durability for Unkept {
    fn describe(&self) -> String {
        "none (the turn is not durable)".to_owned()
    }

    fn commit<'a>(&'a self, commit: &'a Commit) -> BoxFuture<'a, Result<()>> {
        let mut tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let checked = check_sequence(&commit.session_id, *tail, &commit.events);
        if checked.is_ok() {
            *tail += commit.events.len() as u64;
        }
        let out = checked.map_err(|message| Error::Durability { store: self.describe(), message });
        Box::pin(std::future::ready(out))
    }

    fn checkpoint<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    fn last_sequence<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<u64>> {
        let tail = *self.tail.lock().unwrap_or_else(|e| e.into_inner());
        Box::pin(std::future::ready(Ok(tail)))
    }

    fn events<'a>(&'a self, _: &'a str, _: u64) -> BoxFuture<'a, Result<Vec<EngineEvent>>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        Box::pin(std::future::ready(Ok(Vec::new())))
    }

    fn acquire<'a>(&'a self, _: &'a str, owner: &'a str, _: Duration) -> BoxFuture<'a, Result<Lease>> {
        Box::pin(std::future::ready(Ok(Lease { acquired: true, holder: Some(owner.to_owned()) })))
    }

    fn release<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// A post-commit effect of [`TurnOptions::post_commit`], shared by the turns of one options value.
struct SharedEffect(Arc<dyn crate::engine::PostCommitEffect>);

impl crate::engine::PostCommitEffect for SharedEffect {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn run<'a>(
        &'a self,
        commit: &'a crate::engine::TurnCommit,
        effect_id: &'a str,
    ) -> crate::BoxFuture<'a, Result<()>> {
        self.0.run(commit, effect_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EventKind;

    fn event(sequence: u64) -> EngineEvent {
        EngineEvent {
            sequence,
            id: format!("event-{sequence}"),
            timestamp: String::new(),
            session_id: LOCAL_SESSION.into(),
            turn_id: "t".into(),
            run_id: "r".into(),
            invocation_id: None,
            iteration: None,
            kind: EventKind::TurnStarted,
            payload: Value::Null,
        }
    }

    #[test]
    fn an_unkept_journal_keeps_only_its_sequence() {
        let store = Unkept::default();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let commit = |events| Commit { session_id: LOCAL_SESSION.into(), events, checkpoint: None, owner: None };
        rt.block_on(store.commit(&commit(vec![event(1), event(2)]))).unwrap();
        assert_eq!(rt.block_on(store.last_sequence(LOCAL_SESSION)).unwrap(), 2);
        let err = rt.block_on(store.commit(&commit(vec![event(2)]))).unwrap_err();
        assert!(err.to_string().contains("expected to be number 3"), "{err}");
        assert_eq!(rt.block_on(store.last_sequence(LOCAL_SESSION)).unwrap(), 2);
        assert!(rt.block_on(store.events(LOCAL_SESSION, 0)).unwrap().is_empty());
        assert!(rt.block_on(store.checkpoint(LOCAL_SESSION)).unwrap().is_none());
    }
}
