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
//! mean wall time of one direct request at 64 in flight against this server — a real model takes
//! far longer, so this is the worst case). The client CPU per case of both sides is printed too.
//! Medians of several rounds, the two sides interleaved.

#[path = "support/server.rs"]
mod server;

use prompty::eval::{self, CacheMode, EvalOptions};
use serde_json::json;
use server::{client_cpu_ns, start_server};
use std::time::{Duration, Instant};

const RESPONSE: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"Paris is the capital of France.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":25,"completion_tokens":7,"total_tokens":32}}"#;

const CONCURRENCY: usize = 64;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The same requests as the eval's cases, made directly, `CONCURRENCY` at a time: the wall time
/// of all, and the mean wall time of one (in µs).
async fn direct(agent: &prompty::Agent, cases: usize) -> (Duration, f64) {
    use futures_util::StreamExt;
    let t0 = Instant::now();
    let calls = (0..cases).map(|i| async move {
        let t = Instant::now();
        let inputs = json!({"country": format!("France {i}")});
        let messages = prompty::prepare_async(agent, &inputs).await.expect("prepare");
        let answer = prompty::run_async(agent, &messages).await.expect("run");
        std::hint::black_box(answer);
        t.elapsed().as_secs_f64() * 1e6
    });
    let mut stream = futures_util::stream::iter(calls).buffer_unordered(CONCURRENCY);
    let mut sum = 0.0;
    while let Some(us) = stream.next().await {
        sum += us;
    }
    (t0.elapsed(), sum / cases as f64)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (rounds, cases) = if quick { (3, 640) } else { (7, 2560) };
    let (port, server_tid) = start_server(|_| RESPONSE);
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
        let _ = direct(&agent, cases).await;
        let (mut runner, mut bare, mut case_ms) = (Vec::new(), Vec::new(), Vec::new());
        let (mut runner_cpu, mut bare_cpu) = (Vec::new(), Vec::new());
        let cpu = || client_cpu_ns(server_tid).unwrap_or(0) as f64;
        for _ in 0..rounds {
            let (t0, c0) = (Instant::now(), cpu());
            let report = eval::run(&file, &options).await.expect("eval");
            runner.push(t0.elapsed().as_secs_f64());
            runner_cpu.push((cpu() - c0) / cases as f64 / 1000.0);
            assert!(report.passed());
            let c0 = cpu();
            let (wall, case_us) = direct(&agent, cases).await;
            bare.push(wall.as_secs_f64());
            case_ms.push(case_us / 1000.0);
            bare_cpu.push((cpu() - c0) / cases as f64 / 1000.0);
        }
        let (runner_cpu, bare_cpu) = (median(runner_cpu), median(bare_cpu));
        let (runner, bare, case_ms) = (median(runner), median(bare), median(case_ms));
        let overhead_us = (runner - bare) / cases as f64 * 1e6;
        let case_us = case_ms * 1000.0;
        println!("eval benchmark: {cases} cases at {CONCURRENCY} in flight, {rounds} rounds, medians");
        println!(
            "runner {:.1} ms, direct prepare+run_async {:.1} ms: overhead {overhead_us:+.1} µs per case; \
             a case takes {case_ms:.1} ms at {CONCURRENCY} in flight → overhead {:.2} % of a case's wall time",
            runner * 1e3,
            bare * 1e3,
            overhead_us / case_us * 100.0
        );
        println!(
            "client CPU per case (server thread excluded): runner {runner_cpu:.1} µs, direct {bare_cpu:.1} µs, \
             difference {:+.1} µs",
            runner_cpu - bare_cpu
        );
    });
    let _ = std::fs::remove_dir_all(&dir);
}
