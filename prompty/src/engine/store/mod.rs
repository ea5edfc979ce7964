//! Durability: where a turn's events and checkpoints go (the specification's `DurabilityPort`).
//!
//! | store | feature | location for [`open`] | for |
//! |---|---|---|---|
//! | [`MemoryStore`] | — | `memory:` | tests, one process, nothing survives it |
//! | `SqliteStore` | `sqlite` | `sqlite:PATH`, or a path ending in `.db`, `.sqlite`, `.sqlite3` | one machine: one file, WAL, no server |
//! | `PostgresStore` | `postgres` | `postgres://user@host:port/db` (or `postgresql://`) | many workers on many machines, leases on the database's clock |
//!
//! A [`Commit`] is written atomically: its events are appended to the session's journal and its
//! checkpoint, when it has one, replaces the session's last — all or nothing. The events of a
//! session are numbered from 1 without gaps; a commit whose first event does not follow the
//! journal's tail is refused, so two workers can never both extend one session. A worker that
//! names itself in [`Commit::owner`] must hold the session's lease ([`Durability::acquire`]), and
//! each of its commits renews it.

mod intercepted;
mod memory;
pub use intercepted::{Intercepted, Interception};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteStore, SQLITE_BUSY_TIMEOUT};

use super::events::EngineEvent;
use super::types::{ContextSnapshot, ContextState, ModelReconciliation, ModelResponse, ToolOutput, ToolRequest};
use crate::{BoxFuture, Message, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How a turn ended.
///
/// ```
/// use prompty::engine::TurnStatus;
/// assert_eq!(serde_json::to_value(TurnStatus::ReconciliationRequired).unwrap(), "reconciliation_required");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model answered and the answer was committed.
    Success,
    /// The turn failed (a model that kept failing, a guardrail, the iteration limit, ...).
    Failed,
    /// The turn was cancelled.
    Cancelled,
    /// An effect's outcome is unknown: a host must reconcile it before the turn goes on.
    ReconciliationRequired,
}

impl TurnStatus {
    /// The specification's name.
    ///
    /// ```
    /// assert_eq!(prompty::engine::TurnStatus::Success.as_str(), "success");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Success => "success",
            TurnStatus::Failed => "failed",
            TurnStatus::Cancelled => "cancelled",
            TurnStatus::ReconciliationRequired => "reconciliation_required",
        }
    }
}

/// Where a turn stands in a [`Checkpoint`]: what resuming it does next.
///
/// ```
/// let phase = prompty::engine::Phase::Ready;
/// assert_eq!(serde_json::to_value(&phase).unwrap()["state"], "ready");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Phase {
    /// The next step is a model invocation.
    Ready,
    /// The model asked for tools: `results` holds the committed results, in request order; the
    /// requests after them have not run (or are in flight, which the journal tells).
    Tools {
        /// The invocation that asked.
        #[serde(rename = "invocationId")]
        invocation_id: String,
        /// Its response (the requests, the assistant messages, the provider's raw data).
        response: Box<ModelResponse>,
        /// The results committed so far.
        results: Vec<ToolOutput>,
    },
    /// The model answered; the answer awaits the final-output policy and the commit.
    Final {
        /// The invocation that answered.
        #[serde(rename = "invocationId")]
        invocation_id: String,
        /// Its response.
        response: Box<ModelResponse>,
    },
    /// A tool's outcome is unknown; nothing runs until a host resolves it.
    ToolReconciliation {
        /// The invocation whose round it is.
        #[serde(rename = "invocationId")]
        invocation_id: String,
        /// Its response.
        response: Box<ModelResponse>,
        /// The results committed before the unknown one.
        results: Vec<ToolOutput>,
        /// The request whose outcome is unknown.
        request: ToolRequest,
    },
    /// A model invocation's outcome is unknown; nothing runs until a host supplies its response.
    ModelReconciliation {
        /// What the host needs.
        reconciliation: ModelReconciliation,
        /// The invocation's exact context.
        snapshot: Box<ContextSnapshot>,
    },
    /// The turn ended.
    Done {
        /// How.
        status: TurnStatus,
        /// The final output, on success.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Value>,
        /// Why it failed or was cancelled.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// A turn's durable state: enough to continue it in another process without repeating an effect.
///
/// ```
/// use prompty::engine::{Checkpoint, Phase};
/// let c = Checkpoint::new("session-1", "turn-1", Vec::new());
/// assert_eq!(c.phase, Phase::Ready);
/// let json = serde_json::to_value(&c).unwrap();
/// assert_eq!(json["sessionId"], "session-1");
/// // A checkpoint written without the stable prefix reads as 0 (the specification's rule).
/// let mut old = json.clone();
/// old.as_object_mut().unwrap().remove("stablePrefixMessages");
/// assert_eq!(serde_json::from_value::<Checkpoint>(old).unwrap().stable_prefix_messages, 0);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// This checkpoint.
    pub id: String,
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn_id: String,
    /// The engine run that wrote it.
    pub run_id: String,
    /// The last semantic event it represents (its `checkpoint_created` event follows).
    pub sequence: u64,
    /// Model invocations completed.
    pub iterations: u32,
    /// The conversation.
    pub messages: Vec<Message>,
    /// How many leading messages are unchanged since the turn began.
    #[serde(default)]
    pub stable_prefix_messages: u32,
    /// The provider state the next invocation continues.
    #[serde(default)]
    pub context_state: ContextState,
    /// What comes next.
    pub phase: Phase,
    /// The host's data (the CLI keeps the prompt's path and the inputs here).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// When it was written (RFC 3339).
    #[serde(default)]
    pub created_at: String,
}

impl Checkpoint {
    /// The state of a turn that has not begun: `messages`, ready for the first invocation.
    ///
    /// ```
    /// let c = prompty::engine::Checkpoint::new("s", "t", vec![prompty::Message::new(prompty::Role::User, "Hi")]);
    /// assert_eq!(c.stable_prefix_messages, 1);
    /// ```
    pub fn new(session_id: impl Into<String>, turn_id: impl Into<String>, messages: Vec<Message>) -> Self {
        let prefix = u32::try_from(messages.len()).unwrap_or(u32::MAX);
        Checkpoint {
            id: String::new(),
            session_id: session_id.into(),
            turn_id: turn_id.into(),
            run_id: String::new(),
            sequence: 0,
            iterations: 0,
            messages,
            stable_prefix_messages: prefix,
            context_state: ContextState::default(),
            phase: Phase::Ready,
            metadata: Map::new(),
            created_at: String::new(),
        }
    }

    /// The turn's status when it has ended.
    ///
    /// ```
    /// assert_eq!(prompty::engine::Checkpoint::new("s", "t", Vec::new()).status(), None);
    /// ```
    pub fn status(&self) -> Option<TurnStatus> {
        match &self.phase {
            Phase::Done { status, .. } => Some(*status),
            Phase::ToolReconciliation { .. } | Phase::ModelReconciliation { .. } => {
                Some(TurnStatus::ReconciliationRequired)
            }
            _ => None,
        }
    }
}

/// One atomic write: events appended to a session's journal, and the checkpoint that replaces its
/// last.
///
/// ```
/// let commit = prompty::engine::Commit { session_id: "s".into(), events: Vec::new(), checkpoint: None, owner: None };
/// assert!(commit.events.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// The session.
    pub session_id: String,
    /// The events, numbered on from the journal's tail.
    pub events: Vec<EngineEvent>,
    /// The checkpoint, if this write has one.
    pub checkpoint: Option<Checkpoint>,
    /// The worker writing, which must hold the session's lease (`None`: no lease is checked).
    pub owner: Option<String>,
}

/// A session as a store lists it.
///
/// ```
/// let info = prompty::engine::SessionInfo { session_id: "s".into(), turn_id: "t".into(), status: None,
///     iterations: 0, last_sequence: 0, updated_at: String::new(), lease_owner: None, lease_expires_at: None };
/// assert!(info.status.is_none()); // in progress (or interrupted)
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session.
    pub session_id: String,
    /// Its last turn.
    pub turn_id: String,
    /// How that turn ended; `None` while it runs or after it was interrupted.
    pub status: Option<TurnStatus>,
    /// Model invocations completed in that turn.
    pub iterations: u32,
    /// The journal's tail.
    pub last_sequence: u64,
    /// When the last checkpoint was written (RFC 3339).
    pub updated_at: String,
    /// The worker holding the session, if any.
    pub lease_owner: Option<String>,
    /// When that lease ends (RFC 3339).
    pub lease_expires_at: Option<String>,
}

/// The answer to [`Durability::acquire`].
///
/// ```
/// let lease = prompty::engine::Lease { acquired: false, holder: Some("worker-2".into()) };
/// assert!(!lease.acquired);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Whether the caller now holds the session.
    pub acquired: bool,
    /// Who holds it (the caller, or the worker that does).
    pub holder: Option<String>,
}

/// A checkpoint store and event journal (the specification's `DurabilityPort`).
///
/// Implementations: [`MemoryStore`], `SqliteStore` (feature `sqlite`), `PostgresStore` (feature
/// `postgres`). See the [module](self) for the rules every implementation keeps.
///
/// ```
/// use prompty::engine::{Durability, MemoryStore};
/// let store = MemoryStore::new();
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let sessions = rt.block_on(store.sessions()).unwrap();
/// assert!(sessions.is_empty());
/// ```
pub trait Durability: Send + Sync {
    /// A short description for errors and logs (`memory`, `sqlite:/path`), never a credential.
    fn describe(&self) -> String;

    /// Writes `commit` atomically. Refuses (with [`crate::Error::Durability`]) a commit whose
    /// first event does not follow the journal's tail, and one whose owner does not hold the
    /// session's lease; renews the owner's lease.
    fn commit<'a>(&'a self, commit: &'a Commit) -> BoxFuture<'a, Result<()>>;

    /// The session's last checkpoint.
    fn checkpoint<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<Checkpoint>>>;

    /// The sequence of the session's last event (0: none).
    fn last_sequence<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<u64>>;

    /// The session's events after `after` (0: all), in order.
    fn events<'a>(&'a self, session_id: &'a str, after: u64) -> BoxFuture<'a, Result<Vec<EngineEvent>>>;

    /// The sessions it holds, most recently updated first.
    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>>;

    /// Takes the session's lease for `owner` until `ttl` from now, unless another worker holds an
    /// unexpired one. Taking a lease one already holds renews it.
    fn acquire<'a>(&'a self, session_id: &'a str, owner: &'a str, ttl: Duration) -> BoxFuture<'a, Result<Lease>>;

    /// Gives the lease up (nothing happens when `owner` does not hold it).
    fn release<'a>(&'a self, session_id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<()>>;
}

impl Commit {
    /// How this commit changes the session's status: `Some(None)` when it starts a turn,
    /// `Some(Some(status))` when it ends one, `None` when it does neither. Stores keep the status
    /// [`SessionInfo::status`] reports with it.
    ///
    /// ```
    /// let commit = prompty::engine::Commit { session_id: "s".into(), events: Vec::new(), checkpoint: None, owner: None };
    /// assert_eq!(commit.status_change(), None);
    /// ```
    pub fn status_change(&self) -> Option<Option<TurnStatus>> {
        use super::events::EventKind as K;
        self.events.iter().rev().find_map(|e| match e.kind {
            K::TurnStarted => Some(None),
            K::TurnCommitted => Some(Some(TurnStatus::Success)),
            K::TurnFailed => Some(Some(TurnStatus::Failed)),
            K::TurnCancelled => Some(Some(TurnStatus::Cancelled)),
            K::TurnReconciliationRequired => Some(Some(TurnStatus::ReconciliationRequired)),
            _ => None,
        })
    }
}

/// The error of a store.
pub(crate) fn store_error(store: &dyn Durability, message: impl Into<String>) -> crate::Error {
    crate::Error::Durability { store: store.describe(), message: message.into() }
}

/// The check every store makes before appending: the events follow `tail` without a gap and
/// belong to the session.
pub(crate) fn check_sequence(session_id: &str, tail: u64, events: &[EngineEvent]) -> std::result::Result<(), String> {
    for (i, event) in events.iter().enumerate() {
        let want = tail + 1 + i as u64;
        if event.sequence != want {
            return Err(format!(
                "event {} of session {session_id} was expected to be number {want}: the journal moved on \
                 (another worker wrote to this session; resume it again to continue from its journal)",
                event.sequence
            ));
        }
        if event.session_id != session_id {
            return Err(format!("event {} belongs to session {}, not {session_id}", event.sequence, event.session_id));
        }
    }
    Ok(())
}

/// Opens the store at `location`: `memory:`, `sqlite:PATH` (or a bare path ending in `.db`,
/// `.sqlite` or `.sqlite3`; the file is created when missing), or `postgres://user@host:port/db`
/// (`postgresql://` too; the tables are created when missing). A store whose feature (`sqlite`,
/// `postgres`) this build lacks is an error naming it.
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = prompty::engine::store::open("memory:").await?;
/// assert_eq!(store.describe(), "memory");
/// assert!(prompty::engine::store::open("mongodb://db").await.is_err());
/// # Ok::<(), prompty::Error>(()) }).unwrap();
/// ```
pub async fn open(location: &str) -> Result<Arc<dyn Durability>> {
    match Location::parse(location)? {
        Location::Memory => Ok(Arc::new(MemoryStore::new())),
        #[cfg(feature = "sqlite")]
        Location::Sqlite(path) => {
            let store = crate::blocking::unblock("opening a SQLite store", move || SqliteStore::open(path)).await??;
            Ok(Arc::new(store))
        }
        #[cfg(not(feature = "sqlite"))]
        Location::Sqlite(path) => Err(crate::Error::Durability {
            store: format!("sqlite:{path}"),
            message: "this build of prompty has no SQLite store: enable its feature `sqlite` \
                      (prompty = { features = [\"sqlite\"] })"
                .into(),
        }),
        #[cfg(feature = "postgres")]
        Location::Postgres(url) => Ok(Arc::new(PostgresStore::connect(url).await?)),
        #[cfg(not(feature = "postgres"))]
        Location::Postgres(url) => Err(crate::Error::Durability {
            store: without_credentials(url),
            message: "this build of prompty has no PostgreSQL store: enable its feature `postgres` \
                      (prompty = { features = [\"postgres\"] })"
                .into(),
        }),
    }
}

/// A parsed store location.
#[derive(Debug, PartialEq)]
enum Location<'a> {
    Memory,
    Sqlite(String),
    Postgres(&'a str),
}

impl<'a> Location<'a> {
    fn parse(location: &'a str) -> Result<Location<'a>> {
        let text = location.trim();
        if text == "memory" || text == "memory:" {
            return Ok(Location::Memory);
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Ok(Location::Postgres(text));
        }
        if let Some(path) = text.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(crate::Error::Durability {
                    store: "sqlite:".into(),
                    message: "the location names no file: write sqlite:PATH (sqlite:turns.db)".into(),
                });
            }
            return Ok(Location::Sqlite(path.to_owned()));
        }
        let bare = !text.contains("://") && !text.is_empty();
        let lower = text.to_ascii_lowercase();
        if bare && [".db", ".sqlite", ".sqlite3"].iter().any(|ext| lower.ends_with(ext)) {
            return Ok(Location::Sqlite(text.to_owned()));
        }
        Err(crate::Error::Durability {
            store: without_credentials(text),
            message: "unknown store location: use memory:, sqlite:PATH (or a path ending in .db, .sqlite or .sqlite3) \
                      or postgres://user@host:port/database"
                .into(),
        })
    }
}

/// `location` without the password of a `scheme://user:password@host` form (and without a query
/// that names a password), for messages.
fn without_credentials(location: &str) -> String {
    if let Some((before, query)) = location.split_once('?') {
        if query.to_ascii_lowercase().contains("password") {
            return without_credentials(before);
        }
    }
    let Some(scheme_end) = location.find("://") else {
        // libpq's `key=value` form: a password in it cannot be cut out reliably (quoting).
        return if location.to_ascii_lowercase().contains("password") {
            "a connection string (not shown: it has a password)".to_owned()
        } else {
            location.to_owned()
        };
    };
    let rest = &location[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => {
            let user = rest[..at].split(':').next().unwrap_or("");
            format!("{}{user}@{}", &location[..scheme_end + 3], &rest[at + 1..])
        }
        None => location.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations() {
        assert_eq!(Location::parse("memory:").unwrap(), Location::Memory);
        assert_eq!(Location::parse(" memory ").unwrap(), Location::Memory);
        assert_eq!(Location::parse("sqlite:/tmp/t.db").unwrap(), Location::Sqlite("/tmp/t.db".into()));
        assert_eq!(Location::parse("sqlite:turns").unwrap(), Location::Sqlite("turns".into()));
        assert_eq!(Location::parse("data/turns.db").unwrap(), Location::Sqlite("data/turns.db".into()));
        assert_eq!(Location::parse("T.SQLITE3").unwrap(), Location::Sqlite("T.SQLITE3".into()));
        assert_eq!(Location::parse("postgres://u@h/db").unwrap(), Location::Postgres("postgres://u@h/db"));
        assert_eq!(Location::parse("postgresql://h/db").unwrap(), Location::Postgres("postgresql://h/db"));
        for bad in ["", "sqlite:", "turns.json", "mysql://u:hunter2secret@h/turns.db", "memory:x"] {
            let e = Location::parse(bad).unwrap_err().to_string();
            assert!(!e.contains("hunter2secret"), "{e}");
            assert!(e.contains("sqlite:"), "{e}");
        }
    }

    #[test]
    fn credentials_are_left_out() {
        assert_eq!(without_credentials("postgres://ann:pw@h:5/db?x=1"), "postgres://ann@h:5/db?x=1");
        assert_eq!(without_credentials("postgres://h/db"), "postgres://h/db");
        assert_eq!(without_credentials("postgres://a:b@c@h/db"), "postgres://a@h/db");
        assert_eq!(without_credentials("turns.db"), "turns.db");
        assert_eq!(without_credentials("postgres://h/db?user=a&password=pw"), "postgres://h/db");
        assert!(!without_credentials("host=/tmp password='p w'").contains("p w"));
    }
}
