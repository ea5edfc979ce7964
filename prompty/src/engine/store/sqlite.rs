//! The SQLite store (feature `sqlite`): one file, WAL, a durable commit per step.

use super::{check_sequence, store_error, Checkpoint, Commit, Durability, Lease, SessionInfo, TurnStatus};
use crate::engine::events::EngineEvent;
use crate::{BoxFuture, Result};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a statement waits for another connection's write lock before it fails.
pub const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The schema this build writes; a file written by a newer one is refused.
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE prompty_schema (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
CREATE TABLE prompty_sessions (
    session_id TEXT PRIMARY KEY,
    last_sequence INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    status TEXT,
    updated_at TEXT NOT NULL
);
CREATE TABLE prompty_events (
    session_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (session_id, sequence)
) WITHOUT ROWID;
CREATE TABLE prompty_checkpoints (
    session_id TEXT PRIMARY KEY,
    sequence INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    iterations INTEGER NOT NULL,
    checkpoint TEXT NOT NULL
);
CREATE TABLE prompty_leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_ms INTEGER NOT NULL,
    ttl_ms INTEGER NOT NULL
);
INSERT INTO prompty_schema (id, version) VALUES (1, 1);
";

/// Events, checkpoints, statuses and leases in one SQLite file: the store for one machine, no
/// server. Several processes may share the file (WAL; a writer waits up to
/// [`SQLITE_BUSY_TIMEOUT`] for another's lock); leases run on this machine's clock.
///
/// - Every [`Durability::commit`] is one `BEGIN IMMEDIATE` transaction (lease check, sequence
///   check, events, checkpoint, status, lease renewal) with `synchronous=FULL`: when it returns,
///   the step is on disk, and a process killed in the middle leaves the file as it was before it.
/// - Calls run on the blocking pool of prompty's shared runtime, one at a time per store (one
///   connection behind a mutex): a commit waiting for a lock or an fsync never stalls the caller's
///   runtime, a current-thread one included. A call whose future is dropped still runs to its
///   end (a commit then lands as if its process had died right after it).
/// - Bounds: a session keeps every event of its turns (the file grows with them; SQLite's limit
///   on one stored JSON text is 1 GB); one connection per store.
///
/// ```
/// use prompty::engine::{store::SqliteStore, Durability};
/// let dir = std::env::temp_dir().join(format!("prompty-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let store = SqliteStore::open(dir.join("turns.db"))?;
/// assert!(store.describe().starts_with("sqlite:"));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), prompty::Error>(())
/// ```
pub struct SqliteStore {
    path: PathBuf,
    location: String,
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4).min(i64::MAX / 4)
}

fn seq(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The text of a SQLite failure while doing `what`, with what to do about the common ones.
fn sql(what: &str) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| {
        use rusqlite::ErrorCode as C;
        let hint = match e.sqlite_error_code() {
            Some(C::DatabaseBusy | C::DatabaseLocked) => format!(
                " (another process held the file's write lock longer than {} s; try again, or look for a stuck \
                 process using the file)",
                SQLITE_BUSY_TIMEOUT.as_secs()
            ),
            Some(C::DatabaseCorrupt | C::NotADatabase) => {
                " (the file is not a SQLite database or is damaged: restore it from a backup)".to_owned()
            }
            Some(C::DiskFull) => " (the disk is full: free space and resume the session)".to_owned(),
            Some(C::ReadOnly | C::PermissionDenied | C::CannotOpen) => {
                " (check that the file and its folder exist and are writable by this process)".to_owned()
            }
            _ => String::new(),
        };
        format!("{what}: {e}{hint}")
    }
}

/// A stored status, as [`TurnStatus`] names it.
fn parse_status(text: &str) -> Option<TurnStatus> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
}

fn damaged(what: String, e: impl std::fmt::Display) -> String {
    format!("{what} is unreadable ({e}): the file may be damaged (restore it from a backup)")
}

impl SqliteStore {
    /// Opens the store in the file at `path`, creating the file, its folder and its tables when
    /// missing. Blocks while another process holds the file's write lock, up to
    /// [`SQLITE_BUSY_TIMEOUT`].
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("prompty-doc-open-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let store = prompty::engine::store::SqliteStore::open(dir.join("turns.db"))?;
    /// # drop(store); std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<SqliteStore> {
        let path = std::path::absolute(path.as_ref()).unwrap_or_else(|_| path.as_ref().to_path_buf());
        let location = format!("sqlite:{}", path.display());
        let fail = |message: String| crate::Error::Durability { store: location.clone(), message };
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder)
                .map_err(|e| fail(format!("cannot create the folder {}: {e}", folder.display())))?;
        }
        let mut conn = Connection::open(&path).map_err(|e| fail(sql("cannot open the file")(e)))?;
        conn.busy_timeout(SQLITE_BUSY_TIMEOUT).map_err(|e| fail(sql("cannot set the busy timeout")(e)))?;
        let mode: String = conn
            .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get(0))
            .map_err(|e| fail(sql("cannot switch the file to WAL")(e)))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(fail(format!(
                "the file stays in journal mode {mode}, not WAL (a file system without shared memory, such as a \
                 network share, cannot hold it: use a local disk)"
            )));
        }
        conn.pragma_update(None, "synchronous", "FULL").map_err(|e| fail(sql("cannot set synchronous=FULL")(e)))?;
        migrate(&mut conn).map_err(fail)?;
        Ok(SqliteStore { path, location, conn: Arc::new(Mutex::new(conn)) })
    }

    /// The file.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("prompty-doc-path-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let store = prompty::engine::store::SqliteStore::open(dir.join("turns.db"))?;
    /// assert!(store.path().ends_with("turns.db"));
    /// # drop(store); std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks the file: SQLite's own `PRAGMA integrity_check`, then each session's journal
    /// (numbered from 1 to its tail without a gap, every event and checkpoint readable, the
    /// checkpoint not past the tail). `Err` lists what is wrong.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("prompty-doc-check-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let store = prompty::engine::store::SqliteStore::open(dir.join("turns.db"))?;
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// store.integrity_check().await?;
    /// # Ok::<(), prompty::Error>(()) })?;
    /// # drop(store); std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub async fn integrity_check(&self) -> Result<()> {
        self.call("an integrity check", integrity).await
    }

    /// Runs `work` with the connection on the blocking pool.
    async fn call<T: Send + 'static>(
        &self,
        what: &str,
        work: impl FnOnce(&mut Connection) -> std::result::Result<T, String> + Send + 'static,
    ) -> Result<T> {
        let conn = Arc::clone(&self.conn);
        let out = crate::blocking::unblock(what, move || work(&mut lock(&conn))).await?;
        out.map_err(|m| store_error(self, m))
    }
}

fn lock(conn: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|p| p.into_inner())
}

/// Creates the tables of a new file; refuses a file of a newer schema. A later version adds its
/// steps here, from the version found to [`SCHEMA_VERSION`], in the same transaction.
fn migrate(conn: &mut Connection) -> std::result::Result<(), String> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql("cannot lock the file to check its schema"))?;
    let exists: bool = tx
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'prompty_schema'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
        .map_err(sql("cannot read the schema"))?;
    if !exists {
        let other: i64 = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'prompty\\_%' ESCAPE '\\'",
                [],
                |r| r.get(0),
            )
            .map_err(sql("cannot read the schema"))?;
        if other > 0 {
            return Err("the file has prompty tables but no schema version: it may be damaged".into());
        }
        tx.execute_batch(SCHEMA).map_err(sql("cannot create the tables"))?;
    } else {
        let version: Option<i64> = tx
            .query_row("SELECT version FROM prompty_schema WHERE id = 1", [], |r| r.get(0))
            .optional()
            .map_err(sql("cannot read the schema version"))?;
        match version {
            Some(SCHEMA_VERSION) => {}
            Some(v) if v > SCHEMA_VERSION => {
                return Err(format!(
                    "the file has schema version {v}, written by a newer prompty; this one knows up to version \
                     {SCHEMA_VERSION} (upgrade prompty)"
                ))
            }
            Some(v) => return Err(format!("the file has schema version {v}, which this prompty cannot migrate")),
            None => return Err("the file's schema version is missing: it may be damaged".into()),
        }
    }
    tx.commit().map_err(sql("cannot commit the schema"))
}

fn commit_in(conn: &mut Connection, commit: &Commit) -> std::result::Result<(), String> {
    let sid = commit.session_id.as_str();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql("cannot begin the commit"))?;
    let now = now_ms();
    if let Some(owner) = &commit.owner {
        let lease: Option<(String, i64)> = tx
            .query_row("SELECT owner, expires_ms FROM prompty_leases WHERE session_id = ?1", [sid], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(sql("cannot read the lease"))?;
        match lease {
            Some((holder, until)) if holder != *owner && until > now => {
                return Err(format!("session {sid} is held by {holder}, not {owner}"))
            }
            Some((holder, _)) if holder == *owner => {}
            _ => {
                return Err(format!(
                    "{owner} does not hold the lease of session {sid} (it expired, or was never taken)"
                ))
            }
        }
    }
    let tail: i64 = tx
        .query_row("SELECT last_sequence FROM prompty_sessions WHERE session_id = ?1", [sid], |r| r.get(0))
        .optional()
        .map_err(sql("cannot read the journal's tail"))?
        .unwrap_or(0);
    let tail = u64::try_from(tail)
        .map_err(|_| format!("the journal tail of session {sid} is {tail}: the file may be damaged"))?;
    check_sequence(sid, tail, &commit.events)?;
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO prompty_events (session_id, sequence, turn_id, kind, event) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .map_err(sql("cannot append the events"))?;
        for event in &commit.events {
            let json =
                serde_json::to_string(event).map_err(|e| format!("event {} cannot be written: {e}", event.sequence))?;
            insert
                .execute(params![sid, seq(event.sequence), event.turn_id, event.kind.as_str(), json])
                .map_err(sql("cannot append the events"))?;
        }
    }
    if let Some(checkpoint) = &commit.checkpoint {
        let json = serde_json::to_string(checkpoint).map_err(|e| format!("the checkpoint cannot be written: {e}"))?;
        tx.execute(
            "INSERT OR REPLACE INTO prompty_checkpoints (session_id, sequence, turn_id, iterations, checkpoint) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![sid, seq(checkpoint.sequence), checkpoint.turn_id, checkpoint.iterations, json],
        )
        .map_err(sql("cannot write the checkpoint"))?;
    }
    if let Some(last) = commit.events.last() {
        let (change, status) = match commit.status_change() {
            Some(status) => (true, status.map(TurnStatus::as_str)),
            None => (false, None),
        };
        tx.execute(
            "INSERT INTO prompty_sessions (session_id, last_sequence, turn_id, status, updated_at) \
             VALUES (?1, ?2, ?3, ?5, ?6) \
             ON CONFLICT (session_id) DO UPDATE SET last_sequence = ?2, turn_id = ?3, updated_at = ?6, \
             status = CASE WHEN ?4 THEN ?5 ELSE status END",
            params![sid, seq(last.sequence), last.turn_id, change, status, last.timestamp],
        )
        .map_err(sql("cannot update the session"))?;
    }
    if let Some(owner) = &commit.owner {
        // A commit renews the lease by the time it was taken for.
        tx.execute(
            "UPDATE prompty_leases SET expires_ms = ?3 + ttl_ms WHERE session_id = ?1 AND owner = ?2",
            params![sid, owner, now],
        )
        .map_err(sql("cannot renew the lease"))?;
    }
    tx.commit().map_err(sql("cannot commit"))
}

fn checkpoint_in(conn: &mut Connection, sid: &str) -> std::result::Result<Option<Checkpoint>, String> {
    let row: Option<(i64, String)> = conn
        .query_row("SELECT sequence, checkpoint FROM prompty_checkpoints WHERE session_id = ?1", [sid], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(sql("cannot read the checkpoint"))?;
    let Some((sequence, json)) = row else { return Ok(None) };
    let checkpoint: Checkpoint = serde_json::from_str(&json)
        .map_err(|e| damaged(format!("the checkpoint of session {sid} at sequence {sequence}"), e))?;
    if checkpoint.session_id != sid || seq(checkpoint.sequence) != sequence {
        return Err(damaged(
            format!("the checkpoint of session {sid} at sequence {sequence}"),
            format!("it says session {} sequence {}", checkpoint.session_id, checkpoint.sequence),
        ));
    }
    Ok(Some(checkpoint))
}

fn last_sequence_in(conn: &mut Connection, sid: &str) -> std::result::Result<u64, String> {
    let tail: Option<i64> = conn
        .query_row("SELECT last_sequence FROM prompty_sessions WHERE session_id = ?1", [sid], |r| r.get(0))
        .optional()
        .map_err(sql("cannot read the journal's tail"))?;
    let tail = tail.unwrap_or(0);
    u64::try_from(tail).map_err(|_| format!("the journal tail of session {sid} is {tail}: the file may be damaged"))
}

fn events_in(conn: &mut Connection, sid: &str, after: u64) -> std::result::Result<Vec<EngineEvent>, String> {
    let mut stmt = conn
        .prepare("SELECT sequence, event FROM prompty_events WHERE session_id = ?1 AND sequence > ?2 ORDER BY sequence")
        .map_err(sql("cannot read the journal"))?;
    let rows = stmt
        .query_map(params![sid, seq(after)], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
        .map_err(sql("cannot read the journal"))?;
    let mut events = Vec::new();
    for row in rows {
        let (sequence, json) = row.map_err(sql("cannot read the journal"))?;
        let event: EngineEvent =
            serde_json::from_str(&json).map_err(|e| damaged(format!("event {sequence} of session {sid}"), e))?;
        if seq(event.sequence) != sequence || event.session_id != sid {
            return Err(damaged(
                format!("event {sequence} of session {sid}"),
                format!("it says session {} sequence {}", event.session_id, event.sequence),
            ));
        }
        events.push(event);
    }
    Ok(events)
}

fn sessions_in(conn: &mut Connection) -> std::result::Result<Vec<SessionInfo>, String> {
    let now = now_ms();
    let mut stmt = conn
        .prepare(
            "SELECT s.session_id, s.turn_id, s.status, s.last_sequence, s.updated_at, c.iterations, l.owner, l.expires_ms \
             FROM prompty_sessions s \
             LEFT JOIN prompty_checkpoints c ON c.session_id = s.session_id AND c.turn_id = s.turn_id \
             LEFT JOIN prompty_leases l ON l.session_id = s.session_id AND l.expires_ms > ?1 \
             WHERE s.last_sequence > 0 \
             ORDER BY s.updated_at DESC, s.session_id ASC",
        )
        .map_err(sql("cannot list the sessions"))?;
    let rows = stmt
        .query_map([now], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<i64>>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, Option<i64>>(7)?,
            ))
        })
        .map_err(sql("cannot list the sessions"))?;
    let mut list = Vec::new();
    for row in rows {
        let (session_id, turn_id, status, last, updated_at, iterations, owner, expires) =
            row.map_err(sql("cannot list the sessions"))?;
        let status = match status {
            None => None,
            Some(text) => Some(parse_status(&text).ok_or_else(|| {
                damaged(format!("the status of session {session_id}"), format!("unknown status '{text}'"))
            })?),
        };
        list.push(SessionInfo {
            turn_id,
            status,
            iterations: iterations.and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
            last_sequence: u64::try_from(last).unwrap_or(0),
            updated_at,
            lease_owner: owner,
            lease_expires_at: expires.map(|ms| {
                crate::trace::time::rfc3339(UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0)))
            }),
            session_id,
        });
    }
    Ok(list)
}

fn acquire_in(conn: &mut Connection, sid: &str, owner: &str, ttl: i64) -> std::result::Result<Lease, String> {
    let tx =
        conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql("cannot begin taking the lease"))?;
    let now = now_ms();
    let lease: Option<(String, i64)> = tx
        .query_row("SELECT owner, expires_ms FROM prompty_leases WHERE session_id = ?1", [sid], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()
        .map_err(sql("cannot read the lease"))?;
    if let Some((holder, until)) = lease {
        if holder != owner && until > now {
            return Ok(Lease { acquired: false, holder: Some(holder) });
        }
    }
    tx.execute(
        "INSERT OR REPLACE INTO prompty_leases (session_id, owner, expires_ms, ttl_ms) VALUES (?1, ?2, ?3, ?4)",
        params![sid, owner, now.saturating_add(ttl), ttl],
    )
    .map_err(sql("cannot take the lease"))?;
    tx.commit().map_err(sql("cannot take the lease"))?;
    Ok(Lease { acquired: true, holder: Some(owner.to_owned()) })
}

fn integrity(conn: &mut Connection) -> std::result::Result<(), String> {
    let mut problems: Vec<String> = Vec::new();
    {
        let mut stmt = conn.prepare("PRAGMA integrity_check").map_err(sql("cannot check the file"))?;
        let lines = stmt.query_map([], |r| r.get::<_, String>(0)).map_err(sql("cannot check the file"))?;
        for line in lines {
            let line = line.map_err(sql("cannot check the file"))?;
            if line != "ok" {
                problems.push(format!("SQLite: {line}"));
            }
        }
    }
    let sessions: Vec<(String, i64)> = {
        let mut stmt = conn
            .prepare("SELECT session_id, last_sequence FROM prompty_sessions")
            .map_err(sql("cannot list the sessions"))?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).map_err(sql("cannot list the sessions"))?;
        rows.collect::<rusqlite::Result<_>>().map_err(sql("cannot list the sessions"))?
    };
    for (sid, tail) in sessions {
        let (count, first, last): (i64, Option<i64>, Option<i64>) = conn
            .query_row(
                "SELECT count(*), min(sequence), max(sequence) FROM prompty_events WHERE session_id = ?1",
                [&sid],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .map_err(sql("cannot read the journal"))?;
        if count != tail || (count > 0 && (first != Some(1) || last != Some(tail))) {
            problems.push(format!(
                "session {sid}: its tail is {tail} but its journal holds {count} events numbered {} to {}",
                first.unwrap_or(0),
                last.unwrap_or(0)
            ));
        }
        match events_in(conn, &sid, 0) {
            Ok(events) => {
                if events.iter().enumerate().any(|(i, e)| e.sequence != i as u64 + 1) {
                    problems.push(format!("session {sid}: its events are not numbered from 1 without gaps"));
                }
            }
            Err(e) => problems.push(e),
        }
        match checkpoint_in(conn, &sid) {
            Ok(Some(c)) if seq(c.sequence) > tail => problems.push(format!(
                "session {sid}: its checkpoint is at sequence {} past the journal's tail {tail}",
                c.sequence
            )),
            Ok(_) => {}
            Err(e) => problems.push(e),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("the file failed its check: {}", problems.join("; ")))
    }
}

impl Durability for SqliteStore {
    fn describe(&self) -> String {
        self.location.clone()
    }

    fn commit<'a>(&'a self, commit: &'a Commit) -> BoxFuture<'a, Result<()>> {
        let commit = commit.clone();
        Box::pin(self.call("a SQLite commit", move |conn| commit_in(conn, &commit)))
    }

    fn checkpoint<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        let sid = session_id.to_owned();
        Box::pin(self.call("a SQLite read", move |conn| checkpoint_in(conn, &sid)))
    }

    fn last_sequence<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<u64>> {
        let sid = session_id.to_owned();
        Box::pin(self.call("a SQLite read", move |conn| last_sequence_in(conn, &sid)))
    }

    fn events<'a>(&'a self, session_id: &'a str, after: u64) -> BoxFuture<'a, Result<Vec<EngineEvent>>> {
        let sid = session_id.to_owned();
        Box::pin(self.call("a SQLite read", move |conn| events_in(conn, &sid, after)))
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        Box::pin(self.call("a SQLite read", sessions_in))
    }

    fn acquire<'a>(&'a self, session_id: &'a str, owner: &'a str, ttl: Duration) -> BoxFuture<'a, Result<Lease>> {
        let (sid, owner, ttl) = (session_id.to_owned(), owner.to_owned(), millis(ttl));
        Box::pin(self.call("taking a SQLite lease", move |conn| acquire_in(conn, &sid, &owner, ttl)))
    }

    fn release<'a>(&'a self, session_id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<()>> {
        let (sid, owner) = (session_id.to_owned(), owner.to_owned());
        Box::pin(self.call("releasing a SQLite lease", move |conn| {
            conn.execute("DELETE FROM prompty_leases WHERE session_id = ?1 AND owner = ?2", params![sid, owner])
                .map(drop)
                .map_err(sql("cannot release the lease"))
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::events::EventKind;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("prompty-sqlite-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
    }

    fn event(sequence: u64, kind: EventKind) -> EngineEvent {
        EngineEvent {
            sequence,
            id: format!("e{sequence}"),
            timestamp: "2026-01-01T00:00:00Z".into(),
            session_id: "s".into(),
            turn_id: "t".into(),
            run_id: "r".into(),
            invocation_id: None,
            iteration: None,
            kind,
            payload: serde_json::Value::Null,
        }
    }

    /// A store with session `s`: events 1 and 2, a checkpoint at 1, status success.
    fn store_with_a_session(dir: &Path) -> SqliteStore {
        let store = SqliteStore::open(dir.join("t.db")).unwrap();
        let mut checkpoint = Checkpoint::new("s", "t", Vec::new());
        checkpoint.sequence = 1;
        let commit = Commit {
            session_id: "s".into(),
            events: vec![event(1, EventKind::TurnStarted), event(2, EventKind::TurnCommitted)],
            checkpoint: Some(checkpoint),
            owner: None,
        };
        block_on(store.commit(&commit)).unwrap();
        block_on(store.integrity_check()).unwrap();
        store
    }

    fn raw(store: &SqliteStore, sql: &str) {
        lock(&store.conn).execute_batch(sql).unwrap();
    }

    #[test]
    fn damaged_rows_are_reported_with_their_place() {
        let dir = temp("damaged");
        let store = store_with_a_session(&dir);
        raw(&store, "UPDATE prompty_events SET event = '{\"sequence\": 2' WHERE sequence = 2");
        let e = block_on(store.events("s", 0)).unwrap_err().to_string();
        assert!(e.contains("event 2 of session s is unreadable") && e.contains("damaged"), "{e}");
        assert!(e.contains(&format!("sqlite:{}", dir.join("t.db").display())), "{e}");
        raw(&store, "UPDATE prompty_checkpoints SET checkpoint = '[]'");
        let e = block_on(store.checkpoint("s")).unwrap_err().to_string();
        assert!(e.contains("the checkpoint of session s at sequence 1 is unreadable"), "{e}");
        raw(&store, "UPDATE prompty_sessions SET status = 'melted'");
        let e = block_on(store.sessions()).unwrap_err().to_string();
        assert!(e.contains("session s") && e.contains("melted"), "{e}");
        let e = block_on(store.integrity_check()).unwrap_err().to_string();
        assert!(e.contains("event 2 of session s") && e.contains("checkpoint of session s"), "{e}");
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_gap_fails_the_check() {
        let dir = temp("gap");
        let store = store_with_a_session(&dir);
        raw(&store, "DELETE FROM prompty_events WHERE sequence = 1");
        let e = block_on(store.integrity_check()).unwrap_err().to_string();
        assert!(e.contains("session s: its tail is 2 but its journal holds 1 events numbered 2 to 2"), "{e}");
        drop(store);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn schemas_it_does_not_know_are_refused() {
        let dir = temp("schema");
        let store = store_with_a_session(&dir);
        raw(&store, "UPDATE prompty_schema SET version = 7");
        drop(store);
        let e = SqliteStore::open(dir.join("t.db")).unwrap_err().to_string();
        assert!(e.contains("schema version 7, written by a newer prompty"), "{e}");
        // prompty's tables without a version row
        let conn = Connection::open(dir.join("bare.db")).unwrap();
        conn.execute_batch("CREATE TABLE prompty_events (x INTEGER)").unwrap();
        drop(conn);
        let e = SqliteStore::open(dir.join("bare.db")).unwrap_err().to_string();
        assert!(e.contains("no schema version"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_file_is_in_wal_mode_and_survives_reopening() {
        let dir = temp("wal");
        let store = store_with_a_session(&dir);
        let mode: String = lock(&store.conn).query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        let sync: i64 = lock(&store.conn).query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
        drop(store);
        let again = SqliteStore::open(dir.join("t.db")).unwrap();
        assert_eq!(block_on(again.last_sequence("s")).unwrap(), 2);
        assert_eq!(block_on(again.sessions()).unwrap()[0].status, Some(TurnStatus::Success));
        drop(again);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
