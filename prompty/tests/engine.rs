//! The turn engine's guarantees (turn-engine.md's "Rust-first conformance gate"), with scripted
//! ports and the in-memory store: completion, tool rounds, permission denial, tool failure,
//! cancellation at every boundary, retries on one snapshot, ordered commits of parallel tools,
//! resume without repeated effects, reconciliation, provider state, memory as context, post-commit
//! effects, the final-output policy, leases, and a stable event stream.

use prompty::engine::*;
use prompty::{BoxFuture, CancellationToken, Error, Message, Role, TurnStop};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn user(text: &str) -> Vec<Message> {
    vec![Message::new(Role::User, text)]
}

fn call(id: &str, name: &str, args: Value) -> ToolRequest {
    ToolRequest::new(id, name, args)
}

/// Tools that record every execution; `fail` fails, `slow` sleeps for its `ms`, `cancel` cancels
/// the token it holds, `remember` stores a fact in the shared memory, `unknowable` is
/// indeterminate.
#[derive(Clone, Default)]
struct Tools {
    runs: Arc<Mutex<Vec<String>>>,
    cancel: Option<CancellationToken>,
    memory: Arc<Mutex<Vec<String>>>,
    idempotent: bool,
}

impl Tools {
    fn runs(&self) -> Vec<String> {
        self.runs.lock().unwrap().clone()
    }
}

impl ToolPort for Tools {
    fn check(&self, requests: &[ToolRequest]) -> Result<(), TurnStop> {
        match requests.iter().find(|r| r.name == "nope") {
            Some(r) => Err(TurnStop::UnknownTool { name: r.name.clone() }),
            None => Ok(()),
        }
    }

    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        ctx: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        let key = ctx.idempotency_key.to_owned();
        Box::pin(async move {
            self.runs.lock().unwrap().push(request.id.clone());
            let out = |v: Value| Ok(ToolOutput::success(&request.id, &request.name, v));
            match request.name.as_str() {
                "fail" => Ok(ToolOutput::failed(&request.id, &request.name, "exception", "Error: the tool broke")),
                "slow" => {
                    let ms = request.arguments["ms"].as_u64().unwrap_or(0);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    out(json!(format!("slept {ms}")))
                }
                "cancel" => {
                    if let Some(c) = &self.cancel {
                        c.cancel();
                    }
                    out(json!("cancelled the turn"))
                }
                "remember" => {
                    self.memory.lock().unwrap().push(request.arguments["fact"].as_str().unwrap_or("").to_owned());
                    out(json!("remembered"))
                }
                "unknowable" => Ok(ToolOutput {
                    outcome: ToolOutcome::Indeterminate,
                    ..ToolOutput::failed(&request.id, &request.name, "timeout", "no answer")
                }),
                "key" => out(json!(key)),
                _ => out(request.arguments.clone()),
            }
        })
    }

    fn idempotent(&self, _: &str) -> bool {
        self.idempotent
    }
}

/// Records every event the engine makes durable.
fn recorder() -> (Arc<Mutex<Vec<EngineEvent>>>, impl Fn(&EngineEvent) + Send + Sync + 'static) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&events);
    (events, move |e: &EngineEvent| log.lock().unwrap().push(e.clone()))
}

fn kinds(events: &[EngineEvent]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.as_str()).collect()
}

fn engine(model: ScriptedModel, tools: &Tools) -> TurnEngine {
    TurnEngine::new(model).tools(tools.clone()).ids(SequentialIds::default()).retry_backoff(Duration::from_millis(1))
}

#[test]
fn one_invocation_completes_and_commits_the_answer() {
    let (events, observe) = recorder();
    let tools = Tools::default();
    let e = engine(ScriptedModel::new(vec![ModelResponse::output(json!("Hello back"))]), &tools).observe(observe);
    let r = rt().block_on(e.run(TurnRequest::new("s", "t", user("Hello")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(r.commit.output, Some(json!("Hello back")));
    assert_eq!(r.commit.messages.last().unwrap().text(), "Hello back");
    assert_eq!(r.commit.iterations, 1);
    let events = events.lock().unwrap();
    assert_eq!(
        kinds(&events),
        [
            "turn_started",
            "context_prepared",
            "model_invocation_started",
            "model_invocation_completed",
            "checkpoint_created",
            "turn_committed",
            "post_commit_started",
            "post_commit_completed"
        ]
    );
    assert!(events.iter().enumerate().all(|(i, e)| e.sequence == i as u64 + 1));
    assert_eq!(r.commit.last_sequence, 8);
}

#[test]
fn tool_rounds_commit_results_in_order_and_the_model_reads_them() {
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![
        ModelResponse::tools(vec![call("a", "echo", json!({"v": 1})), call("b", "fail", json!({}))]),
        ModelResponse::tools(vec![call("c", "echo", json!({"v": 3}))]),
        ModelResponse::output(json!("done")),
    ]);
    let r = rt().block_on(engine(model, &tools).run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(r.commit.iterations, 3);
    assert_eq!(tools.runs(), ["a", "b", "c"]);
    let order: Vec<_> = r.tool_results.iter().map(|t| (t.request_id.as_str(), t.outcome)).collect();
    assert_eq!(order, [("a", ToolOutcome::Success), ("b", ToolOutcome::Failed), ("c", ToolOutcome::Success)]);
    // user, assistant(calls a b), tool a, tool b, assistant(call c), tool c, answer
    let roles: Vec<Role> = r.commit.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::Tool, Role::Tool, Role::Assistant, Role::Tool, Role::Assistant]
    );
    assert_eq!(r.commit.messages[3].text(), "Error: the tool broke", "a failed tool is a result the model reads");
    // Every snapshot keeps the original message as its stable prefix.
    assert_eq!(r.snapshots.iter().map(|s| s.stable_prefix_messages).collect::<Vec<_>>(), [1, 1, 1]);
    assert_eq!(r.snapshots[1].messages.len(), 4);
}

#[test]
fn a_denied_request_is_a_result_and_never_runs() {
    let (events, observe) = recorder();
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![
        ModelResponse::tools(vec![call("x", "echo", json!({}))]),
        ModelResponse::output(json!("ok")),
    ]);
    let e = engine(model, &tools).permissions(DenyAll).observe(observe);
    let r = rt().block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert!(tools.runs().is_empty());
    assert_eq!(r.tool_results[0].error_kind.as_deref(), Some("permission_denied"));
    assert_eq!(r.commit.messages[2].text(), "Permission denied for tool 'echo'");
    let k = kinds(&events.lock().unwrap());
    assert!(k.contains(&"permission_resolved") && k.contains(&"tool_result_committed"));
    assert!(!k.contains(&"tool_execution_started") && !k.contains(&"tool_execution_completed"));
}

#[test]
fn an_unknown_tool_is_a_plan_failure() {
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![ModelResponse::tools(vec![call("x", "nope", json!({}))])]);
    let r = rt().block_on(engine(model, &tools).run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Failed);
    assert!(matches!(r.stop, Some(TurnStop::UnknownTool { ref name }) if name == "nope"));
}

#[test]
fn retries_reuse_the_same_snapshot_and_count_attempts_not_iterations() {
    let tools = Tools::default();
    let model = Arc::new(
        ScriptedModel::new(Vec::new()).then_fail("503").then_fail("503").then(ModelResponse::output(json!("ok"))),
    );
    let e = TurnEngine::from_model(model.clone()).tools(tools).retry_backoff(Duration::from_millis(1));
    let r = rt().block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(r.commit.iterations, 1);
    let seen = model.invocations();
    assert_eq!(seen.iter().map(|(_, a)| *a).collect::<Vec<_>>(), [0, 1, 2]);
    assert!(seen.iter().all(|(s, _)| *s == seen[0].0), "{seen:?}");
    assert_eq!(r.snapshots.len(), 1);
}

#[test]
fn spent_attempts_fail_the_turn_with_the_model_error() {
    let model = ScriptedModel::new(Vec::new()).then_fail("a").then_fail("b");
    let e = TurnEngine::new(model).max_attempts(2).retry_backoff(Duration::from_millis(1));
    let r = rt().block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Failed);
    assert!(matches!(r.stop, Some(TurnStop::Model { attempts: 2, .. })), "{:?}", r.stop);
}

#[test]
fn the_iteration_limit_fails_the_next_invocation() {
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![ModelResponse::tools(vec![call("a", "echo", json!({}))])]);
    let r = rt().block_on(engine(model, &tools).max_iterations(1).run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Failed);
    assert!(matches!(r.stop, Some(TurnStop::MaxIterations { max: 1 })));
    assert_eq!(tools.runs(), ["a"], "the tool round of the last allowed invocation is committed");
}

/// A model that never answers until cancelled.
struct Hang;
impl ModelPort for Hang {
    fn invoke<'a>(&'a self, _: &'a ContextSnapshot, _: u32) -> BoxFuture<'a, Result<ModelResponse, ModelFailure>> {
        Box::pin(std::future::pending())
    }
}

fn cancelled_reason(r: &TurnEngineResult) -> String {
    assert_eq!(r.commit.status, TurnStatus::Cancelled, "{:?}", r.commit);
    match &r.stop {
        Some(TurnStop::Cancelled { reason }) => reason.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cancellation_is_checked_at_every_boundary() {
    let runtime = rt();
    // Before context preparation.
    let token = CancellationToken::new();
    token.cancel();
    let r = runtime.block_on(TurnEngine::new(Hang).run(TurnRequest::new("s", "t", user("go")).cancel(token))).unwrap();
    assert_eq!(cancelled_reason(&r), "Cancellation requested before first iteration");
    // During the model call.
    let token = CancellationToken::new();
    let later = token.clone();
    runtime.spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        later.cancel();
    });
    let r = runtime.block_on(TurnEngine::new(Hang).run(TurnRequest::new("s", "t", user("go")).cancel(token))).unwrap();
    assert_eq!(cancelled_reason(&r), "Cancellation requested during the model call");
    // During a retry wait.
    let token = CancellationToken::new();
    let later = token.clone();
    runtime.spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        later.cancel();
    });
    let e = TurnEngine::new(ScriptedModel::new(Vec::new()).then_fail("503")).retry_backoff(Duration::from_secs(30));
    let r = runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")).cancel(token))).unwrap();
    assert_eq!(cancelled_reason(&r), "Cancellation requested while waiting to retry the model call");
    // Before the next tool (the first tool cancels), and before the next iteration.
    for (requests, want) in [
        (
            vec![call("a", "cancel", json!({})), call("b", "echo", json!({}))],
            "Cancellation requested after tool execution",
        ),
        (vec![call("a", "cancel", json!({}))], "Cancellation requested before iteration 2"),
    ] {
        let token = CancellationToken::new();
        let tools = Tools { cancel: Some(token.clone()), ..Tools::default() };
        let model = ScriptedModel::new(vec![ModelResponse::tools(requests), ModelResponse::output(json!("never"))]);
        let r =
            runtime.block_on(engine(model, &tools).run(TurnRequest::new("s", "t", user("go")).cancel(token))).unwrap();
        assert_eq!(cancelled_reason(&r), want);
        assert_eq!(tools.runs(), ["a"], "nothing runs after the cancellation");
        assert_eq!(r.tool_results.len(), 1, "the committed effect stays committed");
    }
}

#[test]
fn parallel_tools_run_together_and_commit_in_request_order() {
    let (events, observe) = recorder();
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![
        ModelResponse::tools(vec![
            call("first", "slow", json!({"ms": 150})),
            call("second", "slow", json!({"ms": 10})),
            call("third", "slow", json!({"ms": 60})),
        ]),
        ModelResponse::output(json!("ok")),
    ]);
    let e = engine(model, &tools).parallel_tools(true).observe(observe);
    let start = std::time::Instant::now();
    let r = rt().block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert!(start.elapsed() < Duration::from_millis(210), "the tools ran one after another: {:?}", start.elapsed());
    let ids: Vec<_> = r.tool_results.iter().map(|t| t.request_id.as_str()).collect();
    assert_eq!(ids, ["first", "second", "third"]);
    let events = events.lock().unwrap();
    let k = kinds(&events);
    let last_start = k.iter().rposition(|k| *k == "tool_execution_started").unwrap();
    let first_done = k.iter().position(|k| *k == "tool_execution_completed").unwrap();
    assert!(last_start < first_done, "every start is committed before any tool runs: {k:?}");
    let committed: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::ToolResultCommitted)
        .map(|e| e.payload["requestId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(committed, ["first", "second", "third"]);
}

/// A store that fails every commit after the first `ok` ones: a process that dies at that point.
fn dies_after(inner: &Arc<MemoryStore>, ok: usize) -> Arc<dyn Durability> {
    let left = AtomicUsize::new(ok);
    Arc::new(store::Intercepted::new(inner.clone(), move |_| {
        match left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)) {
            Ok(_) => store::Interception::Write,
            Err(_) => store::Interception::Refuse(Error::Durability {
                store: "dies".into(),
                message: "the process died".into(),
            }),
        }
    }))
}

fn two_tool_script() -> Vec<ModelResponse> {
    vec![
        ModelResponse::tools(vec![call("a", "echo", json!({"v": "A"})), call("b", "echo", json!({"v": "B"}))]),
        ModelResponse::output(json!("A and B")),
    ]
}

/// The commits of the two-tool turn: 1 turn_started; 2 context+started; 3 response+checkpoint;
/// 4 tool a started; 5 a completed+checkpoint; 6 tool b started; 7 b completed+checkpoint;
/// 8 round committed+checkpoint; 9 context+started; 10 response+checkpoint; 11 turn_committed.
#[test]
fn resume_at_every_commit_repeats_no_effect_and_ends_like_an_uninterrupted_run() {
    let runtime = rt();
    let tools = Tools::default();
    let whole = runtime
        .block_on(engine(ScriptedModel::new(two_tool_script()), &tools).run(TurnRequest::new("s", "t", user("go"))))
        .unwrap();
    for died_after in 1..=10 {
        let store = Arc::new(MemoryStore::new());
        let tools = Tools { idempotent: false, ..Tools::default() };
        let first = engine(ScriptedModel::new(two_tool_script()), &tools).store(dies_after(&store, died_after));
        let err = runtime.block_on(first.run(TurnRequest::new("s", "t", user("go")))).unwrap_err();
        assert!(matches!(err, Error::Durability { .. }), "{err}");
        // The model's responses not yet committed are given again; committed ones never are.
        let committed_responses = runtime
            .block_on(store.events("s", 0))
            .unwrap()
            .iter()
            .filter(|e| e.kind == EventKind::ModelInvocationCompleted)
            .count();
        let model = Arc::new(ScriptedModel::new(two_tool_script().split_off(committed_responses)));
        let second = TurnEngine::from_model(model.clone())
            .tools(tools.clone())
            .store(store.clone())
            .ids(SequentialIds::default());
        let r = runtime.block_on(second.resume("s", None)).unwrap();
        let runs = tools.runs();
        let started_not_completed = matches!(died_after, 4 | 6);
        if started_not_completed {
            // The process died after a tool's start was committed and before its result was.
            assert_eq!(r.commit.status, TurnStatus::ReconciliationRequired, "dies after {died_after}");
            let pending = if died_after == 4 { "a" } else { "b" };
            assert!(
                matches!(&r.stop, Some(TurnStop::ReconciliationRequired { request_id, .. }) if request_id == pending)
            );
            // The host checks the effect and resolves it; the turn then ends as the whole run did.
            let output = ToolOutput::success(pending, "echo", json!({"v": pending.to_uppercase()}));
            let r = runtime.block_on(second.resolve_tool("s", output, None)).unwrap();
            assert_eq!(r.commit.status, TurnStatus::Success);
            assert_eq!(r.commit.messages, whole.commit.messages);
            assert_eq!(runs.iter().filter(|id| *id == pending).count(), 1, "the pending tool is not run again");
        } else {
            assert_eq!(r.commit.status, TurnStatus::Success, "dies after {died_after}: {:?}", r.commit.reason);
            assert_eq!(r.commit.messages, whole.commit.messages, "dies after {died_after}");
        }
        let mut seen = HashMap::new();
        for id in tools.runs() {
            *seen.entry(id).or_insert(0) += 1;
        }
        assert!(seen.values().all(|n| *n == 1), "a tool ran twice after dying at commit {died_after}: {seen:?}");
        assert!(model.invocations().len() <= 2 - committed_responses, "a committed response was asked for again");
        // One journal, numbered without gaps across the two runs.
        let events = runtime.block_on(store.events("s", 0)).unwrap();
        assert!(events.iter().enumerate().all(|(i, e)| e.sequence == i as u64 + 1), "dies after {died_after}");
    }
}

#[test]
fn an_idempotent_tool_in_flight_is_run_again_on_resume() {
    let runtime = rt();
    let store = Arc::new(MemoryStore::new());
    let tools = Tools { idempotent: true, ..Tools::default() };
    let first = engine(ScriptedModel::new(two_tool_script()), &tools).store(dies_after(&store, 4));
    assert!(runtime.block_on(first.run(TurnRequest::new("s", "t", user("go")))).is_err());
    assert_eq!(tools.runs(), ["a"]);
    let second = engine(ScriptedModel::new(two_tool_script().split_off(1)), &tools).store(store.clone());
    let r = runtime.block_on(second.resume("s", None)).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(tools.runs(), ["a", "a", "b"]);
}

#[test]
fn an_indeterminate_tool_stops_the_turn_until_the_host_resolves_it() {
    let runtime = rt();
    let store = Arc::new(MemoryStore::new());
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![
        ModelResponse::tools(vec![call("u", "unknowable", json!({}))]),
        ModelResponse::output(json!("after")),
    ]);
    let e = engine(model, &tools).store(store.clone());
    let r = runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::ReconciliationRequired);
    assert_eq!(runtime.block_on(store.sessions()).unwrap()[0].status, Some(TurnStatus::ReconciliationRequired));
    // Resuming without a resolution changes nothing and runs nothing.
    let again = runtime.block_on(e.resume("s", None)).unwrap();
    assert_eq!(again.commit.status, TurnStatus::ReconciliationRequired);
    assert_eq!(tools.runs(), ["u"]);
    // The wrong call id is refused.
    let wrong = runtime.block_on(e.resolve_tool("s", ToolOutput::success("zz", "unknowable", json!(1)), None));
    assert!(wrong.unwrap_err().to_string().contains("the pending tool call is u"));
    let r = runtime
        .block_on(e.resolve_tool("s", ToolOutput::success("u", "unknowable", json!("it did happen")), None))
        .unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(r.commit.output, Some(json!("after")));
    assert_eq!(tools.runs(), ["u"]);
}

/// A model whose first attempt has an unknown outcome.
struct LostResponse;
impl ModelPort for LostResponse {
    fn invoke<'a>(&'a self, _: &'a ContextSnapshot, _: u32) -> BoxFuture<'a, Result<ModelResponse, ModelFailure>> {
        Box::pin(async { Err(ModelFailure::Indeterminate(Error::Task("the connection dropped after sending".into()))) })
    }
}

#[test]
fn an_indeterminate_model_invocation_is_reconciled_without_invoking_it_again() {
    let runtime = rt();
    let store = Arc::new(MemoryStore::new());
    let e = TurnEngine::new(LostResponse).store(store.clone());
    let r = runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::ReconciliationRequired);
    let tool_err = runtime.block_on(e.resolve_tool("s", ToolOutput::success("x", "y", json!(1)), None)).unwrap_err();
    assert!(tool_err.to_string().contains("resolve_model"), "{tool_err}");
    let r = runtime.block_on(e.resolve_model("s", ModelResponse::output(json!("recovered")), None)).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(r.commit.output, Some(json!("recovered")));
}

/// Recalls the shared memory into the context: a system message per fact, recorded as decisions.
struct Recall(Arc<Mutex<Vec<String>>>);
impl ContextTransform for Recall {
    fn transform(&self, draft: &mut ContextDraft<'_>) -> Result<(), TurnStop> {
        for (i, fact) in self.0.lock().unwrap().iter().enumerate() {
            let text = format!("Remembered: {fact}");
            if !draft.messages.iter().any(|m| m.text() == text) {
                draft.messages.push(Message::new(Role::System, text));
                draft.decisions.push(ContextDecision::new(format!("memory-{i}"), Disposition::Included, "recalled"));
            }
        }
        Ok(())
    }
}

#[test]
fn memory_is_a_context_source_and_a_mutation_reaches_the_next_snapshot() {
    let tools = Tools::default();
    tools.memory.lock().unwrap().push("the user likes tea".into());
    let model = ScriptedModel::new(vec![
        ModelResponse::tools(vec![call("m", "remember", json!({"fact": "the user is in Oslo"}))]),
        ModelResponse::output(json!("ok")),
    ]);
    let e = engine(model, &tools).transform(Recall(Arc::clone(&tools.memory)));
    let r = rt().block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    let texts = |s: &ContextSnapshot| s.messages.iter().map(|m| m.text()).collect::<Vec<_>>();
    assert!(texts(&r.snapshots[0]).contains(&"Remembered: the user likes tea".to_owned()));
    assert!(!texts(&r.snapshots[0]).iter().any(|t| t.contains("Oslo")));
    assert!(texts(&r.snapshots[1]).contains(&"Remembered: the user is in Oslo".to_owned()));
    assert_eq!(r.snapshots[0].decisions[0].candidate_id, "memory-0");
    assert_eq!(r.snapshots[1].decisions[0].candidate_id, "memory-1");
    // The recalled messages come after the original one: the stable prefix stays 1.
    assert_eq!(r.snapshots[1].stable_prefix_messages, 1);
}

struct Consolidate {
    ids: Arc<Mutex<Vec<String>>>,
    fail: bool,
}
impl PostCommitEffect for Consolidate {
    fn name(&self) -> &str {
        if self.fail {
            "notify"
        } else {
            "consolidate"
        }
    }
    fn run<'a>(&'a self, _: &'a TurnCommit, id: &'a str) -> BoxFuture<'a, prompty::Result<()>> {
        self.ids.lock().unwrap().push(id.to_owned());
        let fail = self.fail;
        Box::pin(async move {
            if fail {
                Err(Error::Task("the mail server is down".into()))
            } else {
                Ok(())
            }
        })
    }
}

#[test]
fn post_commit_effects_run_after_the_commit_and_a_failure_does_not_fail_the_turn() {
    let (events, observe) = recorder();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let e = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(json!("hi"))]))
        .post_commit(Consolidate { ids: Arc::clone(&ids), fail: false })
        .post_commit(Consolidate { ids: Arc::clone(&ids), fail: true })
        .observe(observe);
    let r = rt().block_on(e.run(TurnRequest::new("s:1", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert!(r.post_commit_error.as_deref().unwrap().contains("the mail server is down"));
    assert_eq!(*ids.lock().unwrap(), [r#"["s:1","t","consolidate"]"#, r#"["s:1","t","notify"]"#]);
    let k = kinds(&events.lock().unwrap());
    assert_eq!(
        k[k.len() - 4..],
        ["turn_committed", "post_commit_started", "post_commit_failed", "post_commit_completed"]
    );
}

#[test]
fn a_committed_turn_whose_effects_never_completed_runs_them_on_resume() {
    let runtime = rt();
    let store = Arc::new(MemoryStore::new());
    let ids = Arc::new(Mutex::new(Vec::new()));
    // Commits: turn_started, context, response+checkpoint, turn_committed, post_commit_started — then death.
    let e = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(json!("hi"))]))
        .store(dies_after(&store, 5))
        .post_commit(Consolidate { ids: Arc::clone(&ids), fail: false });
    let r = runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert!(r.post_commit_error.is_some());
    assert_eq!(ids.lock().unwrap().len(), 1);
    let again = TurnEngine::new(ScriptedModel::new(Vec::new()))
        .store(store.clone())
        .post_commit(Consolidate { ids: Arc::clone(&ids), fail: false });
    let r = runtime.block_on(again.resume("s", None)).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Success);
    assert_eq!(r.commit.output, Some(json!("hi")));
    assert_eq!(r.commit.messages.len(), 2);
    assert_eq!(ids.lock().unwrap().len(), 2, "the effect (idempotent by contract) ran again with the same id");
    let seen = ids.lock().unwrap().clone();
    assert_eq!(seen[0], seen[1]);
    // Once recorded, a resume runs nothing more.
    runtime.block_on(again.resume("s", None)).unwrap();
    assert_eq!(ids.lock().unwrap().len(), 2);
}

struct NoEmpty;
impl FinalOutputPolicy for NoEmpty {
    fn check(&self, output: Value) -> Result<Value, String> {
        match output.as_str() {
            Some("") => Err("the answer is empty".into()),
            Some(s) => Ok(json!(s.to_uppercase())),
            None => Ok(output),
        }
    }
}

#[test]
fn the_final_output_policy_rewrites_or_durably_fails_the_turn() {
    let runtime = rt();
    let store = Arc::new(MemoryStore::new());
    let e = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(json!("hi"))])).final_output(NoEmpty);
    assert_eq!(
        runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap().commit.output,
        Some(json!("HI"))
    );
    let e = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(json!(""))]))
        .final_output(NoEmpty)
        .store(store.clone());
    let r = runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Failed);
    assert!(matches!(r.stop, Some(TurnStop::OutputRejected { .. })));
    assert_eq!(runtime.block_on(store.sessions()).unwrap()[0].status, Some(TurnStatus::Failed));
    // Resuming a failed turn gives the failure back; nothing runs.
    let r = runtime.block_on(e.resume("s", None)).unwrap();
    assert_eq!(r.commit.status, TurnStatus::Failed);
    assert!(r.commit.reason.unwrap().contains("the answer is empty"));
}

#[test]
fn a_session_held_by_a_live_worker_is_refused() {
    let runtime = rt();
    let store: Arc<MemoryStore> = Arc::new(MemoryStore::new());
    let lease = runtime.block_on(store.acquire("s", "worker-a", Duration::from_secs(60))).unwrap();
    assert!(lease.acquired);
    let e = TurnEngine::new(ScriptedModel::new(vec![ModelResponse::output(json!("hi"))]))
        .store(store.clone())
        .worker("worker-b", Duration::from_secs(60));
    let err = runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap_err();
    assert!(err.to_string().contains("held by worker-a"), "{err}");
    // Once released, worker b runs it and gives the lease back.
    runtime.block_on(store.release("s", "worker-a")).unwrap();
    assert_eq!(
        runtime.block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap().commit.status,
        TurnStatus::Success
    );
    assert_eq!(runtime.block_on(store.sessions()).unwrap()[0].lease_owner, None);
}

#[test]
fn the_same_run_gives_the_same_event_stream() {
    let stream = || {
        let (events, observe) = recorder();
        let tools = Tools::default();
        let e = engine(ScriptedModel::new(two_tool_script()), &tools)
            .clock(FixedClock("2026-07-21T00:00:00Z".into()))
            .observe(observe);
        rt().block_on(e.run(TurnRequest::new("s", "t", user("go")))).unwrap();
        let events = events.lock().unwrap().clone();
        serde_json::to_value(events).unwrap()
    };
    assert_eq!(stream(), stream());
}

#[test]
fn tools_get_a_stable_idempotency_key() {
    let tools = Tools::default();
    let model = ScriptedModel::new(vec![
        ModelResponse::tools(vec![call("c/1", "key", json!({}))]),
        ModelResponse::output(json!("ok")),
    ]);
    let r = rt().block_on(engine(model, &tools).run(TurnRequest::new("a/b", "t", user("go")))).unwrap();
    assert_eq!(r.tool_results[0].output, json!("3:a/b/1:t/c/1"));
}

#[test]
fn a_delegated_provider_state_is_carried_into_later_invocations_and_the_commit() {
    let tools = Tools::default();
    let mut first = ModelResponse::tools(vec![call("a", "echo", json!({}))]);
    first.next_context_state = Some(ContextState {
        portability: Portability::Delegated,
        delegated_state: vec![DelegatedStateReference::new("openai", "previous_response", "resp_1")],
    });
    let r = rt()
        .block_on(
            engine(ScriptedModel::new(vec![first, ModelResponse::output(json!("ok"))]), &tools).run(TurnRequest::new(
                "s",
                "t",
                user("go"),
            )),
        )
        .unwrap();
    let kinds: Vec<_> = r.snapshots.iter().map(|s| s.context_state.portability).collect();
    assert_eq!(kinds, [Portability::Portable, Portability::Delegated]);
    assert_eq!(r.commit.context_state.delegated_state[0].id, "resp_1");
}
