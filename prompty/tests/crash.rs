//! Durable turns survive `kill -9`. A child process (this test binary, re-run) runs a turn through
//! `prompty::run_turn` on a SQLite file and is killed with SIGKILL at one state: after the model's
//! answer was committed, after a tool's side effect and before its result was committed, while the
//! model answers the tool result, during the post-commit effects. This process then resumes the
//! session with `prompty::resume_turn`: the conversation equals an uninterrupted run's and the
//! tool's side effect happened exactly once — or, when the process died inside the tool, the turn
//! reports reconciliation-required naming the call and the tool is not run again.

use prompty::engine::{Durability, PostCommitEffect, SqliteStore, TurnCommit};
use prompty::{Agent, BoxFuture, Error, Executor, Guardrails, Message, Role, TurnOptions, TurnStop, Verdict};
use serde_json::{json, Value};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

/// A model in OpenAI's format that decides from the conversation alone, so the child and this
/// process answer alike: a user message asks for the tool `record`, a tool result is answered with
/// its text.
struct Model;

impl Executor for Model {
    fn execute_async<'a>(&'a self, _: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
        let last = messages.last().cloned();
        Box::pin(async move {
            let last = last.ok_or_else(|| Error::Task("an empty conversation".into()))?;
            if last.role == Role::Tool {
                crash_here("during_model");
                return Ok(json!({"choices": [{"message": {"content": format!("Recorded: {}", last.text())}}]}));
            }
            Ok(json!({"choices": [{"message": {"tool_calls": [{"id": "call-1", "type": "function",
                "function": {"name": "record", "arguments": "{\"note\": \"milk\"}"}}]}}]}))
        })
    }
}

/// Kills this process with SIGKILL when it is the child told to die at `state`: no destructor,
/// no flush, no exit handler runs.
fn crash_here(state: &str) {
    if std::env::var("PROMPTY_CRASH_AT").as_deref() == Ok(state) {
        // The shell's own `kill`: no procps needed.
        let _ = Command::new("sh").args(["-c", "kill -9 $PPID"]).status();
        std::thread::sleep(std::time::Duration::from_secs(60));
        panic!("SIGKILL did not arrive");
    }
}

fn agent() -> Agent {
    prompty::register_executor("crash-model", Model);
    prompty::register_processor("crash-model", prompty::providers::openai::OpenAiProcessor);
    Agent::from_value(json!({
        "model": {"id": "m", "provider": "crash-model"},
        "tools": [{"name": "record", "kind": "function", "description": "Write a note down",
                   "parameters": {"note": {"kind": "string"}}}],
    }))
    .expect("the agent")
}

/// Appends a line to `post_commit` when the turn is committed (and dies first at its state).
struct Notify(PathBuf);

impl PostCommitEffect for Notify {
    fn name(&self) -> &str {
        "notify"
    }
    fn run<'a>(&'a self, commit: &'a TurnCommit, id: &'a str) -> BoxFuture<'a, prompty::Result<()>> {
        Box::pin(async move {
            crash_here("during_post_commit");
            append(&self.0, &format!("{id} {:?}", commit.status)).map_err(|e| Error::Task(e.to_string()))
        })
    }
}

fn append(path: &Path, line: &str) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    writeln!(file, "{line}")?;
    file.sync_all()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// The files of one case.
struct Case {
    db: PathBuf,
    effects: PathBuf,
    notified: PathBuf,
}

impl Case {
    fn new(name: &str) -> Case {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("crash").join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the case folder");
        Case { db: dir.join("turns.db"), effects: dir.join("effects.txt"), notified: dir.join("notified.txt") }
    }

    fn from_env() -> Option<Case> {
        let var = |name| std::env::var_os(name).map(PathBuf::from);
        Some(Case {
            db: var("PROMPTY_CRASH_DB")?,
            effects: var("PROMPTY_CRASH_EFFECTS")?,
            notified: var("PROMPTY_CRASH_NOTIFIED")?,
        })
    }

    /// The options of the turn: the store, the session, the tool whose side effect is a line in
    /// `effects`, a guardrail that runs after the answer is committed and before the tool starts,
    /// a post-commit effect.
    fn options(&self) -> TurnOptions {
        let store: Arc<dyn Durability> = Arc::new(SqliteStore::open(&self.db).expect("the store"));
        let effects = self.effects.clone();
        TurnOptions::new()
            .durable(store, "session-1")
            .turn_id("turn-1")
            .tool(
                "record",
                prompty::tool_fn_sync(move |args| {
                    append(&effects, args["note"].as_str().unwrap_or_default())
                        .map_err(|e| Error::Task(format!("the effect was not written: {e}")))?;
                    crash_here("after_effect");
                    Ok(json!("noted milk"))
                }),
            )
            .guardrails(Guardrails::new().tool(|_, _| {
                crash_here("after_answer");
                Verdict::Allow
            }))
            .post_commit(Notify(self.notified.clone()))
    }
}

fn conversation() -> Vec<Message> {
    vec![Message::new(Role::User, "Remember to buy milk")]
}

/// The child: runs the turn, to be killed on the way.
#[test]
#[ignore = "the child process of the crash tests (run by them with PROMPTY_CRASH_AT)"]
fn child() {
    let case = Case::from_env().expect("PROMPTY_CRASH_DB, PROMPTY_CRASH_EFFECTS and PROMPTY_CRASH_NOTIFIED");
    let _ = prompty::run_turn(&agent(), conversation(), &json!({}), case.options());
    panic!("the child was not killed at {:?}", std::env::var("PROMPTY_CRASH_AT"));
}

/// Runs the child of `case`, to die at `state` with SIGKILL.
fn kill_at(case: &Case, state: &str) {
    let status = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("PROMPTY_CRASH_AT", state)
        .env("PROMPTY_CRASH_DB", &case.db)
        .env("PROMPTY_CRASH_EFFECTS", &case.effects)
        .env("PROMPTY_CRASH_NOTIFIED", &case.notified)
        .status()
        .expect("the child starts");
    assert_eq!(status.signal(), Some(9), "the child at {state} was to die of SIGKILL: {status:?}");
}

#[test]
fn a_turn_killed_at_any_state_resumes_to_the_same_end_with_each_effect_once() {
    let agent = agent();
    let reference = Case::new("uninterrupted");
    let whole = prompty::run_turn(&agent, conversation(), &json!({}), reference.options()).expect("the whole run");
    assert_eq!(whole.result, "Recorded: noted milk");
    assert_eq!(lines(&reference.effects), ["milk"]);
    assert_eq!(lines(&reference.notified).len(), 1);

    for state in ["after_answer", "during_model", "during_post_commit"] {
        let case = Case::new(state);
        kill_at(&case, state);
        let resumed = prompty::resume_turn(&agent, "session-1", &json!({}), case.options())
            .unwrap_or_else(|e| panic!("resuming after a kill {state}: {e}"));
        assert_eq!(resumed.messages, whole.messages, "killed {state}");
        assert_eq!(resumed.result, whole.result, "killed {state}");
        assert_eq!(lines(&case.effects), ["milk"], "the tool's effect after a kill {state}");
        // The post-commit effect ran once to completion (the killed one never wrote its line).
        assert_eq!(lines(&case.notified), lines(&reference.notified), "killed {state}");
        // A second resume changes nothing and runs nothing.
        let again = prompty::resume_turn(&agent, "session-1", &json!({}), case.options()).expect("resuming again");
        assert_eq!(again.messages, whole.messages);
        assert_eq!(lines(&case.effects), ["milk"]);
        assert_eq!(lines(&case.notified).len(), 1);
    }
}

#[test]
fn a_turn_killed_inside_a_tool_needs_reconciliation_and_never_runs_it_again() {
    let agent = agent();
    let case = Case::new("after_effect");
    kill_at(&case, "after_effect");
    assert_eq!(lines(&case.effects), ["milk"], "the effect happened before the kill");
    for _ in 0..2 {
        let err = prompty::resume_turn(&agent, "session-1", &json!({}), case.options()).unwrap_err();
        match &err {
            Error::Turn(failure) => match &failure.stop {
                TurnStop::ReconciliationRequired { request_id, name } => {
                    assert_eq!((request_id.as_str(), name.as_str()), ("call-1", "record"));
                }
                other => panic!("{other}"),
            },
            other => panic!("{other}"),
        }
        assert!(err.to_string().contains("call-1 (record)"), "{err}");
        assert_eq!(lines(&case.effects), ["milk"], "the tool is never run again");
    }
}

#[test]
fn a_session_held_by_another_live_worker_is_not_resumed() {
    let agent = agent();
    let case = Case::new("held");
    kill_at(&case, "during_model");
    let store = SqliteStore::open(&case.db).expect("the store");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert!(
        runtime.block_on(store.acquire("session-1", "worker-a", std::time::Duration::from_secs(600))).unwrap().acquired
    );
    let ttl = std::time::Duration::from_secs(30);
    let err =
        prompty::resume_turn(&agent, "session-1", &json!({}), case.options().worker("worker-b", ttl)).unwrap_err();
    assert!(err.to_string().contains("held by worker-a"), "{err}");
    runtime.block_on(store.release("session-1", "worker-a")).unwrap();
    let out = prompty::resume_turn(&agent, "session-1", &json!({}), case.options().worker("worker-b", ttl)).unwrap();
    assert_eq!(out.result, "Recorded: noted milk");
    assert_eq!(lines(&case.effects), ["milk"]);
    let sessions = runtime.block_on(store.sessions()).unwrap();
    assert_eq!(sessions[0].lease_owner, None, "the worker gave its lease back");
}
