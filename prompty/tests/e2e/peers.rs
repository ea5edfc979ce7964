//! Real third-party servers for the tool tests (MCP, OpenAPI), started on 127.0.0.1 for one test
//! and stopped by their process id when the [`Peer`] value drops.
//!
//! - npm commands come from `node_modules/.bin` (pinned in `package.json`; `npm ci` on first use,
//!   see `common.rs`).
//! - Python peers run from a virtualenv built from `requirements.txt` on first use, cached outside
//!   the repository in `$XDG_CACHE_HOME/prompty-rs/py-<hash of requirements.txt>` (else
//!   `~/.cache/...`; the hash is the first 12 hex digits of its SHA-256): pip's registry is only
//!   asked when the pinned set changes.
//!
//! Nothing here talks to anything but 127.0.0.1.

#![allow(dead_code)]

use super::common::{e2e_dir, free_port, npm_bin_dir, raw_get};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The virtualenvs built or found so far in this process: (folder name prefix, folder).
static VENVS: Mutex<Vec<(&'static str, PathBuf)>> = Mutex::new(Vec::new());

/// The cache folder for expensive installs, outside the repository.
pub fn cache_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("prompty-rs")
}

/// The first 12 hexadecimal digits of the SHA-256 of the pinned requirements, naming the cached
/// virtualenv (`.ci/run` computes the same with `sha256sum`).
pub fn requirements_key(text: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(text.as_bytes()).iter().take(6).map(|b| format!("{b:02x}")).collect()
}

/// The Python interpreter of the cached virtualenv holding `requirements.txt` (built on first use
/// with `python3 -m venv` and `pip install -r`).
pub fn python() -> PathBuf {
    venv("py", &e2e_dir().join("requirements.txt"), &[]).join("bin").join("python")
}

/// The virtualenv `<cache>/prompty-rs/<prefix>-<hash of requirements>` holding the pinned
/// `requirements`, built on first use (with `env` set for pip) and marked ready by a
/// `.installed` file holding the requirements.
pub fn venv(prefix: &'static str, req: &std::path::Path, env: &[(&str, &str)]) -> PathBuf {
    let mut known = VENVS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, dir)) = known.iter().find(|(p, _)| *p == prefix) {
        return dir.clone();
    }
    let text = std::fs::read_to_string(req).unwrap_or_else(|e| panic!("cannot read {}: {e}", req.display()));
    let key = requirements_key(&text);
    let venv = cache_dir().join(format!("{prefix}-{key}"));
    let ready = venv.join(".installed");
    if !ready.exists() {
        // Built under a private name and renamed into place, so test processes running at the
        // same time never see (or break) a half-built one. The tests start the interpreter with
        // `python -m ...`, which a rename does not break.
        std::fs::create_dir_all(cache_dir()).expect("cannot create the cache folder");
        let staging = cache_dir().join(format!("{prefix}-{key}.staging-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        eprintln!("building the virtualenv {} from {} (once per machine)", venv.display(), req.display());
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&staging)
            .status()
            .unwrap_or_else(|e| panic!("cannot run python3 (Python 3.11 is needed for the e2e tests): {e}"));
        assert!(status.success(), "`python3 -m venv {}` failed", staging.display());
        let status = Command::new(staging.join("bin").join("python"))
            .args(["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(req)
            .envs(env.iter().copied())
            .status()
            .expect("cannot run pip");
        assert!(status.success(), "`pip install -r {}` failed", req.display());
        std::fs::write(staging.join(".installed"), &text).expect("cannot mark the virtualenv ready");
        if std::fs::rename(&staging, &venv).is_err() {
            // Another process finished first (or a broken folder is in the way).
            let _ = std::fs::remove_dir_all(&staging);
            if !ready.exists() {
                let _ = std::fs::remove_dir_all(&venv);
                panic!("cannot put the virtualenv in place at {}", venv.display());
            }
        }
    }
    known.push((prefix, venv.clone()));
    venv
}

/// An npm package's command (`node_modules/.bin/<name>`).
pub fn npm_bin(name: &str) -> PathBuf {
    npm_bin_dir().join(name)
}

/// A server process started for one test, killed when dropped; its output goes to a log file
/// read back when it fails to start.
pub struct Peer {
    child: Child,
    /// Its port on 127.0.0.1 (0 for a stdio peer).
    pub port: u16,
    log: PathBuf,
}

impl Peer {
    /// Starts `command` (which must listen on `port`) and waits, at most `timeout`, until a GET of
    /// `ready_path` answers with any HTTP status. Retries with a new port (from `make`) up to three
    /// times when the process exits early.
    pub fn start(name: &str, timeout: Duration, ready_path: &str, make: impl Fn(u16) -> Command) -> Peer {
        let mut last_log = String::new();
        for _ in 0..3 {
            match Peer::try_start(name, free_port(), timeout, ready_path, &make) {
                Ok(peer) => return peer,
                Err(log) => last_log = log,
            }
        }
        panic!("{name} did not become ready; its log:\n{last_log}");
    }

    /// [`Peer::start`] on a given port (once), e.g. to start a server again where a stopped one
    /// listened.
    pub fn start_on(name: &str, port: u16, timeout: Duration, ready_path: &str, make: impl Fn(u16) -> Command) -> Peer {
        Peer::try_start(name, port, timeout, ready_path, &make)
            .unwrap_or_else(|log| panic!("{name} did not become ready on port {port}; its log:\n{log}"))
    }

    /// One start on `port`: the ready peer, or its log when it exited or did not answer in time.
    fn try_start(
        name: &str,
        port: u16,
        timeout: Duration,
        ready_path: &str,
        make: &impl Fn(u16) -> Command,
    ) -> Result<Peer, String> {
        let log = std::env::temp_dir().join(format!("prompty-{name}-{port}.log"));
        let out = std::fs::File::create(&log).expect("cannot create a log file");
        let err = out.try_clone().expect("cannot clone the log file handle");
        let child = make(port)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let mut peer = Peer { child, port, log };
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = peer.child.try_wait() {
                break;
            }
            if peer.get(ready_path).is_ok_and(|(status, _)| status > 0) {
                return Ok(peer);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Err(peer.log_text())
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What the process wrote so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A plain HTTP/1.0 GET (no client library in between): status and body.
    pub fn get(&self, path: &str) -> std::io::Result<(u16, String)> {
        raw_get(self.port, path, "")
    }

    /// Kills the process at once (SIGKILL: no graceful shutdown, open connections just drop).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // SIGTERM first so that servers with workers (gunicorn) stop them, then SIGKILL.
        let _ = Command::new("kill").arg(self.child.id().to_string()).status();
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                let _ = std::fs::remove_file(&self.log);
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// `@modelcontextprotocol/server-everything` over streamable HTTP on a free port (`/mcp`).
pub fn everything_http() -> Peer {
    Peer::start("mcp-everything", Duration::from_secs(30), "/mcp", everything_http_command)
}

/// `@modelcontextprotocol/server-everything` over streamable HTTP on `port` (`/mcp`).
pub fn everything_http_on(port: u16) -> Peer {
    Peer::start_on("mcp-everything", port, Duration::from_secs(30), "/mcp", everything_http_command)
}

fn everything_http_command(port: u16) -> Command {
    let mut c = Command::new(npm_bin("mcp-server-everything"));
    c.arg("streamableHttp").env("PORT", port.to_string());
    c
}

/// `mcp/lab.py` (official Python SDK) over streamable HTTP on a free port (`/mcp`); with
/// `required_key`, it answers 401 to requests without `x-api-key: <key>` or a bearer `<key>`.
/// Every request it gets is in its log ([`lab_requests`]).
pub fn lab_http(required_key: Option<&str>) -> Peer {
    let py = python();
    let script = mcp_script("lab.py");
    Peer::start("mcp-lab", Duration::from_secs(30), "/mcp", |port| {
        let mut c = Command::new(&py);
        c.arg(&script).args(["--http", &port.to_string()]);
        if let Some(key) = required_key {
            c.env("LAB_REQUIRED_KEY", key);
        }
        c
    })
}

/// One HTTP request a [`lab_http`] server got: method, path, `mcp-session-id` (`-` when absent),
/// and the status it answered with (when it has answered).
#[derive(Debug, Clone, PartialEq)]
pub struct LabRequest {
    pub method: String,
    pub path: String,
    pub session: String,
    pub status: Option<u16>,
}

/// The requests a [`lab_http`] server logged so far, oldest first.
pub fn lab_requests(peer: &Peer) -> Vec<LabRequest> {
    let log = peer.log_text();
    let mut out: Vec<LabRequest> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("lab: request ") {
            let mut words = rest.split(' ');
            let (Some(method), Some(path), Some(session)) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            out.push(LabRequest {
                method: method.to_owned(),
                path: path.to_owned(),
                session: session.trim_start_matches("session=").to_owned(),
                status: None,
            });
        } else if let Some(rest) = line.strip_prefix("lab: answered ") {
            let mut words = rest.split(' ');
            let (Some(method), Some(status), Some(session)) = (words.next(), words.next(), words.next()) else {
                continue;
            };
            let session = session.trim_start_matches("session=");
            if let Some(r) =
                out.iter_mut().rev().find(|r| r.status.is_none() && r.method == method && r.session == session)
            {
                r.status = status.parse().ok();
            }
        }
    }
    out
}

/// `otlp_receiver.py` on a free port: an OTLP/HTTP trace receiver (`POST /v1/traces`) that decodes
/// what it gets with the official protobuf definitions of PyPI's `opentelemetry-proto` and serves
/// it back ([`otlp_spans`], [`otlp_raw`]).
pub fn otlp_receiver() -> Peer {
    let py = python();
    let script = e2e_dir().join("otlp_receiver.py");
    Peer::start("otlp-receiver", Duration::from_secs(30), "/ready", |port| {
        let mut c = Command::new(&py);
        c.arg(&script).arg(port.to_string());
        c
    })
}

/// Every span the [`otlp_receiver`] decoded, as JSON (see `otlp_receiver.py`).
pub fn otlp_spans(peer: &Peer) -> Vec<serde_json::Value> {
    let (status, body) = peer.get("/spans").expect("GET /spans");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("spans as JSON")
}

/// The raw request bodies the [`otlp_receiver`] got, as bytes, with their headers.
pub fn otlp_raw(peer: &Peer) -> Vec<(Vec<u8>, serde_json::Value)> {
    let (_, body) = peer.get("/raw").expect("GET /raw");
    let raw: Vec<serde_json::Value> = serde_json::from_str(&body).expect("raw requests as JSON");
    raw.into_iter()
        .map(|r| {
            let hex = r["body"].as_str().expect("a hex body");
            let bytes = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
            (bytes, r["headers"].clone())
        })
        .collect()
}

/// A small MCP server of `mcp/` written for these tests (run it with [`python()`]).
pub fn mcp_script(name: &str) -> PathBuf {
    e2e_dir().join("mcp").join(name)
}

/// Prism mocking an OpenAPI document of `@readme/oas-examples` (`version`/`json`/`file`), e.g.
/// `prism_mock("3.0", "petstore.json")`.
pub fn prism_mock(version: &str, file: &str) -> Peer {
    let bin = npm_bin("prism");
    let spec = oas_example(version, file);
    Peer::start("prism", Duration::from_secs(60), "/", |port| {
        let mut c = Command::new(&bin);
        c.args(["mock", "-h", "127.0.0.1", "-p", &port.to_string()]).arg(&spec);
        c
    })
}

/// The path of an `@readme/oas-examples` document.
pub fn oas_example(version: &str, file: &str) -> PathBuf {
    npm_bin_dir().join("..").join("@readme").join("oas-examples").join(version).join("json").join(file)
}

/// httpbin (PyPI, with flasgger for its Swagger 2.0 document at `/spec.json`) under gunicorn.
pub fn httpbin() -> Peer {
    let py = python();
    Peer::start("httpbin", Duration::from_secs(30), "/get", |port| {
        let mut c = Command::new(&py);
        c.args(["-m", "gunicorn", "--workers", "2", "--bind"]).arg(format!("127.0.0.1:{port}")).arg("httpbin:app");
        c
    })
}
