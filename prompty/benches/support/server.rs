//! A local HTTP server and client-CPU accounting shared by the benchmarks that make HTTP calls
//! (`prompty/benches/invoke.rs`, `prompty/benches/turn.rs`), included with `#[path]`.
//!
//! The server is a minimal HTTP/1.1 keep-alive server on 127.0.0.1, on its own thread (whose CPU
//! time [`client_cpu_ns`] leaves out), answering each request with what `reply` makes of its body.

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// The JSON text a request body is answered with.
pub type Reply = fn(&[u8]) -> &'static str;

/// The id of the calling thread (Linux: from `/proc/thread-self`).
fn thread_id() -> Option<u64> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// CPU time of every thread of this process but `excluded`, in nanoseconds (`None` without
/// `/proc/self/task`).
pub fn client_cpu_ns(excluded: u64) -> Option<u64> {
    let mut total = 0u64;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let entry = entry.ok()?;
        let tid: u64 = entry.file_name().to_str()?.parse().ok()?;
        if tid == excluded {
            continue;
        }
        // A thread may exit between listing and reading: skip it.
        if let Ok(s) = std::fs::read_to_string(entry.path().join("schedstat")) {
            total += s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    Some(total)
}

/// Starts the server on its own thread; returns its port and thread id.
pub fn start_server(reply: Reply) -> (u16, u64) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("bench-server".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("server runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind 127.0.0.1");
                let port = listener.local_addr().expect("local addr").port();
                tx.send((port, thread_id().unwrap_or(0))).expect("report port");
                loop {
                    let Ok((socket, _)) = listener.accept().await else { continue };
                    let _ = socket.set_nodelay(true);
                    tokio::spawn(serve(socket, reply));
                }
            });
        })
        .expect("server thread");
    rx.recv().expect("server started")
}

/// Answers every request on one keep-alive connection.
async fn serve(socket: tokio::net::TcpStream, reply: Reply) {
    let (read, mut write) = socket.into_split();
    let mut reader = BufReader::new(read);
    let (mut line, mut body) = (String::new(), Vec::new());
    loop {
        let mut length = 0usize;
        loop {
            line.clear();
            match reader.read_line(&mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        body.resize(length, 0);
        if reader.read_exact(&mut body).await.is_err() {
            return;
        }
        let text = reply(&body);
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nx-request-id: req-bench\r\n\r\n",
            text.len()
        );
        if write.write_all(&[head.as_bytes(), text.as_bytes()].concat()).await.is_err() {
            return;
        }
    }
}
