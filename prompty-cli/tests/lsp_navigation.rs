//! `prompty lsp` over stdio: go to definition, document symbols, quick fixes and semantic tokens,
//! with exact ranges and edits.

mod common;

use common::lsp::{uri, Client};
use serde_json::{json, Value};
use std::path::PathBuf;

fn tempdir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-lsp-nav-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn range(a: (u32, u32), b: (u32, u32)) -> Value {
    json!({"start": {"line": a.0, "character": a.1}, "end": {"line": b.0, "character": b.1}})
}

#[test]
fn definitions_of_variables_files_children_and_tool_handlers() {
    let dir = tempdir("definition");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("prompts")).unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\nname = \"travel\"\n").unwrap();
    let handler = "//! Tools.\n\n/// The weather.\n#[prompty::tool(name = \"get_weather\")]\npub fn weather(city: String) -> String {\n    city\n}\n";
    std::fs::write(dir.join("src/lib.rs"), handler).unwrap();
    std::fs::write(dir.join("prompts/notes.txt"), "Be brief.").unwrap();
    std::fs::write(dir.join("prompts/child.prompty"), "---\ninputs: [topic]\n---\nuser:\n{{ topic }}\n").unwrap();
    let path = dir.join("prompts/travel.prompty");
    let text = "---\ndescription: ${file:notes.txt}\ninputs:\n  - name: city\n    kind: string\ntools:\n  - name: get_weather\n    kind: function\n  - name: research\n    kind: prompty\n    path: child.prompty\n---\nuser:\n{{ city }}\n";
    std::fs::write(&path, text).unwrap();
    let (mut client, init) = Client::start(json!({}));
    assert_eq!(init["capabilities"]["definitionProvider"], true);
    let doc = uri(&path);
    client.open(&doc, text);
    // `{{ city }}` (line 13) → `city` of `- name: city` (line 3).
    let r = client.at("textDocument/definition", &doc, 13, 4);
    assert_eq!(r["result"], json!({"uri": doc, "range": range((3, 10), (3, 14))}), "{r}");
    // `${file:notes.txt}` → the file.
    let r = client.at("textDocument/definition", &doc, 1, 22);
    assert_eq!(r["result"], json!({"uri": uri(&dir.join("prompts/notes.txt")), "range": range((0, 0), (0, 0))}));
    // The prompty tool's `path:` → the child prompt.
    let r = client.at("textDocument/definition", &doc, 10, 12);
    assert_eq!(r["result"], json!({"uri": uri(&dir.join("prompts/child.prompty")), "range": range((0, 0), (0, 0))}));
    // The function tool's name → its `#[prompty::tool]` fn (found from the prompt's folder up to
    // the `Cargo.toml`).
    let r = client.at("textDocument/definition", &doc, 6, 14);
    assert_eq!(r["result"], json!({"uri": uri(&dir.join("src/lib.rs")), "range": range((4, 7), (4, 14))}), "{r}");
    // Plain text has no definition.
    let r = client.at("textDocument/definition", &doc, 12, 1);
    assert_eq!(r["result"], Value::Null);
    assert_eq!(client.shutdown(), Some(0));
}

/// (depth, name, detail, first line, last line, selection start).
type Row = (usize, String, String, u64, u64, (u64, u64));

fn rows(symbols: &Value, depth: usize, out: &mut Vec<Row>) {
    for s in symbols.as_array().unwrap() {
        let line = |v: &Value| v["line"].as_u64().unwrap();
        out.push((
            depth,
            s["name"].as_str().unwrap().to_owned(),
            s["detail"].as_str().unwrap_or("").to_owned(),
            line(&s["range"]["start"]),
            line(&s["range"]["end"]),
            (line(&s["selectionRange"]["start"]), s["selectionRange"]["start"]["character"].as_u64().unwrap()),
        ));
        if let Some(children) = s.get("children") {
            rows(children, depth + 1, out);
        }
    }
}

#[test]
fn document_symbols_of_the_example_prompts() {
    let path = common::root().join("examples/prompts/weather_assistant.prompty");
    let text = std::fs::read_to_string(&path).unwrap();
    let (mut client, _) = Client::start(json!({}));
    let doc = uri(&path);
    client.open(&doc, &text);
    let r = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": doc}}));
    let mut got = Vec::new();
    rows(&r["result"], 0, &mut got);
    let row =
        |d: usize, n: &str, det: &str, a: u64, b: u64, sel: (u64, u64)| (d, n.to_owned(), det.to_owned(), a, b, sel);
    assert_eq!(
        got,
        [
            row(0, "model", "openai ${env:PROMPTY_MODEL:gpt-4o-mini}", 3, 10, (3, 0)),
            row(0, "inputs", "", 11, 18, (11, 0)),
            row(1, "question", "string", 12, 14, (12, 10)),
            row(1, "preferredUnit", "string", 15, 18, (15, 10)),
            row(0, "tools", "", 19, 46, (19, 0)),
            row(1, "get_weather", "function", 20, 33, (20, 10)),
            row(2, "city", "string", 24, 27, (24, 14)),
            row(2, "unit", "string", 28, 30, (28, 14)),
            row(1, "convert_currency", "function", 34, 46, (34, 10)),
            row(2, "amount", "float", 38, 40, (38, 14)),
            row(2, "from", "string", 41, 43, (41, 14)),
            row(2, "to", "string", 44, 46, (44, 14)),
            row(0, "system", "You help travellers. Use the tools for weather…", 48, 49, (48, 0)),
            row(0, "user", "{{ question }}", 51, 52, (51, 0)),
        ]
    );
    // An output with nested properties.
    let path = common::root().join("examples/prompts/extract_weather.prompty");
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = uri(&path);
    client.open(&doc, &text);
    let r = client.request("textDocument/documentSymbol", json!({"textDocument": {"uri": doc}}));
    let mut got = Vec::new();
    rows(&r["result"], 0, &mut got);
    let outputs: Vec<&Row> = got.iter().skip_while(|r| r.1 != "outputs").take(7).collect();
    assert_eq!(
        outputs,
        [
            &row(0, "outputs", "", 23, 45, (23, 0)),
            &row(1, "city", "string", 24, 27, (24, 10)),
            &row(1, "temperature", "float", 28, 31, (28, 10)),
            &row(1, "conditions", "array", 32, 36, (32, 10)),
            &row(1, "wind", "object", 37, 45, (37, 10)),
            &row(2, "speedKmh", "float", 41, 43, (41, 14)),
            &row(2, "direction", "string", 44, 45, (44, 14)),
        ]
    );
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn quick_fixes_for_suggestions_and_undeclared_variables() {
    let dir = tempdir("actions");
    let path = dir.join("ask.prompty");
    let text = "---\ninputs:\n  question: {kind: string}\n---\nusr:\n{{ questoin | upcase }}\n";
    std::fs::write(&path, text).unwrap();
    let (mut client, _) = Client::start(json!({}));
    let doc = uri(&path);
    client.open(&doc, text);
    let published = client.diagnostics(&doc, 1);
    let codes: Vec<&str> = published.iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["unused-input", "misspelt-role-marker", "undeclared-variable", "unknown-jinja-function"]);
    let r = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": doc}, "range": range((4, 0), (5, 23)), "context": {"diagnostics": []}}),
    );
    let actions = r["result"].as_array().unwrap();
    let summary: Vec<(String, Value, Value, Value)> = actions
        .iter()
        .map(|a| {
            assert_eq!(a["kind"], "quickfix");
            (
                a["title"].as_str().unwrap().to_owned(),
                a["isPreferred"].clone(),
                a["edit"]["changes"][&doc].clone(),
                a["diagnostics"][0]["code"].clone(),
            )
        })
        .collect();
    let edit = |a: (u32, u32), b: (u32, u32), t: &str| json!([{"range": range(a, b), "newText": t}]);
    assert_eq!(
        summary,
        [
            ("Change to `user`".to_owned(), json!(true), edit((4, 0), (4, 3), "user"), json!("misspelt-role-marker")),
            (
                "Change to `question`".to_owned(),
                json!(true),
                edit((5, 3), (5, 11), "question"),
                json!("undeclared-variable")
            ),
            (
                "Declare `questoin` as an input".to_owned(),
                json!(false),
                edit((3, 0), (3, 0), "  questoin: {kind: string}\n"),
                json!("undeclared-variable")
            ),
            (
                "Change to `upper`".to_owned(),
                json!(true),
                edit((5, 14), (5, 20), "upper"),
                json!("unknown-jinja-function")
            ),
        ]
    );
    // Each action carries the diagnostic as published.
    assert_eq!(actions[1]["diagnostics"][0], published[2]);
    assert_eq!(actions[3]["diagnostics"][0], published[3]);
    // A range without a diagnostic: nothing.
    let r = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": doc}, "range": range((0, 0), (0, 3)), "context": {"diagnostics": []}}),
    );
    assert_eq!(r["result"], json!([]));
    // The fixes applied (as an editor would) leave only the unused input... which is used now.
    let fixed = "---\ninputs:\n  question: {kind: string}\n---\nuser:\n{{ question | upper }}\n";
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": doc, "version": 2}, "contentChanges": [{"text": fixed}]}),
    );
    assert_eq!(client.diagnostics(&doc, 2), Vec::<Value>::new());
    assert_eq!(client.shutdown(), Some(0));
}

/// The tokens decoded back to (line, start, length, type).
fn decode(data: &Value, legend: &Value) -> Vec<(u64, u64, u64, String)> {
    let data: Vec<u64> = data.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let types: Vec<&str> = legend["tokenTypes"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    let (mut line, mut start) = (0, 0);
    data.chunks(5)
        .map(|t| {
            line += t[0];
            start = if t[0] == 0 { start + t[1] } else { t[1] };
            (line, start, t[2], types[t[3] as usize].to_owned())
        })
        .collect()
}

#[test]
fn semantic_tokens_in_utf16_and_utf8() {
    let dir = tempdir("tokens");
    let path = dir.join("t.prompty");
    let text = "---\ninputs: [name]\nmodel:\n  id: ${env:MODEL:gpt}\n---\nsystem:\n{# 😀 note #}\nuser:\n😀 {{ name | upper }}{{ other }}\n";
    std::fs::write(&path, text).unwrap();
    for (capabilities, emoji) in [(json!({}), 2), (json!({"general": {"positionEncodings": ["utf-8"]}}), 4)] {
        let (mut client, init) = Client::start(capabilities.clone());
        let legend = init["capabilities"]["semanticTokensProvider"]["legend"].clone();
        let doc = uri(&path);
        client.open(&doc, text);
        let r = client.request("textDocument/semanticTokens/full", json!({"textDocument": {"uri": doc}}));
        let t = |l: u64, s: u64, n: u64, k: &str| (l, s, n, k.to_owned());
        assert_eq!(
            decode(&r["result"]["data"], &legend),
            [
                t(3, 6, 16, "macro"),
                t(5, 0, 6, "keyword"),
                t(6, 0, 11 + emoji, "comment"),
                t(7, 0, 4, "keyword"),
                t(8, 1 + emoji, 2, "operator"),
                t(8, 4 + emoji, 4, "parameter"),
                t(8, 11 + emoji, 5, "function"),
                t(8, 17 + emoji, 2, "operator"),
                t(8, 19 + emoji, 2, "operator"),
                t(8, 22 + emoji, 5, "variable"),
                t(8, 28 + emoji, 2, "operator"),
            ],
            "{capabilities:?}"
        );
        assert_eq!(client.shutdown(), Some(0));
    }
}
