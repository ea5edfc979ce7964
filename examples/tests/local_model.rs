//! The quickstarts against a real, keyless local model: SmolLM2-135M-Instruct on llama-cpp-python's
//! OpenAI-compatible server at 127.0.0.1 (the end-to-end setup of `prompty/tests/e2e`, built once
//! per machine), with only `OPENAI_BASE_URL` and `PROMPTY_MODEL` set, as the README says.

#[path = "../../prompty/tests/e2e/common.rs"]
mod common;
#[path = "../../prompty/tests/e2e/llama.rs"]
mod llama;
#[path = "../../prompty/tests/e2e/peers.rs"]
mod peers;

use std::process::Command;

fn run_against(server: &peers::Peer, exe: &str) -> String {
    run_with(server, exe, "What is a prompt?")
}

/// `exe` with `arg`, against `server` as the README says (keyless, `OPENAI_BASE_URL` and
/// `PROMPTY_MODEL` only); its stdout, after checking that it succeeded.
fn run_with(server: &peers::Peer, exe: &str, arg: &str) -> String {
    let out = Command::new(exe)
        .arg(arg)
        .env_remove("PROMPTY_STRUCTURED_OUTPUT")
        .env_remove("PROMPTY_STRUCTURED_OUTPUT_FALLBACK")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .env("OPENAI_API_KEY", "")
        .env("PROMPTY_MODEL", llama::MODEL)
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{exe}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn the_quickstarts_ask_a_keyless_local_server() {
    let server = llama::start("llama-quickstart", &[]);
    for exe in [env!("CARGO_BIN_EXE_quickstart"), env!("CARGO_BIN_EXE_typed_quickstart")] {
        let out = run_against(&server, exe);
        assert!(!out.contains("(offline"), "{out}");
        let answer = out.split_once("[model]\n").map(|(_, a)| a.trim()).unwrap_or_default();
        assert!(!answer.is_empty(), "the model answered: {out}");
        // Both show the model `${env:PROMPTY_MODEL:gpt-4o-mini}` resolved to, the one asked.
        assert!(out.contains(&format!("model {})", llama::MODEL)), "{exe}: PROMPTY_MODEL picked the model: {out}");
        assert!(!out.contains("${env:"), "{exe}: {out}");
    }
}

#[test]
fn the_structured_output_example_works_against_llama_cpp_out_of_the_box() {
    // The shipped prompt asks for OpenAI's strict `json_schema`, which this server refuses with
    // an HTTP 500: the default mode falls back to `json_object` with the schema, unedited.
    let server = llama::start("llama-structured", &[]);
    let report = "Paris today: 22 degrees and sunny, wind 15 km/h from the west.";
    let out = run_with(&server, env!("CARGO_BIN_EXE_structured_output"), report);
    assert!(!out.contains("(offline"), "{out}");
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no `{name}:` line in: {out}"))
    };
    assert!(!field("city").is_empty(), "{out}");
    assert!(field("temperature").parse::<f64>().is_ok_and(f64::is_finite), "{out}");
}
