//! Benchmark of the turn engine's stores: what one engine iteration's commits cost (the model's
//! response, one tool, the round's end) in memory, in SQLite (a durable commit on a real file) and
//! in PostgreSQL (a throw-away cluster with the server's durable defaults, over a unix socket),
//! beside one model round trip of `prompty::run_async` against a local mock HTTP server (OpenAI
//! chat completions on 127.0.0.1).
//!
//! Run with `cargo bench -p prompty --features sqlite,postgres,openai --bench durability`
//! (`--quick` for short rounds). Needs Debian's `postgresql` (the cluster's programs).
//!
//! 1. **Commits of one iteration**: a turn (one tool round, then the answer) is run once by the
//!    engine on a store that records its commits; the commits of the tool round (the prepared
//!    context with the invocation's start, the response with its checkpoint, the tool's start,
//!    its result with a checkpoint, the round's messages with a checkpoint: 5 commits) are then
//!    written again and again to each store, renumbered to extend one session, by a worker holding
//!    the session's lease (every commit checks and renews it). The figure is the wall time per
//!    iteration.
//! 2. **Whole turns**: the same turn run by the engine (a worker, on each store), wall time per
//!    turn: the commits of two iterations and the engine's own work.
//! 3. **One model round trip**: `prompty::run_async` of a prompt against the mock server (wall
//!    time per call), for scale: the commits of an iteration beside the call that starts it.
//!
//! Each figure is the median of several rounds.

#[path = "../tests/support/postgres.rs"]
mod postgres;
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;

use prompty::engine::store::{self, Intercepted, Interception, SqliteStore};
use prompty::engine::{
    Commit, Durability, EventKind, MemoryStore, ModelResponse, ScriptedModel, ToolContext, ToolOutput, ToolPort,
    ToolRequest, TurnEngine, TurnRequest, TurnStatus,
};
use prompty::{BoxFuture, Message, Role, TurnStop};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const ANSWER: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"It is 21°C and sunny in Paris.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":60,"completion_tokens":9,"total_tokens":69}}"#;

/// The weather tool of the turn.
struct Weather;

impl ToolPort for Weather {
    fn execute<'a>(
        &'a self,
        request: &'a ToolRequest,
        _: ToolContext<'a>,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move { Ok(ToolOutput::success(&request.id, &request.name, json!("21°C and sunny in Paris"))) })
    }
}

fn model() -> ScriptedModel {
    let call = ToolRequest::new("call_1", "get_weather", json!({"city": "Paris"}));
    ScriptedModel::new(vec![
        ModelResponse::tools(vec![call]),
        ModelResponse::output(json!("It is 21°C and sunny in Paris.")),
    ])
}

fn conversation() -> Vec<Message> {
    vec![
        Message::new(Role::System, "You answer weather questions in one sentence, citing the tool's figures."),
        Message::new(Role::User, "What is the weather in Paris?"),
    ]
}

fn engine(store: Arc<dyn Durability>) -> TurnEngine {
    TurnEngine::new(model()).tools(Weather).store(store).worker("bench-worker", Duration::from_secs(60))
}

/// The commits of the first tool round of a turn, as the engine makes them.
fn one_iteration(rt: &tokio::runtime::Runtime) -> Vec<Commit> {
    let kept = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&kept);
    let recorder = Intercepted::new(Arc::new(MemoryStore::new()), move |commit: &Commit| {
        keep.lock().unwrap().push(commit.clone());
        Interception::Write
    });
    let result =
        rt.block_on(engine(Arc::new(recorder)).run(TurnRequest::new("rec", "turn-1", conversation()))).unwrap();
    assert_eq!(result.commit.status, TurnStatus::Success);
    let commits = kept.lock().unwrap().clone();
    let has = |c: &Commit, kind| c.events.iter().any(|e| e.kind == kind);
    let start = commits.iter().position(|c| has(c, EventKind::ContextPrepared)).expect("an invocation");
    let end = commits.iter().position(|c| has(c, EventKind::ConversationUpdated)).expect("a round");
    commits[start..=end].to_vec()
}

/// `n` copies of `iteration` extending session `sid` from `tail`, for `owner`.
fn renumbered(iteration: &[Commit], sid: &str, owner: &str, tail: u64, n: usize) -> Vec<Vec<Commit>> {
    let first = iteration[0].events[0].sequence;
    let per: u64 = iteration.iter().map(|c| c.events.len() as u64).sum();
    (0..n as u64)
        .map(|i| {
            let shift = |s: u64| s - first + 1 + tail + i * per;
            iteration
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.session_id = sid.into();
                    c.owner = Some(owner.into());
                    for e in &mut c.events {
                        e.sequence = shift(e.sequence);
                        e.session_id = sid.into();
                    }
                    if let Some(cp) = &mut c.checkpoint {
                        cp.sequence = shift(cp.sequence);
                        cp.session_id = sid.into();
                    }
                    c
                })
                .collect()
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// µs per iteration's commits on `store`: the median of `rounds` rounds of `n` iterations.
fn commits_per_iteration(
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn Durability>,
    iteration: &[Commit],
    rounds: usize,
    n: usize,
) -> f64 {
    let owner = "bench-worker";
    let samples = (0..rounds)
        .map(|round| {
            let sid = format!("bench-{round}");
            rt.block_on(async {
                let lease = store.acquire(&sid, owner, Duration::from_secs(600)).await.unwrap();
                assert!(lease.acquired);
                let batches = renumbered(iteration, &sid, owner, 0, n);
                let t = Instant::now();
                for batch in &batches {
                    for commit in batch {
                        store.commit(commit).await.unwrap();
                    }
                }
                let per = t.elapsed().as_secs_f64() * 1e6 / n as f64;
                assert_eq!(
                    store.last_sequence(&sid).await.unwrap(),
                    batches.last().unwrap().last().unwrap().events.last().unwrap().sequence
                );
                per
            })
        })
        .collect();
    median(samples)
}

/// µs per whole turn run by the engine on `store`.
fn turns(rt: &tokio::runtime::Runtime, store: &Arc<dyn Durability>, rounds: usize, n: usize) -> f64 {
    let samples = (0..rounds)
        .map(|round| {
            let t = Instant::now();
            for i in 0..n {
                let r = rt
                    .block_on(engine(Arc::clone(store)).run(TurnRequest::new(
                        format!("turn-{round}-{i}"),
                        "turn-1",
                        conversation(),
                    )))
                    .unwrap();
                assert_eq!(r.commit.status, TurnStatus::Success);
            }
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        })
        .collect();
    median(samples)
}

/// µs per `prompty::run_async` against the mock server.
fn model_round_trip(rt: &tokio::runtime::Runtime, rounds: usize, n: usize) -> f64 {
    let (port, _) = server::start_server(|_| ANSWER);
    let agent = prompty::load_str(
        &format!(
            "---\nname: weather\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    \
             endpoint: http://127.0.0.1:{port}/v1\n    apiKey: sk-bench\n---\nsystem:\nYou answer weather \
             questions.\n\nuser:\nWhat is the weather in Paris?"
        ),
        ".",
        "weather.prompty",
    )
    .expect("bench prompt");
    let messages = prompty::prepare(&agent, &json!({})).expect("prepare");
    let call = || rt.block_on(prompty::run_async(&agent, &messages)).expect("run");
    assert_eq!(call(), json!("It is 21°C and sunny in Paris."));
    for _ in 0..50 {
        call();
    }
    let samples = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                std::hint::black_box(call());
            }
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        })
        .collect();
    median(samples)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let rounds = if quick { 3 } else { 7 };
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");

    let iteration = one_iteration(&rt);
    let events: usize = iteration.iter().map(|c| c.events.len()).sum();
    let checkpoints = iteration.iter().filter(|c| c.checkpoint.is_some()).count();
    let bytes: usize = iteration
        .iter()
        .map(|c| {
            c.events.iter().map(|e| serde_json::to_string(e).unwrap().len()).sum::<usize>()
                + c.checkpoint.as_ref().map_or(0, |cp| serde_json::to_string(cp).unwrap().len())
        })
        .sum();
    println!(
        "one iteration = {} commits, {events} events, {checkpoints} checkpoints, {bytes} bytes of JSON; \
         median of {rounds} rounds",
        iteration.len()
    );

    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-durability-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("bench folder");
    let cluster = postgres::Cluster::start(true);
    let url = cluster.database("bench");
    let stores: Vec<(&str, Arc<dyn Durability>, usize)> = vec![
        ("memory", Arc::new(MemoryStore::new()), if quick { 500 } else { 3000 }),
        (
            "sqlite (durable, WAL, synchronous=FULL)",
            Arc::new(SqliteStore::open(dir.join("bench.db")).expect("sqlite")),
            if quick { 20 } else { 60 },
        ),
        (
            "postgresql (fsync on, unix socket)",
            rt.block_on(store::open(&url)).expect("postgres"),
            if quick { 20 } else { 60 },
        ),
    ];
    let round_trip = model_round_trip(&rt, rounds, if quick { 200 } else { 1000 });
    println!("model round trip: prompty::run_async against the mock server on 127.0.0.1: {round_trip:9.1} µs/call");
    for (name, store, n) in &stores {
        let per_iteration = commits_per_iteration(&rt, store, &iteration, rounds, *n);
        let per_turn = turns(&rt, store, rounds, (*n / 4).max(5));
        println!(
            "{name:<42} commits of one iteration {per_iteration:9.1} µs ({:5.2}x a model round trip) | whole turn \
             (2 iterations, engine included) {per_turn:9.1} µs",
            per_iteration / round_trip
        );
    }
    drop(stores);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&dir);
}
