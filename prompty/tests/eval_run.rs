//! The evaluation runner (`prompty::eval::run`) against real servers on 127.0.0.1: the aimock
//! server (fixtures `e2e/fixtures/eval.json`), small HTTP servers of this file (rate limits,
//! concurrency) and the llama.cpp server (judges through a real model). The eval files and prompts
//! are `fixtures/eval/`, copied to a fresh folder with `BASE_URL` replaced by the server's URL.

#[path = "e2e/common.rs"]
mod common;
#[path = "e2e/llama.rs"]
mod llama;
#[path = "e2e/peers.rs"]
mod peers;

use common::Aimock;
use prompty::eval::{self, CacheMode, EvalError, EvalOptions, EvalReport, Status};
use serde_json::json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The tool of `weather.prompty`.
#[prompty::tool]
async fn get_weather(city: String, unit: Option<String>) -> String {
    format!("21° {} and sunny in {city}", unit.unwrap_or_else(|| "celsius".into()))
}

/// `fixtures/eval/` copied into a new folder, `BASE_URL` replaced by `base`.
fn fixtures(base: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "prompty-eval-run-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/eval");
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(dir.join(path.file_name().unwrap()), text.replace("BASE_URL", base)).unwrap();
    }
    dir
}

fn load(dir: &Path, file: &str) -> eval::EvalFile {
    eval::load(&dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn options(dir: &Path, cache: CacheMode) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.cache = cache;
    options.cache_dir = Some(dir.join("cache"));
    options
}

/// The assertions of a report's only cell, by label, as (pass, reason).
fn assertions(report: &EvalReport) -> Vec<(String, bool, f64, String)> {
    assert_eq!(report.cases.len(), 1, "{report:#?}");
    assert_eq!(report.cases[0].cells.len(), 1, "{report:#?}");
    let cell = &report.cases[0].cells[0];
    assert_eq!(cell.error, None, "{cell:#?}");
    cell.assertions.iter().map(|a| (a.label.clone(), a.pass, a.score, a.reason.clone())).collect()
}

#[tokio::test]
async fn every_assertion_kind_passes() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let report = eval::run(&load(&dir, "passing.eval.yaml"), &options(&dir, CacheMode::Off)).await.unwrap();
    let results = assertions(&report);
    for (label, pass, _, reason) in &results {
        assert!(pass, "{label}: {reason}");
    }
    let kinds: Vec<&str> = report.cases[0].cells[0].assertions.iter().map(|a| a.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "latency", "equals", "contains", "contains", "regex", "tokens", "cost", "similar", "judge", "judge",
            "is-json"
        ]
    );
    let cell = &report.cases[0].cells[0];
    assert_eq!(cell.status, Status::Pass);
    // Eight yes/no checks, the similarity's cosine, the two judges' scores.
    let expected = (8.0 + 0.9 / 0.82f64.sqrt() + 0.9 + 0.75) / 11.0;
    assert!((cell.score - expected).abs() < 1e-9, "{} != {expected}", cell.score);
    assert_eq!((cell.usage.input, cell.usage.output, cell.model_calls), (18, 7, 1));
    assert_eq!(cell.output, json!("The capital of France is Paris."));
    assert_eq!(cell.messages.last().unwrap().text(), "The capital of France is Paris.");
    // The judge's structured output and the text judge's JSON in prose are both read.
    assert!(results[8].3.contains("0.90") && results[8].3.contains("accurate and concise"), "{}", results[8].3);
    assert!(results[9].3.contains("0.75") && results[9].3.contains("close enough"), "{}", results[9].3);
    // The judge received only the inputs it declares; the text judge got `expected`.
    let bodies: Vec<String> =
        server.requests_to("/v1/chat/completions").iter().map(|e| e["body"]["messages"].to_string()).collect();
    assert!(
        bodies.iter().any(|b| b.contains("Grade by accuracy the answer: The capital of France is Paris.")),
        "{bodies:#?}"
    );
    assert!(bodies.iter().any(|b| b.contains("against Paris")), "{bodies:#?}");
    assert_eq!(report.summary.passed, 1);
    assert!(report.passed());
}

#[tokio::test]
async fn every_assertion_kind_fails_and_says_why() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let report = eval::run(&load(&dir, "failing.eval.yaml"), &options(&dir, CacheMode::Off)).await.unwrap();
    let results = assertions(&report);
    for (label, pass, _, reason) in &results {
        assert!(!pass, "{label} should fail: {reason}");
    }
    let reasons: Vec<&str> = results.iter().map(|r| r.3.as_str()).collect();
    let expect = [
        r#"expected "Berlin", found "The capital of France is Paris.""#,
        r#"expected all of ["Paris", "Rome"]; missing ["Rome"]"#,
        r#"expected all of ["paris"]; missing ["paris"]"#,
        r"expected text matching /^\d+$/",
        "expected JSON, found",
        "expected at most 0 ms, took",
        "expected tokens output ≤ 2, used 7 output > 2",
        "expected at most $0.0000001, cost $0.000115 (18 input and 7 output tokens)",
        r#"expected similarity ≥ 0.5 to "Berlin", found 0.000"#,
        "judge score 0.20 (threshold 0.5): it names the wrong city",
        "the judge `judge` answered \"I would rather not give a number.\": expected a JSON object",
        "not: expected all of [\"Paris\"]",
    ];
    assert_eq!(reasons.len(), expect.len());
    for (reason, want) in reasons.iter().zip(expect) {
        assert!(reason.contains(want), "{reason:?} should contain {want:?}");
    }
    let cell = &report.cases[0].cells[0];
    assert_eq!(cell.status, Status::Fail);
    assert!((cell.score - 0.2 / 12.0).abs() < 1e-9, "only the judge scored: {}", cell.score);
    assert_eq!(report.summary.failed, 1);
    assert!(!report.passed());
}

#[tokio::test]
async fn structured_output_and_schemas() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let report = eval::run(&load(&dir, "structured.eval.yaml"), &options(&dir, CacheMode::Off)).await.unwrap();
    for (label, pass, _, reason) in assertions(&report) {
        assert!(pass, "{label}: {reason}");
    }
    assert_eq!(report.cases[0].cells[0].output, json!({"city": "Paris", "population": 2100000}));
    // The schema's failure says where and why (seen through the negated assertion's reason).
    let negated = &report.cases[0].cells[0].assertions[3];
    assert_eq!(
        negated.reason,
        "not: expected JSON fitting the schema: $.population: expected at most 1000, found 2100000"
    );
}

#[tokio::test]
async fn a_prompt_with_tools_runs_through_turn() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let report = eval::run(&load(&dir, "tools.eval.yaml"), &options(&dir, CacheMode::Off)).await.unwrap();
    for (label, pass, _, reason) in assertions(&report) {
        assert!(pass, "{label}: {reason}");
    }
    let cell = &report.cases[0].cells[0];
    assert_eq!(cell.model_calls, 2);
    assert_eq!(cell.output, json!("It is 21°C and sunny in Paris."));
    assert!(cell.messages.iter().any(|m| m.text().contains("21° celsius and sunny in Paris")), "{:#?}", cell.messages);
}

#[tokio::test]
async fn the_matrix_errors_as_cells_and_tags() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let file = load(&dir, "matrix.eval.yaml");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let progress_seen = seen.clone();
    let mut options = options(&dir, CacheMode::Off);
    options.progress = Some(Arc::new(move |p: &eval::Progress| {
        progress_seen.lock().unwrap().push((p.done, p.total, p.case.clone(), p.column.clone()))
    }));
    let report = eval::run(&file, &options).await.unwrap();
    let ids: Vec<&str> = report.columns.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["answer/big", "answer/mini", "v2/big", "v2/mini"]);
    assert_eq!(report.cases.len(), 3);
    for row in &report.cases {
        let cells: Vec<&str> = row.cells.iter().map(|c| c.column.as_str()).collect();
        assert_eq!(cells, ids, "cells in column order");
    }
    // capital passes everywhere; hello passes by threshold (score 1/1.5 ≥ 0.5) though one
    // assertion fails; refused is an error in every column, with the provider's message.
    assert!(report.cases[0].cells.iter().all(|c| c.status == Status::Pass));
    assert!(report.cases[1].cells.iter().all(|c| c.status == Status::Pass && (c.score - 1.0 / 1.5).abs() < 1e-9));
    for cell in &report.cases[2].cells {
        assert_eq!(cell.status, Status::Error);
        let error = cell.error.as_deref().unwrap();
        assert!(error.contains("HTTP 401") && error.contains("Incorrect API key provided"), "{error}");
        assert!(!error.contains("sk-eval-secret"), "{error}");
    }
    assert_eq!((report.summary.passed, report.summary.failed, report.summary.errors), (8, 0, 4));
    assert_eq!(report.summary.mean_score["answer/big"], (1.0 + 1.0 / 1.5 + 0.0) / 3.0);
    // Each model was asked: the variant's id and options reached the server.
    let bodies: Vec<serde_json::Value> =
        server.requests_to("/v1/chat/completions").into_iter().map(|e| e["body"].clone()).collect();
    assert_eq!(bodies.len(), 12);
    assert_eq!(bodies.iter().filter(|b| b["model"] == "gpt-4o-mini" && b["temperature"] == 0).count(), 6);
    assert_eq!(bodies.iter().filter(|b| b["model"] == "gpt-4o").count(), 6);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 12);
        assert_eq!(seen.last().unwrap().0, 12);
        assert!(seen.iter().all(|s| s.1 == 12));
    }

    // Tags: only the smalltalk case; names: only `capital`.
    let mut tagged = options.clone();
    tagged.tags = vec!["smalltalk".into()];
    let report = eval::run(&file, &tagged).await.unwrap();
    assert_eq!(report.cases.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["hello"]);
    let mut named = options.clone();
    named.cases = vec!["capital".into()];
    let report = eval::run(&file, &named).await.unwrap();
    assert_eq!(report.cases.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["capital"]);
}

#[tokio::test]
async fn the_cache_replays_without_a_request() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let file = load(&dir, "passing.eval.yaml");
    let first = eval::run(&file, &options(&dir, CacheMode::ReadWrite)).await.unwrap();
    let sent = server.journal().len();
    // The answer, two judges, and two embeddings.
    assert_eq!(sent, 5, "{:#?}", server.journal());
    assert_eq!((first.summary.cache_hits, first.summary.cache_misses), (0, 5));
    assert!(!first.cases[0].cells[0].cached);
    let files: Vec<PathBuf> = std::fs::read_dir(dir.join("cache")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 5, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        assert!(!text.contains("sk-eval-secret"), "{}: {text}", f.display());
        let record: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(record["latencyMs"].is_u64() && record["response"].is_object(), "{record:#}");
        assert!(f.extension().is_some_and(|e| e == "json") && f.file_stem().unwrap().len() == 64);
    }

    for mode in [CacheMode::ReadWrite, CacheMode::Replay] {
        let again = eval::run(&file, &options(&dir, mode)).await.unwrap();
        assert_eq!(server.journal().len(), sent, "a replayed run sends no request");
        assert_eq!((again.summary.cache_hits, again.summary.cache_misses), (5, 0));
        let (a, b) = (&first.cases[0].cells[0], &again.cases[0].cells[0]);
        assert!(b.cached);
        assert_eq!(
            (a.output.clone(), a.score, a.usage, a.model_calls),
            (b.output.clone(), b.score, b.usage, b.model_calls)
        );
        assert!(b.latency_ms >= a.latency_ms.saturating_sub(50), "a replay counts the recorded latency");
    }

    // A cache miss in replay mode names the case and says how to record.
    let mut empty = options(&dir, CacheMode::Replay);
    empty.cache_dir = Some(dir.join("empty"));
    let err = eval::run(&file, &empty).await.unwrap_err();
    assert!(matches!(err, EvalError::Run(_)));
    let text = err.to_string();
    assert!(
        text.contains("case `capital` (answer)") && text.contains("record") && text.contains("passing.eval.yaml:6"),
        "{text}"
    );
    assert_eq!(server.journal().len(), sent);

    // Record sends again and replaces.
    let recorded = eval::run(&file, &options(&dir, CacheMode::Record)).await.unwrap();
    assert_eq!(server.journal().len(), sent * 2);
    assert_eq!(recorded.summary.cache_misses, 5);
}

#[test]
fn an_invalid_file_is_refused_before_any_request() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    std::fs::write(
        dir.join("bad.eval.yaml"),
        "prompt: missing.prompty\ncases:\n  - vars: {question: hi}\n    assert:\n      - {type: regex, value: 'a('}\n      - {type: judge, prompt: nojudge.prompty}\n",
    )
    .unwrap();
    // What the prompt cannot give is refused too: no `outputs`, no such tool.
    std::fs::write(
        dir.join("unmeetable.eval.yaml"),
        "prompt: answer.prompty\ncases:\n  - vars: {question: hi}\n    assert:\n      - {type: output-type}\n      - {type: tool-called, value: get_weather}\n",
    )
    .unwrap();
    let err = eval::run_blocking(&load(&dir, "unmeetable.eval.yaml"), &options(&dir, CacheMode::Off)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("unmeetable.eval.yaml:5:9: `output-type` checks the answer against the prompt's `outputs`, and answer.prompty declares none"), "{text}");
    assert!(
        text.contains(
            "unmeetable.eval.yaml:6:9: `tool-called` names `get_weather`, which is no tool of answer.prompty"
        ),
        "{text}"
    );
    let err = eval::run_blocking(&load(&dir, "bad.eval.yaml"), &options(&dir, CacheMode::Off)).unwrap_err();
    let EvalError::Invalid(diagnostics) = &err else { panic!("{err}") };
    let text = err.to_string();
    assert_eq!(diagnostics.len(), 3, "{text}");
    assert!(text.contains("bad.eval.yaml:1:9: the prompt `missing.prompty` does not exist"), "{text}");
    assert!(text.contains("bad.eval.yaml:5:9: the pattern /a(/ does not compile"), "{text}");
    assert!(text.contains("bad.eval.yaml:6:9: the judge `nojudge.prompty` does not exist"), "{text}");
    assert!(server.journal().is_empty());
}

/// A small HTTP/1.1 server on 127.0.0.1: each request (one per connection) is answered by
/// `answer(n)` (status line and extra headers, and body) after `delay`; it counts requests and
/// the most in flight at once.
struct TestServer {
    port: u16,
    requests: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
}

impl TestServer {
    fn start(delay: Duration, answer: impl Fn(usize) -> (String, String) + Send + Sync + 'static) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(AtomicUsize::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most_in_flight = Arc::new(AtomicUsize::new(0));
        let answer = Arc::new(answer);
        let (r, f, m) = (requests.clone(), in_flight, most_in_flight.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let (r, f, m, answer) = (r.clone(), f.clone(), m.clone(), answer.clone());
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut length = 0;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = reader.read_exact(&mut body);
                    let n = r.fetch_add(1, Ordering::SeqCst);
                    let now = f.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(delay);
                    f.fetch_sub(1, Ordering::SeqCst);
                    let (head, body) = answer(n);
                    let _ = write!(
                        stream,
                        "{head}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        TestServer { port, requests, most_in_flight }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

const COMPLETION: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"The capital of France is Paris."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12}}"#;

fn cases_file(dir: &Path, n: usize, concurrency: usize) -> eval::EvalFile {
    let mut text = format!("prompt: answer.prompty\nconcurrency: {concurrency}\ncases:\n");
    for i in 0..n {
        text.push_str(&format!(
            "  - name: case {i}\n    vars: {{question: 'capital of France, {i}'}}\n    assert: [{{contains: Paris}}]\n"
        ));
    }
    std::fs::write(dir.join("many.eval.yaml"), text).unwrap();
    load(dir, "many.eval.yaml")
}

#[tokio::test]
async fn rate_limits_are_waited_out() {
    // The first 4 requests are refused with 429 and `Retry-After: 1`: the HTTP layer's 3 attempts
    // of the first cell all fail, the runner waits and runs the cell again.
    let server = TestServer::start(Duration::ZERO, |n| {
        if n < 4 {
            (
                "HTTP/1.1 429 Too Many Requests\r\nretry-after: 1".into(),
                r#"{"error":{"message":"Rate limit reached","type":"rate_limit_error"}}"#.into(),
            )
        } else {
            ("HTTP/1.1 200 OK".into(), COMPLETION.into())
        }
    });
    let dir = fixtures(&server.url());
    let file = cases_file(&dir, 2, 1);
    let started = Instant::now();
    let report = eval::run(&file, &options(&dir, CacheMode::Off)).await.unwrap();
    let took = started.elapsed();
    assert!(report.passed(), "{report:#?}");
    assert_eq!(server.requests.load(Ordering::SeqCst), 6);
    // Two Retry-After waits inside the HTTP layer, the runner's own wait of 1 s, one more
    // Retry-After: at least 4 s.
    assert!(took >= Duration::from_secs(4), "{took:?}");
}

#[tokio::test]
async fn a_rate_limit_that_does_not_end_is_an_error_cell() {
    let server = TestServer::start(Duration::ZERO, |_| {
        ("HTTP/1.1 429 Too Many Requests\r\nretry-after-ms: 1".into(), r#"{"error":{"message":"slow down"}}"#.into())
    });
    let dir = fixtures(&server.url());
    let file = cases_file(&dir, 1, 1);
    let report = tokio::time::timeout(Duration::from_secs(120), eval::run(&file, &options(&dir, CacheMode::Off)))
        .await
        .unwrap()
        .unwrap();
    let cell = &report.cases[0].cells[0];
    assert_eq!(cell.status, Status::Error);
    assert!(cell.error.as_deref().unwrap().contains("HTTP 429"), "{cell:#?}");
    // The first run and RATE_LIMIT_RETRIES more, 3 HTTP attempts each.
    assert_eq!(server.requests.load(Ordering::SeqCst), 3 * (1 + eval::RATE_LIMIT_RETRIES as usize));
}

#[tokio::test]
async fn concurrency_is_bounded() {
    let server = TestServer::start(Duration::from_millis(150), |_| ("HTTP/1.1 200 OK".into(), COMPLETION.into()));
    let dir = fixtures(&server.url());
    let file = cases_file(&dir, 12, 3);
    let report = eval::run(&file, &options(&dir, CacheMode::Off)).await.unwrap();
    assert!(report.passed());
    assert_eq!(server.requests.load(Ordering::SeqCst), 12);
    assert_eq!(server.most_in_flight.load(Ordering::SeqCst), 3, "the file's concurrency");

    let server = TestServer::start(Duration::from_millis(150), |_| ("HTTP/1.1 200 OK".into(), COMPLETION.into()));
    let dir = fixtures(&server.url());
    let file = cases_file(&dir, 12, 3);
    let mut options = options(&dir, CacheMode::Off);
    options.concurrency = Some(6);
    eval::run(&file, &options).await.unwrap();
    assert_eq!(server.most_in_flight.load(Ordering::SeqCst), 6, "the options win over the file");
}

#[test]
fn test_case_replays_and_reports_failures() {
    let server = Aimock::start_with("eval.json", &[]);
    let dir = fixtures(&server.url());
    let file = dir.join("passing.eval.yaml");
    // Record the responses where `__test_case` looks for them (beside the eval file).
    let mut options = EvalOptions::default();
    options.cache = CacheMode::Record;
    eval::run_blocking(&load(&dir, "passing.eval.yaml"), &options).unwrap();
    let sent = server.journal().len();
    eval::__test_case(file.to_str().unwrap(), "capital");
    assert_eq!(server.journal().len(), sent, "replayed");

    let failing = dir.join("failing.eval.yaml");
    let panic = std::panic::catch_unwind(|| eval::__test_case(failing.to_str().unwrap(), "capital")).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("no recorded response"), "{message}");
    assert_eq!(server.journal().len(), sent, "replay sends nothing");

    let mut options = EvalOptions::default();
    options.cache = CacheMode::Record;
    eval::run_blocking(&load(&dir, "failing.eval.yaml"), &options).unwrap();
    let panic = std::panic::catch_unwind(|| eval::__test_case(failing.to_str().unwrap(), "capital")).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(message.contains("eval case `capital`") && message.contains("[answer] failed, score"), "{message}");
    assert!(message.contains("FAIL") && message.contains("expected text matching /^\\d+$/"), "{message}");
}

#[tokio::test]
async fn a_judge_through_a_real_model() {
    let server = llama::shared_chat_server();
    let dir = fixtures(&server.url());
    // The judge and the prompt under test are the same small model; the judge declares outputs,
    // so structured output is requested and its answer parses.
    for name in ["answer.prompty", "judge.prompty"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let text = text
            .replace("id: gpt-4o", &format!("id: {}", llama::MODEL))
            .replace("sk-eval-secret-0123", llama::KEY)
            .replace("provider: openai", "provider: openai\n  options:\n    maxOutputTokens: 60\n    temperature: 0");
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::write(
        dir.join("real.eval.yaml"),
        "prompt: answer.prompty\ncases:\n  - name: capital\n    vars: {question: What is the capital of France?}\n    assert:\n      - {type: judge, prompt: judge.prompty, criteria: correctness, threshold: 0}\n",
    )
    .unwrap();
    let report = eval::run(&load(&dir, "real.eval.yaml"), &options(&dir, CacheMode::Off)).await.unwrap();
    let cell = &report.cases[0].cells[0];
    assert_eq!(cell.error, None, "{cell:#?}");
    let judge = &cell.assertions[0];
    assert!(judge.pass, "{judge:#?}");
    assert!((0.0..=1.0).contains(&judge.score), "{judge:#?}");
    assert!(judge.reason.starts_with("judge score "), "{judge:#?}");
    assert_eq!(cell.model_calls, 1);
}
