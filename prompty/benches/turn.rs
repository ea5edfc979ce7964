//! Benchmark of the agent loop: one turn with one tool round (two model calls, one tool call).
//!
//! Run with `cargo bench -p prompty --features openai --bench turn` (`--quick` for short rounds).
//!
//! 1. **In process** (no I/O): `run_turn` against a scripted executor that answers at once, beside
//!    the same work done by hand (two `run` calls on the same conversations and the tool call).
//!    The difference, per iteration, is the loop's own CPU: iteration checks, events off, argument
//!    parsing, tool dispatch, the round's messages, cloning the raw response.
//! 2. **Over HTTP**: a minimal HTTP/1.1 keep-alive server on 127.0.0.1 (its own thread) answers a
//!    request without a tool result with a tool call, and one with a tool result with the final
//!    answer. One `turn_async` (prepare + two calls + the tool) beside two `invoke_async` calls of
//!    the same prompt, interleaved in the same run; the figure is the **client CPU** per turn (every
//!    thread of this process but the server's, from `/proc/self/task/*/schedstat`).

#[path = "support/measure.rs"]
#[allow(dead_code)]
mod support;

use prompty::providers::openai::OpenAiProcessor;
use prompty::{Agent, BoxFuture, Executor, Message, Role, ToolCall, ToolContext, Tools, TurnOptions};
use serde_json::{json, Value};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

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

/// The id of the calling thread (Linux: from `/proc/thread-self`).
fn thread_id() -> Option<u64> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// CPU time of every thread of this process but `excluded`, in nanoseconds.
fn client_cpu_ns(excluded: u64) -> Option<u64> {
    let mut total = 0u64;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let entry = entry.ok()?;
        let tid: u64 = entry.file_name().to_str()?.parse().ok()?;
        if tid == excluded {
            continue;
        }
        if let Ok(s) = std::fs::read_to_string(entry.path().join("schedstat")) {
            total += s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    Some(total)
}

/// Starts the server on its own thread; returns its port and thread id.
fn start_server() -> (u16, u64) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("bench-server".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("server runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
                let port = listener.local_addr().expect("local addr").port();
                tx.send((port, thread_id().unwrap_or(0))).expect("report port");
                loop {
                    let Ok((socket, _)) = listener.accept().await else { continue };
                    let _ = socket.set_nodelay(true);
                    tokio::spawn(serve(socket));
                }
            });
        })
        .expect("server thread");
    rx.recv().expect("server started")
}

fn reply(body: &str) -> Vec<u8> {
    let text = if body.contains("\"role\":\"tool\"") { ANSWER } else { TOOL_CALL };
    let head = format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", text.len());
    [head.as_bytes(), text.as_bytes()].concat()
}

/// Answers every request on one keep-alive connection.
async fn serve(socket: tokio::net::TcpStream) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    let (mut line, mut body) = (String::new(), Vec::new());
    loop {
        let mut length = 0usize;
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        body.resize(length, 0);
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        if write.write_all(&reply(&String::from_utf8_lossy(&body))).await.is_err() {
            return;
        }
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn over_http(quick: bool) {
    let (port, server_tid) = start_server();
    let agent = prompty::load_str(
        &PROMPT.replace("PROVIDER", "openai").replace("ENDPOINT", &format!("http://127.0.0.1:{port}/v1")),
        ".",
        "w.prompty",
    )
    .expect("prompt");
    let inputs = json!({"city": "Paris"});
    let options = TurnOptions::new().tool("get_weather", weather_tool());
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        let answer: String = prompty::turn_async(&agent, &inputs, options.clone()).await.expect("turn");
        assert_eq!(answer, "It is 21°C and sunny in Paris.");
        let (rounds, n) = if quick { (3, 300) } else { (7, 1500) };
        let cpu_per = |cpu0: u64, n: usize| {
            client_cpu_ns(server_tid).unwrap_or(0).saturating_sub(cpu0) as f64 / 1000.0 / n as f64
        };
        let (mut turns, mut invokes) = (Vec::new(), Vec::new());
        for round in 0..=rounds {
            let cpu0 = client_cpu_ns(server_tid).unwrap_or(0);
            for _ in 0..n {
                let out: Value = prompty::turn_async(&agent, &inputs, options.clone()).await.expect("turn");
                std::hint::black_box(out);
            }
            let turn_cpu = cpu_per(cpu0, n);
            let cpu0 = client_cpu_ns(server_tid).unwrap_or(0);
            for _ in 0..n {
                for _ in 0..2 {
                    // Answered with the tool call: the same request size as the turn's first call.
                    let out: Value = prompty::invoke_async(&agent, &inputs).await.expect("invoke");
                    std::hint::black_box(out);
                }
            }
            let invoke_cpu = cpu_per(cpu0, n);
            if round > 0 {
                // Round 0 warms connections and caches.
                turns.push(turn_cpu);
                invokes.push(invoke_cpu);
            }
        }
        let (turn, two) = (median(turns), median(invokes));
        println!(
            "over HTTP (client CPU, {rounds} rounds of {n}): turn_async {turn:.2} µs/turn | two invoke_async \
             {two:.2} µs | difference {:+.2} µs per turn, {:+.2} µs per iteration (the turn's second request is \
             longer: it carries the tool round)",
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
