//! The stdio transport of a session: JSON-RPC messages, one per line, written to a child process's
//! stdin and read from its stdout.
//!
//! Ours rather than `rmcp`'s child-process transport, for two reasons: a message is decoded with
//! the same `serde_json` entry point as the streamable HTTP transport uses (`from_str`), so the code
//! of the message types is compiled once whichever transports the build has; and the build needs
//! no process wrapper crate. The process itself (its group, environment, stderr) is set up by
//! [`super::session::connect`].

use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::RoleClient;
use std::borrow::Cow;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// How long [`StdioTransport::close`] waits for the server to exit after its stdin is closed, and
/// again after SIGTERM, before SIGKILL.
pub(crate) const EXIT_WAIT: Duration = Duration::from_secs(3);

/// A child process speaking MCP over its stdin and stdout.
pub(crate) struct StdioTransport {
    lines: Lines<ChildStdout>,
    /// Shared with the futures [`Transport::send`] returns (they are `'static`); `None` once
    /// closed.
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    /// `None` once it exited or was killed.
    child: Option<Child>,
}

impl StdioTransport {
    /// The transport of `child`, whose stdin and stdout must be piped; a line longer than
    /// `max_line_bytes` is skipped (logged).
    pub(crate) fn new(mut child: Child, max_line_bytes: usize) -> io::Result<StdioTransport> {
        let stdin = child.stdin.take().ok_or_else(|| io::Error::other("the child's stdin is not piped"))?;
        let stdout = child.stdout.take().ok_or_else(|| io::Error::other("the child's stdout is not piped"))?;
        Ok(StdioTransport {
            lines: Lines::new(stdout, max_line_bytes),
            stdin: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            child: Some(child),
        })
    }
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn name() -> Cow<'static, str> {
        "MCP stdio".into()
    }

    fn send(&mut self, item: TxJsonRpcMessage<RoleClient>) -> impl Future<Output = io::Result<()>> + Send + 'static {
        let line = encode(&item);
        write_line(Arc::clone(&self.stdin), line)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.lines.next().await {
                Line::Complete(text) => match decode(&text) {
                    Decoded::Message(message) => return Some(*message),
                    Decoded::Skip => {}
                    Decoded::BadRequest(reply) => {
                        // Answered on a task of its own: `receive` may be cancelled at any await.
                        tokio::spawn(write_line(Arc::clone(&self.stdin), Ok(reply)));
                    }
                },
                Line::Oversized => {
                    tracing::warn!(
                        max_bytes = self.lines.max,
                        "an MCP server wrote a message longer than the limit: it is skipped"
                    );
                }
                Line::End => return None,
            }
        }
    }

    async fn close(&mut self) -> io::Result<()> {
        // EOF on stdin: a server that reads until the end of its input exits by itself.
        drop(self.stdin.lock().await.take());
        let Some(child) = self.child.as_mut() else { return Ok(()) };
        if exited(child).await? {
            self.child = None;
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|p| libc::pid_t::try_from(p).ok()) {
            // SAFETY: `kill` only sends a signal to the child, which is not reaped yet (its id
            // still names it).
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            if exited(child).await? {
                self.child = None;
                return Ok(());
            }
        }
        let killed = child.kill().await;
        self.child = None;
        killed
    }
}

/// Whether the child exited within [`EXIT_WAIT`].
async fn exited(child: &mut Child) -> io::Result<bool> {
    match tokio::time::timeout(EXIT_WAIT, child.wait()).await {
        Ok(status) => status.map(|_| true),
        Err(_) => Ok(false),
    }
}

/// The line of a message: its JSON and a newline.
fn encode(message: &TxJsonRpcMessage<RoleClient>) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(message).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Writes one line to the server (whole, under the lock: lines of concurrent sends never mix).
async fn write_line(stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>, line: io::Result<Vec<u8>>) -> io::Result<()> {
    let line = line?;
    let mut stdin = stdin.lock().await;
    let Some(pipe) = stdin.as_mut() else {
        return Err(io::Error::new(io::ErrorKind::NotConnected, "the MCP server's stdin is closed"));
    };
    pipe.write_all(&line).await?;
    pipe.flush().await
}

/// What a line of the server is.
#[derive(Debug)]
enum Decoded {
    Message(Box<ServerJsonRpcMessage>),
    /// Nothing to deliver: blank, not UTF-8, not JSON, or a message that is not MCP (logged).
    Skip,
    /// A request the client cannot read: the error response to write back (JSON-RPC's "invalid
    /// request", with the request's id), so that the server does not wait for an answer.
    BadRequest(Vec<u8>),
}

/// Decodes one line: a UTF-8 byte order mark and surrounding white space are ignored.
fn decode(line: &[u8]) -> Decoded {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let Ok(text) = std::str::from_utf8(line) else {
        tracing::debug!("an MCP server wrote a line that is not UTF-8: skipped");
        return Decoded::Skip;
    };
    let text = text.trim();
    if text.is_empty() {
        return Decoded::Skip;
    }
    // The one entry point of the message types (the HTTP transport's too).
    match serde_json::from_str::<ServerJsonRpcMessage>(text) {
        Ok(message) => Decoded::Message(Box::new(message)),
        Err(e) => {
            let request_id = serde_json::from_str::<serde_json::Value>(text).ok().and_then(|v| {
                let object = v.as_object()?;
                object.get("method")?.as_str()?;
                object.get("id").filter(|id| id.is_string() || id.is_number()).cloned()
            });
            match request_id {
                Some(id) => {
                    tracing::debug!(
                        "an MCP server sent a request the client cannot read ({e}): answered with an error"
                    );
                    let reply = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {"code": -32600, "message": "Invalid request"},
                    });
                    let mut line = reply.to_string().into_bytes();
                    line.push(b'\n');
                    Decoded::BadRequest(line)
                }
                None => {
                    // Output that is not JSON-RPC (a server's log line on stdout): skipped, as
                    // other clients do. (Notifications of unknown methods are messages.)
                    tracing::debug!("an MCP server wrote a line that is not an MCP message ({e}): skipped");
                    Decoded::Skip
                }
            }
        }
    }
}

/// What [`Lines::next`] read.
#[derive(Debug, PartialEq)]
enum Line {
    /// A whole line, without its newline.
    Complete(Vec<u8>),
    /// A line longer than the limit, read to its end and dropped.
    Oversized,
    /// The end of the output (or a read error).
    End,
}

/// Newline-separated lines of a reader, each bounded: a longer line is consumed without being
/// kept. Cancellation-safe: a read cancelled at its await keeps the part of the line read so far.
struct Lines<R> {
    reader: BufReader<R>,
    line: Vec<u8>,
    /// The current line passed the limit: the rest of it is dropped.
    discarding: bool,
    max: usize,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    fn new(reader: R, max: usize) -> Lines<R> {
        Lines { reader: BufReader::new(reader), line: Vec::new(), discarding: false, max }
    }

    async fn next(&mut self) -> Line {
        loop {
            // The only await; what follows it runs to the end of the iteration, so a cancelled
            // call loses nothing.
            let available = match self.reader.fill_buf().await {
                Ok([]) => return Line::End,
                Ok(bytes) => bytes,
                Err(e) => {
                    tracing::debug!("reading an MCP server's stdout failed: {e}");
                    return Line::End;
                }
            };
            let (chunk, complete) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], true),
                None => (available, false),
            };
            if !self.discarding {
                if self.line.len() + chunk.len() > self.max {
                    self.discarding = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let used = chunk.len() + usize::from(complete);
            self.reader.consume(used);
            if complete {
                if std::mem::take(&mut self.discarding) {
                    return Line::Oversized;
                }
                return Line::Complete(std::mem::take(&mut self.line));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        let mut lines = Lines::new(input, max);
        let mut out = Vec::new();
        loop {
            let line = lines.next().await;
            let end = line == Line::End;
            out.push(line);
            if end {
                return out;
            }
        }
    }

    #[tokio::test]
    async fn lines_are_split_and_bounded() {
        let got = lines(b"a\n\nbcd\nxyz12345\nok\ntail-without-newline", 5).await;
        assert_eq!(
            got,
            vec![
                Line::Complete(b"a".to_vec()),
                Line::Complete(Vec::new()),
                Line::Complete(b"bcd".to_vec()),
                Line::Oversized,
                Line::Complete(b"ok".to_vec()),
                Line::End,
            ]
        );
    }

    #[tokio::test]
    async fn a_line_across_reads_is_whole() {
        let (mut tx, rx) = tokio::io::duplex(4);
        let writer = tokio::spawn(async move {
            tx.write_all(b"{\"long\": \"line across many small reads\"}\nnext\n").await.unwrap();
        });
        let mut lines = Lines::new(rx, 1024);
        assert_eq!(lines.next().await, Line::Complete(b"{\"long\": \"line across many small reads\"}".to_vec()));
        assert_eq!(lines.next().await, Line::Complete(b"next".to_vec()));
        writer.await.unwrap();
        assert_eq!(lines.next().await, Line::End);
    }

    #[test]
    fn decoding_skips_what_is_not_a_message() {
        let response = br#"{"jsonrpc":"2.0","id":1,"result":{}}"#;
        assert!(matches!(decode(response), Decoded::Message(_)));
        let mut with_bom = b"\xEF\xBB\xBF".to_vec();
        with_bom.extend_from_slice(response);
        with_bom.extend_from_slice(b" \r");
        assert!(matches!(decode(&with_bom), Decoded::Message(_)));
        assert!(matches!(decode(b""), Decoded::Skip));
        assert!(matches!(decode(b"   "), Decoded::Skip));
        assert!(matches!(decode(b"\xff\xfe not utf-8"), Decoded::Skip));
        assert!(matches!(decode(b"server starting on stdio..."), Decoded::Skip));
        // A notification of a method the client does not know is delivered (rmcp's handler ignores
        // it); a response that is not JSON-RPC is not.
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","method":"x/unknown-notification"}"#), Decoded::Message(_)));
        assert!(matches!(decode(br#"{"jsonrpc":"2.0","id":1}"#), Decoded::Skip));
    }

    #[test]
    fn a_request_the_client_cannot_read_gets_an_error_with_its_id() {
        let Decoded::BadRequest(reply) =
            decode(br#"{"jsonrpc":"2.0","id":"r-7","method":"sampling/createMessage","params":42}"#)
        else {
            panic!("expected an error reply");
        };
        let reply: serde_json::Value = serde_json::from_slice(&reply).unwrap();
        assert_eq!(reply["id"], "r-7");
        assert_eq!(reply["error"]["code"], -32600);
    }
}
