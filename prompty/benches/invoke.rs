//! Benchmark of `prompty::invoke_async` against a local HTTP server, beside a bare `reqwest` POST of
//! the same body, in the same run, at concurrency 1 and 64.
//!
//! Run with `cargo bench -p prompty --features openai --bench invoke` (`--quick` for short rounds,
//! `--only-prompty` or `--only-bare` to run one side, e.g. under a profiler).
//!
//! The server (`support/server.rs`) is a minimal HTTP/1.1 keep-alive server on 127.0.0.1, on its
//! own thread, answering every request with the same chat completion. The figure that matters is the **client CPU time
//! per call**: the CPU time of every thread of this process except the server's (read from
//! `/proc/self/task/*/schedstat`, in nanoseconds), divided by the number of calls. prompty's
//! overhead is its CPU per call minus the bare request's (validate inputs, render, parse, build the
//! request body, resolve the connection, process the response). Throughput (calls per second of
//! wall time) is printed too. Each figure is the median of several rounds, the cases interleaved.

#[path = "support/server.rs"]
mod server;

use serde_json::{json, Value};
use server::{client_cpu_ns, start_server};
use std::sync::Arc;
use std::time::{Duration, Instant};

const RESPONSE: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Paris is the capital of France.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":25,"completion_tokens":7,"total_tokens":32}}"#;

#[derive(Clone, Copy, PartialEq)]
enum Client {
    Prompty,
    Bare,
}

struct Setup {
    agent: prompty::Agent,
    inputs: Value,
    url: String,
    /// The request body prompty sends, serialized once for the bare client.
    body: bytes::Bytes,
    bare: reqwest::Client,
}

async fn one_call(setup: &Setup, client: Client) {
    match client {
        Client::Prompty => {
            let out = prompty::invoke_async::<serde_json::Value>(&setup.agent, &setup.inputs).await.expect("invoke");
            std::hint::black_box(out);
        }
        Client::Bare => {
            let response = setup
                .bare
                .post(&setup.url)
                .header("authorization", "Bearer sk-bench")
                .header("content-type", "application/json")
                .body(setup.body.clone())
                .send()
                .await
                .expect("send");
            let bytes = response.bytes().await.expect("body");
            let value: Value = serde_json::from_slice(&bytes).expect("json");
            std::hint::black_box(value);
        }
    }
}

struct Sample {
    cpu_us_per_call: f64,
    calls_per_sec: f64,
}

async fn round(setup: &Arc<Setup>, client: Client, concurrency: usize, calls: usize, server_tid: u64) -> Sample {
    let per_task = calls / concurrency;
    let cpu0 = client_cpu_ns(server_tid).unwrap_or(0);
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let setup = Arc::clone(setup);
            tokio::spawn(async move {
                for _ in 0..per_task {
                    one_call(&setup, client).await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    let wall = t0.elapsed();
    let cpu = client_cpu_ns(server_tid).unwrap_or(0).saturating_sub(cpu0);
    let n = (per_task * concurrency) as f64;
    Sample { cpu_us_per_call: cpu as f64 / 1000.0 / n, calls_per_sec: n / wall.as_secs_f64() }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Wall time per call of the steps prompty adds to the bare request, without I/O, on this thread.
fn breakdown(setup: &Setup) {
    fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
    }
    let n = 20_000;
    let messages = prompty::prepare(&setup.agent, &setup.inputs).expect("prepare");
    let response: Value = serde_json::from_str(RESPONSE).expect("response");
    let processor = prompty::get_processor("openai").expect("processor");
    let prepare = per_call(n, || {
        std::hint::black_box(prompty::prepare(&setup.agent, &setup.inputs).expect("prepare"));
    });
    let wire = per_call(n, || {
        let body = prompty::providers::openai::request_body(&setup.agent, &messages).expect("body");
        std::hint::black_box(serde_json::to_vec(&body).expect("serialize"));
    });
    let process = per_call(n, || {
        std::hint::black_box(processor.process(&setup.agent, response.clone()).expect("process"));
    });
    println!(
        "steps without I/O (µs/call, one thread): prepare {prepare:.2}, request body + serialize {wire:.2}, \
         process {process:.2}"
    );
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    // `--only-prompty` / `--only-bare`: one side only (for profiling).
    let only = std::env::args().find_map(|a| match a.as_str() {
        "--only-prompty" => Some(Client::Prompty),
        "--only-bare" => Some(Client::Bare),
        _ => None,
    });
    let (port, server_tid) = start_server(|_| RESPONSE);
    let endpoint = format!("http://127.0.0.1:{port}/v1");
    let agent = prompty::load_str(
        &format!(
            "---\nname: capital\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    \
             endpoint: {endpoint}\n    apiKey: sk-bench\n  options:\n    temperature: 0.2\n    maxOutputTokens: 200\n\
             inputs:\n  country:\n    kind: string\n    default: France\n---\nsystem:\nYou answer geography \
             questions in one sentence.\n\nuser:\nWhat is the capital of {{{{country}}}}?"
        ),
        ".",
        "capital.prompty",
    )
    .expect("bench prompt");
    let inputs = json!({"country": "France"});
    let messages = prompty::prepare(&agent, &inputs).expect("prepare");
    let body = serde_json::to_vec(&prompty::providers::openai::request_body(&agent, &messages).expect("body"))
        .expect("serialize");
    prompty::providers::http::ensure_tls_provider();
    let bare = reqwest::Client::builder().build().expect("bare client");
    let setup = Arc::new(Setup {
        agent,
        inputs,
        url: format!("{endpoint}/chat/completions"),
        body: bytes::Bytes::from(body),
        bare,
    });

    breakdown(&setup);

    let rt =
        tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("client runtime");
    let cpu_available = client_cpu_ns(server_tid).is_some();
    rt.block_on(async {
        // Both produce the same answer.
        let answer = prompty::invoke_async::<serde_json::Value>(&setup.agent, &setup.inputs).await.expect("invoke");
        assert_eq!(answer, json!("Paris is the capital of France."));

        let (rounds, c1_calls, c64_calls) = if quick { (3, 500, 1280) } else { (7, 3000, 6400) };
        // Warm-up: connections, allocator, caches.
        for client in [Client::Prompty, Client::Bare] {
            round(&setup, client, 64, 1280, server_tid).await;
            round(&setup, client, 1, 300, server_tid).await;
        }
        println!("invoke benchmark: {rounds} rounds, interleaved; client CPU excludes the server thread");
        if !cpu_available {
            println!("(no /proc/self/task here: CPU figures are unavailable)");
        }
        for (concurrency, calls) in [(1usize, c1_calls), (64, c64_calls)] {
            let mut samples: [(Vec<f64>, Vec<f64>); 2] = Default::default();
            for _ in 0..rounds {
                for (i, client) in [Client::Prompty, Client::Bare].into_iter().enumerate() {
                    if only.is_some_and(|o| o != client) {
                        samples[i].0.push(f64::NAN);
                        samples[i].1.push(f64::NAN);
                        continue;
                    }
                    let s = round(&setup, client, concurrency, calls, server_tid).await;
                    samples[i].0.push(s.cpu_us_per_call);
                    samples[i].1.push(s.calls_per_sec);
                }
            }
            let [(p_cpu, p_tput), (b_cpu, b_tput)] = samples;
            let (p_cpu, b_cpu, p_tput, b_tput) = (median(p_cpu), median(b_cpu), median(p_tput), median(b_tput));
            println!(
                "concurrency {concurrency:>2} ({calls} calls/round): prompty invoke_async {p_cpu:7.2} µs CPU/call, \
                 {p_tput:8.0} calls/s | bare reqwest POST {b_cpu:7.2} µs CPU/call, {b_tput:8.0} calls/s | \
                 overhead {:+.2} µs CPU/call, ratio {:.2}x CPU, throughput {:.2}x",
                p_cpu - b_cpu,
                p_cpu / b_cpu,
                p_tput / b_tput
            );
        }
    });
    // Give the runtime a moment to close connections before exit (quiet shutdown).
    rt.shutdown_timeout(Duration::from_millis(100));
}
