//! `prompty eval` against aimock: exit codes, the reports it writes, baselines, the replay cache.

mod common;

use common::{aimock, chat_prompt, prompty, scratch, texts};
use serde_json::Value;
use std::path::Path;

/// An eval file of the example chat prompt (copied beside it) with these cases.
fn eval_file(dir: &Path, name: &str, cases: &str) -> String {
    std::fs::copy(chat_prompt(), dir.join("chat.prompty")).unwrap();
    let file = format!("{name}.eval.yaml");
    std::fs::write(dir.join(&file), format!("prompt: chat.prompty\ncases:\n{cases}")).unwrap();
    file
}

const PASSING: &str = "  - name: greets
    vars: {question: hello}
    tags: [smoke]
    assert:
      - contains: Hi there
  - name: tells a story
    vars: {question: tell me a long story}
    assert:
      - {type: regex, value: '^Once upon a time'}
";

const FAILING: &str = "  - name: greets
    vars: {question: hello}
    tags: [smoke]
    assert:
      - {type: contains, value: Bonjour, name: says bonjour}
  - name: tells a story
    vars: {question: tell me a long story}
    assert:
      - {type: regex, value: '^Once upon a time'}
";

fn completions(server: &common::Aimock) -> usize {
    server.requests_to("/v1/chat/completions").len()
}

#[test]
fn all_passing_exits_0_a_failing_case_exits_1_and_the_reports_are_written() {
    let server = aimock();
    let base = format!("{}/v1", server.url());
    let dir = scratch("eval-exit");
    let good = eval_file(&dir, "good", PASSING);
    let out = prompty(&dir).args(["eval", &good, "--cache", "off"]).env("OPENAI_BASE_URL", &base).output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("greets") && stdout.contains("pass  1.00"), "{stdout}");
    assert!(stdout.contains("2 cells: 2 passed, 0 failed, 0 errors"), "{stdout}");
    assert!(!stdout.contains('\x1b'), "no colour when stdout is not a terminal");
    assert!(!stderr.contains('\r'), "no progress bar when stderr is not a terminal: {stderr:?}");

    let bad = eval_file(&dir, "bad", FAILING);
    let out = prompty(&dir)
        .args([
            "eval",
            &bad,
            "--cache",
            "off",
            "--json",
            "out/run.json",
            "--junit",
            "out/junit.xml",
            "--html",
            "out/report.html",
        ])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAIL  0.00"), "{stdout}");
    assert!(stdout.contains("greets × chat: FAIL"), "{stdout}");
    assert!(stdout.contains("✗ says bonjour:"), "{stdout}");
    assert!(stdout.contains("answer: Hi there!"), "{stdout}");

    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("out/run.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["failed"], 1);
    assert_eq!(json["summary"]["passed"], 1);
    assert_eq!(json["cases"][0]["cells"][0]["status"], "fail");
    assert_eq!(json["cases"][0]["cells"][0]["output"], "Hi there!");
    let junit = std::fs::read_to_string(dir.join("out/junit.xml")).unwrap();
    assert!(junit.contains(r#"<testsuite name="chat" tests="2" failures="1" errors="0""#), "{junit}");
    assert!(
        junit.contains(r#"<testcase name="greets""#) && junit.contains("<failure message=\"says bonjour:"),
        "{junit}"
    );
    let html = std::fs::read_to_string(dir.join("out/report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("default-src 'none'"));
    assert!(html.contains("Hi there!"), "the answers are in the page");

    // Several files: one table each, the report paths are folders with a report per file.
    let out = prompty(&dir)
        .args(["eval", &good, &bad, "--cache", "off", "--json", "runs", "--html", "pages"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.starts_with("good.eval.yaml\n") && stdout.contains("\nbad.eval.yaml\n"), "{stdout}");
    for written in ["runs/good.json", "runs/bad.json", "pages/good.html", "pages/bad.html"] {
        assert!(dir.join(written).is_file(), "{written} was not written");
    }
    let same_name = eval_file(&dir.join("runs"), "good", PASSING);
    let out = prompty(&dir).args(["eval", &good, &format!("runs/{same_name}")]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(texts(&out).1.contains("would write reports of the same name (good.*)"), "{}", texts(&out).1);

    // --tag and --case select cases.
    let out = prompty(&dir)
        .args(["eval", &bad, "--cache", "off", "--case", "tells a story"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).0);
    assert!(texts(&out).0.contains("1 cells: 1 passed"));
    let out = prompty(&dir)
        .args(["eval", &bad, "--cache", "off", "--tag", "smoke"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(texts(&out).0.contains("1 cells: 0 passed, 1 failed"));
}

#[test]
fn usage_errors_exit_2_and_name_the_mistake() {
    let dir = scratch("eval-usage");
    // A file that does not exist.
    let out = prompty(&dir).args(["eval", "missing.eval.yaml"]).output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("missing.eval.yaml"), "{stderr}");
    assert_eq!(stdout, "");

    // A prompt that does not exist, and an assertion kind misspelt: both named with their line, as
    // `prompty check` shows them, and nothing runs (no server is needed).
    std::fs::write(
        dir.join("broken.eval.yaml"),
        "prompt: nowhere.prompty\ncases:\n  - name: a\n    vars: {question: hi}\n    assert:\n      - {type: contians, value: x}\n",
    )
    .unwrap();
    let out = prompty(&dir).args(["eval", "broken.eval.yaml"]).output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("error:") && stderr.contains("broken.eval.yaml:6"), "{stderr}");
    assert!(stderr.contains("contians"), "{stderr}");
    assert!(stderr.contains("nothing was run"), "{stderr}");

    // Bad arguments and a baseline that is not a report.
    let out = prompty(&dir).args(["eval", "broken.eval.yaml", "--cache", "sometimes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = prompty(&dir).args(["eval", "broken.eval.yaml", "--concurrency", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = prompty(&dir).arg("eval").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_baseline_marks_the_regression_and_fails_the_run() {
    let server = aimock();
    let base = format!("{}/v1", server.url());
    let dir = scratch("eval-baseline");
    let good = eval_file(&dir, "chat", PASSING);
    let out = prompty(&dir)
        .args(["eval", &good, "--cache", "off", "--json", "base.json"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);

    // The same case names, the first now failing.
    let now = eval_file(&dir, "chat", FAILING);
    let out = prompty(&dir)
        .args(["eval", &now, "--cache", "off", "--baseline", "base.json", "--json", "now.json", "--html", "now.html"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAIL  0.00 -1.00 ▼"), "{stdout}");
    assert!(stdout.contains("against base.json: 1 regressions, 0 improvements"), "{stdout}");
    assert!(stdout.contains("a regression: 1.00 in the baseline"), "{stdout}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("now.json")).unwrap()).unwrap();
    assert_eq!(json["summary"]["regressions"], 1);
    assert_eq!(json["baseline"]["file"], "base.json");
    assert_eq!(json["cases"][0]["cells"][0]["change"], "regression");
    assert_eq!(json["cases"][1]["cells"][0]["change"], "same");

    // Back to passing against the failing run: an improvement, exit 0.
    let good = eval_file(&dir, "chat", PASSING);
    let out = prompty(&dir)
        .args(["eval", &good, "--cache", "off", "--baseline", "now.json"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("pass  1.00 +1.00 ▲") && stdout.contains("0 regressions, 1 improvements"), "{stdout}");

    // A baseline that is not a report is a usage error naming it.
    std::fs::write(dir.join("junk.json"), "{\"not\": \"a report\"}").unwrap();
    let out = prompty(&dir)
        .args(["eval", &good, "--cache", "off", "--baseline", "junk.json"])
        .env("OPENAI_BASE_URL", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(texts(&out).1.contains("junk.json is not a report of `prompty eval --json`"), "{}", texts(&out).1);
}

#[test]
fn replay_answers_from_the_cache_with_no_request_and_no_server() {
    let server = aimock();
    let base = format!("{}/v1", server.url());
    let dir = scratch("eval-replay");
    let file = eval_file(&dir, "chat", PASSING);
    let run = |cache: &str| {
        prompty(&dir).args(["eval", &file, "--cache", cache]).env("OPENAI_BASE_URL", &base).output().unwrap()
    };

    // Replay before anything was recorded: the run stops before any request, naming the case.
    let out = run("replay");
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    assert!(stderr.contains("case `greets`") && stderr.contains("no recorded response"), "{stderr}");
    assert_eq!(completions(&server), 0, "replay sent a request");

    // The first run records; replay then sends nothing.
    let out = run("auto");
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    let sent = completions(&server);
    assert_eq!(sent, 2);
    assert!(dir.join(".prompty-cache").is_dir());
    let out = run("replay");
    assert_eq!(out.status.code(), Some(0), "{}", texts(&out).1);
    assert_eq!(completions(&server), sent, "replay sent a request");
    assert!(texts(&out).0.contains("cache 2 hits, 0 misses"), "{}", texts(&out).0);

    // With no server at all.
    drop(server);
    let out = run("replay");
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("2 cells: 2 passed"), "{stdout}");
}

/// The example eval replays offline from its committed cache: no key, no server, no model file.
#[test]
fn the_example_eval_replays_offline() {
    let dir = scratch("eval-example");
    let out = prompty(&common::root())
        .args(["eval", "examples/prompts/chat.eval.yaml", "--cache", "replay", "--json"])
        .arg(dir.join("run.json"))
        .env("PROMPTY_MODELS_DIR", dir.join("no-models"))
        .output()
        .unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the example's recorded responses no longer answer its requests: record them again with \
         `prompty eval examples/prompts/chat.eval.yaml --cache record`\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("12 cells: 8 passed, 4 failed, 0 errors"), "{stdout}");
    assert!(stdout.contains("cache 12 hits, 0 misses"), "{stdout}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(json["columns"].as_array().map(Vec::len), Some(2));
    assert!(!dir.join("no-models").exists(), "the embedded model was looked for");
}
