//! Benchmark of the evaluation runner: what `prompty::eval::run` adds per case over making the
//! same requests directly with `prompty::prepare_async` + `prompty::run_async`, both at 64 cases
//! in flight, against a local HTTP server that answers at once.
//!
//! Run with `cargo bench -p prompty --features openai --bench eval` (`--quick` for short rounds).
//!
//! The server (`support/server.rs`) is a minimal HTTP/1.1 keep-alive server on 127.0.0.1 on its
//! own thread, answering every request with the same chat completion. Each round runs `CASES`
//! cases (one `contains` assertion each, the response cache off) through the runner, and the same
//! `CASES` requests directly, 64 at a time. The runner's overhead per case is the difference of
//! the two wall times divided by the cases; it is printed as a share of a case's wall time (the
//! mean `latencyMs` the runner reports, i.e. what a case takes at 64 in flight against this
//! server — a real model takes far longer, so this is the worst case). Medians of several
//! rounds, the two sides interleaved.

#[path = "support/server.rs"]
mod server;

use prompty::eval::{self, CacheMode, EvalOptions};
use serde_json::json;
use server::start_server;
use std::time::{Duration, Instant};

const RESPONSE: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Paris is the capital of France.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":25,"completion_tokens":7,"total_tokens":32}}"#;

const CONCURRENCY: usize = 64;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The same requests as the eval's cases, made directly, `CONCURRENCY` at a time.
async fn direct(agent: &prompty::Agent, cases: usize) -> Duration {
    use futures_util::StreamExt;
    let t0 = Instant::now();
    let calls = (0..cases).map(|i| async move {
        let inputs = json!({"country": format!("France {i}")});
        let messages = prompty::prepare_async(agent, &inputs).await.expect("prepare");
        let answer = prompty::run_async(agent, &messages).await.expect("run");
        std::hint::black_box(answer);
    });
    let mut stream = futures_util::stream::iter(calls).buffer_unordered(CONCURRENCY);
    while stream.next().await.is_some() {}
    t0.elapsed()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, cases) = if quick { (3, 640) } else { (7, 2560) };
    let (port, _server_tid) = start_server(|_| RESPONSE);
    let endpoint = format!("http://127.0.0.1:{port}/v1");
    let dir = std::env::temp_dir().join(format!("prompty-eval-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench folder");
    let prompt = format!(
        "---\nname: capital\nmodel:\n  id: gpt-4o\n  provider: openai\n  connection:\n    kind: key\n    \
         endpoint: {endpoint}\n    apiKey: sk-bench\n  options:\n    temperature: 0.2\n\
         inputs:\n  country:\n    kind: string\n---\nsystem:\nYou answer geography questions in one sentence.\n\n\
         user:\nWhat is the capital of {{{{country}}}}?"
    );
    std::fs::write(dir.join("capital.prompty"), &prompt).expect("bench prompt");
    let mut yaml = String::from("prompt: capital.prompty\ncases:\n");
    for i in 0..cases {
        yaml.push_str(&format!("  - {{name: c{i}, vars: {{country: France {i}}}, assert: [{{contains: Paris}}]}}\n"));
    }
    std::fs::write(dir.join("capital.eval.yaml"), yaml).expect("bench eval file");
    let file = eval::load(&dir.join("capital.eval.yaml")).expect("eval file");
    let agent = prompty::load(dir.join("capital.prompty")).expect("agent");
    let mut options = EvalOptions::default();
    options.cache = CacheMode::Off;
    options.concurrency = Some(CONCURRENCY);

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    rt.block_on(async {
        // Warm-up.
        eval::run(&file, &options).await.expect("eval");
        direct(&agent, cases).await;
        let (mut runner, mut bare, mut case_ms) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let t0 = Instant::now();
            let report = eval::run(&file, &options).await.expect("eval");
            runner.push(t0.elapsed().as_secs_f64());
            assert!(report.passed());
            let cells: Vec<f64> = report.cases.iter().flat_map(|c| &c.cells).map(|c| c.latency_ms as f64).collect();
            case_ms.push(cells.iter().sum::<f64>() / cells.len() as f64);
            bare.push(direct(&agent, cases).await.as_secs_f64());
        }
        let (runner, bare, case_ms) = (median(runner), median(bare), median(case_ms));
        let overhead_us = (runner - bare) / cases as f64 * 1e6;
        // A case's wall time: its latency at 64 in flight (at least 1 ms: the report counts whole ms).
        let case_us = (case_ms * 1000.0).max(1000.0);
        println!("eval benchmark: {cases} cases at {CONCURRENCY} in flight, {rounds} rounds, medians");
        println!(
            "runner {:.1} ms, direct prepare+run_async {:.1} ms: overhead {overhead_us:+.1} µs per case; \
             a case takes {case_ms:.1} ms at {CONCURRENCY} in flight → overhead {:.2} % of a case's wall time",
            runner * 1e3,
            bare * 1e3,
            overhead_us / case_us * 100.0
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}
