//! Replay with the public API, as a user pins a run in a test: a turn's journal written by
//! `JournalWriter`, verified against a journal recorded once (`tests/fixtures/replay/add.jsonl`);
//! runs interrupted by a store that fails a commit (a process that died at that point) and
//! resumed; journals that cannot be written.

use prompty::engine::replay::{pin, project, read_journal, verify, JournalWriter, ReplayRecord, PIN_ENV};
use prompty::engine::store::{Intercepted, Interception};
use prompty::engine::{
    AllowAll, DenyAll, Durability, EventKind, FixedClock, MemoryStore, ModelResponse, PermissionPort, ScriptedModel,
    SequentialIds, ToolContext, ToolOutput, ToolPort, ToolRequest, TurnEngine, TurnEngineResult, TurnRequest,
    TurnStatus,
};
use prompty::{BoxFuture, Error, Message, Role, TurnStop};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const PINNED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/replay/add.jsonl");

/// `add(a, b)`, counting its runs (across the processes of a test); idempotent or not.
#[derive(Clone, Default)]
struct Add {
    runs: Arc<AtomicUsize>,
    idempotent: bool,
}

impl ToolPort for Add {
    fn idempotent(&self, _: &str) -> bool {
        self.idempotent
    }

    fn execute<'a>(&'a self, r: &'a ToolRequest, _: ToolContext<'a>) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let sum = r.arguments["a"].as_i64().unwrap_or(0) + r.arguments["b"].as_i64().unwrap_or(0);
        Box::pin(async move { Ok(ToolOutput::success(&r.id, &r.name, json!(sum))) })
    }
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("prompty-replay-test-{}-{name}", std::process::id()))
}

/// The responses of the pinned scenario from round `from` on: `add(2, 3)`, then the answer.
fn responses(from: usize) -> Vec<ModelResponse> {
    let all = vec![
        ModelResponse::tools(vec![ToolRequest::new("call-1", "add", json!({"a": 2, "b": 3}))]),
        ModelResponse::output(json!("5")),
    ];
    all.into_iter().skip(from).collect()
}

fn engine(model: ScriptedModel, tools: Add, store: Arc<dyn Durability>, journal: &JournalWriter) -> TurnEngine {
    TurnEngine::new(model)
        .tools(tools)
        .store(store)
        .clock(FixedClock("2026-06-28T00:00:00Z".into()))
        .ids(SequentialIds::default())
        .observe(journal.observer())
}

fn request() -> TurnRequest {
    TurnRequest::new("session-1", "turn-1", vec![Message::new(Role::User, "2 + 3?")])
}

/// The pinned scenario with a permission port, journaled into `path`.
async fn run_scenario(path: &PathBuf, permissions: impl PermissionPort + 'static) -> TurnStatus {
    let journal = JournalWriter::create(path).unwrap();
    let engine = engine(ScriptedModel::new(responses(0)), Add::default(), Arc::new(MemoryStore::new()), &journal);
    let result = engine.permissions(permissions).run(request()).await.unwrap();
    journal.finish().unwrap();
    result.commit.status
}

fn normalized(records: &[ReplayRecord]) -> Vec<String> {
    records.iter().map(ToString::to_string).collect()
}

#[tokio::test]
async fn a_pinned_run_verifies_and_a_changed_run_is_caught() {
    let path = temp("pinned-run.jsonl");
    assert_eq!(run_scenario(&path, AllowAll).await, TurnStatus::Success);
    let verification = pin(PINNED, &path).unwrap();
    assert!(verification.passed(), "{verification}");
    assert_eq!(verification.expected_count, 17);
    assert_eq!(
        normalized(&project(&read_journal(PINNED).unwrap()))[5..10],
        [
            "turn:permission_requested:0:call-1-permission",
            "turn:permission_completed:0:true",
            "turn:tool_execution_start:0:add",
            "turn:tool_execution_complete:0:add:true",
            "turn:tool_result:0:add:true",
        ]
    );

    // The same turn with the tool denied: the pin says where the runs part.
    run_scenario(&path, DenyAll).await;
    let verification = pin(PINNED, &path).unwrap();
    assert!(!verification.passed());
    assert_eq!((verification.expected_count, verification.actual_count), (17, 15));
    let first = &verification.mismatches[0];
    assert_eq!(first.index, 6);
    assert_eq!(first.message, "expected `turn:permission_completed:0:true`, got `turn:permission_completed:0:false`");
    assert_eq!(verification.mismatches[1].actual.as_ref().unwrap().error_kind.as_deref(), Some("permission_denied"));
    assert!(verification.to_string().contains("record 6: expected `turn:permission_completed:0:true`"));
    std::fs::remove_file(&path).ok();
}

#[tokio::test]
async fn a_missing_pin_is_an_error_unless_recording() {
    let run = temp("unpinned-run.jsonl");
    run_scenario(&run, AllowAll).await;
    let pinned = temp("pins/never-recorded.jsonl");
    let outcome = pin(&pinned, &run);
    if std::env::var(PIN_ENV).as_deref() == Ok("record") {
        // Recording: the run becomes the pin, and verifies against itself.
        assert!(outcome.unwrap().passed());
        assert_eq!(std::fs::read(&pinned).unwrap(), std::fs::read(&run).unwrap());
        std::fs::remove_dir_all(pinned.parent().unwrap()).ok();
    } else {
        let e = outcome.unwrap_err().to_string();
        assert!(e.contains("never-recorded.jsonl") && e.contains("no pinned journal here"), "{e}");
        assert!(e.contains("PROMPTY_PIN=record"), "{e}");
        assert!(!pinned.exists());
    }
    std::fs::remove_file(&run).ok();
}

/// A memory store whose commits fail from the first one holding an event of `kind`: the process
/// died before that commit was durable.
fn dies_at(inner: Arc<MemoryStore>, kind: EventKind) -> Arc<dyn Durability> {
    Arc::new(Intercepted::new(inner, move |commit| {
        if commit.events.iter().any(|e| e.kind == kind) {
            let message = format!("the process died before committing {kind}");
            return Interception::Refuse(Error::Durability { store: "dies-at".into(), message });
        }
        Interception::Write
    }))
}

/// Runs the scenario into a store that dies at the first commit holding `kind`, then resumes it
/// in a fresh engine over what was committed, both runs written into one journal at `path`. The
/// resumed run's result and the store.
async fn crash_and_resume(kind: EventKind, tools: &Add, path: &PathBuf) -> (TurnEngineResult, Arc<MemoryStore>) {
    // The model answered once before the crash, unless its answer is what was lost.
    let answered = usize::from(kind != EventKind::ModelInvocationCompleted);
    let committed = Arc::new(MemoryStore::new());
    let journal = JournalWriter::create(path).unwrap();
    let dying = dies_at(committed.clone(), kind);
    let crashed = engine(ScriptedModel::new(responses(0)), tools.clone(), dying, &journal).run(request()).await;
    assert!(crashed.unwrap_err().to_string().contains("the process died"));
    // The next process: what was committed, a store that works.
    let resumed = engine(ScriptedModel::new(responses(answered)), tools.clone(), committed.clone(), &journal);
    let result = resumed.resume("session-1", None).await.unwrap();
    journal.finish().unwrap();
    (result, committed)
}

fn pinned_records() -> Vec<ReplayRecord> {
    project(&read_journal(PINNED).unwrap())
}

#[tokio::test]
async fn a_turn_resumed_after_its_model_response_checkpoint_projects_as_the_uninterrupted_run() {
    let path = temp("resumed-at-checkpoint.jsonl");
    // Dies as it commits the permission request: right after the model response's checkpoint.
    let tools = Add::default();
    let (result, _) = crash_and_resume(EventKind::PermissionRequested, &tools, &path).await;
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1);
    assert_eq!(result.commit.status, TurnStatus::Success);
    let events = read_journal(&path).unwrap();
    let resumed = events.iter().filter(|e| e.kind == EventKind::TurnStarted && e.payload["resumed"] == json!(true));
    assert_eq!(resumed.count(), 1, "the journal holds both runs");
    let verification = verify(&pinned_records(), &project(&events));
    assert!(verification.passed(), "{verification}");
    std::fs::remove_file(&path).ok();
}

#[tokio::test]
async fn a_model_round_whose_answer_was_not_committed_is_sent_again_and_shows_twice() {
    let path = temp("resumed-mid-model.jsonl");
    let (result, _) = crash_and_resume(EventKind::ModelInvocationCompleted, &Add::default(), &path).await;
    assert_eq!(result.commit.status, TurnStatus::Success);
    let records = project(&read_journal(&path).unwrap());
    assert_eq!(
        normalized(&records)[1..5],
        ["turn:turn_start:0", "turn:llm_start:0", "turn:llm_start:0", "turn:llm_complete:0"]
    );
    let verification = verify(&pinned_records(), &records);
    assert_eq!((verification.expected_count, verification.actual_count, verification.mismatches[0].index), (17, 18, 3));
    std::fs::remove_file(&path).ok();
}

#[tokio::test]
async fn a_tool_interrupted_before_its_result_was_committed_shows_the_reconciliation() {
    let path = temp("resumed-mid-tool.jsonl");
    // Dies as it commits the tool's completion: the tool ran, its result was lost.
    let tools = Add::default();
    let (result, store) = crash_and_resume(EventKind::ToolExecutionCompleted, &tools, &path).await;
    assert_eq!(result.commit.status, TurnStatus::ReconciliationRequired);
    assert_eq!(tools.runs.load(Ordering::SeqCst), 1, "not run again");
    let waiting = normalized(&project(&read_journal(&path).unwrap()));
    assert_eq!(
        waiting[7..],
        ["turn:tool_execution_start:0:add", "turn:error:1:reconciliation_required"],
        "no result, no turn_end, no summary: the turn waits for its host"
    );
    // The host establishes the result; a third run finishes the turn, appended to the journal.
    let journal = JournalWriter::append(&path).unwrap();
    let host = engine(ScriptedModel::new(responses(1)), Add::default(), store, &journal);
    let output = ToolOutput::success("call-1", "add", json!(5));
    let result = host.resolve_tool("session-1", output, None).await.unwrap();
    assert_eq!(result.commit.status, TurnStatus::Success);
    journal.finish().unwrap();
    let records = project(&read_journal(&path).unwrap());
    assert_eq!(
        normalized(&records)[7..11],
        [
            "turn:tool_execution_start:0:add",
            "turn:error:1:reconciliation_required",
            "turn:tool_execution_complete:0:add:true",
            "turn:tool_result:0:add:true",
        ]
    );
    let verification = verify(&pinned_records(), &records);
    assert_eq!((verification.expected_count, verification.actual_count), (17, 18));
    assert_eq!(verification.mismatches[0].index, 8);
    assert_eq!(
        verification.mismatches[0].message,
        "expected `turn:tool_execution_complete:0:add:true`, got `turn:error:1:reconciliation_required`"
    );
    std::fs::remove_file(&path).ok();
}

#[tokio::test]
async fn an_idempotent_tool_interrupted_before_its_result_was_committed_runs_again_and_shows_twice() {
    let path = temp("resumed-idempotent.jsonl");
    let tools = Add { idempotent: true, ..Add::default() };
    let (result, _) = crash_and_resume(EventKind::ToolExecutionCompleted, &tools, &path).await;
    assert_eq!(result.commit.status, TurnStatus::Success);
    assert_eq!(tools.runs.load(Ordering::SeqCst), 2);
    let records = project(&read_journal(&path).unwrap());
    assert_eq!(
        normalized(&records)[5..12],
        [
            "turn:permission_requested:0:call-1-permission",
            "turn:permission_completed:0:true",
            "turn:tool_execution_start:0:add",
            "turn:permission_requested:0:call-1-permission",
            "turn:permission_completed:0:true",
            "turn:tool_execution_start:0:add",
            "turn:tool_execution_complete:0:add:true",
        ]
    );
    let verification = verify(&pinned_records(), &records);
    assert_eq!((verification.expected_count, verification.actual_count), (17, 20));
    assert_eq!(verification.mismatches[0].index, 8);
    std::fs::remove_file(&path).ok();
}

#[tokio::test]
async fn an_unwritable_journal_is_an_error_the_caller_sees() {
    let missing = temp("no-such-folder/run.jsonl");
    let e = JournalWriter::create(&missing).unwrap_err().to_string();
    assert!(e.contains("no-such-folder/run.jsonl") && e.contains("cannot open it for writing"), "{e}");
    // A device that is always full: the turn itself succeeds, the journal reports the failure.
    if cfg!(target_os = "linux") {
        let journal = JournalWriter::append("/dev/full").unwrap();
        let result = engine(ScriptedModel::new(responses(0)), Add::default(), Arc::new(MemoryStore::new()), &journal)
            .run(request())
            .await
            .unwrap();
        assert_eq!(result.commit.status, TurnStatus::Success);
        let e = journal.finish().unwrap_err().to_string();
        assert!(e.contains("/dev/full") && e.contains("writing event 1 of session session-1 failed"), "{e}");
        assert!(e.contains("the journal stops after 0 events"), "{e}");
    }
}
