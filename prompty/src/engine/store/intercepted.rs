//! A store wrapper that sees every commit first: fault injection and recording for tests.

use super::{Checkpoint, Commit, Durability, Lease, SessionInfo};
use crate::engine::events::EngineEvent;
use crate::{BoxFuture, Result};
use std::sync::Arc;
use std::time::Duration;

/// What [`Intercepted`] does with a commit.
///
/// ```
/// let _ = prompty::engine::store::Interception::Write;
/// ```
#[derive(Debug)]
pub enum Interception {
    /// Write the commit as it is.
    Write,
    /// Write this commit instead (a copy sent through JSON, say, as a store on disk would keep it).
    Replace(Box<Commit>),
    /// Refuse it with this error, writing nothing: the process "died" before the commit was
    /// durable.
    Refuse(crate::Error),
}

/// A store that hands every commit to `check` before its inner store: the way a test makes a
/// store fail at a chosen step (a crash between two commits), records what is committed, or
/// stores commits as a store on disk would. Everything else goes to the inner store unchanged.
///
/// ```
/// use prompty::engine::store::{Intercepted, Interception};
/// use prompty::engine::{EventKind, MemoryStore, ModelResponse, ScriptedModel, TurnEngine, TurnRequest};
/// use std::sync::Arc;
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// // Dies before the answer is committed.
/// let store = Intercepted::new(Arc::new(MemoryStore::new()), |commit| {
///     if commit.events.iter().any(|e| e.kind == EventKind::TurnCommitted) {
///         Interception::Refuse(prompty::Error::Task("the process died".into()))
///     } else {
///         Interception::Write
///     }
/// });
/// let engine = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(serde_json::json!("hi"))]))
///     .store(Arc::new(store));
/// assert!(engine.run(TurnRequest::new("s", "t", Vec::new())).await.is_err());
/// # });
/// ```
pub struct Intercepted<F> {
    inner: Arc<dyn Durability>,
    check: F,
}

impl<F: Fn(&Commit) -> Interception + Send + Sync> Intercepted<F> {
    /// `inner`, with every commit handed to `check` first.
    ///
    /// ```
    /// let store = prompty::engine::store::Intercepted::new(
    ///     std::sync::Arc::new(prompty::engine::MemoryStore::new()),
    ///     |_| prompty::engine::store::Interception::Write,
    /// );
    /// # let _ = store;
    /// ```
    pub fn new(inner: Arc<dyn Durability>, check: F) -> Self {
        Intercepted { inner, check }
    }
}

impl<F> std::fmt::Debug for Intercepted<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intercepted").field("inner", &self.inner.describe()).finish_non_exhaustive()
    }
}

impl<F: Fn(&Commit) -> Interception + Send + Sync> Durability for Intercepted<F> {
    fn describe(&self) -> String {
        format!("{} (intercepted)", self.inner.describe())
    }

    fn commit<'a>(&'a self, commit: &'a Commit) -> BoxFuture<'a, Result<()>> {
        match (self.check)(commit) {
            Interception::Write => self.inner.commit(commit),
            Interception::Replace(other) => Box::pin(async move { self.inner.commit(&other).await }),
            Interception::Refuse(e) => Box::pin(async move { Err(e) }),
        }
    }

    fn checkpoint<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        self.inner.checkpoint(session_id)
    }

    fn last_sequence<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<u64>> {
        self.inner.last_sequence(session_id)
    }

    fn events<'a>(&'a self, session_id: &'a str, after: u64) -> BoxFuture<'a, Result<Vec<EngineEvent>>> {
        self.inner.events(session_id, after)
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        self.inner.sessions()
    }

    fn acquire<'a>(&'a self, session_id: &'a str, owner: &'a str, ttl: Duration) -> BoxFuture<'a, Result<Lease>> {
        self.inner.acquire(session_id, owner, ttl)
    }

    fn release<'a>(&'a self, session_id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<()>> {
        self.inner.release(session_id, owner)
    }
}
