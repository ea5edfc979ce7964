//! A language client for the tests of `prompty lsp`: spawns the real binary, frames JSON-RPC
//! messages with `Content-Length` on its stdin, reads its stdout on a thread, and waits (with a
//! deadline) for a response or a notification.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long a test waits for one message from the server.
pub const WAIT: Duration = Duration::from_secs(20);

/// A running `prompty lsp` and the messages it sent that no one has taken yet.
pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
    pending: Vec<Value>,
    next_id: i64,
    last_published: std::collections::HashMap<String, Vec<Value>>,
}

/// The `file:` URI of a path (absolute).
pub fn uri(path: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let text = path.to_string_lossy().replace(' ', "%20");
    format!("file://{text}")
}

/// Writes one framed message.
pub fn frame(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).unwrap();
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend(body);
    out
}

impl Client {
    /// Starts the server and completes `initialize` with `capabilities` and
    /// `initializationOptions: {debounceMs: 0}`; returns the client and the server's
    /// `InitializeResult`.
    pub fn start(capabilities: Value) -> (Client, Value) {
        Client::start_with(capabilities, json!({"debounceMs": 0}))
    }

    /// Starts the server with `initializationOptions` of the test's choice.
    pub fn start_with(capabilities: Value, options: Value) -> (Client, Value) {
        let mut child = Command::new(super::bin())
            .arg("lsp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start prompty lsp");
        let stdout = child.stdout.take().unwrap();
        let (tx, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut length = None;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(n) = line.strip_prefix("Content-Length: ") {
                        length = n.parse::<usize>().ok();
                    }
                }
                let mut body = vec![0; length.expect("a Content-Length header")];
                if reader.read_exact(&mut body).is_err() {
                    return;
                }
                let value: Value = serde_json::from_slice(&body).expect("the server writes JSON");
                if tx.send(value).is_err() {
                    return;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut client =
            Client { child, stdin, incoming, pending: Vec::new(), next_id: 0, last_published: Default::default() };
        let result = client.request(
            "initialize",
            json!({"processId": null, "rootUri": null, "capabilities": capabilities,
                   "initializationOptions": options}),
        );
        client.notify("initialized", json!({}));
        (client, result["result"].clone())
    }

    /// Sends raw bytes to the server's stdin.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send_raw(&frame(&json!({"jsonrpc": "2.0", "method": method, "params": params})));
    }

    /// Sends a request and waits for its response (the whole message: `result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send_raw(&frame(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})));
        self.wait_for(|m| m["id"] == json!(id) && m.get("method").is_none())
    }

    /// Waits for the first message (already received or to come) that `matches`.
    pub fn wait_for(&mut self, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.pending.iter().position(&matches) {
            return self.pending.remove(i);
        }
        let deadline = Instant::now() + WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.incoming.recv_timeout(left) {
                Ok(m) if matches(&m) => return m,
                Ok(m) => self.pending.push(m),
                Err(RecvTimeoutError::Timeout) => {
                    panic!("no such message within {WAIT:?}; received: {:#?}", self.pending)
                }
                Err(RecvTimeoutError::Disconnected) => panic!("the server exited; received: {:#?}", self.pending),
            }
        }
    }

    /// Opens a document with `text`.
    pub fn open(&mut self, uri: &str, text: &str) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "prompty", "version": 1, "text": text}}),
        );
    }

    /// Closes a document and waits for the (empty, unversioned) diagnostics that clear it.
    pub fn close(&mut self, uri: &str) -> Vec<Value> {
        self.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
        let cleared = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"].is_null()
        });
        cleared["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    /// Waits for the diagnostics of `uri` published for `version` (the last ones first).
    pub fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let m = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == json!(version)
        });
        let found = m["params"]["diagnostics"].as_array().cloned().unwrap_or_default();
        self.last_published.insert(uri.to_owned(), found.clone());
        found
    }

    /// Asks for the document's diagnostics again by reopening nothing: the last ones the server
    /// published for `uri` (waits for them when none came yet).
    pub fn diagnostics_again(&mut self, uri: &str) -> Vec<Value> {
        self.last_published.get(uri).cloned().unwrap_or_default()
    }

    /// `textDocument/…` request at a position: `{textDocument: {uri}, position}`.
    pub fn at(&mut self, method: &str, uri: &str, line: u32, character: u32) -> Value {
        self.request(method, json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}))
    }

    /// `shutdown` then `exit`; returns the exit status's code.
    pub fn shutdown(mut self) -> Option<i32> {
        let response = self.request("shutdown", Value::Null);
        assert_eq!(response["result"], Value::Null, "{response}");
        self.notify("exit", Value::Null);
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the server did not exit after `exit`");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The messages received and not taken yet (after waiting `quiet` for more).
    pub fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        while let Ok(m) = self.incoming.recv_timeout(quiet) {
            self.pending.push(m);
        }
        std::mem::take(&mut self.pending)
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
