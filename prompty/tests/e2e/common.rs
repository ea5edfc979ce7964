//! Shared setup of the end-to-end tests: a real `@copilotkit/aimock` server (`llmock`, pinned in
//! `package.json` / `package-lock.json` beside this file) started on 127.0.0.1 for one test, with
//! the fixtures of `fixtures/llm.json`, and read back through its request journal.
//!
//! `npm ci` runs first when `node_modules/.bin/llmock` is missing. The server is killed (by its
//! process id) when the [`Aimock`] value is dropped. Nothing here talks to anything but 127.0.0.1.

#![allow(dead_code)]

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The folder holding `package.json`, `node_modules` and `fixtures` (`prompty/tests/e2e`, found
/// from the crate of the test, `prompty` or another member of the workspace).
pub fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("prompty").join("tests").join("e2e")
}

static INSTALL: Mutex<bool> = Mutex::new(false);

/// The npm packages' commands the tests start; `npm ci` runs when one is missing.
const NPM_BINS: [&str; 4] = ["llmock", "mcp-server-everything", "mcp-server-filesystem", "prism"];

/// Installs the pinned npm peers with `npm ci` when one is not there yet (once per process), and
/// returns the folder of their commands (`node_modules/.bin`).
pub fn npm_bin_dir() -> PathBuf {
    let dir = e2e_dir();
    let bins = dir.join("node_modules").join(".bin");
    let mut done = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    if !*done && NPM_BINS.iter().any(|b| !bins.join(b).exists()) {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .status()
            .unwrap_or_else(|e| panic!("cannot run `npm ci` (node and npm are needed for the e2e tests): {e}"));
        assert!(status.success(), "`npm ci --prefix {}` failed: {status}", dir.display());
        for b in NPM_BINS {
            assert!(bins.join(b).exists(), "`npm ci` did not install {}", bins.join(b).display());
        }
    }
    *done = true;
    bins
}

fn ensure_installed() -> PathBuf {
    npm_bin_dir().join("llmock")
}

/// A plain HTTP/1.0 GET of `path` on 127.0.0.1:`port` (no client library in between), with
/// `headers` (each line ending in `\r\n`): status and body.
pub fn raw_get(port: u16, path: &str, headers: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n{headers}Connection: close\r\n\r\n")?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok((status, body.to_owned()))
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("no free port")
}

/// A running aimock server.
pub struct Aimock {
    child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    log: PathBuf,
    /// The key the journal is read with, when the server checks keys.
    admin_key: Option<String>,
}

impl Aimock {
    /// Starts aimock with `fixtures/llm.json` and waits (at most 20 s) until it answers.
    pub fn start() -> Aimock {
        Aimock::start_with("llm.json", &[])
    }

    /// Starts aimock so that it accepts only requests carrying one of `keys` (as `Authorization:
    /// Bearer`, `x-api-key` or `api-key`) and answers others with 401: proof that the client sent
    /// exactly that key (the journal shows keys redacted).
    pub fn start_with_keys(keys: &[&str]) -> Aimock {
        Aimock::start_with("llm.json", keys)
    }

    /// Starts aimock with `fixtures/<file>` (and key checking when `keys` is not empty).
    pub fn start_with(fixtures: &str, keys: &[&str]) -> Aimock {
        let bin = ensure_installed();
        let fixtures = e2e_dir().join("fixtures").join(fixtures);
        let mut last_log = String::new();
        for _ in 0..3 {
            let port = free_port();
            let log = std::env::temp_dir().join(format!("prompty-aimock-{port}.log"));
            let out = std::fs::File::create(&log).expect("cannot create the aimock log file");
            let err = out.try_clone().expect("cannot clone the log file handle");
            let mut command = Command::new(&bin);
            if keys.is_empty() {
                command.env_remove("AIMOCK_API_KEYS");
            } else {
                command.env("AIMOCK_API_KEYS", keys.join(","));
            }
            let child = command
                .args(["-h", "127.0.0.1", "-p", &port.to_string(), "--log-level", "warn", "-f"])
                .arg(&fixtures)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
            let admin_key = keys.first().map(|k| k.to_string());
            let mut server = Aimock { child, port, log, admin_key };
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break;
                }
                if let Ok((200, _)) = server.get("/health") {
                    return server;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            last_log = std::fs::read_to_string(&server.log).unwrap_or_default();
        }
        panic!("aimock did not become ready; its log:\n{last_log}");
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A plain HTTP/1.0 GET to the server (no client library in between): status and body.
    pub fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        let auth = self.admin_key.as_ref().map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
        raw_get(self.port, path, &auth)
    }

    /// Every provider request the server received, oldest first (its journal, without the health
    /// checks of the setup).
    pub fn journal(&self) -> Vec<Value> {
        let (status, body) = self.get("/__aimock/journal").expect("cannot read the aimock journal");
        assert_eq!(status, 200, "journal: {body}");
        let all: Vec<Value> = serde_json::from_str(&body).expect("the journal is not a JSON array");
        all.into_iter()
            .filter(|e| {
                let p = e["path"].as_str().unwrap_or("");
                !(p.starts_with("/health") || p.starts_with("/ready") || p.starts_with("/__aimock"))
            })
            .collect()
    }

    /// The journal entries for a path (query included), oldest first.
    pub fn requests_to(&self, path: &str) -> Vec<Value> {
        self.journal().into_iter().filter(|e| e["path"] == path).collect()
    }
}

impl Drop for Aimock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// The `User-Agent` prompty sends.
pub fn user_agent() -> String {
    format!("prompty-rs/{}", env!("CARGO_PKG_VERSION"))
}

/// Loads a prompt from text.
pub fn prompt(text: &str) -> prompty::Agent {
    prompty::load_str(text, ".", "e2e.prompty").unwrap_or_else(|e| panic!("bad test prompt: {e}\n{text}"))
}

/// Runs `f` with a bound: no test waits forever on a server.
pub async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f).await.expect("the test took more than 60 s")
}

/// Every chunk of a stream.
pub async fn collect(stream: prompty::ChunkStream) -> Vec<prompty::StreamChunk> {
    use futures_util::StreamExt;
    within(stream.collect::<Vec<_>>()).await
}

/// The whole tool calls of a stream, in order.
pub fn tool_calls_of(chunks: &[prompty::StreamChunk]) -> Vec<&prompty::ToolCall> {
    chunks
        .iter()
        .filter_map(|c| match c {
            prompty::StreamChunk::ToolCall(t) => Some(t),
            _ => None,
        })
        .collect()
}

/// The text chunks of a stream, joined.
pub fn text_of(chunks: &[prompty::StreamChunk]) -> String {
    chunks.iter().filter_map(|c| c.text()).collect()
}

/// One request a [`RecordingProxy`] passed on: its path and the exact body bytes the client sent.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub path: String,
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The body parsed as JSON (fails the test when the bytes sent are not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!("{}: the body sent is not JSON ({e}): {}", self.path, String::from_utf8_lossy(&self.body))
        })
    }
}

/// A plain HTTP/1.1 proxy on 127.0.0.1 in front of a server on `upstream` that records every
/// request body byte for byte before passing it on: what the server received, where aimock's
/// journal shows only its normalized reading of it. Each request goes upstream on its own
/// connection with `Connection: close`, and the answer (streamed or not) is copied back until the
/// server closes it. Stops accepting when dropped.
pub struct RecordingProxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
    requests: std::sync::Arc<Mutex<Vec<RecordedRequest>>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl RecordingProxy {
    /// Starts the proxy in front of `127.0.0.1:<upstream>`.
    pub fn start(upstream: u16) -> RecordingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("cannot bind the recording proxy");
        let port = listener.local_addr().expect("no local address").port();
        let requests = std::sync::Arc::new(Mutex::new(Vec::new()));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (recorded, stopped) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let recorded = recorded.clone();
                std::thread::spawn(move || {
                    let _ = proxy_one(client, upstream, &recorded);
                });
            }
        });
        RecordingProxy { port, requests, stop }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests to `path` it passed on, oldest first.
    pub fn requests_to(&self, path: &str) -> Vec<RecordedRequest> {
        let all = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        all.iter().filter(|r| r.path == path).cloned().collect()
    }
}

impl Drop for RecordingProxy {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// Reads one request from `client` (head, then a `Content-Length` body), records it, sends it
/// upstream with `Connection: close` and copies the answer back.
fn proxy_one(mut client: TcpStream, upstream: u16, recorded: &Mutex<Vec<RecordedRequest>>) -> std::io::Result<()> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let head_end = loop {
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = client.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        raw.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default().to_owned();
    let path = request_line.split_whitespace().nth(1).unwrap_or_default().to_owned();
    let mut length = 0usize;
    let mut headers = Vec::new();
    for line in lines.filter(|l| !l.is_empty()) {
        let (name, value) = line.split_once(':').unwrap_or((line, ""));
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().unwrap_or(0);
        }
        if !name.eq_ignore_ascii_case("connection") && !name.eq_ignore_ascii_case("keep-alive") {
            headers.push(line.to_owned());
        }
    }
    let mut body = raw[head_end..].to_vec();
    while body.len() < length {
        let n = client.read(&mut buf)?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&buf[..n]);
    }
    recorded.lock().unwrap_or_else(|p| p.into_inner()).push(RecordedRequest { path, body: body.clone() });
    let mut server = TcpStream::connect(("127.0.0.1", upstream))?;
    let mut out = format!("{request_line}\r\n{}\r\nconnection: close\r\n\r\n", headers.join("\r\n")).into_bytes();
    out.extend_from_slice(&body);
    server.write_all(&out)?;
    std::io::copy(&mut server, &mut client)?;
    Ok(())
}

/// Whether process `pid` is alive, read from `/proc` (a zombie counts as gone; always false off
/// Linux).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

/// Waits (at most `limit`, polling every 50 ms) until `check` holds; whether it did.
pub async fn eventually(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    check()
}

/// A folder of this process for one test (`prefix`, `tag`), created if missing.
pub fn workdir(prefix: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("prompty-{prefix}-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` as `dir/<name>.prompty` and loads it (a bad prompt fails the test, with its text).
pub fn write_and_load(dir: &Path, name: &str, text: &str) -> prompty::Agent {
    let path = dir.join(format!("{name}.prompty"));
    std::fs::write(&path, text).unwrap();
    prompty::load(&path).unwrap_or_else(|e| panic!("bad test prompt: {e}\n{text}"))
}
