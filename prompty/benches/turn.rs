//! Benchmark of the agent loop: one turn with one tool round (two model calls, one tool call).
//!
//! Run with `cargo bench -p prompty --features openai --bench turn` (`--quick` for short rounds).
//!
//! 1. **In process** (no I/O): `run_turn` against a scripted executor that answers at once, beside
//!    the same work done by hand (two `run` calls on the same conversations and the tool call).
//!    The difference, per iteration, is the loop's own CPU: the turn engine's steps, its journal
//!    events and checkpoints (committed to no store: the turn is not durable), argument parsing,
//!    tool dispatch, the round's messages, the raw response kept for the round.
//! 2. **Over HTTP**: a minimal HTTP/1.1 keep-alive server on 127.0.0.1 (its own thread) answers a
//!    request without a tool result with a tool call, and one with a tool result with the final
//!    answer. One `turn_async` (prepare + two calls + the tool) beside two `invoke_async` calls of
//!    the same prompt, interleaved in the same run; the figure is the **client CPU** per turn (every
//!    thread of this process but the server's, from `/proc/self/task/*/schedstat`).

#[path = "support/server.rs"]
mod server;
#[path = "support/measure.rs"]
#[allow(dead_code)]
mod support;

use prompty::providers::openai::OpenAiProcessor;
use prompty::{Agent, BoxFuture, Executor, Message, Role, ToolCall, ToolContext, Tools, TurnOptions};
use serde_json::{json, Value};
use server::{client_cpu_ns, start_server};
use std::time::Duration;

const TOOL_CALL: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":40,"completion_tokens":12,"total_tokens":52}}"#;
const ANSWER: &str = r#"{"id":"chatcmpl-2","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"It is 21°C and sunny in Paris.","refusal":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":60,"completion_tokens":9,"total_tokens":69}}"#;

const PROMPT: &str = "---\nname: weather\nmodel:\n  id: gpt-4o\n  provider: PROVIDER\n  connection:\n    kind: key\n    \
    endpoint: ENDPOINT\n    apiKey: sk-bench\ninputs:\n  city:\n    kind: string\n    default: Paris\ntools:\n  - name: \
    get_weather\n    kind: function\n    description: Current weather\n    parameters:\n      - name: city\n        kind: string\n        \
    required: true\n---\nsystem:\nYou answer weather questions.\n\nuser:\nWhat is the weather in {{city}}?";

fn weather_tool() -> impl prompty::ToolFunction {
    prompty::tool_fn_sync(|args| Ok(json!(format!("21°C and sunny in {}", args["city"].as_str().unwrap_or("?")))))
}

/// Answers like the HTTP server, in process.
struct Scripted;

impl Executor for Scripted {
    fn execute_async<'a>(&'a self, _: &'a Agent, messages: &'a [Message]) -> BoxFuture<'a, prompty::Result<Value>> {
        let text = if messages.last().is_some_and(|m| m.role == Role::Tool) { ANSWER } else { TOOL_CALL };
        let value = serde_json::from_str(text).map_err(|e| prompty::Error::Task(e.to_string()));
        Box::pin(async move { value })
    }

    fn format_tool_messages(&self, agent: &Agent, round: &prompty::ToolRound<'_>) -> prompty::Result<Vec<Message>> {
        prompty::providers::openai::tool_messages(agent, round)
    }
}

fn in_process(quick: bool) {
    prompty::register_executor("bench-scripted", Scripted);
    prompty::register_processor("bench-scripted", OpenAiProcessor);
    let agent = prompty::load_str(
        &PROMPT.replace("PROVIDER", "bench-scripted").replace("ENDPOINT", "http://unused"),
        ".",
        "w.prompty",
    )
    .expect("prompt");
    let inputs = json!({"city": "Paris"});
    let messages = prompty::prepare(&agent, &inputs).expect("prepare");
    let tools = Tools::new().with("get_weather", weather_tool());
    let options = TurnOptions::new().tools(tools.clone());
    let out = prompty::run_turn(&agent, messages.clone(), &inputs, options.clone()).expect("turn");
    assert_eq!((out.result, out.iterations), (json!("It is 21°C and sunny in Paris."), 2));
    // The conversation of the second call, built once.
    let second = out.messages[..out.messages.len() - 1].to_vec();
    let batch = Duration::from_millis(if quick { 100 } else { 400 });

    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let map = inputs.as_object().cloned().unwrap_or_default();
    let turn = support::measure(batch, || {
        let out =
            rt.block_on(prompty::run_turn_async(&agent, messages.clone(), &inputs, options.clone())).expect("turn");
        std::hint::black_box(out);
    });
    let by_hand = support::measure(batch, || {
        rt.block_on(async {
            let first = prompty::run_async(&agent, &messages).await.expect("run");
            let call = ToolCall::new("call_1", "get_weather", first[0]["arguments"].as_str().unwrap_or("{}"));
            let result =
                prompty::execute_tool_async(&call, ToolContext::new(&agent, &map, &tools)).await.expect("tool");
            let answer = prompty::run_async(&agent, &second).await.expect("run");
            std::hint::black_box((result, answer));
        });
    });
    println!(
        "in process (µs/turn, one thread): run_turn {turn:.2} | by hand (2 run + 1 tool call) {by_hand:.2} | \
         loop overhead {:+.2} µs per turn, {:+.2} µs per iteration",
        turn - by_hand,
        (turn - by_hand) / 2.0
    );
}

/// A tool call for a request without a tool result, the answer for one with it.
fn reply(body: &[u8]) -> &'static str {
    const TOOL_ROLE: &[u8] = b"\"role\":\"tool\"";
    if body.windows(TOOL_ROLE.len()).any(|w| w == TOOL_ROLE) {
        ANSWER
    } else {
        TOOL_CALL
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One side of the HTTP comparison.
#[derive(Clone, Copy)]
enum Side {
    /// One `turn_async`.
    Turn,
    /// Two `invoke_async` (answered with the tool call: the size of the turn's first request).
    TwoInvokes,
}

/// Client CPU per unit of `side`, over `n` units run as one task on the runtime's workers.
async fn round(setup: &std::sync::Arc<(Agent, Value, TurnOptions)>, side: Side, n: usize, server_tid: u64) -> f64 {
    let setup = std::sync::Arc::clone(setup);
    let cpu0 = client_cpu_ns(server_tid).unwrap_or(0);
    tokio::spawn(async move {
        let (agent, inputs, options) = &*setup;
        for _ in 0..n {
            match side {
                Side::Turn => {
                    let out: Value = prompty::turn_async(agent, inputs, options.clone()).await.expect("turn");
                    std::hint::black_box(out);
                }
                Side::TwoInvokes => {
                    for _ in 0..2 {
                        let out: Value = prompty::invoke_async(agent, inputs).await.expect("invoke");
                        std::hint::black_box(out);
                    }
                }
            }
        }
    })
    .await
    .expect("task");
    client_cpu_ns(server_tid).unwrap_or(0).saturating_sub(cpu0) as f64 / 1000.0 / n as f64
}

fn over_http(quick: bool) {
    let (port, server_tid) = start_server(reply);
    let agent = prompty::load_str(
        &PROMPT.replace("PROVIDER", "openai").replace("ENDPOINT", &format!("http://127.0.0.1:{port}/v1")),
        ".",
        "w.prompty",
    )
    .expect("prompt");
    let options = TurnOptions::new().tool("get_weather", weather_tool());
    let setup = std::sync::Arc::new((agent, json!({"city": "Paris"}), options));
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let (agent, inputs, options) = &*setup;
        let answer: String = prompty::turn_async(agent, inputs, options.clone()).await.expect("turn");
        assert_eq!(answer, "It is 21°C and sunny in Paris.");
        let (rounds, n) = if quick { (3, 300) } else { (7, 1500) };
        // Warm-up: connections, allocator, caches.
        round(&setup, Side::Turn, n / 2, server_tid).await;
        round(&setup, Side::TwoInvokes, n / 2, server_tid).await;
        let (mut turns, mut invokes) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            turns.push(round(&setup, Side::Turn, n, server_tid).await);
            invokes.push(round(&setup, Side::TwoInvokes, n, server_tid).await);
        }
        let (turn, two) = (median(turns), median(invokes));
        println!(
            "over HTTP (client CPU, {rounds} rounds of {n}, interleaved): turn_async {turn:.2} µs/turn | two \
             invoke_async {two:.2} µs | difference {:+.2} µs per turn, {:+.2} µs per iteration (the turn's second \
             request is longer: it carries the tool round)",
            turn - two,
            (turn - two) / 2.0
        );
    });
    rt.shutdown_timeout(Duration::from_millis(100));
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    in_process(quick);
    over_http(quick);
}
