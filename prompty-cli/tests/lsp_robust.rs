//! `prompty lsp` against hostile input, over stdio: binary data as a document's text, lone UTF-16
//! surrogates, a 10 MB document, positions past the end or inside a character, documents never
//! opened or already closed, broken frames and bodies, wrong parameter types, unknown methods,
//! requests before `initialize` and after `shutdown`. After each, the server still answers and
//! checks a normal document, and it exits 0 on `shutdown` + `exit` (1 on `exit` alone, as the
//! protocol says).

mod common;

use common::lsp::{frame, Client, WAIT};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A prompt with one misspelt variable: `questoin` at line 4, characters 3..11.
const BROKEN: &str = "---\ninputs:\n  question: {kind: string}\n---\nuser:\n{{ questoin }} {{ question }}\n";

/// The server still works: a new document gets its exact diagnostics, and a hover on it is
/// answered (with a result, not an error).
fn assert_alive(client: &mut Client, tag: &str) {
    let uri = format!("file:///tmp/prompty-lsp-robust/alive-{}.prompty", tag.replace(' ', "-"));
    client.open(&uri, BROKEN);
    let diagnostics = client.diagnostics(&uri, 1);
    let summary: Vec<_> = diagnostics.iter().map(|d| (d["code"].clone(), d["range"].clone())).collect();
    assert_eq!(
        summary,
        [(
            json!("undeclared-variable"),
            json!({"start": {"line": 5, "character": 3}, "end": {"line": 5, "character": 11}})
        )],
        "after {tag}"
    );
    let hover = client.at("textDocument/hover", &uri, 5, 20);
    assert!(hover.get("error").is_none() && hover.get("result").is_some(), "after {tag}: {hover}");
    assert!(client.alive(), "after {tag}");
}

/// The `error` of a response: its code and message.
fn error(response: &Value) -> (i64, String) {
    let e = &response["error"];
    (e["code"].as_i64().unwrap_or_else(|| panic!("no error: {response}")), e["message"].as_str().unwrap().to_owned())
}

/// A raw frame around a body written by hand (which may be no JSON at all).
fn raw_frame(body: &str) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body.as_bytes());
    out
}

#[test]
fn binary_data_as_a_document_is_checked_without_a_crash() {
    let (mut client, _) = Client::start(json!({}));
    // Every control character, NUL included, inside and around the frontmatter and the template.
    let controls: String = (0u8..0x20).chain([0x7f]).map(char::from).collect();
    let texts = [
        controls.clone(),
        format!("---\n{controls}\n---\nuser:\n{{{{ {controls} }}}}"),
        format!("---\ninputs: [q]\n---\nuser:\n{{{{ q }}}}\0\0{{% for {controls} %}}\u{feff}\u{fffe}"),
        "\0".repeat(10_000),
        (0..=0x10ffffu32).step_by(97).filter_map(char::from_u32).collect(),
    ];
    for (i, text) in texts.iter().enumerate() {
        let uri = format!("file:///tmp/prompty-lsp-robust/binary-{i}.prompty");
        client.open(&uri, text);
        let diagnostics = client.diagnostics(&uri, 1);
        let codes: Vec<_> = diagnostics.iter().map(|d| d["code"].as_str().unwrap().to_owned()).collect();
        // Without frontmatter, text is a template without variables; inside it, it is reported.
        let expected: &[&str] = match i {
            1 => &["invalid-frontmatter"],
            2 => &["template-syntax"],
            _ => &[],
        };
        assert_eq!(codes, expected, "text {i}");
        for method in ["textDocument/hover", "textDocument/completion", "textDocument/definition"] {
            for (line, character) in [(0, 0), (0, 3), (4, 2), (1, 1000)] {
                let response = client.at(method, &uri, line, character);
                assert!(response.get("error").is_none(), "text {i}: {method}: {response}");
            }
        }
        for method in ["textDocument/documentSymbol", "textDocument/semanticTokens/full"] {
            let response = client.request(method, json!({"textDocument": {"uri": uri}}));
            assert!(response.get("error").is_none(), "text {i}: {method}: {response}");
        }
    }
    assert_alive(&mut client, "binary data");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn lone_surrogates_are_read_as_replacement_characters() {
    let (mut client, _) = Client::start(json!({}));
    let uri = "file:///tmp/prompty-lsp-robust/surrogate.prompty";
    // serde_json (and so the JSON-RPC layer) refuses `\ud800` alone: a JavaScript client sends it
    // for a string with half a surrogate pair. It is one UTF-16 unit, read as U+FFFD (also one).
    let body = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"{uri}","languageId":"prompty","version":1,"text":"---\ninputs: [q]\n---\nuser:\n\ud800{{{{ qq }}}}\udc00 {{{{ q }}}}\n"}}}}}}"#
    );
    client.send_raw(&raw_frame(&body));
    let diagnostics = client.diagnostics(uri, 1);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["code"], "undeclared-variable");
    assert_eq!(
        diagnostics[0]["range"],
        json!({"start": {"line": 4, "character": 4}, "end": {"line": 4, "character": 6}})
    );
    // An edit after the first surrogate lands where the client means it.
    let change = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didChange","params":{{"textDocument":{{"uri":"{uri}","version":2}},"contentChanges":[{{"range":{{"start":{{"line":4,"character":4}},"end":{{"line":4,"character":6}}}},"text":"zz"}},{{"range":{{"start":{{"line":4,"character":0}},"end":{{"line":4,"character":0}}}},"text":"\udbff"}}]}}}}"#
    );
    client.send_raw(&raw_frame(&change));
    let diagnostics = client.diagnostics(uri, 2);
    assert_eq!(
        diagnostics[0]["range"],
        json!({"start": {"line": 4, "character": 5}, "end": {"line": 4, "character": 7}})
    );
    assert_eq!(diagnostics[0]["message"].as_str().unwrap().split('`').nth(1), Some("zz"), "{diagnostics:#?}");
    // A request with one in its parameters is answered, with its id.
    let hover = r#"{"jsonrpc":"2.0","id":"s1","method":"textDocument/hover","params":{"textDocument":{"uri":"file:///tmp/\udc00.prompty"},"position":{"line":0,"character":0}}}"#;
    client.send_raw(&raw_frame(hover));
    let response = client.wait_for(|m| m["id"] == "s1");
    let (code, message) = error(&response);
    assert_eq!(code, -32602);
    assert!(message.starts_with("cannot read the parameters of textDocument/hover"), "{message}");
    assert_alive(&mut client, "lone surrogates");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn a_10_mb_document_is_too_large_to_check_and_answers_stay_fast() {
    let (mut client, _) = Client::start(json!({}));
    let uri = "file:///tmp/prompty-lsp-robust/huge.prompty";
    let line = "{{ question }} is asked again and again, with words to make the line longer.\n";
    let mut text = String::from("---\ninputs: [question]\n---\nuser:\n");
    while text.len() < 10_000_000 {
        text.push_str(line);
    }
    let lines = text.lines().count() as u32;
    client.open(uri, &text);
    let diagnostics = client.diagnostics(uri, 1);
    assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
    assert_eq!(diagnostics[0]["code"], "too-large");
    let message = diagnostics[0]["message"].as_str().unwrap();
    assert!(message.contains(&format!("{} bytes", text.len())) && message.contains("prompty check"), "{message}");
    // Requests and one-character edits in the middle and at the end: each answered within a second.
    for (i, at) in [lines / 2, lines - 1, lines + 10].into_iter().enumerate() {
        let version = 2 + i as i64;
        let t = Instant::now();
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [
                {"range": {"start": {"line": at, "character": 3}, "end": {"line": at, "character": 4}}, "text": "Q"}]}),
        );
        let diagnostics = client.diagnostics(uri, version);
        assert_eq!(diagnostics[0]["code"], "too-large");
        for method in ["textDocument/hover", "textDocument/completion", "textDocument/definition"] {
            let response = client.at(method, uri, at, 4);
            assert!(response.get("error").is_none(), "{method}: {response}");
        }
        let elapsed = t.elapsed();
        assert!(elapsed < Duration::from_secs(1), "an edit and three requests took {elapsed:?} on 10 MB");
    }
    // Back to a small text: checked again.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 9}, "contentChanges": [{"text": BROKEN}]}),
    );
    let diagnostics = client.diagnostics(uri, 9);
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(diagnostics[0]["code"], "undeclared-variable");
    assert_alive(&mut client, "10 MB");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn positions_past_the_end_or_inside_a_character_are_clamped() {
    let (mut client, _) = Client::start(json!({}));
    let uri = "file:///tmp/prompty-lsp-robust/positions.prompty";
    client.open(uri, "---\ninputs: [q]\n---\nuser:\n😀{{ q }}");
    assert_eq!(client.diagnostics(uri, 1), Vec::<Value>::new());
    let change = |client: &mut Client, version: i64, start: (u64, u64), end: (u64, u64), text: &str| {
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": {
                "start": {"line": start.0, "character": start.1}, "end": {"line": end.0, "character": end.1}},
                "text": text}]}),
        );
        client.diagnostics(uri, version)
    };
    // Inside the emoji (its second UTF-16 unit): at its start.
    assert_eq!(change(&mut client, 2, (4, 1), (4, 1), "a"), Vec::<Value>::new());
    // Past the end of the last line and of the text, with the largest numbers the protocol has.
    let max = u64::from(u32::MAX);
    change(&mut client, 3, (4, max), (4, max), " {{ zz }}");
    let diagnostics = change(&mut client, 4, (max, max), (max, 0), "\n{{ yy }}");
    // `a😀{{ q }} {{ zz }}`: `a` 1, the emoji 2, then 8 and 4 units.
    let ranges: Vec<_> = diagnostics.iter().map(|d| d["range"].clone()).collect();
    assert_eq!(
        ranges,
        [
            json!({"start": {"line": 4, "character": 14}, "end": {"line": 4, "character": 16}}),
            json!({"start": {"line": 5, "character": 3}, "end": {"line": 5, "character": 5}}),
        ]
    );
    // A range whose end is before its start, and one from a line past the end back to the start.
    change(&mut client, 5, (5, 8), (5, 0), "");
    let diagnostics = change(&mut client, 6, (99, 0), (4, 14), "ww }}");
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(
        diagnostics[0]["range"],
        json!({"start": {"line": 4, "character": 14}, "end": {"line": 4, "character": 16}})
    );
    assert_eq!(diagnostics[0]["message"].as_str().unwrap().split('`').nth(1), Some("ww"), "{diagnostics:#?}");
    for method in ["textDocument/hover", "textDocument/completion", "textDocument/definition"] {
        for (line, character) in [(4, 1), (4, 2), (4, max), (max, max), (0, max), (max, 0)] {
            let response = client.at(method, uri, line as u32, character as u32);
            assert!(response.get("error").is_none(), "{method} at {line}:{character}: {response}");
        }
    }
    let response = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": max, "character": 0}, "end": {"line": 0, "character": max}},
               "context": {"diagnostics": []}}),
    );
    assert!(response.get("error").is_none(), "{response}");
    // Numbers the protocol does not allow: the request's parameters cannot be read.
    let response = client
        .request("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": -1, "character": 0}}));
    let (code, message) = error(&response);
    assert_eq!(code, -32602);
    assert!(message.contains("cannot read the parameters of textDocument/hover"), "{message}");
    let response = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 1e12, "character": 0}}),
    );
    assert_eq!(error(&response).0, -32602);
    // A change the server cannot read is dropped: the document stays as it was.
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 7}, "contentChanges": [{"range": {
            "start": {"line": -5, "character": 0}, "end": {"line": 0, "character": 0}}, "text": "{{ broken }}"}]}),
    );
    assert_eq!(change(&mut client, 8, (0, 0), (0, 0), "").len(), 1);
    assert_alive(&mut client, "positions");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn documents_never_opened_or_closed_get_errors_not_crashes() {
    let (mut client, _) = Client::start(json!({}));
    let uri = "file:///tmp/prompty-lsp-robust/closed.prompty";
    let never = "file:///tmp/prompty-lsp-robust/never.prompty";
    let change = |version: i64| json!({"textDocument": {"uri": never, "version": version}, "contentChanges": [{"text": "{{ x }}"}]});
    client.notify("textDocument/didChange", change(1));
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": never}}));
    client.notify("textDocument/didSave", json!({"textDocument": {"uri": never}}));
    for method in ["textDocument/hover", "textDocument/completion", "textDocument/definition"] {
        let (code, message) = error(&client.at(method, never, 0, 0));
        assert_eq!(code, -32602, "{method}");
        assert!(message.contains("is not open: send textDocument/didOpen first"), "{method}: {message}");
    }
    client.open(uri, BROKEN);
    assert_eq!(client.diagnostics(uri, 1).len(), 1);
    // Closing clears its diagnostics.
    assert_eq!(client.close(uri), Vec::<Value>::new());
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "{{ x }}"}]}),
    );
    for method in ["textDocument/hover", "textDocument/completion", "textDocument/codeAction"] {
        let params = json!({"textDocument": {"uri": uri}, "position": {"line": 5, "character": 4},
            "range": {"start": {"line": 5, "character": 4}, "end": {"line": 5, "character": 4}}, "context": {"diagnostics": []}});
        let (code, _) = error(&client.request(method, params));
        assert_eq!(code, -32602, "{method}");
    }
    for method in ["textDocument/documentSymbol", "textDocument/semanticTokens/full"] {
        assert_eq!(error(&client.request(method, json!({"textDocument": {"uri": uri}}))).0, -32602, "{method}");
    }
    // Nothing was published for the changes of documents that are not open.
    let stray: Vec<Value> = client
        .drain(Duration::from_millis(300))
        .into_iter()
        .filter(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"].is_number())
        .collect();
    assert!(stray.is_empty(), "{stray:#?}");
    // Reopened: checked again.
    client.open(uri, BROKEN);
    assert_eq!(client.diagnostics(uri, 1).len(), 1);
    assert_alive(&mut client, "closed documents");
    assert_eq!(client.shutdown(), Some(0));
}

#[test]
fn broken_frames_bodies_and_parameters_are_answered_with_errors() {
    let (mut client, _) = Client::start(json!({}));
    let null_error = |client: &mut Client| client.wait_for(|m| m["id"].is_null() && m.get("error").is_some());
    // A body that is not JSON: a parse error with a null id.
    client.send_raw(&raw_frame("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": "));
    let (code, message) = error(&null_error(&mut client));
    assert_eq!(code, -32700);
    assert!(message.starts_with("the message is not JSON"), "{message}");
    assert_alive(&mut client, "a body that is not JSON");
    // Bytes that are not UTF-8 in a document's text: read as U+FFFD, one UTF-16 unit each.
    let uri = "file:///tmp/prompty-lsp-robust/not-utf8.prompty";
    let mut body = format!(
        r#"{{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{{"textDocument":{{"uri":"{uri}","languageId":"prompty","version":1,"text":"---\ninputs: [q]\n---\nuser:\n"#
    )
    .into_bytes();
    body.extend([0xff, 0xc3]);
    body.extend(br#"{{ zz }} {{ q }}"}}}"#);
    let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    framed.extend(body);
    client.send_raw(&framed);
    let diagnostics = client.diagnostics(uri, 1);
    let ranges: Vec<_> = diagnostics.iter().map(|d| d["range"].clone()).collect();
    assert_eq!(ranges, [json!({"start": {"line": 4, "character": 5}, "end": {"line": 4, "character": 7}})]);
    // JSON that is no JSON-RPC message: invalid request, with the id when there is one.
    client.send_raw(&raw_frame("[1, 2, 3]"));
    let (code, message) = error(&null_error(&mut client));
    assert_eq!(code, -32600);
    assert!(message.contains("a JSON-RPC message is an object"), "{message}");
    client.send_raw(&raw_frame(r#"{"jsonrpc": "2.0", "id": 41, "method": 5}"#));
    let (code, message) = error(&client.wait_for(|m| m["id"] == 41));
    assert_eq!(code, -32600);
    assert!(message.contains("not a JSON-RPC request"), "{message}");
    client.send_raw(&raw_frame(r#"{"jsonrpc": "2.0", "id": 9999999999999, "method": "textDocument/hover"}"#));
    assert_eq!(error(&client.wait_for(|m| m["id"] == 9999999999999u64)).0, -32600);
    assert_alive(&mut client, "JSON that is no message");
    // Broken headers: a parse error, and the next frame is read.
    client.send_raw(b"Content-Length: many\r\n\r\n");
    let (code, message) = error(&null_error(&mut client));
    assert_eq!(code, -32700);
    assert!(message.contains("\"many\" is not a number of bytes"), "{message}");
    client.send_raw(b"Content-Type: application/vscode-jsonrpc\r\n\r\n");
    let (_, message) = error(&null_error(&mut client));
    assert!(message.contains("no Content-Length"), "{message}");
    client.send_raw(&[b'x'; 20_000]);
    client.send_raw(b"\r\n\r\n");
    let (_, message) = error(&null_error(&mut client));
    assert!(message.contains("header line is longer than"), "{message}");
    client.send_raw(b"\r\n\r\n\n");
    assert_alive(&mut client, "broken headers");
    // A frame announcing more than the bound: skipped, answered; the server reads on.
    let bound = 256usize << 20;
    client.send_raw(format!("Content-Length: {}\r\n\r\n", bound + 1).as_bytes());
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..256 {
        client.send_raw(&chunk);
    }
    client.send_raw(b" ");
    let (_, message) = error(&null_error(&mut client));
    assert!(message.contains(&format!("reads messages up to {bound} bytes")), "{message}");
    assert_alive(&mut client, "a frame over the bound");
    // Parameters of the wrong type: requests get InvalidParams, notifications are dropped.
    for params in [json!("x"), json!([1]), json!({"textDocument": 5}), json!({"textDocument": {"uri": 5}}), Value::Null]
    {
        for method in ["textDocument/hover", "textDocument/completion", "textDocument/codeAction"] {
            let (code, message) = error(&client.request(method, params.clone()));
            assert_eq!(code, -32602, "{method} {params}");
            assert!(message.starts_with(&format!("cannot read the parameters of {method}")), "{message}");
        }
        for method in [
            "textDocument/didOpen",
            "textDocument/didChange",
            "textDocument/didClose",
            "workspace/didChangeWatchedFiles",
        ] {
            client.notify(method, params.clone());
        }
    }
    // Unknown methods: requests get MethodNotFound, notifications (`$/` ones included) are dropped.
    let (code, message) = error(&client.request("prompty/nothing", json!({})));
    assert_eq!(code, -32601);
    assert!(message.contains("`prompty/nothing`"), "{message}");
    client.notify("prompty/nothing", json!([1]));
    client.notify("$/cancelRequest", json!({"id": 12345}));
    client.notify("$/setTrace", json!({"value": "verbose"}));
    // A response from the client to a request the server never sent.
    client.send_raw(&frame(&json!({"jsonrpc": "2.0", "id": 77, "result": {"ok": true}})));
    client.send_raw(&frame(&json!({"jsonrpc": "2.0", "id": 78, "error": {"code": -1, "message": "no"}})));
    assert_alive(&mut client, "wrong parameters and unknown methods");
    assert_eq!(client.shutdown(), Some(0));
}

/// A `prompty lsp` driven frame by frame, from before `initialize`.
struct Raw {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    incoming: Receiver<Value>,
}

impl Raw {
    fn start() -> Raw {
        let mut child = Command::new(common::bin())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prompty lsp");
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, incoming) = channel();
        std::thread::spawn(move || loop {
            let mut length = 0;
            loop {
                let mut line = String::new();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                match line.trim_end().strip_prefix("Content-Length: ") {
                    Some(n) => length = n.parse().unwrap(),
                    None if line.trim_end().is_empty() => break,
                    None => {}
                }
            }
            let mut body = vec![0; length];
            if stdout.read_exact(&mut body).is_err() || tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        });
        let stdin = child.stdin.take();
        Raw { child, stdin, incoming }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(&frame(&message)).unwrap();
        stdin.flush().unwrap();
    }

    fn next(&mut self) -> Value {
        self.incoming.recv_timeout(WAIT).expect("a message from the server")
    }

    /// Sends `exit` and waits for the exit code.
    fn exit(mut self) -> Option<i32> {
        self.send(json!({"jsonrpc": "2.0", "method": "exit"}));
        self.hang_up()
    }

    /// Closes the server's stdin and waits for the exit code.
    fn hang_up(mut self) -> Option<i32> {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_lifecycle_is_enforced_without_stopping_the_server() {
    let mut raw = Raw::start();
    let doc = "file:///tmp/prompty-lsp-robust/early.prompty";
    // Before `initialize`: requests are refused, notifications dropped.
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": doc}, "position": {"line": 0, "character": 0}}}));
    let response = raw.next();
    assert_eq!((response["id"].clone(), response["error"]["code"].clone()), (json!(1), json!(-32002)), "{response}");
    raw.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": doc, "languageId": "prompty", "version": 1, "text": BROKEN}}}));
    // An `initialize` the server cannot read is refused; the client may send another.
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": 5}}));
    let response = raw.next();
    assert_eq!(response["id"], 2);
    assert_eq!(response["error"]["code"], -32602, "{response}");
    raw.send(json!({"jsonrpc": "2.0", "id": 3, "method": "initialize",
        "params": {"processId": null, "rootUri": null, "capabilities": {}, "initializationOptions": {"debounceMs": 0}}}));
    let response = raw.next();
    assert_eq!(response["id"], 3);
    assert_eq!(response["result"]["serverInfo"]["name"], "prompty", "{response}");
    // Without `initialized`, a second `initialize`: refused, the server goes on.
    raw.send(json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"capabilities": {}}}));
    let response = raw.next();
    assert_eq!((response["id"].clone(), response["error"]["code"].clone()), (json!(4), json!(-32600)), "{response}");
    // The document sent before `initialize` was dropped.
    raw.send(json!({"jsonrpc": "2.0", "id": 5, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": doc}, "position": {"line": 0, "character": 0}}}));
    let response = raw.next();
    assert_eq!((response["id"].clone(), response["error"]["code"].clone()), (json!(5), json!(-32602)), "{response}");
    raw.send(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen",
        "params": {"textDocument": {"uri": doc, "languageId": "prompty", "version": 1, "text": BROKEN}}}));
    let published = raw.next();
    assert_eq!(published["method"], "textDocument/publishDiagnostics");
    assert_eq!(published["params"]["diagnostics"][0]["code"], "undeclared-variable");
    // After `shutdown`: requests are refused, notifications dropped, `exit` ends with 0.
    raw.send(json!({"jsonrpc": "2.0", "id": 6, "method": "shutdown"}));
    let response = raw.next();
    assert_eq!((response["id"].clone(), response["result"].clone()), (json!(6), Value::Null), "{response}");
    raw.send(json!({"jsonrpc": "2.0", "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": doc, "version": 2}, "contentChanges": [{"text": "{{ x }}"}]}}));
    raw.send(json!({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover",
        "params": {"textDocument": {"uri": doc}, "position": {"line": 0, "character": 0}}}));
    let response = raw.next();
    assert_eq!((response["id"].clone(), response["error"]["code"].clone()), (json!(7), json!(-32600)), "{response}");
    assert!(raw.incoming.recv_timeout(Duration::from_millis(300)).is_err(), "nothing published after shutdown");
    assert_eq!(raw.exit(), Some(0));

    // `exit` without `shutdown`: the protocol's exit code 1.
    let mut raw = Raw::start();
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    assert_eq!(raw.next()["id"], 1);
    raw.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    assert_eq!(raw.exit(), Some(1));
    // `exit` before `initialize`: 1 as well.
    assert_eq!(Raw::start().exit(), Some(1));
}

#[test]
fn a_client_that_hangs_up_mid_frame_ends_the_server() {
    let mut raw = Raw::start();
    raw.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}));
    assert_eq!(raw.next()["id"], 1);
    raw.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let stdin = raw.stdin.as_mut().unwrap();
    stdin.write_all(b"Content-Length: 100\r\n\r\n{\"jsonrpc\"").unwrap();
    stdin.flush().unwrap();
    // The end of the input inside a frame: the server ends (no shutdown was asked: nothing to
    // report) instead of waiting forever.
    assert_eq!(raw.hang_up(), Some(0));
}
