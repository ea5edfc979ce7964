//! The PostgreSQL store (feature `postgres`): many workers on many machines share one database.

use super::{check_sequence, Checkpoint, Commit, Durability, Lease, SessionInfo, TurnStatus};
use crate::engine::events::EngineEvent;
use crate::{BoxFuture, Error, Result};
use futures_util::future::{try_join3, try_join4, try_join_all};
use std::time::{Duration, UNIX_EPOCH};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::{Client, Config, NoTls, Statement};

/// How long connecting may take when the URL sets no `connect_timeout`.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The session settings of every connection: how long a statement waits for another worker's row
/// lock, how long one statement may run, how long the server keeps a transaction whose worker went
/// silent (its locks are then released).
const SESSION_SETTINGS: &str = "SET lock_timeout = '10s'; SET statement_timeout = '60s'; \
                                SET idle_in_transaction_session_timeout = '60s'";

/// The schema this build writes; a database written by a newer one is refused.
const SCHEMA_VERSION: i32 = 1;

/// Serializes schema creation across workers connecting at once (a transaction-scoped advisory
/// lock: `prompty1` in ASCII).
const SCHEMA_LOCK: i64 = 0x7072_6f6d_7074_7931;

const SCHEMA: &str = "
CREATE TABLE prompty_sessions (
    session_id text PRIMARY KEY,
    last_sequence bigint NOT NULL DEFAULT 0,
    turn_id text NOT NULL DEFAULT '',
    status text,
    updated_at text NOT NULL DEFAULT ''
);
CREATE TABLE prompty_events (
    session_id text NOT NULL,
    sequence bigint NOT NULL,
    turn_id text NOT NULL,
    kind text NOT NULL,
    event text NOT NULL,
    PRIMARY KEY (session_id, sequence)
);
CREATE TABLE prompty_checkpoints (
    session_id text PRIMARY KEY,
    sequence bigint NOT NULL,
    turn_id text NOT NULL,
    iterations bigint NOT NULL,
    checkpoint text NOT NULL
);
CREATE TABLE prompty_leases (
    session_id text PRIMARY KEY,
    owner text NOT NULL,
    expires_at timestamptz NOT NULL,
    ttl_ms bigint NOT NULL
);
INSERT INTO prompty_schema (id, version) VALUES (1, 1);
";

/// Events, checkpoints, statuses and leases in a PostgreSQL database: the store for many workers
/// on many machines. Any worker can resume any session; a session is held by one worker at a time.
///
/// - Every [`Durability::commit`] is one transaction that locks the session's row
///   (`SELECT … FOR UPDATE`) and its lease's row before it checks the lease and the journal's tail,
///   so two workers can never both extend one session, and a worker whose lease was taken over is
///   refused (fencing).
/// - Leases run on the database's clock (`now()`), never the workers': clocks of different machines
///   may disagree.
/// - No TLS: this store is for 127.0.0.1, unix sockets and private networks. A URL with
///   `sslmode=require` is refused; put an SSH tunnel or a TLS-terminating proxy in front of a
///   server across an untrusted network.
/// - The password never appears in [`Durability::describe`] (`postgres://user@host:port/db`),
///   `Debug` or an error.
/// - Bounds: one connection per store (calls of one store are serialized; open one store per
///   concurrent worker), reopened on the next call when it drops; connecting gives up after 10 s
///   (unless the URL sets `connect_timeout`), a statement after 60 s, a wait for another worker's
///   lock after 10 s; the server ends a transaction whose worker is silent for 60 s. A session
///   keeps every event of its turns; one stored JSON text is at most 1 GB (PostgreSQL's limit).
///
/// ```no_run
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// use prompty::engine::{store::PostgresStore, Durability};
/// let store = PostgresStore::connect("postgres://worker:secret@127.0.0.1:5432/turns").await?;
/// assert_eq!(store.describe(), "postgres://worker@127.0.0.1:5432/turns");
/// # Ok::<(), prompty::Error>(()) }).unwrap();
/// ```
pub struct PostgresStore {
    config: Config,
    location: String,
    password: Option<String>,
    conn: tokio::sync::Mutex<Option<Conn>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore").field("location", &self.location).finish_non_exhaustive()
    }
}

/// A connection and its prepared statements.
struct Conn {
    client: Client,
    st: Statements,
}

struct Statements {
    ensure_session: Statement,
    lock_session: Statement,
    lock_lease: Statement,
    insert_events: Statement,
    put_checkpoint: Statement,
    update_session: Statement,
    renew_lease: Statement,
    checkpoint: Statement,
    last_sequence: Statement,
    events: Statement,
    sessions: Statement,
    acquire: Statement,
    holder: Statement,
    release: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> std::result::Result<Statements, tokio_postgres::Error> {
        const SQL: [&str; 14] = [
            "INSERT INTO prompty_sessions (session_id) VALUES ($1) ON CONFLICT (session_id) DO NOTHING",
            "SELECT last_sequence FROM prompty_sessions WHERE session_id = $1 FOR UPDATE",
            "SELECT owner, expires_at > now() FROM prompty_leases WHERE session_id = $1 FOR UPDATE",
            "INSERT INTO prompty_events (session_id, sequence, turn_id, kind, event) \
             SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[])",
            "INSERT INTO prompty_checkpoints (session_id, sequence, turn_id, iterations, checkpoint) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id) DO UPDATE SET sequence = EXCLUDED.sequence, \
             turn_id = EXCLUDED.turn_id, iterations = EXCLUDED.iterations, checkpoint = EXCLUDED.checkpoint",
            "UPDATE prompty_sessions SET last_sequence = $2, turn_id = $3, updated_at = $4, \
             status = CASE WHEN $5 THEN $6 ELSE status END WHERE session_id = $1",
            "UPDATE prompty_leases SET expires_at = now() + ttl_ms * interval '1 millisecond' \
             WHERE session_id = $1 AND owner = $2",
            "SELECT sequence, checkpoint FROM prompty_checkpoints WHERE session_id = $1",
            "SELECT last_sequence FROM prompty_sessions WHERE session_id = $1",
            "SELECT sequence, event FROM prompty_events WHERE session_id = $1 AND sequence > $2 ORDER BY sequence",
            "SELECT s.session_id, s.turn_id, s.status, s.last_sequence, s.updated_at, c.iterations, l.owner, \
             (extract(epoch FROM l.expires_at) * 1000000)::bigint \
             FROM prompty_sessions s \
             LEFT JOIN prompty_checkpoints c ON c.session_id = s.session_id AND c.turn_id = s.turn_id \
             LEFT JOIN prompty_leases l ON l.session_id = s.session_id AND l.expires_at > now() \
             WHERE s.last_sequence > 0 \
             ORDER BY s.updated_at COLLATE \"C\" DESC, s.session_id COLLATE \"C\"",
            "INSERT INTO prompty_leases AS l (session_id, owner, expires_at, ttl_ms) \
             VALUES ($1, $2, now() + $3::bigint * interval '1 millisecond', $3::bigint) \
             ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, \
             ttl_ms = EXCLUDED.ttl_ms WHERE l.owner = EXCLUDED.owner OR l.expires_at <= now() RETURNING owner",
            "SELECT owner FROM prompty_leases WHERE session_id = $1 AND expires_at > now()",
            "DELETE FROM prompty_leases WHERE session_id = $1 AND owner = $2",
        ];
        // Prepared together: the requests are pipelined on the connection.
        let prepared = try_join_all(SQL.map(|sql| client.prepare(sql))).await?;
        let Ok(
            [ensure_session, lock_session, lock_lease, insert_events, put_checkpoint, update_session, renew_lease, checkpoint, last_sequence, events, sessions, acquire, holder, release],
        ) = <[Statement; 14]>::try_from(prepared)
        else {
            unreachable!("one statement per text")
        };
        Ok(Statements {
            ensure_session,
            lock_session,
            lock_lease,
            insert_events,
            put_checkpoint,
            update_session,
            renew_lease,
            checkpoint,
            last_sequence,
            events,
            sessions,
            acquire,
            holder,
            release,
        })
    }
}

fn seq(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `postgres://user@host:port/db` (unix sockets: `postgres://user@:port/db?host=/dir`): the
/// location without a credential.
fn location(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or(user);
    match config.get_hosts().first() {
        Some(Host::Tcp(host)) if host.contains(':') => format!("postgres://{user}@[{host}]:{port}/{db}"),
        Some(Host::Tcp(host)) => format!("postgres://{user}@{host}:{port}/{db}"),
        #[cfg(unix)]
        Some(Host::Unix(dir)) => format!("postgres://{user}@:{port}/{db}?host={}", dir.display()),
        None => format!("postgres://{user}@localhost:{port}/{db}"),
    }
}

impl PostgresStore {
    /// Connects to the database at `url` (`postgres://user:password@host:port/db`, `postgresql://`,
    /// or libpq's `key=value` form; a unix socket with `?host=/dir`) and creates the tables when
    /// missing. Refuses a URL that requires TLS.
    ///
    /// ```no_run
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let store = prompty::engine::store::PostgresStore::connect("postgres://worker@127.0.0.1/turns").await?;
    /// # Ok::<(), prompty::Error>(()) }).unwrap();
    /// ```
    pub async fn connect(url: &str) -> Result<PostgresStore> {
        let shown = super::without_credentials(url);
        let mut config: Config = url.parse().map_err(|e: tokio_postgres::Error| Error::Durability {
            store: shown.clone(),
            message: format!("the URL cannot be read: {}", chain(&e)),
        })?;
        let password = config.get_password().map(|p| String::from_utf8_lossy(p).into_owned()).filter(|p| !p.is_empty());
        if let Some(password) = &password {
            crate::Secret::remember(password);
        }
        let location = location(&config);
        if !matches!(config.get_ssl_mode(), SslMode::Disable | SslMode::Prefer) {
            return Err(Error::Durability {
                store: location,
                message: "the URL requires TLS (sslmode=require), which this store does not speak: it connects \
                          without TLS, for 127.0.0.1, unix sockets and private networks. Remove sslmode, or reach \
                          the server through an SSH tunnel or a TLS-terminating proxy"
                    .into(),
            });
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("prompty");
        }
        let store = PostgresStore { config, location, password, conn: tokio::sync::Mutex::new(None) };
        store.connection(&mut *store.conn.lock().await).await?;
        Ok(store)
    }

    /// An error of this store, with the password scrubbed from `message`.
    fn error(&self, message: String) -> Error {
        let message = match &self.password {
            Some(password) => message.replace(password.as_str(), crate::Secret::REDACTED),
            None => message,
        };
        Error::Durability { store: self.location.clone(), message }
    }

    /// The error of a failed statement while doing `what`, with what to do about the common ones.
    fn pg(&self, what: &str, e: &tokio_postgres::Error) -> Error {
        let hint = match e.code().map(|c| c.code()) {
            Some("55P03") => " (another worker held the session's lock longer than 10 s; try again)",
            Some("57014") => " (the statement ran longer than 60 s)",
            Some("28P01" | "28000") => " (check the user name and password)",
            Some("3D000") => " (create the database, or name an existing one)",
            Some(code) if code.starts_with("08") || code.starts_with("57P") => {
                " (the connection was lost; the next call reconnects)"
            }
            None if e.is_closed() => " (the connection was lost; the next call reconnects)",
            _ => "",
        };
        self.error(format!("{what}: {}{hint}", chain(e)))
    }

    /// The open connection, reopened (statements prepared, tables created when missing) when it
    /// is closed.
    async fn connection(&self, slot: &mut Option<Conn>) -> Result<()> {
        if slot.as_ref().is_some_and(|c| c.client.is_closed()) {
            *slot = None;
        }
        if slot.is_none() {
            let config = self.config.clone();
            // The connection's task runs on prompty's shared runtime (with I/O enabled), so the
            // store works from any runtime and outlives the one that opened it.
            let connected = crate::blocking::on_runtime("connecting to PostgreSQL", async move {
                Ok(config.connect(NoTls).await.map(|(client, connection)| {
                    tokio::spawn(connection);
                    client
                }))
            })
            .await?;
            let client = connected.map_err(|e| match e.code() {
                Some(_) => self.pg("cannot connect", &e),
                None => self.error(format!(
                    "cannot connect: {} (is the server running, and listening at this address?)",
                    chain(&e)
                )),
            })?;
            client.batch_execute(SESSION_SETTINGS).await.map_err(|e| self.pg("cannot configure the session", &e))?;
            self.migrate(&client).await?;
            let st = Statements::prepare(&client).await.map_err(|e| self.pg("cannot prepare the statements", &e))?;
            *slot = Some(Conn { client, st });
        }
        Ok(())
    }

    /// The connection, locked for one call.
    async fn conn(&self) -> Result<tokio::sync::MappedMutexGuard<'_, Conn>> {
        let mut slot = self.conn.lock().await;
        self.connection(&mut slot).await?;
        Ok(tokio::sync::MutexGuard::map(slot, |slot| slot.as_mut().expect("connected above")))
    }

    /// Creates the tables of a new database; refuses one of a newer schema. A later version adds
    /// its steps here, from the version found to [`SCHEMA_VERSION`], in the same transaction.
    async fn migrate(&self, client: &Client) -> Result<()> {
        let e = |what: &'static str| move |e: tokio_postgres::Error| self.pg(what, &e);
        client.batch_execute("BEGIN").await.map_err(e("cannot begin creating the tables"))?;
        let result = async {
            client
                .execute("SELECT pg_advisory_xact_lock($1)", &[&SCHEMA_LOCK])
                .await
                .map_err(e("cannot lock the schema"))?;
            let exists: bool = client
                .query_one("SELECT to_regclass('prompty_schema') IS NOT NULL", &[])
                .await
                .map_err(e("cannot read the schema"))?
                .get(0);
            if !exists {
                client
                    .batch_execute(
                        "CREATE TABLE prompty_schema (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)",
                    )
                    .await
                    .map_err(e("cannot create the tables"))?;
                client.batch_execute(SCHEMA).await.map_err(e("cannot create the tables"))?;
                return Ok(());
            }
            let version: Option<i32> = client
                .query_opt("SELECT version FROM prompty_schema WHERE id = 1", &[])
                .await
                .map_err(e("cannot read the schema version"))?
                .map(|row| row.get(0));
            match version {
                Some(SCHEMA_VERSION) => Ok(()),
                Some(v) if v > SCHEMA_VERSION => Err(self.error(format!(
                    "the database has schema version {v}, written by a newer prompty; this one knows up to version \
                     {SCHEMA_VERSION} (upgrade prompty)"
                ))),
                Some(v) => {
                    Err(self.error(format!("the database has schema version {v}, which this prompty cannot migrate")))
                }
                None => Err(self.error("the table prompty_schema has no version row: it may be damaged".into())),
            }
        }
        .await;
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        client.batch_execute(end).await.map_err(e("cannot commit the tables"))?;
        result
    }

    async fn commit_on(&self, conn: &mut Conn, commit: &Commit) -> Result<()> {
        let sid = commit.session_id.as_str();
        let st = &conn.st;
        let e = |what: &'static str| move |e: tokio_postgres::Error| self.pg(what, &e);
        let tx = conn.client.transaction().await.map_err(e("cannot begin the commit"))?;
        // The session's row first, then its lease's: every writer locks in this order.
        let (_, session, lease) = try_join3(
            tx.execute(&st.ensure_session, &[&sid]),
            tx.query_one(&st.lock_session, &[&sid]),
            tx.query_opt(&st.lock_lease, &[&sid]),
        )
        .await
        .map_err(e("cannot lock the session"))?;
        if let Some(owner) = &commit.owner {
            let lease: Option<(String, bool)> = lease.map(|row| (row.get(0), row.get(1)));
            match lease {
                Some((holder, live)) if holder != *owner && live => {
                    return Err(self.error(format!("session {sid} is held by {holder}, not {owner}")))
                }
                Some((holder, _)) if holder == *owner => {}
                _ => {
                    return Err(self.error(format!(
                        "{owner} does not hold the lease of session {sid} (it expired, or was never taken)"
                    )))
                }
            }
        }
        let tail: i64 = session.get(0);
        let tail = u64::try_from(tail).map_err(|_| {
            self.error(format!("the journal tail of session {sid} is {tail}: the database may be damaged"))
        })?;
        check_sequence(sid, tail, &commit.events).map_err(|m| self.error(m))?;
        let mut sequences = Vec::with_capacity(commit.events.len());
        let mut turns = Vec::with_capacity(commit.events.len());
        let mut kinds = Vec::with_capacity(commit.events.len());
        let mut bodies = Vec::with_capacity(commit.events.len());
        for event in &commit.events {
            sequences.push(seq(event.sequence));
            turns.push(event.turn_id.as_str());
            kinds.push(event.kind.as_str());
            bodies.push(
                serde_json::to_string(event)
                    .map_err(|e| self.error(format!("event {} cannot be written: {e}", event.sequence)))?,
            );
        }
        let checkpoint = match &commit.checkpoint {
            Some(c) => Some((
                c,
                serde_json::to_string(c).map_err(|e| self.error(format!("the checkpoint cannot be written: {e}")))?,
            )),
            None => None,
        };
        let (change, status) = match commit.status_change() {
            Some(status) => (true, status.map(TurnStatus::as_str)),
            None => (false, None),
        };
        // The writes, pipelined.
        let events = async {
            if sequences.is_empty() {
                return Ok(0);
            }
            tx.execute(&st.insert_events, &[&sid, &sequences, &turns, &kinds, &bodies]).await
        };
        let put_checkpoint = async {
            let Some((c, json)) = &checkpoint else { return Ok(0) };
            let iterations = i64::from(c.iterations);
            tx.execute(&st.put_checkpoint, &[&sid, &seq(c.sequence), &c.turn_id, &iterations, json]).await
        };
        let session = async {
            let Some(last) = commit.events.last() else { return Ok(0) };
            tx.execute(
                &st.update_session,
                &[&sid, &seq(last.sequence), &last.turn_id, &last.timestamp, &change, &status],
            )
            .await
        };
        let renew = async {
            let Some(owner) = &commit.owner else { return Ok(0) };
            tx.execute(&st.renew_lease, &[&sid, owner]).await
        };
        try_join4(events, put_checkpoint, session, renew).await.map_err(e("cannot write the commit"))?;
        tx.commit().await.map_err(e("cannot commit"))
    }
}

/// An error and its causes, one after another.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

impl Durability for PostgresStore {
    fn describe(&self) -> String {
        self.location.clone()
    }

    fn commit<'a>(&'a self, commit: &'a Commit) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            let mut conn = self.conn().await?;
            self.commit_on(&mut conn, commit).await
        })
    }

    fn checkpoint<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<Option<Checkpoint>>> {
        Box::pin(async move {
            {
                let conn = &mut *self.conn().await?;
                let row = conn
                    .client
                    .query_opt(&conn.st.checkpoint, &[&session_id])
                    .await
                    .map_err(|e| self.pg("cannot read the checkpoint", &e))?;
                let Some(row) = row else { return Ok(None) };
                let (sequence, json): (i64, String) = (row.get(0), row.get(1));
                let what = || format!("the checkpoint of session {session_id} at sequence {sequence}");
                let checkpoint: Checkpoint = serde_json::from_str(&json).map_err(|e| self.error(damaged(what(), e)))?;
                if checkpoint.session_id != session_id || seq(checkpoint.sequence) != sequence {
                    let found = format!("it says session {} sequence {}", checkpoint.session_id, checkpoint.sequence);
                    return Err(self.error(damaged(what(), found)));
                }
                Ok(Some(checkpoint))
            }
        })
    }

    fn last_sequence<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            {
                let conn = &mut *self.conn().await?;
                let row = conn
                    .client
                    .query_opt(&conn.st.last_sequence, &[&session_id])
                    .await
                    .map_err(|e| self.pg("cannot read the journal's tail", &e))?;
                let tail: i64 = row.map_or(0, |r| r.get(0));
                u64::try_from(tail).map_err(|_| {
                    self.error(format!(
                        "the journal tail of session {session_id} is {tail}: the database may be damaged"
                    ))
                })
            }
        })
    }

    fn events<'a>(&'a self, session_id: &'a str, after: u64) -> BoxFuture<'a, Result<Vec<EngineEvent>>> {
        Box::pin(async move {
            {
                let conn = &mut *self.conn().await?;
                let rows = conn
                    .client
                    .query(&conn.st.events, &[&session_id, &seq(after)])
                    .await
                    .map_err(|e| self.pg("cannot read the journal", &e))?;
                let mut events = Vec::with_capacity(rows.len());
                for row in rows {
                    let (sequence, json): (i64, &str) = (row.get(0), row.get(1));
                    let what = || format!("event {sequence} of session {session_id}");
                    let event: EngineEvent = serde_json::from_str(json).map_err(|e| self.error(damaged(what(), e)))?;
                    if seq(event.sequence) != sequence || event.session_id != session_id {
                        let found = format!("it says session {} sequence {}", event.session_id, event.sequence);
                        return Err(self.error(damaged(what(), found)));
                    }
                    events.push(event);
                }
                Ok(events)
            }
        })
    }

    fn sessions(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>>> {
        Box::pin(async move {
            {
                let conn = &mut *self.conn().await?;
                let rows = conn
                    .client
                    .query(&conn.st.sessions, &[])
                    .await
                    .map_err(|e| self.pg("cannot list the sessions", &e))?;
                let mut list = Vec::with_capacity(rows.len());
                for row in rows {
                    let session_id: String = row.get(0);
                    let status = match row.get::<_, Option<&str>>(2) {
                        None => None,
                        Some(text) => Some(
                            serde_json::from_value::<TurnStatus>(serde_json::Value::String(text.to_owned())).map_err(
                                |_| {
                                    self.error(damaged(
                                        format!("the status of session {session_id}"),
                                        format!("unknown status '{text}'"),
                                    ))
                                },
                            )?,
                        ),
                    };
                    let expires: Option<i64> = row.get(7);
                    list.push(SessionInfo {
                        turn_id: row.get(1),
                        status,
                        iterations: row.get::<_, Option<i64>>(5).and_then(|n| u32::try_from(n).ok()).unwrap_or(0),
                        last_sequence: u64::try_from(row.get::<_, i64>(3)).unwrap_or(0),
                        updated_at: row.get(4),
                        lease_owner: row.get(6),
                        lease_expires_at: expires.map(|us| {
                            let us = u64::try_from(us).unwrap_or(0);
                            crate::trace::time::rfc3339(UNIX_EPOCH + Duration::from_micros(us))
                        }),
                        session_id,
                    });
                }
                Ok(list)
            }
        })
    }

    fn acquire<'a>(&'a self, session_id: &'a str, owner: &'a str, ttl: Duration) -> BoxFuture<'a, Result<Lease>> {
        let ttl = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX).min(i64::from(i32::MAX));
        Box::pin(async move {
            {
                let conn = &mut *self.conn().await?;
                let e = |e: tokio_postgres::Error| self.pg("cannot take the lease", &e);
                // A holder that lets go between the two statements is tried again.
                for _ in 0..3 {
                    if conn.client.query_opt(&conn.st.acquire, &[&session_id, &owner, &ttl]).await.map_err(e)?.is_some()
                    {
                        return Ok(Lease { acquired: true, holder: Some(owner.to_owned()) });
                    }
                    if let Some(row) = conn.client.query_opt(&conn.st.holder, &[&session_id]).await.map_err(e)? {
                        return Ok(Lease { acquired: false, holder: Some(row.get(0)) });
                    }
                }
                Ok(Lease { acquired: false, holder: None })
            }
        })
    }

    fn release<'a>(&'a self, session_id: &'a str, owner: &'a str) -> BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            {
                let conn = &mut *self.conn().await?;
                conn.client
                    .execute(&conn.st.release, &[&session_id, &owner])
                    .await
                    .map(drop)
                    .map_err(|e| self.pg("cannot release the lease", &e))
            }
        })
    }
}

fn damaged(what: String, e: impl std::fmt::Display) -> String {
    format!("{what} is unreadable ({e}): the database may be damaged")
}
