//! A secret that lands in a field nobody expects a secret in (a template `format`, an input's
//! `kind`, a connection's `kind`) is hidden wherever prompty prints it: the agent's `Debug`, the
//! errors that name the field's value, `prompty::check`'s diagnostics, and traces (a `.tracy` file
//! and a `tracing` subscriber). The values come from `${env:}` references to variables named as
//! secrets, or equal the key the prompt's connection carries; ordinary values stay visible.

#[path = "support/captured_log.rs"]
mod captured_log;

use captured_log::Captured;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

/// A key named as a secret (`*API_KEY*`).
const FORMAT_KEY: &str = "sk-live-format-0123456789abcdef";
const INPUT_KEY: &str = "sk-live-input-0123456789abcdef";
const CONNECTION_KEY: &str = "sk-live-connection-0123456789abcdef";
const API_TYPE_KEY: &str = "sk-live-api-type-0123456789abcdef";
/// The key of a `kind: key` connection, also read from a variable whose name says nothing.
const SHARED_KEY: &str = "sk-live-shared-0123456789abcdef";
/// Ordinary values: they must stay visible.
const MODEL: &str = "smollm2-visible-model";
const FORMAT: &str = "visible-format-name";
/// Named as a secret but shorter than `Secret::MIN_REMEMBERED_LEN`: left visible (documented).
const SHORT: &str = "tok-1";

/// Sets the variables every test reads, once, before any test loads a prompt (every test calls
/// this first, and `Once` makes the others wait: no variable changes while one is read).
fn env() {
    static SET: Once = Once::new();
    SET.call_once(|| {
        for (var, value) in [
            ("PROMPTY_TEST_SV_FORMAT_API_KEY", FORMAT_KEY),
            ("PROMPTY_TEST_SV_INPUT_API_KEY", INPUT_KEY),
            ("PROMPTY_TEST_SV_CONNECTION_TOKEN", CONNECTION_KEY),
            ("PROMPTY_TEST_SV_API_TYPE_SECRET", API_TYPE_KEY),
            ("PROMPTY_TEST_SV_CONN_KEY", SHARED_KEY),
            ("PROMPTY_TEST_SV_RENDERER", SHARED_KEY),
            ("PROMPTY_MODEL", MODEL),
            ("PROMPTY_TEST_SV_FORMAT", FORMAT),
            ("PROMPTY_TEST_SV_SHORT_TOKEN", SHORT),
        ] {
            std::env::set_var(var, value);
        }
    });
}

fn load(frontmatter: &str) -> prompty::Agent {
    let text =
        format!("---\nname: leak\nmodel:\n  id: ${{env:PROMPTY_MODEL}}\n{frontmatter}---\nuser:\nHi {{{{ q }}}}");
    prompty::load_str(&text, ".", "leak.prompty").unwrap()
}

fn inputs() -> serde_json::Value {
    serde_json::json!({"q": "there"})
}

/// Asserts that none of `texts` holds `secret` and that each says `[REDACTED]` where it was.
fn hidden(secret: &str, texts: &[(&str, &str)]) {
    for (what, text) in texts {
        assert!(!text.contains(secret), "{what} shows the secret:\n{text}");
        assert!(text.contains("[REDACTED]"), "{what} does not say where the secret was:\n{text}");
    }
}

/// A fresh folder for a `.tracy` backend.
fn trace_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-secret-values-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Every `.tracy` file of `dir`, concatenated.
fn tracy_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap());
    }
    text
}

/// Runs `f` under a `tracing` subscriber that prints every span with its fields when it closes;
/// returns what it printed.
fn with_subscriber(f: impl FnOnce()) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    captured.text()
}

#[test]
fn a_key_in_the_template_format_is_hidden_from_debug_errors_and_traces() {
    env();
    let agent = load("template:\n  format: ${env:PROMPTY_TEST_SV_FORMAT_API_KEY}\n  parser: prompty\n");
    assert_eq!(agent.template.format.kind, FORMAT_KEY, "the value itself is untouched");

    let dir = trace_dir("format");
    prompty::trace::add("secret-values-format", Arc::new(prompty::trace::TracyBackend::new(&dir)));
    let mut err = None;
    let tracing_text = with_subscriber(|| err = Some(prompty::prepare(&agent, &inputs()).unwrap_err()));
    prompty::trace::remove("secret-values-format");
    let err = err.unwrap();
    let display = err.to_string();
    assert!(display.starts_with("no renderer registered for '[REDACTED]'"), "{display}");
    let tracy = tracy_text(&dir);
    assert!(tracy.contains("no renderer registered for '[REDACTED]'"), "the failure is in the trace: {tracy}");
    assert!(tracing_text.contains("no renderer registered for '[REDACTED]'"), "{tracing_text}");
    hidden(
        FORMAT_KEY,
        &[
            ("Debug of the agent", &format!("{agent:?}")),
            ("pretty Debug of the agent", &format!("{agent:#?}")),
            ("the error's Display", &display),
            ("the error's Debug", &format!("{err:?}")),
            (".tracy file", &tracy),
            ("tracing subscriber", &tracing_text),
        ],
    );
    // The model's name is an ordinary value, printed everywhere.
    for (what, text) in [("Debug", format!("{agent:?}")), (".tracy", tracy), ("tracing", tracing_text)] {
        assert!(text.contains(MODEL), "{what} hides the model's name: {text}");
    }
}

#[test]
fn a_key_in_an_input_kind_is_hidden_from_debug_and_diagnostics() {
    env();
    let agent = load("inputs:\n  - name: q\n    kind: ${env:PROMPTY_TEST_SV_INPUT_API_KEY}\n");
    let report = prompty::check(&agent);
    let diagnostics: Vec<String> = report.diagnostics.iter().map(|d| d.to_string()).collect();
    let diagnostics = diagnostics.join("\n");
    assert!(diagnostics.contains("unknown kind `[REDACTED]` for the input `q`"), "{diagnostics}");
    hidden(INPUT_KEY, &[("Debug of the agent", &format!("{agent:?}")), ("check's diagnostics", &diagnostics)]);
}

#[cfg(feature = "openai")]
#[test]
fn a_key_in_a_connection_kind_is_hidden_from_debug_errors_and_traces() {
    env();
    let agent = load("  provider: openai\n  connection:\n    kind: ${env:PROMPTY_TEST_SV_CONNECTION_TOKEN}\n");
    let dir = trace_dir("connection");
    prompty::trace::add("secret-values-connection", Arc::new(prompty::trace::TracyBackend::new(&dir)));
    // Refused before any request is made: no server is needed.
    let err = prompty::invoke::<serde_json::Value>(&agent, &inputs()).unwrap_err();
    prompty::trace::remove("secret-values-connection");
    let display = err.to_string();
    assert!(display.contains("connection kind '[REDACTED]' is not supported"), "{display}");
    let connection = agent.model.as_ref().unwrap().connection.as_ref().unwrap();
    hidden(
        CONNECTION_KEY,
        &[
            ("Debug of the agent", &format!("{agent:?}")),
            ("Debug of the connection", &format!("{connection:?}")),
            ("the error's Display", &display),
            ("the error's Debug", &format!("{err:?}")),
            (".tracy file", &tracy_text(&dir)),
        ],
    );
}

/// Any error that leaves a stage of the pipeline is scrubbed, whichever code built it: here the
/// OpenAI provider's refusal of an unknown `model.apiType`.
#[cfg(feature = "openai")]
#[test]
fn a_key_in_any_other_field_is_hidden_from_the_errors_of_the_pipeline() {
    env();
    let agent = load(
        "  provider: openai\n  apiType: ${env:PROMPTY_TEST_SV_API_TYPE_SECRET}\n  connection:\n    kind: key\n    \
         endpoint: http://127.0.0.1:9/v1\n",
    );
    let err = prompty::invoke::<serde_json::Value>(&agent, &inputs()).unwrap_err();
    let display = err.to_string();
    assert!(display.contains("'[REDACTED]' is not supported by the OpenAI provider"), "{display}");
    hidden(API_TYPE_KEY, &[("the error's Display", &display), ("the error's Debug", &format!("{err:?}"))]);
}

#[test]
fn a_value_equal_to_the_connections_key_is_hidden_under_any_variable_name() {
    env();
    // `PROMPTY_TEST_SV_RENDERER` says nothing of a secret, but its value is the connection's key.
    let agent = load(
        "  connection:\n    kind: key\n    apiKey: ${env:PROMPTY_TEST_SV_CONN_KEY}\n\
         template:\n  format: ${env:PROMPTY_TEST_SV_RENDERER}\n",
    );
    let err = prompty::prepare(&agent, &inputs()).unwrap_err();
    let display = err.to_string();
    assert!(display.starts_with("no renderer registered for '[REDACTED]'"), "{display}");
    hidden(
        SHARED_KEY,
        &[
            ("Debug of the agent", &format!("{agent:?}")),
            ("the error's Display", &display),
            ("the error's Debug", &format!("{err:?}")),
        ],
    );
}

#[test]
fn ordinary_and_short_values_stay_visible() {
    env();
    let agent = load("template:\n  format: ${env:PROMPTY_TEST_SV_FORMAT}\n");
    let err = prompty::prepare(&agent, &inputs()).unwrap_err().to_string();
    assert!(err.starts_with(&format!("no renderer registered for '{FORMAT}'")), "{err}");
    let debug = format!("{agent:?}");
    assert!(debug.contains(FORMAT) && debug.contains(MODEL), "{debug}");
    assert!(!debug.contains("[REDACTED]"), "{debug}");

    // A variable named as a secret whose value is shorter than the minimum: hiding `tok-1` in
    // every text would hide ordinary words too, so it shows (documented on `Secret`).
    assert!(SHORT.len() < prompty::Secret::MIN_REMEMBERED_LEN);
    let agent = load("template:\n  format: ${env:PROMPTY_TEST_SV_SHORT_TOKEN}\n");
    let err = prompty::prepare(&agent, &inputs()).unwrap_err().to_string();
    assert!(err.starts_with(&format!("no renderer registered for '{SHORT}'")), "{err}");
}
