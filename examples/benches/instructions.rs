//! Instruction counts of the pipeline's steps, measured with valgrind's callgrind: exact and
//! repeatable (the same binary, inputs and environment give the same count, whatever else the
//! machine is doing), so a change of a few hundred instructions shows.
//!
//! Run with `scripts/bench-instructions [FILTER...] [--profile]` (it installs valgrind when it is
//! missing), or `cargo bench -p prompty-examples --bench instructions -- [FILTER...] [--profile]`.
//! Prints one line per row: instructions (Ir) per operation.
//!
//! | row | one operation |
//! |---|---|
//! | `load basic (new text)` | `load_str` of `tests/fixtures/basic.prompty` with a frontmatter not seen before (a `# variant N` comment line added) |
//! | `load large (new text)` | the same for `tests/bench/large.prompty` (50 inputs, a 20 KB template) |
//! | `load basic (same text)` | `load_str` of a text loaded before (the finished agent is cached) |
//! | `prepare basic` / `threaded` / `large` | `prompty::prepare` with the inputs of `tests/bench/`, the agent loaded once |
//! | `prepare basic traced` | the same with a trace backend that keeps nothing: every span recorded, redacted and handed over |
//! | `typed prepare basic` / `threaded` | the typed module's `prepare(&Inputs)` (`include_prompty!`) |
//! | `render segments basic` / `large` | `prompty::render_segments` with the inputs of `prepare basic` / `large` |
//! | `invoke basic` | `prompty::invoke_async` of basic against a local HTTP server, on a current-thread runtime, connection kept alive |
//! | `bare POST` | a bare `reqwest` POST of the same request body, and `serde_json` of the answer, on the same runtime |
//! | `invoke overhead` | `invoke basic` minus `bare POST`: what prompty adds to the HTTP call |
//!
//! How: run without `--row`, the binary starts itself once per row under
//! `valgrind --tool=callgrind --toggle-collect='*prompty_bench_measured_<row>*'`, so only the
//! instructions inside that row's measured function count (every thread's, while it runs). The
//! child warms up first (lazily initialised statics, caches, the connection pool), then calls the
//! measured function [`CALLS`] times; the parent divides the total by [`CALLS`]. The HTTP server
//! of the invoke rows is a third process (this binary with `--serve`), so its work never counts.
//! `--profile` keeps each row's callgrind file and prints its path for `callgrind_annotate`.

#[path = "../../prompty/benches/support/server.rs"]
#[allow(dead_code)] // its client-CPU accounting is for the wall-clock benchmarks
mod server;

use serde_json::Value;
use std::hint::black_box;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

prompty::include_prompty!("../tests/fixtures/basic.prompty");
prompty::include_prompty!("../tests/fixtures/threaded.prompty");

/// How many times each row's measured function runs.
const CALLS: u64 = 5;

const ROWS: &[&str] = &[
    "load basic (new text)",
    "load large (new text)",
    "load basic (same text)",
    "prepare basic",
    "prepare basic traced",
    "prepare threaded",
    "prepare large",
    "typed prepare basic",
    "typed prepare threaded",
    "render segments basic",
    "render segments large",
    "invoke basic",
    "bare POST",
];

const RESPONSE: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4","choices":[{"index":0,"message":{"role":"assistant","content":"An analytical engine is a mechanical general-purpose computer.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":25,"completion_tokens":11,"total_tokens":36}}"#;

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(data(path)).unwrap_or_else(|e| panic!("cannot read tests/{path}: {e}"))
}

fn inputs(name: &str) -> Value {
    let all: Value = serde_json::from_str(&read("bench/inputs.json")).expect("bench/inputs.json is JSON");
    all[name].clone()
}

/// The row's function name, as `--toggle-collect` matches it.
fn slug(row: &str) -> String {
    row.chars()
        .filter_map(|c| match c {
            ' ' => Some('_'),
            c if c.is_ascii_alphanumeric() => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// `text` with a comment line added to its frontmatter: a text the loader has not seen.
fn variant(text: &str, i: usize) -> String {
    text.replacen("\n---\n", &format!("\n# variant {i}\n---\n"), 1)
}

#[inline(never)]
fn prompty_bench_measured_load_basic_new_text(text: &str, dir: &Path) {
    black_box(prompty::load_str(black_box(text), dir, "bench.prompty").expect("loads"));
}

#[inline(never)]
fn prompty_bench_measured_load_large_new_text(text: &str, dir: &Path) {
    black_box(prompty::load_str(black_box(text), dir, "bench.prompty").expect("loads"));
}

#[inline(never)]
fn prompty_bench_measured_load_basic_same_text(text: &str, dir: &Path) {
    black_box(prompty::load_str(black_box(text), dir, "bench.prompty").expect("loads"));
}

#[inline(never)]
fn prompty_bench_measured_prepare_basic(agent: &prompty::Agent, inputs: &Value) {
    black_box(prompty::prepare(agent, black_box(inputs)).expect("prepares"));
}

#[inline(never)]
fn prompty_bench_measured_prepare_basic_traced(agent: &prompty::Agent, inputs: &Value) {
    black_box(prompty::prepare(agent, black_box(inputs)).expect("prepares"));
}

/// A trace backend that keeps nothing: what recording the spans costs (built, redacted, handed
/// over), without any output.
struct Discard;

impl prompty::trace::TraceBackend for Discard {
    fn span_ended(&self, span: &prompty::trace::FinishedSpan) {
        black_box(span);
    }
}

#[inline(never)]
fn prompty_bench_measured_prepare_threaded(agent: &prompty::Agent, inputs: &Value) {
    black_box(prompty::prepare(agent, black_box(inputs)).expect("prepares"));
}

#[inline(never)]
fn prompty_bench_measured_render_segments_basic(agent: &prompty::Agent, inputs: &Value) {
    black_box(prompty::render_segments(agent, black_box(inputs)).expect("renders"));
}

#[inline(never)]
fn prompty_bench_measured_render_segments_large(agent: &prompty::Agent, inputs: &Value) {
    black_box(prompty::render_segments(agent, black_box(inputs)).expect("renders"));
}

#[inline(never)]
fn prompty_bench_measured_prepare_large(agent: &prompty::Agent, inputs: &Value) {
    black_box(prompty::prepare(agent, black_box(inputs)).expect("prepares"));
}

#[inline(never)]
fn prompty_bench_measured_typed_prepare_basic(inputs: &basic::Inputs) {
    black_box(basic::prepare(black_box(inputs)).expect("prepares"));
}

#[inline(never)]
fn prompty_bench_measured_typed_prepare_threaded(inputs: &threaded::Inputs) {
    black_box(threaded::prepare(black_box(inputs)).expect("prepares"));
}

#[inline(never)]
fn prompty_bench_measured_invoke_basic(rt: &tokio::runtime::Runtime, agent: &prompty::Agent, inputs: &Value) {
    black_box(rt.block_on(prompty::invoke_async::<Value>(agent, black_box(inputs))).expect("invokes"));
}

#[inline(never)]
fn prompty_bench_measured_bare_post(rt: &tokio::runtime::Runtime, post: &BarePost) {
    black_box(rt.block_on(post.send()));
}

/// A bare `reqwest` POST of the body prompty sends for the same prompt and inputs.
struct BarePost {
    client: reqwest::Client,
    url: String,
    body: bytes::Bytes,
}

impl BarePost {
    async fn send(&self) -> Value {
        let response = self
            .client
            .post(&self.url)
            .header("authorization", "Bearer sk-bench")
            .header("content-type", "application/json")
            .body(self.body.clone())
            .send()
            .await
            .expect("sends");
        serde_json::from_slice(&response.bytes().await.expect("reads")).expect("JSON")
    }
}

/// Runs one row: warm-up, then [`CALLS`] calls of its measured function.
fn run_row(row: &str) {
    std::env::set_var("OPENAI_API_KEY", "sk-bench");
    let dir = data("fixtures");
    let repeat = |f: &mut dyn FnMut(usize)| (0..CALLS as usize).for_each(f);
    match row {
        "load basic (new text)" | "load large (new text)" => {
            let text = read(if row.contains("basic") { "fixtures/basic.prompty" } else { "bench/large.prompty" });
            for i in 0..3 {
                prompty::load_str(&variant(&text, 1000 + i), &dir, "bench.prompty").expect("loads");
            }
            let texts: Vec<String> = (0..CALLS as usize).map(|i| variant(&text, i)).collect();
            let measured = if row.contains("basic") {
                prompty_bench_measured_load_basic_new_text
            } else {
                prompty_bench_measured_load_large_new_text
            };
            repeat(&mut |i| measured(&texts[i], &dir));
        }
        "load basic (same text)" => {
            let text = read("fixtures/basic.prompty");
            for _ in 0..3 {
                prompty::load_str(&text, &dir, "bench.prompty").expect("loads");
            }
            repeat(&mut |_| prompty_bench_measured_load_basic_same_text(&text, &dir));
        }
        "render segments basic" | "render segments large" => {
            let (file, inputs) = match row {
                "render segments basic" => ("fixtures/basic.prompty", inputs("basic")),
                _ => (
                    "bench/large.prompty",
                    serde_json::from_str(&read("bench/large_inputs.json")).expect("large_inputs.json is JSON"),
                ),
            };
            let agent = prompty::load_str(&read(file), &dir, "bench.prompty").expect("loads");
            for _ in 0..3 {
                prompty::render_segments(&agent, &inputs).expect("renders");
            }
            let measured = match row {
                "render segments basic" => prompty_bench_measured_render_segments_basic,
                _ => prompty_bench_measured_render_segments_large,
            };
            repeat(&mut |_| measured(&agent, &inputs));
        }
        "prepare basic" | "prepare threaded" | "prepare large" => {
            let (file, inputs) = match row {
                "prepare basic" => ("fixtures/basic.prompty", inputs("basic")),
                "prepare threaded" => ("fixtures/threaded.prompty", inputs("threaded")),
                _ => (
                    "bench/large.prompty",
                    serde_json::from_str(&read("bench/large_inputs.json")).expect("large_inputs.json is JSON"),
                ),
            };
            let agent = prompty::load_str(&read(file), &dir, "bench.prompty").expect("loads");
            for _ in 0..3 {
                prompty::prepare(&agent, &inputs).expect("prepares");
            }
            let measured = match row {
                "prepare basic" => prompty_bench_measured_prepare_basic,
                "prepare threaded" => prompty_bench_measured_prepare_threaded,
                _ => prompty_bench_measured_prepare_large,
            };
            repeat(&mut |_| measured(&agent, &inputs));
        }
        "prepare basic traced" => {
            let agent = prompty::load_str(&read("fixtures/basic.prompty"), &dir, "bench.prompty").expect("loads");
            let inputs = inputs("basic");
            prompty::trace::add("discard", std::sync::Arc::new(Discard));
            for _ in 0..3 {
                prompty::prepare(&agent, &inputs).expect("prepares");
            }
            repeat(&mut |_| prompty_bench_measured_prepare_basic_traced(&agent, &inputs));
        }
        "typed prepare basic" => {
            let typed: basic::Inputs = serde_json::from_value(inputs("basic")).expect("fits");
            for _ in 0..3 {
                basic::prepare(&typed).expect("prepares");
            }
            repeat(&mut |_| prompty_bench_measured_typed_prepare_basic(&typed));
        }
        "typed prepare threaded" => {
            let typed: threaded::Inputs = serde_json::from_value(inputs("threaded")).expect("fits");
            for _ in 0..3 {
                threaded::prepare(&typed).expect("prepares");
            }
            repeat(&mut |_| prompty_bench_measured_typed_prepare_threaded(&typed));
        }
        "invoke basic" | "bare POST" => {
            let port = std::env::var("PROMPTY_BENCH_PORT").expect("the parent sets PROMPTY_BENCH_PORT");
            let endpoint = format!("http://127.0.0.1:{port}/v1");
            std::env::set_var("OPENAI_ENDPOINT", &endpoint);
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            let agent = prompty::load_str(&read("fixtures/basic.prompty"), &dir, "bench.prompty").expect("loads");
            let inputs = inputs("basic");
            if row == "invoke basic" {
                for _ in 0..3 {
                    rt.block_on(prompty::invoke_async::<Value>(&agent, &inputs)).expect("invokes");
                }
                repeat(&mut |_| prompty_bench_measured_invoke_basic(&rt, &agent, &inputs));
            } else {
                let messages = prompty::prepare(&agent, &inputs).expect("prepares");
                let body = prompty::providers::openai::request_body(&agent, &messages).expect("body");
                prompty::providers::http::ensure_tls_provider();
                let post = BarePost {
                    client: reqwest::Client::builder().build().expect("client"),
                    url: format!("{endpoint}/chat/completions"),
                    body: serde_json::to_vec(&body).expect("serializes").into(),
                };
                for _ in 0..3 {
                    rt.block_on(post.send());
                }
                repeat(&mut |_| prompty_bench_measured_bare_post(&rt, &post));
            }
        }
        other => panic!("unknown row {other:?}"),
    }
}

/// The total of the `summary:` (or `totals:`) line of a callgrind output file.
fn callgrind_total(path: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("summary:").or_else(|| l.strip_prefix("totals:")))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

/// Starts the HTTP server process; returns it and its port.
fn start_server(me: &Path) -> (std::process::Child, String) {
    let mut child = Command::new(me).arg("--serve").stdout(Stdio::piped()).spawn().expect("the server process starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("the server's port");
    (child, line.trim().to_owned())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") {
        let (port, _) = server::start_server(|_| RESPONSE);
        println!("{port}");
        loop {
            std::thread::park();
        }
    }
    if let Some(i) = args.iter().position(|a| a == "--row") {
        run_row(args.get(i + 1).expect("--row ROW"));
        return;
    }
    let profile = args.iter().any(|a| a == "--profile");
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("valgrind is not installed: `apt-get install valgrind` (scripts/bench-instructions does it)");
        std::process::exit(2);
    }
    let me = std::env::current_exe().expect("this binary");
    let selected: Vec<&str> =
        ROWS.iter().copied().filter(|r| filters.is_empty() || filters.iter().any(|f| r.contains(f.as_str()))).collect();
    let needs_server = selected.iter().any(|r| r.contains("invoke") || r.contains("POST"));
    let server = needs_server.then(|| start_server(&me));
    let out_dir = std::env::temp_dir().join(format!("prompty-bench-instructions-{}", std::process::id()));
    std::fs::create_dir_all(&out_dir).expect("a temporary folder");
    println!("{:<28} {:>14}", "row", "Ir/op");
    let mut results = Vec::new();
    for row in selected {
        let out = out_dir.join(format!("{}.callgrind", slug(row)));
        let mut cmd = Command::new("valgrind");
        cmd.arg("--tool=callgrind")
            .arg(format!("--toggle-collect=*prompty_bench_measured_{}*", slug(row)))
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(&me)
            .args(["--row", row])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some((_, port)) = &server {
            cmd.env("PROMPTY_BENCH_PORT", port);
        }
        let status = cmd.status().expect("valgrind runs");
        let total = callgrind_total(&out).filter(|_| status.success());
        match total {
            Some(total) => {
                let per_op = total / CALLS;
                println!("{row:<28} {per_op:>14}");
                results.push((row, per_op));
            }
            None => println!("{row:<28} {:>14}", "failed"),
        }
        if profile {
            println!("  callgrind output: {}", out.display());
        }
    }
    let get = |name: &str| results.iter().find(|(r, _)| *r == name).map(|(_, v)| *v);
    if let (Some(invoke), Some(bare)) = (get("invoke basic"), get("bare POST")) {
        println!("{:<28} {:>14}", "invoke overhead", invoke.saturating_sub(bare));
    }
    if let Some((mut child, _)) = server {
        let _ = child.kill();
        let _ = child.wait();
    }
    if !profile {
        let _ = std::fs::remove_dir_all(&out_dir);
    }
}
