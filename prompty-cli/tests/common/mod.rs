//! What the tests of the `prompty` binary share: the binary, a scratch folder, aimock (started
//! as the e2e tests of `prompty` start it) with the fixtures of `tests/fixtures/llm.json`.

#![allow(dead_code)]

#[path = "../../../prompty/tests/e2e/common.rs"]
mod e2e;

#[allow(unused_imports)]
pub use e2e::{alive, e2e_dir, free_port, npm_bin_dir, raw_get, Aimock};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The built `prompty` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_prompty"))
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The variables a developer's shell may have that would change what the binary does.
pub const CLEARED: [&str; 13] = [
    "PROMPTY_OFFLINE",
    "PROMPTY_LOCAL_MODEL",
    "PROMPTY_STRUCTURED_OUTPUT",
    "PROMPTY_STRUCTURED_OUTPUT_FALLBACK",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ENDPOINT",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "AZURE_OPENAI_ENDPOINT",
    "AZURE_OPENAI_API_KEY",
    "PROMPTY_MODEL",
    "NO_COLOR",
];

/// `prompty` run in `dir`, with the variables of [`CLEARED`] removed and a 60 s bound.
pub fn prompty(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::new(bin());
    c.current_dir(dir).timeout(Duration::from_secs(60));
    for v in CLEARED {
        c.env_remove(v);
    }
    c
}

/// An empty scratch folder of this test (`tag`) and process.
pub fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// aimock serving `prompty-cli/tests/fixtures/llm.json`.
pub fn aimock() -> Aimock {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("llm.json");
    Aimock::start_with(fixtures.to_str().unwrap(), &[])
}

/// aimock that accepts only `keys`.
pub fn aimock_with_keys(keys: &[&str]) -> Aimock {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures").join("llm.json");
    Aimock::start_with(fixtures.to_str().unwrap(), keys)
}

/// The example chat prompt (`question`, `name`, `history`; endpoint from `OPENAI_BASE_URL`).
pub fn chat_prompt() -> PathBuf {
    root().join("examples").join("prompts").join("chat.prompty")
}

/// stdout and stderr of an output, as text.
pub fn texts(out: &std::process::Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The user messages' text of a chat request of the journal.
pub fn user_texts(entry: &serde_json::Value) -> Vec<String> {
    entry["body"]["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}
pub mod lsp;
