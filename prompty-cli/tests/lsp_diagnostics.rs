//! `prompty lsp` over stdio: the handshake, and diagnostics as the editor gets them — exact
//! ranges, codes, related places in other files (a locale variant's default, a child prompt),
//! incremental changes, documents that read each other, closing.

mod common;

use common::lsp::{uri, Client};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-lsp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn range(sl: u32, sc: u32, el: u32, ec: u32) -> Value {
    json!({"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}})
}

/// (code, range, message) of each diagnostic.
fn summary(diagnostics: &[Value]) -> Vec<(String, Value, String)> {
    diagnostics
        .iter()
        .map(|d| {
            (d["code"].as_str().unwrap().to_owned(), d["range"].clone(), d["message"].as_str().unwrap().to_owned())
        })
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    uri(&path)
}

#[test]
fn the_server_says_what_it_can_do() {
    let (client, init) = Client::start(json!({}));
    let caps = &init["capabilities"];
    assert_eq!(init["serverInfo"]["name"], "prompty");
    assert_eq!(caps["positionEncoding"], "utf-16");
    assert_eq!(caps["textDocumentSync"]["change"], 2, "incremental sync");
    for provider in ["hoverProvider", "definitionProvider", "documentSymbolProvider"] {
        assert_eq!(caps[provider], true, "{provider}");
    }
    assert_eq!(caps["codeActionProvider"]["codeActionKinds"], json!(["quickfix"]));
    assert!(caps["completionProvider"]["triggerCharacters"].as_array().unwrap().contains(&json!("|")));
    assert!(caps["semanticTokensProvider"]["legend"]["tokenTypes"].is_array());
    assert_eq!(client.shutdown(), Some(0));
    // A client that offers UTF-8 positions gets them.
    let (client, init) = Client::start(json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}}));
    assert_eq!(init["capabilities"]["positionEncoding"], "utf-8");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn every_rule_is_placed_on_its_token() {
    let dir = tempdir("rules");
    let text =
        "---\nmodel:\n  provider: openai\n  apiType: chta\n  options:\n    temprature: 0.5\n    toolChoice: wether\n\
                inputs:\n  question: {kind: strng}\n  count: {kind: integer, default: ten}\n  mood: {kind: string}\n\
                tools:\n  - name: lookup\n    kind: function\n    bindings:\n      city: qestion\n---\n\
                sytem:\n{{ questoin | upcase }} {{ count }} {{ question }}\n";
    let uri = write(&dir, "rules.prompty", text);
    let (mut client, _) = Client::start(json!({}));
    client.open(&uri, text);
    let found = summary(&client.diagnostics(&uri, 1));
    let expected = [
        ("unknown-api-type", range(3, 11, 3, 15)),
        ("unknown-model-option", range(5, 4, 5, 14)),
        ("unknown-tool-choice", range(6, 16, 6, 22)),
        ("unknown-kind", range(8, 19, 8, 24)),
        ("value-does-not-fit", range(9, 34, 9, 37)),
        ("unused-input", range(10, 2, 10, 6)),
        ("binding-undeclared-input", range(15, 12, 15, 19)),
        ("misspelt-role-marker", range(17, 0, 17, 5)),
        ("undeclared-variable", range(18, 3, 18, 11)),
        ("unknown-jinja-function", range(18, 14, 18, 20)),
    ];
    let codes: Vec<(&str, &Value)> = found.iter().map(|(c, r, _)| (c.as_str(), r)).collect();
    let expected: Vec<(&str, &Value)> = expected.iter().map(|(c, r)| (*c, r)).collect();
    assert_eq!(codes, expected, "{found:#?}");
    let messages: Vec<&str> = found.iter().map(|(_, _, m)| m.as_str()).collect();
    assert_eq!(messages[8], "the template uses `questoin`, which no input declares (did you mean `question`?)");
    let raw = client.diagnostics_again(&uri);
    assert!(raw.iter().all(|d| d["source"] == "prompty"));
    assert_eq!(raw[8]["severity"], 1);
    assert_eq!(raw[5]["severity"], 2, "an unused input is a warning");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn the_repository_prompts_are_clean_as_prompty_check_says() {
    let prompts = common::root().join("examples/prompts");
    let (mut client, _) = Client::start(json!({}));
    let mut opened = 0;
    for entry in std::fs::read_dir(&prompts).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "prompty") {
            let uri = uri(&path);
            client.open(&uri, &std::fs::read_to_string(&path).unwrap());
            assert_eq!(client.diagnostics(&uri, 1), Vec::<Value>::new(), "{}", path.display());
            opened += 1;
        }
    }
    assert!(opened >= 5, "{opened} prompts");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn changes_are_applied_incrementally_and_analyzed() {
    let dir = tempdir("changes");
    let text = "---\ninputs: [name]\n---\nuser:\nHi {{ name }} 😀 {{ name }}\n";
    let uri = write(&dir, "greet.prompty", text);
    let (mut client, _) = Client::start(json!({}));
    client.open(&uri, text);
    assert_eq!(client.diagnostics(&uri, 1), Vec::<Value>::new());
    // Replace the second `name` (after the emoji: UTF-16 columns) by `nmae`.
    let change = json!({"range": range(4, 20, 4, 24), "text": "nmae"});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [change]}),
    );
    let found = summary(&client.diagnostics(&uri, 2));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0.as_str(), &found[0].1), ("undeclared-variable", &range(4, 20, 4, 24)));
    assert_eq!(found[0].2, "the template uses `nmae`, which no input declares (did you mean `name`?)");
    // Two edits in one notification, then a whole-text replacement.
    let edits =
        [json!({"range": range(4, 20, 4, 24), "text": "name"}), json!({"range": range(1, 9, 1, 13), "text": "nam"})];
    client
        .notify("textDocument/didChange", json!({"textDocument": {"uri": uri, "version": 3}, "contentChanges": edits}));
    let found = summary(&client.diagnostics(&uri, 3));
    let codes: Vec<&str> = found.iter().map(|f| f.0.as_str()).collect();
    assert_eq!(codes, ["unused-input", "undeclared-variable"], "{found:#?}");
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 4}, "contentChanges": [{"text": "Hello"}]}),
    );
    assert_eq!(client.diagnostics(&uri, 4), Vec::<Value>::new());
    // Closing clears its diagnostics.
    assert_eq!(client.close(&uri), Vec::<Value>::new());
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn a_locale_variant_is_checked_against_its_default_as_the_editor_has_it() {
    let dir = tempdir("variant");
    let default = "---\ninputs:\n  name: {kind: string}\n---\nuser:\nHi {{ name }}\n";
    let variant = "---\ninputs:\n  name: {kind: integer}\n---\nuser:\nSalut {{ name }}\n";
    let default_uri = write(&dir, "greet.prompty", default);
    let variant_uri = write(&dir, "greet.fr.prompty", variant);
    let (mut client, _) = Client::start(json!({}));
    client.open(&variant_uri, variant);
    let found = client.diagnostics(&variant_uri, 1);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["code"], "variant-mismatch");
    assert_eq!(found[0]["range"], range(2, 2, 2, 6));
    let related = &found[0]["relatedInformation"][0];
    assert_eq!(related["location"]["uri"], default_uri);
    assert_eq!(related["location"]["range"]["start"], json!({"line": 2, "character": 2}));
    assert_eq!(related["message"], "declared here in the default prompt");
    // The default, edited (unsaved) to an integer: the variant is re-checked against the edit.
    client.open(&default_uri, default);
    assert_eq!(client.diagnostics(&default_uri, 1), Vec::<Value>::new());
    assert_eq!(client.diagnostics(&variant_uri, 1).len(), 1, "re-checked when its default opens: the same");
    let edit = json!({"range": range(2, 15, 2, 21), "text": "integer"});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": default_uri, "version": 2}, "contentChanges": [edit]}),
    );
    assert_eq!(client.diagnostics(&variant_uri, 1), Vec::<Value>::new());
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn a_child_prompt_problem_is_shown_at_the_tool_that_runs_it() {
    let dir = tempdir("child");
    write(&dir, "child.prompty", "---\ninputs: [topic]\n---\nuser:\n{{ topci }} {{ topic }}\n");
    let parent = "---\ntools:\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nuser:\nGo\n";
    let parent_uri = write(&dir, "parent.prompty", parent);
    let child_uri = uri(&dir.join("child.prompty"));
    let (mut client, _) = Client::start(json!({}));
    client.open(&parent_uri, parent);
    let found = client.diagnostics(&parent_uri, 1);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0]["code"], "undeclared-variable");
    assert_eq!(found[0]["range"], range(4, 10, 4, 23), "the tool's path");
    let related = found[0]["relatedInformation"].as_array().unwrap();
    assert_eq!(related[0]["location"]["uri"], child_uri);
    assert_eq!(related[0]["location"]["range"]["start"], json!({"line": 4, "character": 3}));
    assert!(found[0]["message"]
        .as_str()
        .unwrap()
        .contains("in the child prompt `child.prompty` of the prompty tool `research`"));
    // The child, fixed in the editor: the parent is re-checked against the unsaved text.
    client.open(&child_uri, "---\ninputs: [topic]\n---\nuser:\n{{ topci }} {{ topic }}\n");
    assert_eq!(client.diagnostics(&child_uri, 1).len(), 1);
    assert_eq!(client.diagnostics(&parent_uri, 1).len(), 1, "re-checked when the child opens: the same");
    let fix = json!({"range": range(4, 3, 4, 8), "text": "topic"});
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": child_uri, "version": 2}, "contentChanges": [fix]}),
    );
    assert_eq!(client.diagnostics(&child_uri, 2), Vec::<Value>::new());
    assert_eq!(client.diagnostics(&parent_uri, 1), Vec::<Value>::new());
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn a_missing_file_reference_spans_the_reference() {
    let dir = tempdir("fileref");
    let text = "---\ndescription: ${file:missing.txt}\n---\nHi\n";
    let uri = write(&dir, "ref.prompty", text);
    let (mut client, _) = Client::start(json!({}));
    client.open(&uri, text);
    let found = summary(&client.diagnostics(&uri, 1));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!((found[0].0.as_str(), &found[0].1), ("file-reference-not-found", &range(1, 13, 1, 32)));
    // Creating the file (the editor saves it) clears the problem.
    std::fs::write(dir.join("missing.txt"), "Says hi").unwrap();
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": common::lsp::uri(&dir.join("missing.txt")), "type": 1}]}),
    );
    assert_eq!(client.diagnostics(&uri, 1), Vec::<Value>::new());
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn a_burst_of_changes_is_analyzed_once_and_only_the_changed_document() {
    let dir = tempdir("burst");
    let (a, b) = ("---\ninputs: [x]\n---\n{{ x }}\n", "---\ninputs: [y]\n---\n{{ y }}\n");
    let a_uri = write(&dir, "a.prompty", a);
    let b_uri = write(&dir, "b.prompty", b);
    let (mut client, _) = Client::start_with(json!({}), json!({"debounceMs": 300}));
    client.open(&a_uri, a);
    client.open(&b_uri, b);
    assert_eq!(client.diagnostics(&a_uri, 1), Vec::<Value>::new());
    assert_eq!(client.diagnostics(&b_uri, 1), Vec::<Value>::new());
    // Five keystrokes within the quiet time: `x` → `xyzab` one letter at a time.
    for (i, letter) in ["y", "z", "a", "b", "c"].iter().enumerate() {
        let at = 4 + i as u32;
        let edit = json!({"range": range(3, at, 3, at), "text": letter});
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": a_uri, "version": 2 + i}, "contentChanges": [edit]}),
        );
    }
    let found = client.diagnostics(&a_uri, 6);
    assert_eq!(found[1]["message"], "the template uses `xyzabc`, which no input declares");
    let later = client.drain(std::time::Duration::from_millis(600));
    let published: Vec<&Value> = later.iter().filter(|m| m["method"] == "textDocument/publishDiagnostics").collect();
    assert!(published.is_empty(), "one analysis for the burst, none for the unchanged document: {published:#?}");
    assert_eq!(client.shutdown(), Some(0));
}
