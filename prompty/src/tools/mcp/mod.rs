//! A client of MCP servers for `kind: mcp` tools, on the client service of the official Rust SDK
//! [`rmcp`](https://docs.rs/rmcp): stdio child processes (feature `mcp`, over a transport of ours)
//! and streamable HTTP (feature `mcp-http`, rmcp's transport).
//!
//! - [`McpServerConfig`]: how to reach one server and the bounds of a session with it, by hand
//!   or from a declared tool ([`McpServerConfig::from_tool`]).
//! - [`McpServer`]: one lazily started, shared session. [`McpServer::tools`] lists every page of
//!   `tools/list` and caches the list until the server says it changed
//!   ([`McpServer::list_generation`]); [`McpServer::call`] runs a tool and gives an
//!   [`McpOutput`].
//!
//! **Failures.** A server that exits or drops the connection fails the call in progress with an
//! error that names the server and ends with its last stderr output (stdio); the next use starts
//! the server again (a new child process, or a new HTTP session). A result with `isError: true`
//! and a JSON-RPC error answer (unknown tool, invalid arguments, a handler that raised) are not
//! errors of the call: they are an [`McpOutput`] with `is_error: true`, for the model to see.
//!
//! **Bounds** (all in [`McpServerConfig`], with `DEFAULT_*` constants): connect + `initialize`
//! 30 s; one call, or one whole listing, 60 s (a declaration sets these two with
//! `handshakeTimeout` and `callTimeout`); 1000 pages and 10 000 tools per listing; 1 MiB of
//! text and 8 MiB of images per result; 16 MiB per received message; 8 KiB of stderr kept; a
//! session unused for 300 s is ended (`idleTimeout`).
//!
//! **Lifecycle.** A session ends in one way, whatever ends it: [`McpServer::shutdown`] (which
//! waits until it has ended), the drop of the last [`McpServer`] clone (inside a tokio runtime or
//! not), or [`McpServerConfig::idle_timeout`] passing without a listing or a call
//! ([`DEFAULT_IDLE_TIMEOUT`], 300 s; `idleTimeout` in a declaration, 1 s to 24 h, see
//! [`crate::McpTool::IDLE_TIMEOUT_SECS`]; a call in progress is never cut). A stdio server gets EOF
//! on its stdin, SIGTERM after 3 s, SIGKILL after 3 s more, then SIGKILL for what is left of its
//! process group; a streamable HTTP session is closed with a `DELETE` carrying its
//! `Mcp-Session-Id` (at most 5 s, a failure is logged). The close runs on prompty's shared
//! runtime; one timer task per open session, on that runtime, watches for idleness. A server
//! stopped for idleness starts again on its next use. The servers prompts declare live in the
//! tool catalog, which releases them when their sources leave it (see [`crate::catalog`]'s
//! *Lifecycle*).
//!
//! **Secrets.** Environment values, header values and the user information and query of a URL
//! never appear in `Debug`, errors, or logs written here (they are scrubbed from the server's
//! stderr and error messages too). A stdio server inherits only [`INHERITED_ENV`] from this
//! process.
//!
//! ```no_run
//! # async fn run() -> prompty::Result<()> {
//! use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
//! let server = McpServer::new(McpServerConfig::new(
//!     "everything",
//!     McpTransport::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]),
//! ));
//! for tool in server.tools().await?.iter() {
//!     println!("{}: {}", tool.name, tool.description.as_deref().unwrap_or(""));
//! }
//! let mut args = serde_json::Map::new();
//! args.insert("message".into(), "hi".into());
//! let out = server.call("echo", args).await?;
//! assert!(!out.is_error);
//! # Ok(()) }
//! ```

mod config;
pub(crate) mod kind;
mod output;
mod session;
mod stdio;

#[cfg(not(feature = "mcp-http"))]
pub(crate) use config::{declared_over_http, http_needs_feature};
pub use config::{
    McpServerConfig, McpTransport, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_IMAGE_BYTES, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_MAX_PAGES, DEFAULT_MAX_TEXT_BYTES, DEFAULT_MAX_TOOLS,
    DEFAULT_STDERR_TAIL_BYTES, INHERITED_ENV,
};
pub use output::{McpImage, McpOutput, McpToolAnnotations, McpToolInfo};

use crate::{Error, Result};
use rmcp::model::{CallToolRequestParams, PaginatedRequestParams};
use rmcp::ServiceError;
use serde_json::{Map, Value};
use session::{with_tail, Session};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Weak;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a failed stdio session waits for the child to close its stderr, so that the error
/// carries the child's last words.
const STDERR_SETTLE: Duration = Duration::from_millis(1500);

/// One MCP server, reached through one live session that starts on first use and starts again
/// after the server went away. Cheap to clone (all clones share the session); `Send + Sync`.
///
/// **Lifecycle.** The session ends in one way, whatever ends it — [`McpServer::shutdown`], the
/// drop of the last clone (inside a tokio runtime or not), or [`McpServerConfig::idle_timeout`]
/// passing without a listing or a call: a stdio server gets EOF on its stdin, SIGTERM if it has
/// not exited 3 s later, SIGKILL 3 s after that, and then everything left in its process group
/// (the processes it started) gets SIGKILL; an HTTP session is closed with a `DELETE` carrying its
/// `Mcp-Session-Id` (at most 5 s; a failure is logged, never an error). The close runs on
/// prompty's shared runtime, so it completes even when the runtime of the last user is gone.
/// (The child also has tokio's `kill_on_drop` as a backstop.) A session stopped for idleness
/// starts again, transparently, on the next use.
///
/// ```no_run
/// # async fn run() -> prompty::Result<()> {
/// use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
/// let server = McpServer::new(McpServerConfig::new("docs", McpTransport::http("http://127.0.0.1:3001/mcp")));
/// let tools = server.tools().await?;
/// let seen = server.list_generation();
/// // ... later: re-index when the server said its list changed.
/// if server.list_generation() != seen {
///     let tools = server.tools().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    inner: Arc<Inner>,
}

struct Inner {
    config: McpServerConfig,
    /// Values scrubbed from every message shown.
    secrets: Vec<String>,
    /// Bumped by `tools/list_changed` and by every reconnection after the first session.
    generation: Arc<AtomicU64>,
    /// Sessions started so far.
    sessions: AtomicU64,
    session: tokio::sync::Mutex<Option<Arc<Session>>>,
    /// The cached list, with the generation it was listed at.
    tools: Mutex<Option<(u64, Arc<Vec<McpToolInfo>>)>>,
    /// One listing at a time.
    listing: tokio::sync::Mutex<()>,
    /// When this value was made: `last_used` counts from it.
    epoch: Instant,
    /// Milliseconds from `epoch` to the start or end of the last listing or call.
    last_used: AtomicU64,
    /// The idle timer of the current session, if it has one.
    idle_timer: Mutex<Option<tokio::task::AbortHandle>>,
    /// Whether the session the idle timer last stopped has ended.
    ending: Mutex<Option<tokio::sync::watch::Receiver<bool>>>,
}

impl Inner {
    fn touch(&self) {
        let now = u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_used.store(now, Ordering::SeqCst);
    }

    /// How long since the last listing or call started or ended.
    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_used.load(Ordering::SeqCst));
        self.epoch.elapsed().saturating_sub(last)
    }

    /// Stops the idle timer of the current session.
    fn disarm(&self) {
        if let Some(timer) = self.idle_timer.lock().unwrap_or_else(|e| e.into_inner()).take() {
            timer.abort();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The session (a field) ends as it drops, see `Session`'s `Drop`.
        self.disarm();
    }
}

// `McpServer` is shared across tasks and threads.
const _: fn() = || {
    fn shared<T: Send + Sync + Clone + 'static>() {}
    shared::<McpServer>();
};

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("config", &self.inner.config)
            .field("list_generation", &self.list_generation())
            .finish_non_exhaustive()
    }
}

/// Why a listing failed.
enum ListError {
    Service(ServiceError),
    Bound(String),
}

impl McpServer {
    /// A server reached with `config`. Nothing starts until the first [`McpServer::tools`] or
    /// [`McpServer::call`].
    ///
    /// ```
    /// use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
    /// let server = McpServer::new(McpServerConfig::new("s", McpTransport::http("http://127.0.0.1:9/mcp")));
    /// assert_eq!(server.name(), "s");
    /// assert_eq!(server.list_generation(), 0);
    /// ```
    pub fn new(config: McpServerConfig) -> Self {
        let secrets = config.transport.secrets();
        McpServer {
            inner: Arc::new(Inner {
                config,
                secrets,
                generation: Arc::new(AtomicU64::new(0)),
                sessions: AtomicU64::new(0),
                session: tokio::sync::Mutex::new(None),
                tools: Mutex::new(None),
                listing: tokio::sync::Mutex::new(()),
                epoch: Instant::now(),
                last_used: AtomicU64::new(0),
                idle_timer: Mutex::new(None),
                ending: Mutex::new(None),
            }),
        }
    }

    /// The server's name (as in its configuration).
    ///
    /// ```
    /// # use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
    /// let server = McpServer::new(McpServerConfig::new("fs", McpTransport::stdio("srv", [""; 0])));
    /// assert_eq!(server.name(), "fs");
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.config.name
    }

    /// The configuration.
    ///
    /// ```
    /// # use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
    /// let server = McpServer::new(McpServerConfig::new("fs", McpTransport::stdio("srv", [""; 0])));
    /// assert_eq!(server.config().max_pages, prompty::mcp::DEFAULT_MAX_PAGES);
    /// ```
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// Every tool of the server: all pages of `tools/list` (following `nextCursor`, at most
    /// [`McpServerConfig::max_pages`] pages and [`McpServerConfig::max_tools`] tools; a name seen
    /// twice keeps its first entry). Cached until the server sends
    /// `notifications/tools/list_changed` or the session starts again; connects first if needed.
    ///
    /// Errors ([`Error::Execution`], naming the server): it cannot be started or reached, the
    /// listing failed or took longer than [`McpServerConfig::call_timeout`], a bound was passed.
    ///
    /// ```no_run
    /// # async fn run(server: prompty::mcp::McpServer) -> prompty::Result<()> {
    /// let names: Vec<String> = server.tools().await?.iter().map(|t| t.name.clone()).collect();
    /// # Ok(()) }
    /// ```
    pub async fn tools(&self) -> Result<Arc<Vec<McpToolInfo>>> {
        if let Some(tools) = self.cached() {
            return Ok(tools);
        }
        let _one = self.inner.listing.lock().await;
        if let Some(tools) = self.cached() {
            return Ok(tools);
        }
        self.list_now().await
    }

    /// Lists the tools again, whatever the cache holds (see [`McpServer::tools`]).
    ///
    /// ```no_run
    /// # async fn run(server: prompty::mcp::McpServer) -> prompty::Result<()> {
    /// let fresh = server.refresh().await?;
    /// # Ok(()) }
    /// ```
    pub async fn refresh(&self) -> Result<Arc<Vec<McpToolInfo>>> {
        let _one = self.inner.listing.lock().await;
        self.list_now().await
    }

    /// A number that changes whenever the tool list may have changed: it goes up by one for each
    /// `notifications/tools/list_changed` the server sends, and for each new session after the
    /// first (a restarted server may offer other tools). A catalog that remembers the value it
    /// indexed at knows when to call [`McpServer::tools`] again (which then lists anew).
    ///
    /// ```
    /// # use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
    /// let server = McpServer::new(McpServerConfig::new("s", McpTransport::stdio("srv", [""; 0])));
    /// assert_eq!(server.list_generation(), 0);
    /// ```
    pub fn list_generation(&self) -> u64 {
        self.inner.generation.load(Ordering::SeqCst)
    }

    /// Calls the tool `tool` with `arguments` (within [`McpServerConfig::call_timeout`]; a call
    /// that times out is cancelled with `notifications/cancelled`). Connects first if needed.
    ///
    /// - `Ok(McpOutput { is_error: false, .. })`: the tool's result.
    /// - `Ok(McpOutput { is_error: true, .. })`: the tool reported an error (`isError: true`), or
    ///   the server answered with a JSON-RPC error (unknown tool, invalid params, a failing
    ///   handler): `text` holds the message and the code.
    /// - `Err(Error::Tool { name: tool, .. })`: no answer. The server could not be started, it
    ///   exited or dropped the connection during the call (the message names the server and ends
    ///   with its stderr; the next call starts it again), the call timed out, or the answer was
    ///   not a call result.
    ///
    /// ```no_run
    /// # async fn run(server: prompty::mcp::McpServer) -> prompty::Result<()> {
    /// let args = serde_json::json!({"a": 2, "b": 3}).as_object().cloned().unwrap_or_default();
    /// let out = server.call("get-sum", args).await?;
    /// println!("{}", out.text);
    /// # Ok(()) }
    /// ```
    pub async fn call(&self, tool: &str, arguments: Map<String, Value>) -> Result<McpOutput> {
        let fail = |message: String| Error::Tool { name: tool.to_owned(), message };
        let session = self.session().await.map_err(fail)?;
        let config = &self.inner.config;
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let answer = tokio::time::timeout(config.call_timeout, session.client().call_tool(params)).await;
        self.inner.touch();
        match answer {
            Ok(Ok(result)) => Ok(McpOutput::from_result(result, config.max_text_bytes, config.max_image_bytes)),
            Ok(Err(ServiceError::McpError(e))) => {
                let text = format!("{} (JSON-RPC error {})", e.message, e.code.0);
                Ok(McpOutput::error(self.scrub(&text)))
            }
            Ok(Err(e)) => Err(fail(self.failure(&session, &format!("the call of `{tool}` failed"), &e).await)),
            Err(_) if session.is_closed() => Err(fail(
                self.failure(&session, &format!("the call of `{tool}` failed"), &ServiceError::TransportClosed).await,
            )),
            Err(_) => Err(fail(self.scrub(&format!(
                "MCP server '{}' did not answer the call of `{tool}` within {:?} (the call was cancelled)",
                config.name, config.call_timeout
            )))),
        }
    }

    /// The process id of the running stdio server, if one runs (for diagnostics).
    ///
    /// ```no_run
    /// # async fn run(server: prompty::mcp::McpServer) -> prompty::Result<()> {
    /// server.tools().await?;
    /// println!("server pid: {:?}", server.pid().await);
    /// # Ok(()) }
    /// ```
    pub async fn pid(&self) -> Option<u32> {
        self.inner.session.lock().await.as_ref().filter(|s| !s.is_closed()).and_then(|s| s.pid)
    }

    /// What the stdio server of the current (or last) session wrote to its stderr most recently
    /// (at most [`McpServerConfig::stderr_tail_bytes`], secrets scrubbed); `None` for HTTP or
    /// before the first session.
    ///
    /// ```no_run
    /// # async fn run(server: prompty::mcp::McpServer) {
    /// if let Some(tail) = server.stderr_tail().await { eprintln!("{tail}"); }
    /// # }
    /// ```
    pub async fn stderr_tail(&self) -> Option<String> {
        let slot = self.inner.session.lock().await;
        slot.as_ref().and_then(|s| s.stderr.as_ref()).map(|t| self.scrub(&t.text()))
    }

    /// Ends the current session now and waits until it has ended (at most about 8 s): a stdio
    /// server gets EOF on its stdin, then SIGTERM after 3 s, then SIGKILL for its process group
    /// after 3 s more; an HTTP session is closed with `DELETE`. The next use starts a new session.
    /// Calls still running on the session are not cut: the session ends when the last of them
    /// returns (each bounded by [`McpServerConfig::call_timeout`]), and this waits for that.
    ///
    /// ```no_run
    /// # async fn run(server: prompty::mcp::McpServer) {
    /// server.shutdown().await;
    /// assert!(!server.is_running());
    /// # }
    /// ```
    pub async fn shutdown(&self) {
        self.inner.disarm();
        let old = self.inner.session.lock().await.take();
        let stopping = self.inner.ending.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(session) = old {
            end_session(session).await;
        }
        if let Some(mut ended) = stopping {
            let _ = ended.wait_for(|done| *done).await;
        }
    }

    /// Whether a session is open (or being opened) now: a stdio server's process runs, an HTTP
    /// session is open.
    ///
    /// ```
    /// # use prompty::mcp::{McpServer, McpServerConfig, McpTransport};
    /// let server = McpServer::new(McpServerConfig::new("s", McpTransport::stdio("srv", [""; 0])));
    /// assert!(!server.is_running(), "nothing starts before the first use");
    /// ```
    pub fn is_running(&self) -> bool {
        match self.inner.session.try_lock() {
            Ok(slot) => slot.as_ref().is_some_and(|s| !s.is_closed()),
            // Held while a session is being started.
            Err(_) => true,
        }
    }

    fn cached(&self) -> Option<Arc<Vec<McpToolInfo>>> {
        let slot = self.inner.tools.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref() {
            Some((generation, tools)) if *generation == self.list_generation() => Some(Arc::clone(tools)),
            _ => None,
        }
    }

    /// Lists all pages now and caches the result (the caller holds `listing`).
    async fn list_now(&self) -> Result<Arc<Vec<McpToolInfo>>> {
        let fail = |message: String| Error::Execution { message };
        let session = self.session().await.map_err(fail)?;
        // Read before listing: a change announced during the listing makes this list stale.
        let generation = self.list_generation();
        let config = &self.inner.config;
        let listed = tokio::time::timeout(config.call_timeout, self.list_pages(&session)).await;
        self.inner.touch();
        let tools = match listed {
            Ok(Ok(tools)) => Arc::new(tools),
            Ok(Err(ListError::Bound(message))) => return Err(fail(self.scrub(&message))),
            Ok(Err(ListError::Service(ServiceError::McpError(e)))) => {
                return Err(fail(self.scrub(&format!(
                    "MCP server '{}' answered tools/list with an error: {} (JSON-RPC error {})",
                    config.name, e.message, e.code.0
                ))))
            }
            Ok(Err(ListError::Service(e))) => return Err(fail(self.failure(&session, "tools/list failed", &e).await)),
            Err(_) => {
                return Err(fail(format!(
                    "MCP server '{}' did not finish tools/list within {:?}",
                    config.name, config.call_timeout
                )))
            }
        };
        *self.inner.tools.lock().unwrap_or_else(|e| e.into_inner()) = Some((generation, Arc::clone(&tools)));
        Ok(tools)
    }

    async fn list_pages(&self, session: &Session) -> std::result::Result<Vec<McpToolInfo>, ListError> {
        let config = &self.inner.config;
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        for _ in 0..config.max_pages {
            let params = cursor.take().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let page = session.client().list_tools(params).await.map_err(ListError::Service)?;
            for tool in page.tools {
                if seen.contains(tool.name.as_ref()) {
                    continue;
                }
                seen.insert(tool.name.to_string());
                tools.push(McpToolInfo::from(tool));
                if tools.len() > config.max_tools {
                    return Err(ListError::Bound(format!(
                        "MCP server '{}' lists more than {} tools (max_tools)",
                        config.name, config.max_tools
                    )));
                }
            }
            match page.next_cursor {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => return Ok(tools),
            }
        }
        Err(ListError::Bound(format!(
            "MCP server '{}' still named a next page of tools/list after {} pages (max_pages)",
            config.name, config.max_pages
        )))
    }

    /// The live session, started (again) when there is none or the last one ended.
    async fn session(&self) -> std::result::Result<Arc<Session>, String> {
        self.inner.touch();
        let mut slot = self.inner.session.lock().await;
        if let Some(session) = slot.as_ref().filter(|s| !s.is_closed()) {
            return Ok(Arc::clone(session));
        }
        // Dropping the ended session reaps what is left of it.
        drop(slot.take());
        let name = &self.inner.config.name;
        let session = session::connect(&self.inner.config, Arc::clone(&self.inner.generation))
            .await
            .map_err(|m| self.scrub(&format!("MCP server '{name}' could not be started: {m}")))?;
        if self.inner.sessions.fetch_add(1, Ordering::SeqCst) > 0 {
            // A new session of a server that ran before: its tools may differ.
            self.inner.generation.fetch_add(1, Ordering::SeqCst);
        }
        let session = Arc::new(session);
        *slot = Some(Arc::clone(&session));
        self.inner.touch();
        if let Some(idle) = self.inner.config.idle_timeout {
            let timer = crate::blocking::spawn(idle_watch(Arc::downgrade(&self.inner), Arc::downgrade(&session), idle));
            let old = std::mem::replace(&mut *self.inner.idle_timer.lock().unwrap_or_else(|e| e.into_inner()), timer);
            if let Some(old) = old {
                old.abort();
            }
        }
        Ok(session)
    }

    /// The message of a request that got no answer. When the connection is gone, the session is
    /// dropped (the next use starts a new one) and a stdio server's stderr tail is appended.
    async fn failure(&self, session: &Arc<Session>, what: &str, error: &ServiceError) -> String {
        let name = &self.inner.config.name;
        let transport_gone = matches!(error, ServiceError::TransportClosed | ServiceError::TransportSend(_));
        if !(transport_gone || session.is_closed()) {
            return self.scrub(&format!("MCP server '{name}': {what}: {error}"));
        }
        {
            let mut slot = self.inner.session.lock().await;
            if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, session)) {
                *slot = None;
            }
        }
        let mut message = format!("MCP server '{name}' went away: {what} ({error}); it is started again on next use");
        if let Some(tail) = &session.stderr {
            tail.settle(STDERR_SETTLE).await;
            message = with_tail(message, &tail.text());
        }
        self.scrub(&message)
    }

    /// `text` with every secret of the configuration replaced by `[REDACTED]`.
    fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.inner.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), "[REDACTED]");
            }
        }
        out
    }
}

/// Ends `session`: at once when this is its last handle, else when the calls holding it return;
/// either way, waits until it has ended.
async fn end_session(session: Arc<Session>) {
    let mut ended = session.ended();
    match Arc::try_unwrap(session) {
        Ok(session) => session.end().await,
        Err(shared) => {
            // The last call to return drops it, and its `Drop` ends it.
            drop(shared);
            let _ = ended.wait_for(|done| *done).await;
        }
    }
}

/// How often the idle timer looks again while a call or listing holds the session.
const BUSY_RECHECK: Duration = Duration::from_millis(500);

/// The idle timer of one session (a task on prompty's shared runtime, aborted when the session
/// is shut down or replaced): once the server has gone `idle` without a listing or a call, and no
/// call holds the session, the session is taken out of the server and ended. It holds no strong
/// reference to the server or the session while it waits, and never holds the session lock while
/// waiting (it only tries it).
async fn idle_watch(inner: Weak<Inner>, session: Weak<Session>, idle: Duration) {
    loop {
        let wait = match inner.upgrade() {
            Some(inner) => idle.saturating_sub(inner.idle_for()),
            None => return,
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
            continue;
        }
        let Some(server) = inner.upgrade() else { return };
        let taken = {
            let Ok(mut slot) = server.session.try_lock() else {
                // Someone is starting a session or reading the slot: in use.
                drop(server);
                tokio::time::sleep(BUSY_RECHECK).await;
                continue;
            };
            let ours = slot.as_ref().is_some_and(|s| session.upgrade().is_some_and(|mine| Arc::ptr_eq(s, &mine)));
            if !ours {
                return;
            }
            // More handles than the slot's: a call or listing holds it.
            let busy = slot.as_ref().is_some_and(|s| Arc::strong_count(s) > 1);
            if busy || server.idle_for() < idle {
                None
            } else {
                slot.take()
            }
        };
        let Some(taken) = taken else {
            drop(server);
            tokio::time::sleep(BUSY_RECHECK.min(idle)).await;
            continue;
        };
        tracing::debug!(server = %server.config.name, ?idle, "an MCP server unused for its idle timeout is stopped");
        // Ended in a task of its own, which `disarm` (aborting this one) cannot cut short;
        // `shutdown` waits for it through `ending`.
        *server.ending.lock().unwrap_or_else(|e| e.into_inner()) = Some(taken.ended());
        drop(server);
        crate::blocking::spawn(end_session(taken));
        return;
    }
}
