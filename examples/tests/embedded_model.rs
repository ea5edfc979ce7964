//! The examples with no key and no server: they answer from the embedded model (`smollm2-135m`,
//! provider `local`, in the example's own process), say so, and say how to use a server instead.
//! The model comes from the cache (see `prompty/tests/e2e/embedded.rs`).

#[path = "../../prompty/tests/e2e/common.rs"]
mod common;
#[path = "../../prompty/tests/e2e/embedded.rs"]
mod embedded;
#[path = "../../prompty/tests/e2e/peers.rs"]
mod peers;

use std::process::Command;

/// `exe` with `args` and none of the variables that configure a server; its stdout, after
/// checking that it succeeded.
fn keyless(exe: &str, args: &[&str]) -> String {
    embedded::cached_model();
    let out = Command::new(exe)
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("PROMPTY_OFFLINE")
        .env_remove("PROMPTY_MODEL")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{exe}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

#[test]
fn the_quickstarts_answer_from_the_embedded_model_without_a_key() {
    for exe in [env!("CARGO_BIN_EXE_quickstart"), env!("CARGO_BIN_EXE_typed_quickstart")] {
        let out = keyless(exe, &["What is a prompt?"]);
        assert!(out.contains(prompty_examples::EMBEDDED_NOTICE), "{exe}: the notice: {out}");
        assert!(!out.contains("(offline"), "{exe}: {out}");
        let answer = out.split_once("[model]\n").map(|(_, a)| a.trim()).unwrap_or_default();
        assert!(!answer.is_empty(), "{exe}: the embedded model answered: {out}");
        // The messages came first, as with a server.
        assert!(out.find("[user]\nWhat is a prompt?") < out.find("[model]\n"), "{exe}: {out}");
    }
}

#[test]
fn the_structured_output_example_decodes_the_embedded_model_s_answer() {
    let out = keyless(env!("CARGO_BIN_EXE_structured_output"), &["Paris today: 22 degrees and sunny, wind 15 km/h."]);
    assert!(out.contains(prompty_examples::EMBEDDED_NOTICE), "{out}");
    assert!(!out.contains("decoding a sample answer"), "{out}");
    let field = |name: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}:")))
            .map(|v| v.trim().to_owned())
            .unwrap_or_else(|| panic!("no `{name}:` line in: {out}"))
    };
    // The decoding was held to the `outputs:` schema: the fields are there and typed.
    assert!(field("temperature").parse::<f64>().is_ok_and(f64::is_finite), "{out}");
    let _ = field("city");
    let _ = field("conditions");
}

#[test]
fn prompty_offline_keeps_the_examples_from_running_the_model() {
    let out = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("PROMPTY_OFFLINE", "1")
        .output()
        .expect("the example runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("(offline: ") && !stdout.contains("[model]"), "{stdout}");
    assert!(!stdout.contains(prompty_examples::EMBEDDED_NOTICE), "{stdout}");
}

#[test]
fn the_agent_example_runs_a_tool_called_by_the_embedded_model() {
    let out = keyless(env!("CARGO_BIN_EXE_agent"), &["What is the weather in Oslo?"]);
    assert!(out.contains(prompty_examples::EMBEDDED_NOTICE), "{out}");
    // The first answer is a tool call held to the tools' schemas: a handler ran and returned.
    let called = ["→ get_weather({", "→ convert_currency({"].iter().any(|c| out.contains(c));
    assert!(called && out.contains("← "), "a tool ran: {out}");
    assert!(!out.contains("! "), "no error event: {out}");
    let answer = out.split_once("[model]\n").map(|(_, a)| a.trim()).unwrap_or_default();
    assert!(!answer.is_empty(), "then the model answered: {out}");
}
