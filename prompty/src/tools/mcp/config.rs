//! How to reach one MCP server ([`McpTransport`]) and the bounds of a session with it
//! ([`McpServerConfig`]), built by hand or from a `kind: mcp` tool declaration.

use crate::{Agent, Connection, Error, McpTool, Result, Secret};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default of [`McpServerConfig::connect_timeout`]: 30 s to start the server and finish
/// `initialize` (npm servers can take several seconds to start on a busy machine).
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_CONNECT_TIMEOUT.as_secs(), 30);
/// ```
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default of [`McpServerConfig::call_timeout`]: 60 s for one `tools/call`, and for one whole
/// `tools/list` (all of its pages together).
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_CALL_TIMEOUT.as_secs(), 60);
/// ```
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default of [`McpServerConfig::idle_timeout`]: a server not used (no listing, no call) for
/// 5 minutes is stopped (its session closed, its process ended) and started again on next use.
/// A declaration sets it with `idleTimeout` (seconds, within [`McpTool::IDLE_TIMEOUT_SECS`]: 1 to
/// 86 400).
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_IDLE_TIMEOUT.as_secs(), 300);
/// ```
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Default of [`McpServerConfig::max_pages`]: at most 1000 pages of `tools/list` are followed.
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_MAX_PAGES, 1000);
/// ```
pub const DEFAULT_MAX_PAGES: usize = 1000;
/// Default of [`McpServerConfig::max_tools`]: at most 10 000 tools are kept from one listing.
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_MAX_TOOLS, 10_000);
/// ```
pub const DEFAULT_MAX_TOOLS: usize = 10_000;
/// Default of [`McpServerConfig::max_text_bytes`]: 1 MiB of text per call result.
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_MAX_TEXT_BYTES, 1024 * 1024);
/// ```
pub const DEFAULT_MAX_TEXT_BYTES: usize = 1 << 20;
/// Default of [`McpServerConfig::max_image_bytes`]: 8 MiB of (base64) image data per call result.
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_MAX_IMAGE_BYTES, 8 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_IMAGE_BYTES: usize = 8 << 20;
/// Default of [`McpServerConfig::max_message_bytes`]: 16 MiB per JSON-RPC message received (a
/// line of a stdio server, a response or event of an HTTP server).
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_MAX_MESSAGE_BYTES, 16 * 1024 * 1024);
/// ```
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 << 20;
/// Default of [`McpServerConfig::stderr_tail_bytes`]: the last 8 KiB a stdio server wrote to stderr
/// are kept for error messages.
///
/// ```
/// assert_eq!(prompty::mcp::DEFAULT_STDERR_TAIL_BYTES, 8 * 1024);
/// ```
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 8 << 10;

/// The variables of this process's environment a stdio server inherits (when set); every other
/// variable (API keys of this process included) is withheld. Add what a server needs with its
/// `env`. The list is the one of the official MCP SDKs (POSIX and Windows basics) plus locale and
/// time zone.
///
/// ```
/// assert!(prompty::mcp::INHERITED_ENV.contains(&"PATH"));
/// assert!(!prompty::mcp::INHERITED_ENV.contains(&"OPENAI_API_KEY"));
/// ```
pub const INHERITED_ENV: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TERM",
    "USER",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "PROGRAMFILES",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
];

/// Headers the streamable HTTP transport sets itself; a configured header of one of these names is
/// refused.
#[cfg(feature = "mcp-http")]
const RESERVED_HEADERS: &[&str] =
    &["accept", "content-type", "mcp-session-id", "mcp-protocol-version", "last-event-id"];

/// How to reach an MCP server: a child process speaking over its stdin/stdout, or a streamable
/// HTTP endpoint. (The old HTTP+SSE transport has no client in `rmcp` and is not offered.)
///
/// `Debug` shows no environment value, no header value, and neither the user information nor the
/// query of the URL:
///
/// ```
/// use prompty::mcp::McpTransport;
/// use prompty::Secret;
/// let t = McpTransport::Http {
///     url: "https://user:pw@mcp.example.com/mcp?key=k1".into(),
///     headers: [("x-api-key".to_owned(), Secret::new("s3cret"))].into(),
/// };
/// let debug = format!("{t:?}");
/// assert!(debug.contains("mcp.example.com") && debug.contains("x-api-key"));
/// assert!(!debug.contains("s3cret") && !debug.contains("pw@") && !debug.contains("k1"));
/// ```
#[derive(Clone, PartialEq)]
pub enum McpTransport {
    /// A server started as a child process. Its stdout carries the protocol (it never mixes with
    /// this process's output), its stderr is kept (the last [`McpServerConfig::stderr_tail_bytes`])
    /// for error messages, its stdin carries our messages.
    ///
    /// The child gets only [`INHERITED_ENV`] from this process plus `env`, runs in `cwd` (this
    /// process's working folder when `None`), and leads a process group of its own, killed when
    /// the session ends (see [`super::McpServer`]).
    Stdio {
        /// The program: a name looked up on `PATH`, or a path.
        command: String,
        /// Its arguments. They show in `Debug` and in process listings: pass secrets in `env`.
        args: Vec<String>,
        /// Environment variables set for the child (values never shown).
        env: BTreeMap<String, Secret>,
        /// The child's working folder.
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint (`POST`/`GET` on one URL, e.g. `http://127.0.0.1:3001/mcp`).
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent with every request (values never shown; sent as sensitive header values).
        headers: BTreeMap<String, Secret>,
    },
}

impl McpTransport {
    /// A stdio server: `command` with `args`, no extra environment, this process's working folder.
    ///
    /// ```
    /// let t = prompty::mcp::McpTransport::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]);
    /// assert!(matches!(t, prompty::mcp::McpTransport::Stdio { .. }));
    /// ```
    pub fn stdio(command: impl Into<String>, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        McpTransport::Stdio {
            command: command.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: BTreeMap::new(),
            cwd: None,
        }
    }

    /// A streamable HTTP server at `url`, without extra headers.
    ///
    /// ```
    /// let t = prompty::mcp::McpTransport::http("http://127.0.0.1:3001/mcp");
    /// assert!(matches!(t, prompty::mcp::McpTransport::Http { .. }));
    /// ```
    pub fn http(url: impl Into<String>) -> Self {
        McpTransport::Http { url: url.into(), headers: BTreeMap::new() }
    }

    /// Every secret value of this transport (environment values, header values, the user
    /// information and query of the URL), to be scrubbed from any text shown to anyone.
    pub(crate) fn secrets(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        match self {
            McpTransport::Stdio { env, .. } => out.extend(env.values().map(|v| v.expose().to_owned())),
            McpTransport::Http { url, headers } => {
                for v in headers.values() {
                    let v = v.expose();
                    out.push(v.to_owned());
                    // `Bearer <token>`: the token alone may be echoed too.
                    if let Some((_, token)) = v.split_once(' ') {
                        out.push(token.trim().to_owned());
                    }
                }
                let (userinfo, query) = url_secret_parts(url);
                out.extend(userinfo.map(str::to_owned));
                if let Some(q) = query {
                    out.push(q.to_owned());
                    out.extend(q.split('&').filter_map(|kv| kv.split_once('=')).map(|(_, v)| v.to_owned()));
                }
            }
        }
        // Short values would scrub ordinary words: a secret of fewer than 4 bytes is not scrubbed.
        out.retain(|s| s.len() >= 4);
        out.sort_by_key(|s| std::cmp::Reverse(s.len()));
        out.dedup();
        out
    }
}

/// The user information and the query of a URL, when it has them.
fn url_secret_parts(url: &str) -> (Option<&str>, Option<&str>) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let userinfo = rest[..authority_end].rfind('@').map(|at| &rest[..at]);
    let before_fragment = url.split('#').next().unwrap_or(url);
    let query = before_fragment.split_once('?').map(|(_, q)| q).filter(|q| !q.is_empty());
    (userinfo, query)
}

/// `url` without its user information and fragment, and with its whole query replaced by
/// `[REDACTED]` (any parameter of an MCP endpoint may carry a token).
pub(crate) fn redact_url(url: &str) -> String {
    let url = url.split('#').next().unwrap_or("");
    match url.split_once('?') {
        Some((base, _)) => format!("{}?[REDACTED]", prompty_core::redact_url(base)),
        None => prompty_core::redact_url(url),
    }
}

struct Redacted<'a, K>(&'a BTreeMap<String, K>);

impl<K> fmt::Debug for Redacted<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.0.keys().map(|k| (k, "[REDACTED]"))).finish()
    }
}

impl fmt::Debug for McpTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            McpTransport::Stdio { command, args, env, cwd } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env", &Redacted(env))
                .field("cwd", cwd)
                .finish(),
            McpTransport::Http { url, headers } => {
                f.debug_struct("Http").field("url", &redact_url(url)).field("headers", &Redacted(headers)).finish()
            }
        }
    }
}

/// One MCP server: its name (used in every error message), how to reach it, and the bounds of a
/// session with it. Each bound has a documented default (`DEFAULT_*` constants of this module).
///
/// `Debug` shows no secret (see [`McpTransport`]).
///
/// ```
/// use prompty::mcp::{McpServerConfig, McpTransport};
/// use std::time::Duration;
/// let config = McpServerConfig::new("fs", McpTransport::stdio("mcp-server-filesystem", ["/tmp"]))
///     .with_env("TOKEN", "t0k3n-value")
///     .with_call_timeout(Duration::from_secs(10));
/// assert_eq!(config.call_timeout, Duration::from_secs(10));
/// assert_eq!(config.max_pages, prompty::mcp::DEFAULT_MAX_PAGES);
/// assert!(!format!("{config:?}").contains("t0k3n-value"));
/// ```
#[derive(Clone, PartialEq)]
pub struct McpServerConfig {
    /// The server's name (`serverName` of the tool declaration), used in errors.
    pub name: String,
    /// How to reach it.
    pub transport: McpTransport,
    /// Bound on starting/connecting and the `initialize` handshake
    /// ([`DEFAULT_CONNECT_TIMEOUT`]).
    pub connect_timeout: Duration,
    /// Bound on one `tools/call`, and on one whole `tools/list` with all its pages
    /// ([`DEFAULT_CALL_TIMEOUT`]). A call that times out is cancelled
    /// (`notifications/cancelled`); the session stays open.
    pub call_timeout: Duration,
    /// The most `tools/list` pages followed ([`DEFAULT_MAX_PAGES`]); a server that names a next
    /// page after that is an error.
    pub max_pages: usize,
    /// The most tools kept from one listing ([`DEFAULT_MAX_TOOLS`]); more is an error.
    pub max_tools: usize,
    /// The most bytes of text of one call result ([`DEFAULT_MAX_TEXT_BYTES`]); the rest is cut at a
    /// character boundary and a `[truncated: N more bytes]` line is appended.
    pub max_text_bytes: usize,
    /// The most bytes of base64 image data of one call result ([`DEFAULT_MAX_IMAGE_BYTES`]);
    /// images past it are dropped and `[image omitted: ...]` is written in the text.
    pub max_image_bytes: usize,
    /// The largest JSON-RPC message accepted from a server ([`DEFAULT_MAX_MESSAGE_BYTES`]): a
    /// longer line of a stdio server is dropped (logged), so the call it answered ends at its
    /// timeout; a longer HTTP response or event is refused.
    pub max_message_bytes: usize,
    /// How many bytes of a stdio server's stderr are kept for error messages
    /// ([`DEFAULT_STDERR_TAIL_BYTES`]).
    pub stderr_tail_bytes: usize,
    /// How long the server may go unused (no listing, no call) before its session is ended (a
    /// stdio server's process stops, an HTTP session is closed with `DELETE`); the next use
    /// starts a new one. `None`: never stopped for idleness. [`DEFAULT_IDLE_TIMEOUT`]; a call in
    /// progress is never cut by it.
    pub idle_timeout: Option<Duration>,
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServerConfig")
            .field("name", &self.name)
            .field("transport", &self.transport)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("max_pages", &self.max_pages)
            .field("max_tools", &self.max_tools)
            .field("max_text_bytes", &self.max_text_bytes)
            .field("max_image_bytes", &self.max_image_bytes)
            .field("max_message_bytes", &self.max_message_bytes)
            .field("stderr_tail_bytes", &self.stderr_tail_bytes)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl McpServerConfig {
    /// A server named `name` reached by `transport`, with the default bounds.
    ///
    /// ```
    /// use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("docs", McpTransport::http("http://127.0.0.1:3001/mcp"));
    /// assert_eq!(c.name, "docs");
    /// ```
    pub fn new(name: impl Into<String>, transport: McpTransport) -> Self {
        McpServerConfig {
            name: name.into(),
            transport,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_pages: DEFAULT_MAX_PAGES,
            max_tools: DEFAULT_MAX_TOOLS,
            max_text_bytes: DEFAULT_MAX_TEXT_BYTES,
            max_image_bytes: DEFAULT_MAX_IMAGE_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            stderr_tail_bytes: DEFAULT_STDERR_TAIL_BYTES,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
        }
    }

    /// Sets an environment variable of a stdio server (no effect on an HTTP server).
    ///
    /// ```
    /// use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::stdio("srv", [""; 0])).with_env("API_KEY", "k");
    /// assert!(matches!(&c.transport, McpTransport::Stdio { env, .. } if env["API_KEY"].expose() == "k"));
    /// ```
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(name.into(), Secret::new(value));
        }
        self
    }

    /// Sets the working folder of a stdio server (no effect on an HTTP server).
    ///
    /// ```
    /// use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::stdio("srv", [""; 0])).with_cwd("/srv");
    /// assert!(matches!(&c.transport, McpTransport::Stdio { cwd: Some(p), .. } if p.ends_with("srv")));
    /// ```
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Sets a header of an HTTP server (no effect on a stdio server).
    ///
    /// ```
    /// use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_header("x-api-key", "k");
    /// assert!(matches!(&c.transport, McpTransport::Http { headers, .. } if headers.contains_key("x-api-key")));
    /// ```
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), Secret::new(value));
        }
        self
    }

    /// Sends `Authorization: Bearer <token>` to an HTTP server (no effect on a stdio server).
    ///
    /// ```
    /// use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_bearer("tok");
    /// assert!(matches!(&c.transport, McpTransport::Http { headers, .. }
    ///     if headers["Authorization"].expose() == "Bearer tok"));
    /// ```
    pub fn with_bearer(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.with_header("Authorization", value)
    }

    /// Sets [`McpServerConfig::connect_timeout`].
    ///
    /// ```
    /// # use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_connect_timeout(std::time::Duration::from_secs(5));
    /// assert_eq!(c.connect_timeout.as_secs(), 5);
    /// ```
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets [`McpServerConfig::call_timeout`].
    ///
    /// ```
    /// # use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_call_timeout(std::time::Duration::from_secs(5));
    /// assert_eq!(c.call_timeout.as_secs(), 5);
    /// ```
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`McpServerConfig::idle_timeout`] (`None`: the session is never ended for idleness).
    ///
    /// ```
    /// # use prompty::mcp::{McpServerConfig, McpTransport};
    /// use std::time::Duration;
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_idle_timeout(Some(Duration::from_secs(30)));
    /// assert_eq!(c.idle_timeout, Some(Duration::from_secs(30)));
    /// ```
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets [`McpServerConfig::max_pages`].
    ///
    /// ```
    /// # use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_max_pages(3);
    /// assert_eq!(c.max_pages, 3);
    /// ```
    pub fn with_max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages;
        self
    }

    /// Sets [`McpServerConfig::max_text_bytes`].
    ///
    /// ```
    /// # use prompty::mcp::{McpServerConfig, McpTransport};
    /// let c = McpServerConfig::new("s", McpTransport::http("http://h/mcp")).with_max_text_bytes(100);
    /// assert_eq!(c.max_text_bytes, 100);
    /// ```
    pub fn with_max_text_bytes(mut self, bytes: usize) -> Self {
        self.max_text_bytes = bytes;
        self
    }

    /// The configuration of the server a `kind: mcp` tool declares.
    ///
    /// - `connection: {kind: reference, name: N}`: the [`McpServerConfig`] a host registered with
    ///   [`crate::register_connection`]`(N, config)`. Without a connection, the config registered
    ///   under the tool's `serverName`.
    /// - `connection: {kind: stdio, command, args?, env?, cwd?}`: a child process. A relative
    ///   `cwd`, and a relative `command` that names a path (`./server.py`, `bin/srv`), start from the
    ///   agent's folder; a bare command name is looked up on `PATH`.
    /// - `connection: {kind: http, endpoint (or url), headers?, apiKey?}`, and the kinds `key`,
    ///   `anonymous` and `remote` with an `endpoint`: a streamable HTTP server; `apiKey` is sent
    ///   as `Authorization: Bearer <apiKey>`. Needs the feature `mcp-http`: without it, such a
    ///   declaration (or a registered config reached over HTTP) is an [`Error::Config`] that says so.
    ///
    /// - `handshakeTimeout` and `callTimeout` (seconds, see [`McpTool::HANDSHAKE_TIMEOUT_SECS`]
    ///   and [`McpTool::CALL_TIMEOUT_SECS`]) set [`McpServerConfig::connect_timeout`] and
    ///   [`McpServerConfig::call_timeout`]; absent, the defaults (or a registered config's own
    ///   values) stay. A value that is not a number in range is an [`Error::Config`] naming the
    ///   server, the tool, the field, the value and the range.
    /// - `idleTimeout` (seconds, see [`McpTool::IDLE_TIMEOUT_SECS`]: 1 to 86 400) sets
    ///   [`McpServerConfig::idle_timeout`], checked the same way; absent, the default (or a
    ///   registered config's own value) stays.
    ///
    /// `${env:...}` references were resolved by the loader. The name of the config is the tool's
    /// `serverName` (a registered config keeps its own name when `serverName` is empty).
    ///
    /// ```
    /// use prompty::mcp::{McpServerConfig, McpTransport};
    /// let agent = prompty::Agent::from_value(serde_json::json!({"tools": [{"name": "fs", "kind": "mcp",
    ///     "serverName": "files",
    ///     "connection": {"kind": "stdio", "command": "mcp-server-filesystem", "args": ["/tmp"],
    ///                    "env": {"LOG": "1"}}}]}))?;
    /// let prompty::ToolKind::Mcp(tool) = &agent.tools.as_ref().unwrap()[0].kind else { unreachable!() };
    /// let config = McpServerConfig::from_tool(tool, &agent)?;
    /// assert_eq!(config.name, "files");
    /// assert!(matches!(config.transport, McpTransport::Stdio { ref command, .. } if command == "mcp-server-filesystem"));
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn from_tool(tool: &McpTool, agent: &Agent) -> Result<Self> {
        let mut config = Self::declared(tool, agent)?;
        let timeouts = |read: fn(&McpTool) -> std::result::Result<Option<Duration>, String>, default: Duration| {
            read(tool).map(|d| d.unwrap_or(default)).map_err(|message| Error::Config {
                setting: format!("MCP server '{}'", tool.server_name),
                message: format!(
                    "the tool '{}': {message} (without it: {} s)",
                    declaring_tool(tool, agent),
                    default.as_secs_f64()
                ),
            })
        };
        config.connect_timeout = timeouts(McpTool::handshake_duration, config.connect_timeout)?;
        config.call_timeout = timeouts(McpTool::call_duration, config.call_timeout)?;
        if tool.idle_timeout.is_some() {
            config.idle_timeout = Some(timeouts(McpTool::idle_duration, DEFAULT_IDLE_TIMEOUT)?);
        }
        match &config.transport {
            McpTransport::Http { url, .. } if !cfg!(feature = "mcp-http") => Err(Error::Config {
                setting: format!("MCP server '{}'", tool.server_name),
                message: http_needs_feature(url),
            }),
            _ => Ok(config),
        }
    }

    /// The configuration a declaration names, whatever this build can reach.
    fn declared(tool: &McpTool, agent: &Agent) -> Result<Self> {
        let server = tool.server_name.as_str();
        let base = agent.source.as_ref().map(|s| s.base_dir.as_path());
        // A declaration that cannot be made into a server config: found before any request.
        let fail = |message: String| Error::Config { setting: format!("MCP server '{server}'"), message };
        let registered = |name: &str| -> Result<Self> {
            let mut config = (*crate::get_connection_as::<McpServerConfig>(name)?).clone();
            if !server.is_empty() {
                config.name = server.to_owned();
            }
            Ok(config)
        };
        let mut config = match &tool.connection {
            None if !server.is_empty() => registered(server).map_err(|e| {
                fail(format!(
                    "the tool declares no `connection` and no MCP server is registered under this name ({e}); \
                     declare `connection: {{kind: stdio, command: ...}}` or `{{kind: http, endpoint: ...}}`, or \
                     register one with `prompty::register_connection(\"{server}\", McpServerConfig::new(...))`"
                ))
            })?,
            None => return Err(fail("the tool declares neither `serverName` nor `connection`".into())),
            Some(Connection::Reference { name, .. }) => registered(name)?,
            Some(Connection::Key { endpoint, api_key, .. }) => {
                let url = endpoint.clone().ok_or_else(|| fail("the connection has no `endpoint`".into()))?;
                let mut headers = BTreeMap::new();
                if let Some(key) = api_key.as_ref().filter(|k| !k.is_empty()) {
                    headers.insert("Authorization".to_owned(), Secret::new(format!("Bearer {}", key.expose())));
                }
                McpServerConfig::new(server, McpTransport::Http { url, headers })
            }
            Some(Connection::Anonymous { endpoint, .. }) | Some(Connection::Remote { endpoint, .. }) => {
                let url = endpoint.clone().ok_or_else(|| fail("the connection has no `endpoint`".into()))?;
                McpServerConfig::new(server, McpTransport::http(url))
            }
            Some(Connection::Other { kind, fields }) => match kind.as_str() {
                "stdio" => McpServerConfig::new(server, stdio_from_fields(fields).map_err(fail)?),
                "http" | "streamable-http" | "streamable_http" | "streamableHttp" => {
                    McpServerConfig::new(server, http_from_fields(fields).map_err(fail)?)
                }
                "sse" => {
                    return Err(fail(
                        "the old HTTP+SSE transport is not supported (rmcp has no client for it); use the \
                         server's streamable HTTP endpoint (`kind: http`) or stdio"
                            .into(),
                    ))
                }
                other => return Err(fail(format!("connection kind '{other}' cannot reach an MCP server"))),
            },
            Some(other) => return Err(fail(format!("connection kind '{}' cannot reach an MCP server", other.kind()))),
        };
        if let McpTransport::Stdio { command, cwd, .. } = &mut config.transport {
            resolve_paths(command, cwd, base);
        }
        Ok(config)
    }
}

/// The name of the tool of `agent` that declares `tool` (its server's name when none does).
fn declaring_tool<'a>(tool: &'a McpTool, agent: &'a Agent) -> &'a str {
    let tools = agent.tools.as_deref().unwrap_or_default();
    let same = |exact: bool| {
        tools.iter().find(|t| match &t.kind {
            crate::ToolKind::Mcp(m) => {
                if exact {
                    std::ptr::eq(m, tool)
                } else {
                    m == tool
                }
            }
            _ => false,
        })
    };
    same(true).or_else(|| same(false)).map_or(tool.server_name.as_str(), |t| t.name.as_str())
}

/// Without the feature `mcp-http`: the URL of the server a declaration reaches over HTTP (for
/// [`crate::check`]); `None` for a stdio server and for a declaration that names no server this
/// process knows (the run reports that one).
#[cfg(not(feature = "mcp-http"))]
pub(crate) fn declared_over_http(tool: &McpTool, agent: &Agent) -> Option<String> {
    match McpServerConfig::declared(tool, agent).ok()?.transport {
        McpTransport::Http { url, .. } => Some(url),
        McpTransport::Stdio { .. } => None,
    }
}

/// Why a server reached over HTTP cannot be used by a build without the feature `mcp-http`, and
/// what to do (the URL without its secrets).
pub(crate) fn http_needs_feature(url: &str) -> String {
    format!(
        "the server is reached over streamable HTTP (`{}`), and this build of prompty has MCP over stdio only: \
         enable prompty's `mcp-http` feature (`prompty = {{ features = [\"mcp-http\"] }}` in Cargo.toml), or \
         start the server as a child process (`connection: {{kind: stdio, command: ...}}`)",
        redact_url(url)
    )
}

/// A relative `cwd`, and a relative command that names a path, start from `base`.
fn resolve_paths(command: &mut String, cwd: &mut Option<PathBuf>, base: Option<&Path>) {
    let Some(base) = base else { return };
    if let Some(dir) = cwd.as_mut().filter(|d| d.is_relative()) {
        *dir = base.join(&*dir);
    }
    let names_path = command.contains('/') || (cfg!(windows) && command.contains('\\'));
    if names_path && Path::new(command.as_str()).is_relative() {
        *command = base.join(&*command).to_string_lossy().into_owned();
    }
}

fn string_field(fields: &Map<String, Value>, key: &str) -> std::result::Result<Option<String>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

fn string_map(fields: &Map<String, Value>, key: &str) -> std::result::Result<BTreeMap<String, Secret>, String> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), Secret::new(s.clone()))),
                Value::Number(n) => Ok((k.clone(), Secret::new(n.to_string()))),
                Value::Bool(b) => Ok((k.clone(), Secret::new(b.to_string()))),
                _ => Err(format!("`{key}.{k}` must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be a mapping of names to strings")),
    }
}

fn stdio_from_fields(fields: &Map<String, Value>) -> std::result::Result<McpTransport, String> {
    let command = string_field(fields, "command")?
        .filter(|c| !c.trim().is_empty())
        .ok_or("a `kind: stdio` connection needs a `command`")?;
    let args = match fields.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err("`args` must be a list of strings".to_owned()),
            })
            .collect::<std::result::Result<_, _>>()?,
        Some(_) => return Err("`args` must be a list of strings".into()),
    };
    let env = string_map(fields, "env")?;
    let cwd = string_field(fields, "cwd")?.map(PathBuf::from);
    Ok(McpTransport::Stdio { command, args, env, cwd })
}

fn http_from_fields(fields: &Map<String, Value>) -> std::result::Result<McpTransport, String> {
    let url = match string_field(fields, "endpoint")? {
        Some(u) => u,
        None => string_field(fields, "url")?.ok_or("a `kind: http` connection needs an `endpoint`")?,
    };
    let mut headers = string_map(fields, "headers")?;
    if let Some(key) = string_field(fields, "apiKey")?.filter(|k| !k.is_empty()) {
        headers.insert("Authorization".to_owned(), Secret::new(format!("Bearer {key}")));
    }
    Ok(McpTransport::Http { url, headers })
}

/// Refuses headers the transport sets itself and names that are not valid header names.
#[cfg(feature = "mcp-http")]
pub(crate) fn check_headers(headers: &BTreeMap<String, Secret>) -> std::result::Result<(), String> {
    for name in headers.keys() {
        if RESERVED_HEADERS.iter().any(|r| r.eq_ignore_ascii_case(name)) {
            return Err(format!("the header `{name}` is set by the MCP transport itself and cannot be configured"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parts_and_redaction() {
        let url = "https://u:p4ss@h.example/mcp?key=abcd&x=1#frag";
        assert_eq!(url_secret_parts(url), (Some("u:p4ss"), Some("key=abcd&x=1")));
        assert_eq!(redact_url(url), "https://[REDACTED]@h.example/mcp?[REDACTED]");
        assert_eq!(redact_url("http://127.0.0.1:3/mcp"), "http://127.0.0.1:3/mcp");
        let t = McpTransport::Http { url: url.into(), headers: BTreeMap::new() };
        let s = t.secrets();
        assert!(s.contains(&"abcd".to_owned()) && s.contains(&"u:p4ss".to_owned()));
    }

    /// `handshakeTimeout` and `callTimeout` set the session's bounds; a value that is not a number
    /// of seconds in range is an error naming the server, the tool, the field, the value and the
    /// range.
    #[test]
    fn declared_timeouts_are_read_within_their_bounds() {
        let declared = |extra: Value| -> Result<McpServerConfig> {
            let mut tool = serde_json::json!({"name": "files", "kind": "mcp", "serverName": "fs",
                "connection": {"kind": "stdio", "command": "srv"}});
            tool.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let agent = Agent::from_value(serde_json::json!({"tools": [tool]}))?;
            let Some(crate::ToolKind::Mcp(m)) = agent.tools.as_ref().map(|t| &t[0].kind) else {
                panic!("not an MCP tool: {agent:?}")
            };
            McpServerConfig::from_tool(m, &agent)
        };
        let c = declared(serde_json::json!({})).unwrap();
        assert_eq!((c.connect_timeout, c.call_timeout), (DEFAULT_CONNECT_TIMEOUT, DEFAULT_CALL_TIMEOUT));
        let c = declared(serde_json::json!({"handshakeTimeout": 1, "callTimeout": 3600})).unwrap();
        assert_eq!((c.connect_timeout, c.call_timeout), (Duration::from_secs(1), Duration::from_secs(3600)));
        let c = declared(serde_json::json!({"handshakeTimeout": 600, "callTimeout": 2.5})).unwrap();
        assert_eq!((c.connect_timeout, c.call_timeout), (Duration::from_secs(600), Duration::from_millis(2500)));
        for (extra, expected) in [
            (
                serde_json::json!({"handshakeTimeout": 0}),
                "the tool 'files': `handshakeTimeout` is 0; it must be a number of seconds from 1 to 600 (without it: 30 s)",
            ),
            (
                serde_json::json!({"handshakeTimeout": 600.5}),
                "the tool 'files': `handshakeTimeout` is 600.5; it must be a number of seconds from 1 to 600 (without it: 30 s)",
            ),
            (
                serde_json::json!({"handshakeTimeout": -3}),
                "the tool 'files': `handshakeTimeout` is -3; it must be a number of seconds from 1 to 600 (without it: 30 s)",
            ),
            (
                serde_json::json!({"callTimeout": 3601}),
                "the tool 'files': `callTimeout` is 3601; it must be a number of seconds from 1 to 3600 (without it: 60 s)",
            ),
            (
                serde_json::json!({"callTimeout": "10s"}),
                "the tool 'files': `callTimeout` is \"10s\" (a string); it must be a number of seconds from 1 to 3600 \
                 (without it: 60 s)",
            ),
            (
                serde_json::json!({"handshakeTimeout": true}),
                "the tool 'files': `handshakeTimeout` is true (a boolean); it must be a number of seconds from 1 to 600 \
                 (without it: 30 s)",
            ),
        ] {
            let err = declared(extra.clone()).expect_err("out of bounds");
            let Error::Config { setting, message } = &err else { panic!("{extra}: not a config error: {err:?}") };
            assert_eq!((setting.as_str(), message.as_str()), ("MCP server 'fs'", expected), "{extra}");
        }
    }

    /// `idleTimeout` sets the idle timeout, within its bounds.
    #[test]
    fn idle_timeout_is_bounded() {
        let declared = |seconds: Value| -> Result<McpServerConfig> {
            let agent = Agent::from_value(serde_json::json!({"tools": [{"name": "lab_server", "kind": "mcp",
                "serverName": "lab", "idleTimeout": seconds, "connection": {"kind": "stdio", "command": "srv"}}]}))?;
            let Some(crate::ToolKind::Mcp(tool)) = agent.tools.as_ref().map(|t| &t[0].kind) else {
                panic!("not an MCP tool: {agent:?}")
            };
            McpServerConfig::from_tool(tool, &agent)
        };
        assert_eq!(declared(serde_json::json!(1)).unwrap().idle_timeout, Some(Duration::from_secs(1)));
        assert_eq!(declared(serde_json::json!(2.5)).unwrap().idle_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(declared(serde_json::json!(86400)).unwrap().idle_timeout, Some(Duration::from_secs(86400)));
        assert_eq!(declared(Value::Null).unwrap().idle_timeout, Some(DEFAULT_IDLE_TIMEOUT));
        for (bad, shown) in [
            (serde_json::json!(0), "0"),
            (serde_json::json!(0.5), "0.5"),
            (serde_json::json!(-3), "-3"),
            (serde_json::json!(86401), "86401"),
            (serde_json::json!("soon"), "\"soon\" (a string)"),
        ] {
            let err = declared(bad.clone()).expect_err("out of range");
            let Error::Config { setting, message } = &err else { panic!("{bad}: not a config error: {err:?}") };
            assert_eq!(setting, "MCP server 'lab'");
            assert_eq!(
                message.as_str(),
                format!(
                    "the tool 'lab_server': `idleTimeout` is {shown}; it must be a number of seconds from 1 to 86400 \
                     (without it: 300 s)"
                ),
                "{bad}"
            );
        }
        // A configuration registered by hand keeps its own (here: none) unless the declaration sets one.
        crate::register_connection(
            "idle-registered",
            McpServerConfig::new("r", McpTransport::stdio("srv", [""; 0])).with_idle_timeout(None),
        );
        let agent = Agent::from_value(serde_json::json!({"tools": [{"name": "r", "kind": "mcp",
            "serverName": "idle-registered"}]}))
        .unwrap();
        let Some(crate::ToolKind::Mcp(tool)) = agent.tools.as_ref().map(|t| &t[0].kind) else { unreachable!() };
        assert_eq!(McpServerConfig::from_tool(tool, &agent).unwrap().idle_timeout, None);
    }

    #[test]
    fn paths_resolve_against_the_agent_folder() {
        let mut command = "./srv.py".to_owned();
        let mut cwd = Some(PathBuf::from("data"));
        resolve_paths(&mut command, &mut cwd, Some(Path::new("/agents")));
        assert_eq!(Path::new(&command), Path::new("/agents/./srv.py"));
        assert_eq!(cwd.as_deref(), Some(Path::new("/agents/data")));
        let mut bare = "node".to_owned();
        resolve_paths(&mut bare, &mut None, Some(Path::new("/agents")));
        assert_eq!(bare, "node");
    }

    /// A stdio-only build (`mcp` without `mcp-http`) refuses every way of declaring a server over
    /// HTTP when the declaration is read, naming the server, the URL (without its secrets) and the
    /// feature to enable; a stdio declaration still works.
    #[test]
    #[cfg(not(feature = "mcp-http"))]
    fn http_servers_need_the_mcp_http_feature() {
        let declared = |connection: Value| -> Result<McpServerConfig> {
            let agent = Agent::from_value(serde_json::json!({"tools": [{"name": "docs", "kind": "mcp",
                "serverName": "docs", "connection": connection}]}))?;
            let Some(crate::ToolKind::Mcp(tool)) = agent.tools.as_ref().map(|t| &t[0].kind) else {
                panic!("not an MCP tool: {agent:?}")
            };
            McpServerConfig::from_tool(tool, &agent)
        };
        let url = "https://user:pw-1234@mcp.example.com/mcp?key=k3y-5678";
        crate::register_connection("docs-http-registered", McpServerConfig::new("r", McpTransport::http(url)));
        for connection in [
            serde_json::json!({"kind": "http", "endpoint": url, "headers": {"x-api-key": "h3ader-secret"}}),
            serde_json::json!({"kind": "streamable-http", "url": url}),
            serde_json::json!({"kind": "key", "endpoint": url, "apiKey": "api-k3y-secret"}),
            serde_json::json!({"kind": "anonymous", "endpoint": url}),
            serde_json::json!({"kind": "reference", "name": "docs-http-registered"}),
        ] {
            let err = declared(connection.clone()).expect_err("an HTTP server is refused without `mcp-http`");
            let Error::Config { setting, message } = &err else { panic!("{connection}: not a config error: {err:?}") };
            assert_eq!(setting, "MCP server 'docs'", "{connection}");
            assert_eq!(
                message.as_str(),
                "the server is reached over streamable HTTP (`https://[REDACTED]@mcp.example.com/mcp?[REDACTED]`), \
                 and this build of prompty has MCP over stdio only: enable prompty's `mcp-http` feature \
                 (`prompty = { features = [\"mcp-http\"] }` in Cargo.toml), or start the server as a child process \
                 (`connection: {kind: stdio, command: ...}`)",
                "{connection}"
            );
            let shown = format!("{err} {err:?}");
            for secret in ["pw-1234", "k3y-5678", "h3ader-secret", "api-k3y-secret"] {
                assert!(!shown.contains(secret), "{connection}: {shown}");
            }
        }
        let stdio = declared(serde_json::json!({"kind": "stdio", "command": "srv"})).expect("stdio is offered");
        assert!(matches!(stdio.transport, McpTransport::Stdio { .. }), "{stdio:?}");
    }

    /// `prompty::check` reports an HTTP server at its `connection`, as `missing-feature`.
    #[test]
    #[cfg(not(feature = "mcp-http"))]
    fn check_reports_an_http_server_at_its_connection() {
        let text = "---\ntools:\n  - name: docs\n    kind: mcp\n    serverName: docs\n    connection:\n      kind: http\n      \
                    endpoint: http://127.0.0.1:9/mcp\n  - name: files\n    kind: mcp\n    serverName: fs\n    connection:\n      \
                    kind: stdio\n      command: srv\n---\nHi";
        let agent = crate::load_str(text, ".", "t.prompty").unwrap();
        let report = crate::check(&agent);
        let found: Vec<(String, &str)> = report.errors().map(|d| (d.to_string(), d.code)).collect();
        let expected = "t.prompty:6:5: the MCP tool `docs`: the server is reached over streamable HTTP \
                        (`http://127.0.0.1:9/mcp`), and this build of prompty has MCP over stdio only: enable prompty's \
                        `mcp-http` feature (`prompty = { features = [\"mcp-http\"] }` in Cargo.toml), or start the server \
                        as a child process (`connection: {kind: stdio, command: ...}`)";
        assert_eq!(found, [(expected.to_owned(), "missing-feature")]);
    }

    /// A configuration built by hand with an HTTP transport fails on first use, with the feature
    /// to enable.
    #[test]
    #[cfg(not(feature = "mcp-http"))]
    fn a_hand_built_http_server_fails_with_the_feature_to_enable() {
        let server = super::super::McpServer::new(McpServerConfig::new(
            "hand",
            McpTransport::http("http://127.0.0.1:9/mcp?token=t0ken-secret"),
        ));
        let err = crate::blocking::block_on(async move { server.tools().await }).unwrap().unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("MCP server 'hand' could not be started: the server is reached over streamable HTTP")
                && text.contains("enable prompty's `mcp-http` feature")
                && !text.contains("t0ken-secret"),
            "{text}"
        );
    }

    #[test]
    #[cfg(feature = "mcp-http")]
    fn reserved_headers_are_refused() {
        let mut h = BTreeMap::new();
        h.insert("Mcp-Session-Id".to_owned(), Secret::new("x"));
        assert!(check_headers(&h).is_err());
    }
}
