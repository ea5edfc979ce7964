//! The turn engine's stores: one suite of cases run against `MemoryStore` (the reference),
//! `SqliteStore` (a real file) and `PostgresStore` (a real server: a throw-away cluster started by
//! the test, see `support/postgres.rs`), then the engine on them across processes: two worker
//! processes racing to resume the same sessions, a worker killed with SIGKILL mid-session whose
//! sessions another finishes after its lease expires, and a SQLite writer killed mid-commit.
//!
//! Child processes are this test binary re-executed on one test (`--exact NAME`) with
//! [`ROLE`] set; the test then plays the child's part.

#[path = "support/postgres.rs"]
mod postgres;

use postgres::Cluster;
use prompty::engine::store::{self, SqliteStore};
use prompty::engine::{
    Checkpoint, Commit, ContextSnapshot, Durability, EngineEvent, EventKind, MemoryStore, ModelFailure, ModelPort,
    ModelResponse, PermissionDecision, PermissionPort, Phase, ScriptedModel, ToolContext, ToolOutput, ToolPort,
    ToolRequest, TurnEngine, TurnRequest, TurnStatus,
};
use prompty::{BoxFuture, Message, Role, TurnStop};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Set in a child process: which part it plays.
const ROLE: &str = "PROMPTY_DURABILITY_ROLE";

// ---------------------------------------------------------------------------------------------
// The suite of store cases
// ---------------------------------------------------------------------------------------------

/// A store under test, and how to open another handle on the same data.
struct Target {
    store: Arc<dyn Durability>,
    /// `None`: the memory store (another handle is the same store).
    location: Option<String>,
}

impl Target {
    async fn another(&self) -> Arc<dyn Durability> {
        match &self.location {
            None => Arc::clone(&self.store),
            Some(location) => store::open(location).await.expect("another handle on the store"),
        }
    }
}

fn event(session: &str, turn: &str, sequence: u64, kind: EventKind, timestamp: &str) -> EngineEvent {
    EngineEvent {
        sequence,
        id: format!("event-{session}-{sequence}"),
        timestamp: timestamp.to_owned(),
        session_id: session.to_owned(),
        turn_id: turn.to_owned(),
        run_id: "run-1".into(),
        invocation_id: None,
        iteration: Some(0),
        kind,
        payload: json!({"n": sequence, "text": "ünïcödé \u{0000} \"quoted\""}),
    }
}

/// Events `from..=to` of a session's turn, all stamped `timestamp`.
fn events(session: &str, turn: &str, from: u64, to: u64, timestamp: &str) -> Vec<EngineEvent> {
    (from..=to).map(|n| event(session, turn, n, EventKind::ConversationUpdated, timestamp)).collect()
}

fn commit(session: &str, events: Vec<EngineEvent>, checkpoint: Option<Checkpoint>, owner: Option<&str>) -> Commit {
    Commit { session_id: session.to_owned(), events, checkpoint, owner: owner.map(str::to_owned) }
}

fn checkpoint(session: &str, turn: &str, sequence: u64, iterations: u32, text: &str) -> Checkpoint {
    let mut c = Checkpoint::new(session, turn, vec![Message::new(Role::User, text)]);
    c.sequence = sequence;
    c.iterations = iterations;
    c.id = format!("checkpoint-{sequence}");
    c
}

/// The message of a refused commit (fails unless it is a durability error).
async fn refused(store: &dyn Durability, c: &Commit) -> String {
    match store.commit(c).await {
        Err(e @ prompty::Error::Durability { .. }) => e.to_string(),
        Err(other) => panic!("{}: expected a durability error, got {other}", store.describe()),
        Ok(()) => panic!("{}: the commit was accepted: {c:?}", store.describe()),
    }
}

/// What a session looks like from outside: tail, events, checkpoint, listing.
async fn snapshot(
    store: &dyn Durability,
    session: &str,
) -> (u64, Vec<EngineEvent>, Option<Checkpoint>, Option<String>) {
    let tail = store.last_sequence(session).await.unwrap();
    let events = store.events(session, 0).await.unwrap();
    let checkpoint = store.checkpoint(session).await.unwrap();
    let listed = store.sessions().await.unwrap().into_iter().find(|s| s.session_id == session);
    (
        tail,
        events,
        checkpoint,
        listed.map(|s| format!("{:?} {} {} {}", s.status, s.turn_id, s.last_sequence, s.iterations)),
    )
}

async fn case_empty(t: &Target) {
    let s = &*t.store;
    assert_eq!(s.last_sequence("nobody").await.unwrap(), 0);
    assert!(s.events("nobody", 0).await.unwrap().is_empty());
    assert_eq!(s.checkpoint("nobody").await.unwrap(), None);
    assert!(!s.sessions().await.unwrap().iter().any(|i| i.session_id == "nobody"));
}

async fn case_sequence(t: &Target) {
    let s = &*t.store;
    let sid = "seq";
    let mut first = events(sid, "t1", 1, 3, "2026-01-01T00:00:01Z");
    first[0].kind = EventKind::TurnStarted;
    s.commit(&commit(sid, first.clone(), Some(checkpoint(sid, "t1", 2, 1, "first")), None)).await.unwrap();
    assert_eq!(s.last_sequence(sid).await.unwrap(), 3);
    assert_eq!(s.events(sid, 0).await.unwrap(), first, "events come back as they were written");
    let before = snapshot(s, sid).await;

    // A gap, a duplicate, a gap inside the batch, a number restarting at 1, an event of another
    // session: each refused, and nothing of it written (not its good first events, not its
    // checkpoint, not its status).
    let mut ended = events(sid, "t1", 5, 5, "2026-01-01T00:00:09Z");
    ended[0].kind = EventKind::TurnCommitted;
    let gap = commit(sid, ended, Some(checkpoint(sid, "t1", 5, 9, "gap")), None);
    let m = refused(s, &gap).await;
    assert!(m.contains("expected to be number 4"), "{m}");
    let dup = commit(sid, events(sid, "t1", 3, 4, "2026-01-01T00:00:09Z"), None, None);
    assert!(refused(s, &dup).await.contains("expected to be number 4"));
    let mut inner = events(sid, "t1", 4, 5, "2026-01-01T00:00:09Z");
    inner.push(event(sid, "t1", 7, EventKind::TurnFailed, "2026-01-01T00:00:09Z"));
    let m = refused(s, &commit(sid, inner, Some(checkpoint(sid, "t1", 5, 9, "inner")), None)).await;
    assert!(m.contains("event 7") && m.contains("number 6"), "{m}");
    assert!(refused(s, &commit(sid, events(sid, "t1", 1, 1, "x"), None, None)).await.contains("number 4"));
    let mut foreign = events(sid, "t1", 4, 5, "2026-01-01T00:00:09Z");
    foreign[1].session_id = "other".into();
    let m = refused(s, &commit(sid, foreign, None, None)).await;
    assert!(m.contains("belongs to session other"), "{m}");
    assert_eq!(snapshot(s, sid).await, before, "a refused commit wrote something");
    assert_eq!(s.last_sequence("other").await.unwrap(), 0);

    // The right next number is accepted.
    s.commit(&commit(sid, events(sid, "t1", 4, 6, "2026-01-01T00:00:02Z"), None, None)).await.unwrap();
    assert_eq!(s.last_sequence(sid).await.unwrap(), 6);
    let all = s.events(sid, 0).await.unwrap();
    assert_eq!(all.iter().map(|e| e.sequence).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
    // Events after N.
    let after = s.events(sid, 4).await.unwrap();
    assert_eq!(after.iter().map(|e| e.sequence).collect::<Vec<_>>(), vec![5, 6]);
    assert!(s.events(sid, 6).await.unwrap().is_empty());
    assert!(s.events(sid, 60).await.unwrap().is_empty());
    // An empty commit changes nothing.
    s.commit(&commit(sid, Vec::new(), None, None)).await.unwrap();
    assert_eq!(s.last_sequence(sid).await.unwrap(), 6);
}

async fn case_checkpoint(t: &Target) {
    let s = &*t.store;
    let sid = "cp";
    s.commit(&commit(
        sid,
        events(sid, "t1", 1, 2, "2026-01-01T00:00:01Z"),
        Some(checkpoint(sid, "t1", 1, 0, "a")),
        None,
    ))
    .await
    .unwrap();
    assert_eq!(s.checkpoint(sid).await.unwrap(), Some(checkpoint(sid, "t1", 1, 0, "a")));
    // Replaced by the next commit that has one...
    let mut b = checkpoint(sid, "t1", 3, 1, "b");
    b.phase = Phase::Done { status: TurnStatus::Success, output: Some(json!({"answer": 42})), reason: None };
    b.metadata.insert("prompt".into(), json!("chat.prompty"));
    s.commit(&commit(sid, events(sid, "t1", 3, 4, "2026-01-01T00:00:02Z"), Some(b.clone()), None)).await.unwrap();
    assert_eq!(s.checkpoint(sid).await.unwrap(), Some(b.clone()), "the checkpoint round-trips exactly");
    // ...kept by one that has none.
    s.commit(&commit(sid, events(sid, "t1", 5, 5, "2026-01-01T00:00:03Z"), None, None)).await.unwrap();
    assert_eq!(s.checkpoint(sid).await.unwrap(), Some(b));
}

async fn case_status_and_listing(t: &Target) {
    let s = &*t.store;
    let listed = |list: &[prompty::engine::SessionInfo], sid: &str| {
        list.iter().find(|i| i.session_id == sid).cloned().unwrap_or_else(|| panic!("{sid} is not listed"))
    };
    // Session A: a turn starts (no status), then commits (success); then a second turn starts.
    let a = "list-a";
    let mut e = events(a, "t1", 1, 2, "2030-01-01T00:00:01Z");
    e[0].kind = EventKind::TurnStarted;
    s.commit(&commit(a, e, Some(checkpoint(a, "t1", 1, 2, "x")), None)).await.unwrap();
    let info = listed(&s.sessions().await.unwrap(), a);
    assert_eq!((info.status, info.turn_id.as_str(), info.iterations, info.last_sequence), (None, "t1", 2, 2));
    assert_eq!(info.updated_at, "2030-01-01T00:00:01Z");
    assert_eq!(info.lease_owner, None);
    let mut e = events(a, "t1", 3, 4, "2030-01-01T00:00:02Z");
    e[0].kind = EventKind::TurnCommitted;
    s.commit(&commit(a, e, None, None)).await.unwrap();
    assert_eq!(listed(&s.sessions().await.unwrap(), a).status, Some(TurnStatus::Success));
    // A later commit without a status change keeps the status.
    s.commit(&commit(a, events(a, "t1", 5, 5, "2030-01-01T00:00:03Z"), None, None)).await.unwrap();
    assert_eq!(listed(&s.sessions().await.unwrap(), a).status, Some(TurnStatus::Success));
    let mut e = events(a, "t2", 6, 6, "2030-01-01T00:00:04Z");
    e[0].kind = EventKind::TurnStarted;
    s.commit(&commit(a, e, None, None)).await.unwrap();
    let info = listed(&s.sessions().await.unwrap(), a);
    // A new turn: no status, its own turn id, and the old turn's checkpoint does not count.
    assert_eq!((info.status, info.turn_id.as_str(), info.iterations, info.last_sequence), (None, "t2", 0, 6));
    for (kind, status) in [
        (EventKind::TurnFailed, TurnStatus::Failed),
        (EventKind::TurnCancelled, TurnStatus::Cancelled),
        (EventKind::TurnReconciliationRequired, TurnStatus::ReconciliationRequired),
    ] {
        let tail = s.last_sequence(a).await.unwrap();
        let mut e = events(a, "t2", tail + 1, tail + 2, "2030-01-01T00:00:05Z");
        e[0].kind = kind; // followed by an event that changes no status
        s.commit(&commit(a, e, None, None)).await.unwrap();
        assert_eq!(listed(&s.sessions().await.unwrap(), a).status, Some(status));
    }
    // Session B updated later, C and D at the same time: most recent first, then by id.
    for (sid, ts) in
        [("list-d", "2030-01-02T00:00:00Z"), ("list-c", "2030-01-02T00:00:00Z"), ("list-b", "2030-01-03T00:00:00Z")]
    {
        s.commit(&commit(sid, events(sid, "t1", 1, 1, ts), None, None)).await.unwrap();
    }
    // A session with only a lease is not listed.
    assert!(s.acquire("list-leased-only", "w", Duration::from_secs(60)).await.unwrap().acquired);
    let list = s.sessions().await.unwrap();
    let ours: Vec<&str> = list.iter().map(|i| i.session_id.as_str()).filter(|id| id.starts_with("list-")).collect();
    assert_eq!(ours, vec!["list-b", "list-c", "list-d", "list-a"]);
    let mut sorted = list.clone();
    sorted.sort_by(|x, y| y.updated_at.cmp(&x.updated_at).then(x.session_id.cmp(&y.session_id)));
    assert_eq!(list, sorted, "the whole list is most recent first");
}

async fn case_leases(t: &Target) {
    let s = &*t.store;
    let sid = "lease";
    let ttl = Duration::from_secs(60);
    // No lease: an owner's commit is refused, an ownerless one accepted.
    let m = refused(s, &commit(sid, events(sid, "t1", 1, 1, "2026-01-01T00:00:01Z"), None, Some("w1"))).await;
    assert!(m.contains("w1 does not hold the lease of session lease"), "{m}");
    assert_eq!(s.last_sequence(sid).await.unwrap(), 0);
    s.commit(&commit(sid, events(sid, "t1", 1, 1, "2026-01-01T00:00:01Z"), None, None)).await.unwrap();

    // Acquire; refused to another while held; the holder may take it again.
    let lease = s.acquire(sid, "w1", ttl).await.unwrap();
    assert_eq!((lease.acquired, lease.holder.as_deref()), (true, Some("w1")));
    let lease = s.acquire(sid, "w2", ttl).await.unwrap();
    assert_eq!((lease.acquired, lease.holder.as_deref()), (false, Some("w1")));
    assert!(s.acquire(sid, "w1", ttl).await.unwrap().acquired);
    let info = s.sessions().await.unwrap().into_iter().find(|i| i.session_id == sid).unwrap();
    assert_eq!(info.lease_owner.as_deref(), Some("w1"));
    let expires = info.lease_expires_at.expect("an expiry");
    assert!(expires.ends_with('Z') && expires.as_str() > "2026", "{expires}");

    // The holder commits; another worker cannot, and writes nothing.
    s.commit(&commit(sid, events(sid, "t1", 2, 2, "2026-01-01T00:00:02Z"), None, Some("w1"))).await.unwrap();
    let before = snapshot(s, sid).await;
    let m = refused(s, &commit(sid, events(sid, "t1", 3, 3, "x"), Some(checkpoint(sid, "t1", 3, 1, "w2")), Some("w2")))
        .await;
    assert!(m.contains("session lease is held by w1, not w2"), "{m}");
    assert_eq!(snapshot(s, sid).await, before);

    // Release: only by the holder.
    s.release(sid, "w2").await.unwrap();
    assert!(!s.acquire(sid, "w2", ttl).await.unwrap().acquired);
    s.release(sid, "w1").await.unwrap();
    assert_eq!(s.sessions().await.unwrap().into_iter().find(|i| i.session_id == sid).unwrap().lease_owner, None);
    let m = refused(s, &commit(sid, events(sid, "t1", 3, 3, "x"), None, Some("w1"))).await;
    assert!(m.contains("does not hold"), "{m}");
    assert!(s.acquire(sid, "w2", ttl).await.unwrap().acquired);
    s.release(sid, "w2").await.unwrap();
    s.release("never-leased", "w2").await.unwrap();
}

async fn case_lease_expiry(t: &Target) {
    let s = &*t.store;
    let sid = "expiry";
    let ttl = Duration::from_millis(2000);
    let wait = Duration::from_millis(2800);
    s.commit(&commit(sid, events(sid, "t1", 1, 1, "2026-01-01T00:00:01Z"), None, None)).await.unwrap();
    assert!(s.acquire(sid, "old", ttl).await.unwrap().acquired);

    // A commit renews the lease: past the first expiry, it is still held.
    tokio::time::sleep(ttl / 2).await;
    s.commit(&commit(sid, events(sid, "t1", 2, 2, "2026-01-01T00:00:02Z"), None, Some("old"))).await.unwrap();
    tokio::time::sleep(ttl * 3 / 4).await; // 1.25 ttl after the acquire, 0.75 ttl after the commit
    let lease = s.acquire(sid, "new", ttl).await.unwrap();
    assert_eq!((lease.acquired, lease.holder.as_deref()), (false, Some("old")), "the commit did not renew the lease");

    // Expired and not taken over: the old owner may still commit (and so renews it).
    tokio::time::sleep(wait).await;
    let info = s.sessions().await.unwrap().into_iter().find(|i| i.session_id == sid).unwrap();
    assert_eq!(info.lease_owner, None, "an expired lease is not listed");
    s.commit(&commit(sid, events(sid, "t1", 3, 3, "2026-01-01T00:00:03Z"), None, Some("old"))).await.unwrap();
    assert!(!s.acquire(sid, "new", ttl).await.unwrap().acquired);

    // Expired, then taken over: the old owner is fenced off, and writes nothing.
    tokio::time::sleep(wait).await;
    let lease = s.acquire(sid, "new", ttl).await.unwrap();
    assert_eq!((lease.acquired, lease.holder.as_deref()), (true, Some("new")));
    let before = snapshot(s, sid).await;
    let late = commit(sid, events(sid, "t1", 4, 4, "x"), Some(checkpoint(sid, "t1", 4, 1, "late")), Some("old"));
    let m = refused(s, &late).await;
    assert!(m.contains("held by new, not old"), "{m}");
    assert_eq!(snapshot(s, sid).await, before);
    s.commit(&commit(sid, events(sid, "t1", 4, 4, "2026-01-01T00:00:04Z"), None, Some("new"))).await.unwrap();

    // The new owner's lease expires too, and nobody takes it: the old one is still fenced off.
    tokio::time::sleep(wait).await;
    let m = refused(s, &commit(sid, events(sid, "t1", 5, 5, "x"), None, Some("old"))).await;
    assert!(m.contains("old does not hold the lease"), "{m}");
    s.commit(&commit(sid, events(sid, "t1", 5, 5, "2026-01-01T00:00:05Z"), None, Some("new"))).await.unwrap();
    assert_eq!(s.last_sequence(sid).await.unwrap(), 5);
}

/// Handles racing to extend one session with the same next number: exactly one wins each round.
async fn case_racing_commits(t: &Target) {
    let sid = "race";
    let mut handles = Vec::new();
    for _ in 0..4 {
        handles.push(t.another().await);
    }
    for round in 1..=6u64 {
        let tasks: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let h = Arc::clone(h);
                tokio::spawn(async move {
                    let mut e = events(sid, "t1", round, round, "2026-01-01T00:00:01Z");
                    e[0].id = format!("writer-{i}");
                    h.commit(&commit(sid, e, None, None)).await.is_ok()
                })
            })
            .collect();
        let mut wins = 0;
        for task in tasks {
            wins += usize::from(task.await.unwrap());
        }
        assert_eq!(wins, 1, "round {round}: {wins} commits of number {round} were accepted");
    }
    let journal = t.store.events(sid, 0).await.unwrap();
    assert_eq!(journal.iter().map(|e| e.sequence).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
}

async fn suite(t: Target) {
    case_empty(&t).await;
    case_sequence(&t).await;
    case_checkpoint(&t).await;
    case_status_and_listing(&t).await;
    case_leases(&t).await;
    case_racing_commits(&t).await;
    case_lease_expiry(&t).await;
}

/// A fresh folder under cargo's temporary folder for this test target.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("durability-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_store() {
    suite(Target { store: Arc::new(MemoryStore::new()), location: None }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_store() {
    let dir = temp_dir("suite");
    let path = dir.join("turns.db");
    let location = format!("sqlite:{}", path.display());
    let store = store::open(&location).await.unwrap();
    assert_eq!(store.describe(), location);
    suite(Target { store, location: Some(location.clone()) }).await;
    // Everything survives closing and opening the file again.
    let again = SqliteStore::open(&path).unwrap();
    again.integrity_check().await.unwrap();
    assert_eq!(again.last_sequence("seq").await.unwrap(), 6);
    assert_eq!(again.checkpoint("cp").await.unwrap().unwrap().messages[0].text(), "b");
    // The bare-path form opens the same file.
    let bare = store::open(path.to_str().unwrap()).await.unwrap();
    assert_eq!(bare.last_sequence("race").await.unwrap(), 6);
    drop((again, bare));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store() {
    let cluster = Cluster::start(false);
    let url = cluster.database("suite");
    let store = store::open(&url).await.unwrap();
    suite(Target { store, location: Some(url.clone()) }).await;
    // Leases are on the database's clock: the stored expiry is `now()` plus the ttl.
    let store = store::open(&url).await.unwrap();
    store.acquire("clock", "w", Duration::from_secs(3600)).await.unwrap();
    let left = cluster.psql(
        "suite",
        "SELECT round(extract(epoch FROM expires_at - now())) FROM prompty_leases WHERE session_id = 'clock'",
    );
    assert!(left == "3600" || left == "3599", "{left}");
    // A damaged row is reported with its session and sequence.
    cluster.psql(
        "suite",
        "UPDATE prompty_events SET event = '{\"sequence\": 2' WHERE session_id = 'seq' AND sequence = 2",
    );
    let e = store.events("seq", 0).await.unwrap_err().to_string();
    assert!(e.contains("event 2 of session seq") && e.contains("damaged"), "{e}");
    cluster.psql("suite", "UPDATE prompty_checkpoints SET checkpoint = 'null' WHERE session_id = 'cp'");
    let e = store.checkpoint("cp").await.unwrap_err().to_string();
    assert!(e.contains("checkpoint of session cp at sequence 3") && e.contains("damaged"), "{e}");
    cluster.psql("suite", "UPDATE prompty_sessions SET status = 'exploded' WHERE session_id = 'list-a'");
    let e = store.sessions().await.unwrap_err().to_string();
    assert!(e.contains("session list-a") && e.contains("exploded"), "{e}");
    // A database of a newer schema is refused.
    cluster.psql("suite", "UPDATE prompty_schema SET version = 99");
    let e = store::open(&url).await.err().expect("a newer schema is refused").to_string();
    assert!(e.contains("schema version 99") && e.contains("newer prompty"), "{e}");
}

/// The password of a PostgreSQL URL shows nowhere: not in `describe`, `Debug`, nor any error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_password_never_shows() {
    let cluster = Cluster::start(false);
    let url = cluster.database("secrets");
    let pw = postgres::PASSWORD;
    let store = prompty::engine::store::PostgresStore::connect(&url).await.unwrap();
    let dir = cluster.socket_dir().display().to_string();
    assert_eq!(store.describe(), format!("postgres://prompty@:5432/secrets?host={dir}"));
    assert!(!format!("{store:?}").contains(pw));
    let opened = store::open(&url.replace("postgres://", "postgresql://")).await.unwrap();
    assert!(!opened.describe().contains(pw));
    // Errors: a wrong password, a missing database, TLS required, a URL that cannot be read, an
    // unknown scheme. Each says what is wrong and shows no password.
    let wrong = format!("postgres://prompty:Wrong-{pw}@/secrets?host={dir}&port=5432");
    let bad_url = format!("postgres://prompty:{pw}@/secrets?host={dir}&port=notaport");
    let cases = [
        (wrong, "password"),
        (cluster.url("no_such_db"), "no_such_db"),
        (format!("{url}&sslmode=require"), "sslmode=require"),
        (bad_url, "port"),
        (url.replace("postgres://", "mysql://"), "unknown store location"),
    ];
    for (location, says) in cases {
        let e = match store::open(&location).await {
            Ok(_) => panic!("{location} opened"),
            Err(e) => e,
        };
        println!("{e}");
        for text in [e.to_string(), format!("{e:?}")] {
            assert!(!text.contains(pw), "the password shows in: {text}");
            assert!(text.contains(says), "{says:?} is not in: {text}");
        }
    }
    // An error while connected (the server went away) shows no password either.
    drop(cluster);
    let e = store.last_sequence("x").await.unwrap_err();
    println!("{e}");
    for text in [e.to_string(), format!("{e:?}")] {
        assert!(!text.contains(pw), "{text}");
        assert!(text.contains("postgres://prompty@"), "{text}");
    }
}

/// `store::open` on locations that are not stores: clear errors, no panics.
#[tokio::test]
async fn open_rejects_what_is_not_a_store() {
    for (location, says) in [
        ("", "unknown store location"),
        ("sqlite:", "names no file"),
        ("turns.json", "unknown store location"),
        ("redis://h/0", "unknown store location"),
    ] {
        let e = match store::open(location).await {
            Ok(_) => panic!("{location:?} opened"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(says), "{location:?}: {e}");
    }
    let dir = temp_dir("open");
    // A folder that does not exist is created; one that cannot be (under a file) is refused, and so
    // is a file that is not a database.
    store::open(&format!("sqlite:{}/missing/turns.db", dir.display())).await.unwrap();
    assert!(dir.join("missing").join("turns.db").is_file());
    std::fs::write(dir.join("text.db"), "this is not a database, only text that is long enough ".repeat(100)).unwrap();
    let e = store::open(&format!("sqlite:{}/text.db/sub/turns.db", dir.display())).await.err().unwrap().to_string();
    assert!(e.contains("cannot create the folder") && e.contains("text.db"), "{e}");
    let e = store::open(&format!("{}/text.db", dir.display())).await.err().unwrap().to_string();
    assert!(e.contains("not a SQLite database"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// The engine across processes
// ---------------------------------------------------------------------------------------------

/// The tool of these tests: appends `session call` to a file (its side effect), waiting
/// `linger` after the write (the window in which a worker is killed "inside the tool").
struct AppendTool {
    effects: PathBuf,
    linger: Duration,
}

impl ToolPort for AppendTool {
    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        context: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            let line = format!("{} {}\n", context.session_id, request.id);
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.effects).unwrap();
            file.write_all(line.as_bytes()).unwrap();
            drop(file);
            tokio::time::sleep(self.linger).await;
            Ok(ToolOutput::success(&request.id, &request.name, json!("appended")))
        })
    }
}

/// A permission port that never answers: the turn stops for good right after its tool requests
/// were committed with a checkpoint (an interrupted session).
struct Never(Arc<tokio::sync::Notify>);

impl PermissionPort for Never {
    fn resolve<'a>(&'a self, _: &'a ToolRequest) -> BoxFuture<'a, PermissionDecision> {
        Box::pin(async move {
            self.0.notify_one();
            std::future::pending().await
        })
    }
}

/// A scripted model that first notes its invocation in a file, then waits `delay` (the window in
/// which a worker is killed "during the model call").
struct SlowModel {
    inner: ScriptedModel,
    marks: PathBuf,
    delay: Duration,
    invoked: AtomicBool,
}

impl ModelPort for SlowModel {
    fn invoke<'a>(
        &'a self,
        snapshot: &'a ContextSnapshot,
        attempt: u32,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelFailure>> {
        Box::pin(async move {
            self.invoked.store(true, Ordering::SeqCst);
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.marks).unwrap();
            file.write_all(format!("{}\n", snapshot.session_id).as_bytes()).unwrap();
            drop(file);
            tokio::time::sleep(self.delay).await;
            self.inner.invoke(snapshot, attempt).await
        })
    }
}

/// Starts `n` turns whose model asked for the `append` tool, and leaves each interrupted right
/// after that response was committed; their ids.
async fn interrupted_sessions(store: &Arc<dyn Durability>, prefix: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let sid = format!("{prefix}-{i:02}");
        let asked = ModelResponse::tools(vec![ToolRequest::new(format!("call-{sid}"), "append", json!({"line": i}))]);
        let notify = Arc::new(tokio::sync::Notify::new());
        let engine = TurnEngine::new(ScriptedModel::new(vec![asked]))
            .tools(AppendTool { effects: PathBuf::from("/dev/null"), linger: Duration::ZERO })
            .permissions(Never(Arc::clone(&notify)))
            .store(Arc::clone(store));
        let request = TurnRequest::new(&sid, "turn-1", vec![Message::new(Role::User, "append a line")]);
        tokio::select! {
            r = engine.run(request) => panic!("the turn of {sid} ended: {r:?}"),
            _ = notify.notified() => {}
        }
        let cp = store.checkpoint(&sid).await.unwrap().expect("a checkpoint");
        assert!(matches!(cp.phase, Phase::Tools { .. }), "{sid}: {:?}", cp.phase);
        ids.push(sid);
    }
    ids
}

/// Settings of a worker process.
struct Worker<'a> {
    test: &'a str,
    name: &'a str,
    location: &'a str,
    effects: &'a Path,
    marks: &'a Path,
    ttl: Duration,
    linger: Duration,
    model_delay: Duration,
}

impl Worker<'_> {
    fn spawn(&self) -> Child {
        Command::new(std::env::current_exe().unwrap())
            .args(["--exact", self.test, "--nocapture", "--test-threads=1"])
            .env(ROLE, "worker")
            .env("WORKER_NAME", self.name)
            .env("WORKER_STORE", self.location)
            .env("WORKER_EFFECTS", self.effects)
            .env("WORKER_MARKS", self.marks)
            .env("WORKER_TTL_MS", self.ttl.as_millis().to_string())
            .env("WORKER_LINGER_MS", self.linger.as_millis().to_string())
            .env("WORKER_MODEL_DELAY_MS", self.model_delay.as_millis().to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

/// The child's part: resume every session of the store that has no status, until none is left;
/// one line per attempt on stdout: `RESULT id status invoked reason`, `REFUSED id`, `ERROR id e`.
fn worker_process() {
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} is not set"));
    let ms = |k: &str| Duration::from_millis(env(k).parse().unwrap());
    let (name, location, effects, marks) = (
        env("WORKER_NAME"),
        env("WORKER_STORE"),
        PathBuf::from(env("WORKER_EFFECTS")),
        PathBuf::from(env("WORKER_MARKS")),
    );
    let (ttl, linger, delay) = (ms("WORKER_TTL_MS"), ms("WORKER_LINGER_MS"), ms("WORKER_MODEL_DELAY_MS"));
    // A current-thread runtime: the stores must not need more.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // The harness wrote `test NAME ... ` without a line end: the report starts on a line of its own.
    println!();
    rt.block_on(async move {
        let store = store::open(&location).await.unwrap();
        let started = Instant::now();
        loop {
            let pending: Vec<String> = store
                .sessions()
                .await
                .unwrap()
                .into_iter()
                .filter(|s| s.status.is_none())
                .map(|s| s.session_id)
                .collect();
            if pending.is_empty() {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(90), "{name}: sessions left after 90 s: {pending:?}");
            for sid in pending {
                let model = Arc::new(SlowModel {
                    inner: ScriptedModel::new(vec![ModelResponse::output(json!("done"))]),
                    marks: marks.clone(),
                    delay,
                    invoked: AtomicBool::new(false),
                });
                let engine = TurnEngine::from_model(Arc::clone(&model) as Arc<dyn ModelPort>)
                    .tools(AppendTool { effects: effects.clone(), linger })
                    .store(Arc::clone(&store))
                    .worker(&name, ttl);
                let line = match engine.resume(&sid, None).await {
                    Ok(r) => format!(
                        "RESULT {sid} {} {} {}",
                        r.commit.status.as_str(),
                        model.invoked.load(Ordering::SeqCst),
                        r.commit.reason.unwrap_or_default()
                    ),
                    Err(e) if e.to_string().contains("is held by") => format!("REFUSED {sid}"),
                    Err(e) => format!("ERROR {sid} {e}"),
                };
                println!("{line}");
                std::io::stdout().flush().unwrap();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

/// Waits for a child to end (killing it after `limit`); its stdout lines.
fn finish(child: Child, limit: Duration, what: &str) -> Vec<String> {
    let start = Instant::now();
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!("{what} did not finish within {limit:?}:\n{}", String::from_utf8_lossy(&out.stdout));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.lines().any(|l| l.trim() == "running 1 test"), "{what} ran no test:\n{stdout}");
    stdout.lines().map(str::to_owned).collect()
}

fn lines_of(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// How often each line appears.
fn counts(lines: &[String]) -> BTreeMap<String, usize> {
    let mut map = BTreeMap::new();
    for line in lines {
        *map.entry(line.clone()).or_insert(0) += 1;
    }
    map
}

async fn journal_count(store: &dyn Durability, sid: &str, kind: EventKind) -> usize {
    store.events(sid, 0).await.unwrap().iter().filter(|e| e.kind == kind).count()
}

/// (a) Two worker processes race to resume the same 10 interrupted sessions: each session is
/// finished exactly once, each tool effect happens exactly once.
async fn race(test: &str, location: &str, dir: &Path) {
    let store = store::open(location).await.unwrap();
    let ids = interrupted_sessions(&store, "race", 10).await;
    let (effects, marks) = (dir.join("effects.txt"), dir.join("marks.txt"));
    let worker = |name| Worker {
        test,
        name,
        location,
        effects: &effects,
        marks: &marks,
        ttl: Duration::from_secs(10),
        linger: Duration::from_millis(40),
        model_delay: Duration::ZERO,
    };
    let (one, two) = (worker("worker-1").spawn(), worker("worker-2").spawn());
    let mut results = finish(one, Duration::from_secs(120), "worker-1");
    results.extend(finish(two, Duration::from_secs(120), "worker-2"));
    let errors: Vec<&String> = results.iter().filter(|l| l.starts_with("ERROR")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    let effects = counts(&lines_of(&effects));
    for sid in &ids {
        let finished = results.iter().filter(|l| l.starts_with(&format!("RESULT {sid} success true"))).count();
        assert_eq!(finished, 1, "{sid} was finished {finished} times:\n{}", results.join("\n"));
        assert_eq!(effects.get(&format!("{sid} call-{sid}")), Some(&1), "{effects:?}");
        assert_eq!(journal_count(&*store, sid, EventKind::TurnCommitted).await, 1);
        assert_eq!(journal_count(&*store, sid, EventKind::ToolExecutionStarted).await, 1);
    }
    assert_eq!(effects.values().sum::<usize>(), ids.len(), "{effects:?}");
    let statuses: Vec<_> = store.sessions().await.unwrap().into_iter().map(|s| s.status).collect();
    assert!(statuses.iter().all(|s| *s == Some(TurnStatus::Success)), "{statuses:?}");
    let refused = results.iter().filter(|l| l.starts_with("REFUSED")).count();
    println!("{}: 10 sessions finished once each; {refused} attempts refused by a lease", store.describe());
}

/// Where a worker is killed.
#[derive(Clone, Copy, Debug)]
enum KillPoint {
    /// Inside the tool, after its effect: the call's session needs reconciliation naming it.
    Tool,
    /// During the model call that follows a committed tool result: the next worker invokes the
    /// model again and the tool does not run twice.
    Model,
}

/// (b) A worker killed with SIGKILL mid-session: after its lease expires, another worker finishes
/// its sessions; no tool effect twice.
async fn killed_worker(test: &str, location: &str, dir: &Path, point: KillPoint) {
    let store = store::open(location).await.unwrap();
    let ids = interrupted_sessions(&store, "kill", 4).await;
    let (effects, marks) = (dir.join("effects.txt"), dir.join("marks.txt"));
    let ttl = Duration::from_secs(4);
    let long = Duration::from_secs(30);
    let (linger, model_delay) = match point {
        KillPoint::Tool => (long, Duration::ZERO),
        KillPoint::Model => (Duration::ZERO, long),
    };
    let worker = |name, linger, model_delay| Worker {
        test,
        name,
        location,
        effects: &effects,
        marks: &marks,
        ttl,
        linger,
        model_delay,
    };
    let mut doomed = worker("worker-a", linger, model_delay).spawn();
    // Kill it once it is inside the tool (its effect written) or the model call of a session.
    let watched = match point {
        KillPoint::Tool => &effects,
        KillPoint::Model => &marks,
    };
    let start = Instant::now();
    let victim = loop {
        if let Some(line) = lines_of(watched).first() {
            break line.split(' ').next().unwrap().to_owned();
        }
        if let Some(status) = doomed.try_wait().unwrap() {
            panic!("worker-a ended before it was killed: {status}");
        }
        assert!(start.elapsed() < Duration::from_secs(60), "worker-a never reached the {point:?}");
        std::thread::sleep(Duration::from_millis(10));
    };
    doomed.kill().unwrap(); // SIGKILL
    doomed.wait().unwrap();
    let killed_at = Instant::now();
    let results =
        finish(worker("worker-b", Duration::ZERO, Duration::ZERO).spawn(), Duration::from_secs(120), "worker-b");
    let finished: Vec<&String> = results.iter().filter(|l| l.starts_with("RESULT")).collect();
    let refused = results.iter().filter(|l| l.starts_with("REFUSED")).count();
    println!(
        "{}: worker-a killed in the {point:?} of {victim}; worker-b was refused {refused} times by its lease, then: \
         {finished:#?}",
        store.describe()
    );
    let errors: Vec<&String> = results.iter().filter(|l| l.starts_with("ERROR")).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // worker-b waited for the lease of the victim's session.
    assert!(
        results.contains(&format!("REFUSED {victim}")),
        "worker-b never found {victim} leased:\n{}",
        results.join("\n")
    );
    assert!(killed_at.elapsed() >= ttl / 2, "worker-b finished before the lease could expire");
    let effects = counts(&lines_of(&effects));
    for sid in &ids {
        assert_eq!(effects.get(&format!("{sid} call-{sid}")), Some(&1), "{sid}: {effects:?}");
        let info = store.sessions().await.unwrap().into_iter().find(|s| &s.session_id == sid).unwrap();
        if sid == &victim && matches!(point, KillPoint::Tool) {
            assert_eq!(info.status, Some(TurnStatus::ReconciliationRequired), "{sid}");
            let line = results.iter().find(|l| l.starts_with(&format!("RESULT {sid} "))).unwrap();
            assert!(line.contains(&format!("call-{sid}")), "the reconciliation does not name the call: {line}");
        } else {
            assert_eq!(info.status, Some(TurnStatus::Success), "{sid}");
            assert_eq!(journal_count(&*store, sid, EventKind::TurnCommitted).await, 1);
        }
        assert_eq!(journal_count(&*store, sid, EventKind::ToolExecutionStarted).await, 1, "{sid}");
    }
    if matches!(point, KillPoint::Model) {
        // The victim's model call was made twice: by the killed worker, then by worker-b.
        assert_eq!(journal_count(&*store, &victim, EventKind::ModelInvocationStarted).await, 3, "{victim}");
    }
    assert_eq!(effects.values().sum::<usize>(), ids.len(), "{effects:?}");
}

fn role() -> Option<String> {
    std::env::var(ROLE).ok()
}

#[test]
fn postgres_two_workers_race() {
    if role().is_some() {
        return worker_process();
    }
    let cluster = Cluster::start(false);
    let url = cluster.database("race");
    let dir = temp_dir("pg-race");
    tokio::runtime::Runtime::new().unwrap().block_on(race("postgres_two_workers_race", &url, &dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sqlite_two_workers_race() {
    if role().is_some() {
        return worker_process();
    }
    let dir = temp_dir("sqlite-race");
    let location = format!("sqlite:{}", dir.join("turns.db").display());
    tokio::runtime::Runtime::new().unwrap().block_on(race("sqlite_two_workers_race", &location, &dir));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn postgres_worker_killed_in_tool() {
    if role().is_some() {
        return worker_process();
    }
    let cluster = Cluster::start(false);
    let url = cluster.database("killtool");
    let dir = temp_dir("pg-kill-tool");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(killed_worker("postgres_worker_killed_in_tool", &url, &dir, KillPoint::Tool));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn postgres_worker_killed_in_model_call() {
    if role().is_some() {
        return worker_process();
    }
    let cluster = Cluster::start(false);
    let url = cluster.database("killmodel");
    let dir = temp_dir("pg-kill-model");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(killed_worker("postgres_worker_killed_in_model_call", &url, &dir, KillPoint::Model));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sqlite_worker_killed_in_tool() {
    if role().is_some() {
        return worker_process();
    }
    let dir = temp_dir("sqlite-kill-tool");
    let location = format!("sqlite:{}", dir.join("turns.db").display());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(killed_worker("sqlite_worker_killed_in_tool", &location, &dir, KillPoint::Tool));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------------
// SQLite: a writer killed mid-commit
// ---------------------------------------------------------------------------------------------

/// The child's part: commit large batches (events and a checkpoint of ~1 MB) to `TORN_DB` in a
/// loop until killed.
fn torn_writer() {
    let path = PathBuf::from(std::env::var("TORN_DB").unwrap());
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let store = SqliteStore::open(&path).unwrap();
        let sid = "torn";
        let mut tail = store.last_sequence(sid).await.unwrap();
        println!("ready at {tail}");
        std::io::stdout().flush().unwrap();
        let filler = "0123456789abcdef".repeat(512); // 8 KiB
        for round in 0u64.. {
            let batch: Vec<EngineEvent> = (tail + 1..=tail + 40)
                .map(|n| {
                    let mut e = event(sid, "t1", n, EventKind::ConversationUpdated, "2026-01-01T00:00:00Z");
                    e.payload = json!({"n": n, "filler": filler});
                    e
                })
                .collect();
            let messages = (0..120).map(|i| Message::new(Role::User, format!("{i} {filler}"))).collect();
            let mut cp = Checkpoint::new(sid, "t1", messages);
            cp.sequence = tail + 40;
            cp.iterations = u32::try_from(round % 1000).unwrap();
            store.commit(&commit(sid, batch, Some(cp), None)).await.unwrap();
            tail += 40;
        }
    });
}

/// (c) A SQLite writer killed with SIGKILL at random moments: after each kill the file opens,
/// SQLite's integrity check passes, the journal is numbered without a gap, and the last
/// checkpoint is readable and not past the journal's tail.
#[test]
fn sqlite_torn_writes() {
    if role().as_deref() == Some("torn") {
        return torn_writer();
    }
    let dir = temp_dir("torn");
    let path = dir.join("turns.db");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut tails = Vec::new();
    for kill in 0..6 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "sqlite_torn_writes", "--nocapture", "--test-threads=1"])
            .env(ROLE, "torn")
            .env("TORN_DB", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        // (after the harness's `test NAME ... `, on the same line)
        while !line.contains("ready at") {
            line.clear();
            assert!(reader.read_line(&mut line).unwrap() > 0, "the writer ended before it was ready");
        }
        let wait = Duration::from_millis(rand::random_range(150..900));
        std::thread::sleep(wait);
        assert!(child.try_wait().unwrap().is_none(), "the writer stopped by itself");
        child.kill().unwrap(); // SIGKILL, in the middle of a commit most of the time
        child.wait().unwrap();

        rt.block_on(async {
            let store = SqliteStore::open(&path).unwrap_or_else(|e| panic!("kill {kill}: the file does not open: {e}"));
            store.integrity_check().await.unwrap_or_else(|e| panic!("kill {kill}: {e}"));
            let tail = store.last_sequence("torn").await.unwrap();
            let journal = store.events("torn", 0).await.unwrap();
            assert_eq!(journal.len() as u64, tail, "kill {kill}");
            assert!(journal.iter().enumerate().all(|(i, e)| e.sequence == i as u64 + 1), "kill {kill}: a gap");
            if tail > 0 {
                let cp = store.checkpoint("torn").await.unwrap().expect("a checkpoint");
                assert!(cp.sequence <= tail, "kill {kill}: checkpoint {} past the tail {tail}", cp.sequence);
                assert_eq!(cp.messages.len(), 120);
            }
            println!("kill {kill} after {wait:?}: tail {tail}");
            tails.push(tail);
        });
    }
    assert!(tails.windows(2).all(|w| w[0] <= w[1]), "{tails:?}");
    assert!(*tails.last().unwrap() > 0, "the writer never committed: {tails:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}
