//! One live connection to a server: starting the child process (or opening the HTTP session), the
//! `initialize` handshake, the stderr ring buffer, and the client handler that hears
//! `notifications/tools/list_changed`.

#[cfg(feature = "mcp-http")]
use super::config::check_headers;
use super::config::{McpServerConfig, McpTransport, INHERITED_ENV};
use super::stdio::StdioTransport;
use crate::{BoxFuture, Secret};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RunningService, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{ClientCacheConfig, ClientHandler, RoleClient, ServiceExt};
use std::borrow::Cow;
#[cfg(feature = "mcp-http")]
use std::collections::HashMap;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;

/// The client side of a session: says who we are and counts `tools/list_changed` notifications.
pub(crate) struct Handler {
    pub(crate) generation: Arc<AtomicU64>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        tracing::debug!("MCP server sent notifications/tools/list_changed");
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(ClientCapabilities::default(), Implementation::new("prompty", env!("CARGO_PKG_VERSION")))
    }
}

/// The last bytes a child wrote to its stderr (a ring of at most `cap` bytes), filled by a task
/// that reads the pipe until it closes.
pub(crate) struct StderrTail {
    buf: Mutex<VecDeque<u8>>,
    cap: usize,
    closed: tokio::sync::watch::Receiver<bool>,
}

impl StderrTail {
    fn spawn(mut pipe: tokio::process::ChildStderr, cap: usize) -> Arc<Self> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        let tail = Arc::new(StderrTail { buf: Mutex::new(VecDeque::new()), cap, closed: rx });
        let writer = Arc::clone(&tail);
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            loop {
                match pipe.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => writer.push(&chunk[..n]),
                }
            }
            let _ = tx.send(true);
        });
        tail
    }

    fn push(&self, bytes: &[u8]) {
        let mut buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = &bytes[bytes.len().saturating_sub(self.cap)..];
        buf.extend(bytes);
        let excess = buf.len().saturating_sub(self.cap);
        buf.drain(..excess);
    }

    /// Waits (at most `wait`) until the child closed its stderr, so that its last words are in.
    pub(crate) async fn settle(&self, wait: Duration) {
        let mut closed = self.closed.clone();
        let _ = tokio::time::timeout(wait, closed.wait_for(|c| *c)).await;
    }

    /// The kept bytes as text: invalid UTF-8 replaced, control characters other than newline and
    /// tab replaced by `?`, surrounding blank space trimmed.
    pub(crate) fn text(&self) -> String {
        let buf = self.buf.lock().unwrap_or_else(|e| e.into_inner());
        let (a, b) = buf.as_slices();
        let mut bytes = Vec::with_capacity(a.len() + b.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        drop(buf);
        String::from_utf8_lossy(&bytes)
            .chars()
            .map(|c| if c.is_control() && c != '\n' && c != '\t' { '?' } else { c })
            .collect::<String>()
            .trim()
            .to_owned()
    }
}

/// How long ending a session may take: the stdio transport closes the server's stdin, waits
/// [`super::stdio::EXIT_WAIT`] (3 s) for it to exit, sends it SIGTERM, waits 3 s more, then SIGKILL.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(8);

/// One live session. Dropping it ends the session (see [`Session::end`]).
pub(crate) struct Session {
    client: Option<RunningService<RoleClient, Handler>>,
    pub(crate) stderr: Option<Arc<StderrTail>>,
    /// The stdio server's process id, which is also its process group id.
    pub(crate) pid: Option<u32>,
    /// Set to `true` once the session has ended (process gone, HTTP session closed).
    ended: tokio::sync::watch::Sender<bool>,
}

impl Session {
    pub(crate) fn client(&self) -> &RunningService<RoleClient, Handler> {
        self.client.as_ref().expect("a session has its client until it is dropped")
    }

    /// Whether the connection ended (the server exited, the HTTP worker stopped).
    pub(crate) fn is_closed(&self) -> bool {
        self.client.as_ref().is_none_or(|c| c.is_transport_closed() || c.is_closed())
    }

    /// A receiver that sees `true` once the session has ended, however it ends ([`Session::end`],
    /// or the drop of its last handle); its sender dropped unsent means the same.
    pub(crate) fn ended(&self) -> tokio::sync::watch::Receiver<bool> {
        self.ended.subscribe()
    }

    /// Ends the session: `rmcp` closes the transport (a stdio server gets EOF on stdin, then
    /// SIGTERM, then SIGKILL, see [`CLOSE_TIMEOUT`]; an HTTP session is closed with a `DELETE`
    /// carrying its `Mcp-Session-Id`), then whatever is left in the server's process group
    /// (processes it started that outlived it) gets SIGKILL.
    pub(crate) async fn end(mut self) {
        let client = self.client.take();
        let pid = self.pid.take();
        close(client, pid, self.ended.clone()).await;
    }
}

/// The one way a session ends: closing the client (rmcp's service loop closes its transport:
/// [`super::stdio::StdioTransport::close`], or the streamable HTTP worker's `DELETE`), bounded by
/// [`CLOSE_TIMEOUT`]; then SIGKILL to what is left of the process group; then `ended` is set.
async fn close(
    client: Option<RunningService<RoleClient, Handler>>,
    pid: Option<u32>,
    ended: tokio::sync::watch::Sender<bool>,
) {
    let started = std::time::Instant::now();
    if let Some(mut client) = client {
        match client.close_with_timeout(CLOSE_TIMEOUT).await {
            Ok(Some(_)) => {}
            Ok(None) => tracing::warn!(timeout = ?CLOSE_TIMEOUT, "an MCP session did not close in time"),
            Err(e) => tracing::debug!(error = %e, "the task of an MCP session had already stopped"),
        }
    }
    kill_group(pid);
    tracing::debug!(elapsed = ?started.elapsed(), pid, "an MCP session ended");
    ended.send_replace(true);
}

impl Drop for Session {
    fn drop(&mut self) {
        let client = self.client.take();
        let pid = self.pid.take();
        if client.is_none() && pid.is_none() {
            return;
        }
        // Closed on prompty's shared runtime, which outlives the caller's (if any): a graceful
        // close (stdin EOF, HTTP `DELETE`) whether the last handle dropped inside a runtime or not.
        let (tx, rx) = tokio::sync::oneshot::channel();
        let ended = self.ended.clone();
        let spawned = crate::blocking::spawn(async move {
            if let Ok((client, pid)) = rx.await {
                close(client, pid, ended).await;
            }
        });
        if spawned.is_some() {
            let _ = tx.send((client, pid));
        } else {
            // No runtime to close it on: kill the group now (the leader is not reaped yet, so its
            // id still names this group). tokio's `kill_on_drop` is the backstop.
            kill_group(pid);
            drop(client);
            self.ended.send_replace(true);
        }
    }
}

/// SIGKILL to the process group led by `pid` (a stdio server and what it started).
///
/// Called after the leader exited: the group id cannot be reused while a member of the group is
/// alive, so only the leftovers of this server are reached; with none left the call fails
/// harmlessly (`ESRCH`).
#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    let Some(pgid) = pid.and_then(|p| libc::pid_t::try_from(p).ok()).filter(|p| *p > 1) else { return };
    // SAFETY: `killpg` only sends a signal; it touches no memory of this process.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: Option<u32>) {}

/// The one transport type the client service runs on, whichever transports are compiled in: rmcp's
/// service loop (`serve`) and the code of the message types it sends and receives are compiled
/// once for it, not once per transport.
enum ClientTransport {
    /// A child process speaking over its stdin/stdout.
    Stdio(Box<StdioTransport>),
    /// A streamable HTTP endpoint (feature `mcp-http`).
    #[cfg(feature = "mcp-http")]
    Http(rmcp::transport::StreamableHttpClientTransport<reqwest::Client>),
}

impl Transport<RoleClient> for ClientTransport {
    type Error = std::io::Error;

    fn name() -> Cow<'static, str> {
        "MCP client".into()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // Boxed: one future type whatever the transport (a box per sent message).
        let sent: BoxFuture<'static, Result<(), Self::Error>> = match self {
            ClientTransport::Stdio(t) => Box::pin(t.send(item)),
            #[cfg(feature = "mcp-http")]
            ClientTransport::Http(t) => {
                let sent = t.send(item);
                Box::pin(async move { sent.await.map_err(std::io::Error::other) })
            }
        };
        sent
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        match self {
            ClientTransport::Stdio(t) => t.receive().await,
            #[cfg(feature = "mcp-http")]
            ClientTransport::Http(t) => t.receive().await,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        match self {
            ClientTransport::Stdio(t) => t.close().await,
            #[cfg(feature = "mcp-http")]
            ClientTransport::Http(t) => t.close().await.map_err(std::io::Error::other),
        }
    }
}

/// Starts or opens a session and performs `initialize`, within `config.connect_timeout`. The
/// error is a message (not yet scrubbed of secrets) that may end with the child's stderr.
pub(crate) async fn connect(config: &McpServerConfig, generation: Arc<AtomicU64>) -> Result<Session, String> {
    let handler = Handler { generation };
    let timeout = config.connect_timeout;
    // The transport, what to call the peer in a failed handshake, the stderr tail and process id
    // of a child process.
    let (transport, peer, stderr, pid) = match &config.transport {
        McpTransport::Stdio { command, args, env, cwd } => {
            let mut cmd = tokio::process::Command::new(command);
            cmd.args(args).env_clear();
            for name in INHERITED_ENV {
                if let Some(v) = std::env::var_os(name) {
                    cmd.env(name, v);
                }
            }
            for (name, value) in env {
                cmd.env(name, value.expose());
            }
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
            // A process group of its own, killed as a whole when the session ends. (Set here rather
            // than with process-wrap's `ProcessGroup` wrapper: that one records the command, with
            // its environment, in a debug-level tracing span.)
            #[cfg(unix)]
            cmd.process_group(0);
            cmd.kill_on_drop(true);
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
            let mut child = cmd.spawn().map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let pid = child.id();
            let stderr = child.stderr.take().map(|p| StderrTail::spawn(p, config.stderr_tail_bytes.max(1)));
            let process = StdioTransport::new(child, config.max_message_bytes)
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            (ClientTransport::Stdio(Box::new(process)), Some(command.as_str()), stderr, pid)
        }
        McpTransport::Http { url, headers } => (http_transport(config, url, headers)?, None, None, None),
    };
    let client = match tokio::time::timeout(timeout, handler.serve(transport)).await {
        Ok(Ok(client)) => client,
        failed => {
            let message = match (failed, peer) {
                (Ok(Err(e)), Some(command)) => format!("`{command}` did not complete the MCP handshake: {e}"),
                (_, Some(command)) => format!("`{command}` did not complete the MCP handshake within {timeout:?}"),
                (Ok(Err(e)), None) => format!("the MCP handshake failed: {e}"),
                (_, None) => format!("the MCP handshake did not complete within {timeout:?}"),
            };
            // rmcp kills a child process (the transport was dropped); what it started too.
            kill_group(pid);
            let tail = match &stderr {
                Some(t) => {
                    t.settle(Duration::from_secs(1)).await;
                    t.text()
                }
                None => String::new(),
            };
            return Err(with_tail(message, &tail));
        }
    };
    // This layer caches the tool list itself (until `list_changed`): rmcp's response cache is off
    // so that a refresh always asks the server and a failure is never hidden by a stale answer.
    client.peer().set_response_cache_config(ClientCacheConfig::disabled()).await;
    Ok(Session { client: Some(client), stderr, pid, ended: tokio::sync::watch::channel(false).0 })
}

/// The streamable HTTP transport of `url` (not connected yet), with the configured headers.
#[cfg(feature = "mcp-http")]
fn http_transport(
    config: &McpServerConfig,
    url: &str,
    headers: &BTreeMap<String, Secret>,
) -> Result<ClientTransport, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    check_headers(headers)?;
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
        let mut value = reqwest::header::HeaderValue::from_str(value.expose())
            .map_err(|_| format!("the value of the header `{name}` is not a valid HTTP header value"))?;
        value.set_sensitive(true);
        custom.insert(header, value);
    }
    // The HTTP layer's client setup (TLS, User-Agent, same-origin redirects only: the
    // server's headers never reach another origin); rmcp takes the `reqwest::Client`.
    let http = crate::http::reqwest_builder(config.connect_timeout)?
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", crate::http::error_chain(&e)))?;
    let transport_config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(custom)
        .max_json_response_size(config.max_message_bytes)
        .max_sse_event_size(config.max_message_bytes);
    Ok(ClientTransport::Http(StreamableHttpClientTransport::with_client(http, transport_config)))
}

/// Without the feature `mcp-http` there is no HTTP transport: refused with the feature to enable
/// (a declared server is refused earlier, by [`McpServerConfig::from_tool`]; this is a
/// configuration built by hand).
#[cfg(not(feature = "mcp-http"))]
fn http_transport(
    _config: &McpServerConfig,
    url: &str,
    _headers: &BTreeMap<String, Secret>,
) -> Result<ClientTransport, String> {
    Err(super::config::http_needs_feature(url))
}

/// `message`, followed by the stderr tail when there is one.
pub(crate) fn with_tail(message: String, tail: &str) -> String {
    if tail.is_empty() {
        message
    } else {
        format!("{message}; its stderr ends with:\n{tail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_bytes() {
        let (_tx, rx) = tokio::sync::watch::channel(false);
        let t = StderrTail { buf: Mutex::new(VecDeque::new()), cap: 5, closed: rx };
        t.push(b"abc");
        t.push(b"defg");
        assert_eq!(t.text(), "cdefg");
        t.push(b"0123456789\x1b");
        assert_eq!(t.text(), "6789?");
    }
}
