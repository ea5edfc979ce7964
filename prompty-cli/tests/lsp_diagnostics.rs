//! `prompty lsp` over stdio: the handshake and diagnostics.

mod common;

use common::lsp::{uri, Client};
use serde_json::json;

#[test]
fn diagnostics_of_a_broken_prompt_have_exact_ranges() {
    let dir = tempdir("broken");
    let path = dir.join("ask.prompty");
    let text = "---\ninputs:\n  question: {kind: string}\n---\nuser:\n{{ questoin | upcase }}\n";
    std::fs::write(&path, text).unwrap();
    let (mut client, init) = Client::start(json!({}));
    assert_eq!(init["serverInfo"]["name"], "prompty");
    let uri = uri(&path);
    client.open(&uri, text);
    let diagnostics = client.diagnostics(&uri, 1);
    let summary: Vec<_> = diagnostics.iter().map(|d| (d["code"].clone(), d["range"].clone())).collect();
    assert_eq!(summary[0].0, "unused-input", "{diagnostics:#?}");
    assert_eq!(summary[1].0, "undeclared-variable");
    assert_eq!(summary[1].1, json!({"start": {"line": 5, "character": 3}, "end": {"line": 5, "character": 11}}));
    assert_eq!(client.shutdown(), Some(0));
}

fn tempdir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
