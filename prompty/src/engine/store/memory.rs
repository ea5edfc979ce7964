//! The in-memory store: the engine's default, for tests and one process.

use super::{check_sequence, store_error, Checkpoint, Commit, Durability, Lease, SessionInfo, TurnStatus};
use crate::engine::events::EngineEvent;
use crate::{BoxFuture, Result};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

#[derive(Default)]
struct Session {
    events: Vec<EngineEvent>,
    checkpoint: Option<Checkpoint>,
    lease: Option<(String, SystemTime, Duration)>,
    status: Option<TurnStatus>,
}

/// Events and checkpoints in memory: everything a durable store does (atomic commits, sequence
/// checks, leases) except surviving the process. Bounded only by memory: a session keeps every
/// event of its turns.
///
/// ```
/// use prompty::engine::{Durability, MemoryStore};
/// let store = MemoryStore::new();
/// assert_eq!(store.describe(), "memory");
/// ```
#[derive(Default)]
pub struct MemoryStore {
    sessions: Mutex<HashMap<String, Session>>,
}

impl MemoryStore {
    /// An empty store.
    ///
    /// ```
    /// let store = prompty::engine::MemoryStore::new();
    /// # let _ = store;
    /// ```
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").field("sessions", &self.lock().len()).finish()
    }
}

impl Durability for MemoryStore {
    fn describe(&self) -> String {
        "memory".to_owned()
    }

    fn commit<'a>(&'a self, commit: &'a Commit) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut sessions = self.lock();
            let session = sessions.entry(commit.session_id.clone()).or_default();
            let now = SystemTime::now();
            if let Some(owner) = &commit.owner {
                match &session.lease {
                    Some((holder, until, _)) if holder != owner && *until > now => {
                        return Err(store_error(
                            self,
                            format!("session {} is held by {holder}, not {owner}", commit.session_id),
                        ))
                    }
                    Some((holder, _, _)) if holder == owner => {}
                    _ => {
                        return Err(store_error(
                            self,
                            format!(
                                "{owner} does not hold the lease of session {} (it expired, or was never taken)",
                                commit.session_id
                            ),
                        ))
                    }
                }
            }
            let tail = session.events.last().map_or(0, |e| e.sequence);
            check_sequence(&commit.session_id, tail, &commit.events).map_err(|m| store_error(self, m))?;
            session.events.extend(commit.events.iter().cloned());
            if let Some(checkpoint) = &commit.checkpoint {
                session.checkpoint = Some(checkpoint.clone());
            }
            if let Some(status) = commit.status_change() {
                session.status = status;
            }
            if let (Some(owner), Some((holder, until, ttl))) = (&commit.owner, &mut session.lease) {
                if holder == owner {
                    // A commit renews the lease by the time it was taken for.
                    *until = now + *ttl;
                }
            }
            Ok(())
        })
    }

    fn checkpoint<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move { Ok(self.lock().get(session_id).and_then(|s| s.checkpoint.clone())) })
    }

    fn last_sequence<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move { Ok(self.lock().get(session_id).and_then(|s| s.events.last()).map_or(0, |e| e.sequence)) })
    }

    fn events<'a>(&'a self, session_id: &'a str, after: u64) -> BoxFuture<'a, Result<Vec<EngineEvent>>> {
        Box::pin(async move {
            Ok(self
                .lock()
                .get(session_id)
                .map(|s| s.events.iter().filter(|e| e.sequence > after).cloned().collect())
                .unwrap_or_default())
        })
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        Box::pin(async move {
            let now = SystemTime::now();
            let mut list: Vec<SessionInfo> = self
                .lock()
                .iter()
                .filter_map(|(id, s)| {
                    let last = s.events.last()?;
                    let lease = s.lease.as_ref().filter(|(_, until, _)| *until > now);
                    Some(SessionInfo {
                        session_id: id.clone(),
                        turn_id: last.turn_id.clone(),
                        status: s.status,
                        iterations: s
                            .checkpoint
                            .as_ref()
                            .filter(|c| c.turn_id == last.turn_id)
                            .map_or(0, |c| c.iterations),
                        last_sequence: last.sequence,
                        updated_at: last.timestamp.clone(),
                        lease_owner: lease.map(|(o, _, _)| o.clone()),
                        lease_expires_at: lease.map(|(_, until, _)| crate::trace::time::rfc3339(*until)),
                    })
                })
                .collect();
            list.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.session_id.cmp(&b.session_id)));
            Ok(list)
        })
    }

    fn acquire<'a>(&'a self, session_id: &'a str, owner: &'a str, ttl: Duration) -> BoxFuture<'a, Result<Lease>> {
        Box::pin(async move {
            let mut sessions = self.lock();
            let session = sessions.entry(session_id.to_owned()).or_default();
            let now = SystemTime::now();
            match &session.lease {
                Some((holder, until, _)) if holder != owner && *until > now => {
                    Ok(Lease { acquired: false, holder: Some(holder.clone()) })
                }
                _ => {
                    session.lease = Some((owner.to_owned(), now + ttl, ttl));
                    Ok(Lease { acquired: true, holder: Some(owner.to_owned()) })
                }
            }
        })
    }

    fn release<'a>(&'a self, session_id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            if let Some(session) = self.lock().get_mut(session_id) {
                if session.lease.as_ref().is_some_and(|(holder, _, _)| holder == owner) {
                    session.lease = None;
                }
            }
            Ok(())
        })
    }
}
