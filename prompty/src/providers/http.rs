//! The HTTP layer the provider executors share: one [`HttpClient`] (a `reqwest` client with the
//! bounds of [`HttpConfig`] and a `User-Agent: prompty-rs/<version>` header), a [`RetryPolicy`]
//! (429, 5xx and connection errors are retried with exponential backoff and jitter, honouring
//! `Retry-After`; other 4xx never are), and [`HttpError`], which says what went wrong: the HTTP
//! status, the provider's own error message, the request id and, when the body could not be
//! parsed, the raw body.
//!
//! API keys are [`Secret`]s: they are written into sensitive header values and never appear in an
//! error, a log line or `Debug` output. Every value of a sensitive request header (and the token
//! after its scheme, as in `Bearer <key>`) is replaced by `[REDACTED]` in every piece of text the
//! layer builds from a response: error messages, raw bodies, request ids, stream events (also when
//! the server echoes the key JSON- or percent-encoded). Credentials never leave for another origin:
//! see [`HttpConfig`] for the redirect rule and every other bound.
//!
//! Every executor uses [`HttpClient::shared`] unless it is given another client; configure one in
//! code and register the executor under its provider key:
//!
//! ```no_run
//! # #[cfg(feature = "openai")] {
//! use prompty::providers::http::{HttpClient, HttpConfig, RetryPolicy};
//! use prompty::providers::openai::OpenAiExecutor;
//! use std::time::Duration;
//!
//! let client = HttpClient::new(HttpConfig {
//!     request_timeout: Duration::from_secs(120),
//!     retry: RetryPolicy { max_attempts: 5, ..RetryPolicy::default() },
//!     ..HttpConfig::default()
//! })?;
//! prompty::register_executor("openai", OpenAiExecutor::with_client(client));
//! # }
//! # Ok::<(), prompty::Error>(())
//! ```

use crate::{Connection, Error, RawStream, Result, Secret};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE, USER_AGENT};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, SystemTime};

/// The `User-Agent` every request carries: `prompty-rs/<version>`.
///
/// ```
/// assert!(prompty::providers::http::USER_AGENT_VALUE.starts_with("prompty-rs/"));
/// ```
pub const USER_AGENT_VALUE: &str = concat!("prompty-rs/", env!("CARGO_PKG_VERSION"));

/// The longest piece of response text (raw body, provider message) an [`HttpError`] keeps.
pub const MAX_TEXT_IN_ERROR: usize = 4096;

/// How much of an error response's body is read (the rest is dropped unread).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How many redirects within one origin are followed.
pub const MAX_REDIRECTS: usize = 5;

/// The longest `Retry-After` / `retry-after-ms` taken as it is; any larger (or unparsable huge)
/// value counts as this, which is more than any sensible [`RetryPolicy::max_delay`].
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// What replaces a secret in error text and stream events.
const REDACTED: &str = "[REDACTED]";

/// How failed requests are retried.
///
/// A request is retried when the server answers 429 (too many requests) or a 5xx status, or when
/// the connection fails (refused, reset, timed out) before a response status was read. Any other
/// 4xx is never retried. Between attempts the client waits for the server's `Retry-After` (or
/// `retry-after-ms`) when it sends one, otherwise for an exponential backoff with jitter:
/// attempt `n` (1-based) waits between half and all of `base_delay * 2^(n-1)`, never more than
/// `max_delay`. When the server asks for a longer wait than `max_delay`, the error is returned at
/// once instead of retrying early. A `Retry-After` that is negative, not a number, not a date, or
/// absurd (`1e30`, a date centuries ahead) never panics: garbage is ignored (the backoff applies)
/// and a huge value counts as [`MAX_RETRY_AFTER`].
///
/// Once a successful (2xx) status has arrived, nothing is re-sent: a body cut short after that
/// point fails the call, because the provider may already have run (and billed) the generation.
/// The same holds for a stream: it is retried only until its response starts; once events flow, a
/// broken stream is reported to the caller (its outcome may be indeterminate).
///
/// ```
/// use prompty::providers::http::RetryPolicy;
/// use std::time::Duration;
/// let p = RetryPolicy::default();
/// assert_eq!(p.max_attempts, 3);
/// assert!(p.backoff(1) <= p.base_delay);
/// assert!(p.backoff(30) <= p.max_delay);
/// assert_eq!(RetryPolicy::none().max_attempts, 1);
/// let huge = RetryPolicy { max_delay: Duration::MAX, base_delay: Duration::MAX, max_attempts: 9 };
/// assert!(huge.backoff(u32::MAX) >= Duration::MAX / 2);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many times a request is sent at most, the first attempt included (`1`: no retries).
    pub max_attempts: u32,
    /// The backoff before the first retry (before jitter).
    pub base_delay: Duration,
    /// The longest wait between two attempts, `Retry-After` included.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    /// Three attempts, 500 ms base delay, waits of at most 60 s.
    fn default() -> Self {
        RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(60) }
    }
}

impl RetryPolicy {
    /// One attempt, no retries.
    pub fn none() -> Self {
        RetryPolicy { max_attempts: 1, ..RetryPolicy::default() }
    }

    /// The backoff before retry number `retry` (1-based), with jitter: between half and all of
    /// `base_delay * 2^(retry-1)`, capped at `max_delay`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exp = self.base_delay.saturating_mul(1u32 << retry.saturating_sub(1).min(20)).min(self.max_delay);
        let half = exp / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        let jitter = if nanos == 0 { 0 } else { random_u64() % nanos.saturating_add(1) };
        half.saturating_add(Duration::from_nanos(jitter))
    }

    /// How long to wait before retry number `retry`, given the server's `Retry-After`; `None` when
    /// the server asks for more than `max_delay` (then the request is not retried).
    fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        match retry_after {
            Some(d) if d > self.max_delay => None,
            Some(d) => Some(d),
            None => Some(self.backoff(retry)),
        }
    }
}

fn random_u64() -> u64 {
    use rand::Rng as _;
    rand::rng().next_u64()
}

/// Settings of an [`HttpClient`]: every bound of the HTTP layer, in one place.
///
/// | bound | field / constant | default | when it is exceeded |
/// |---|---|---|---|
/// | connecting (TCP + TLS) | `connect_timeout` | 10 s | the attempt fails (retried) |
/// | a whole non-streamed attempt, first byte sent to last byte read | `request_timeout` | 600 s | before a status: retried; after a 2xx status: fails, not retried |
/// | a stream until its response status arrives | `request_timeout` | 600 s | retried |
/// | silence between two pieces of a stream (keep-alive bytes count as data) | `stream_idle_timeout` | 300 s | the stream ends with a transport error |
/// | a whole stream, from its first byte | `stream_timeout` | 3600 s | the stream ends with a transport error (an endless keep-alive stream ends here) |
/// | a non-streamed response body | `max_response_bytes` | 128 MiB | fails, not retried (checked against `Content-Length` and while reading) |
/// | one server-sent event (or line) of a stream | `max_event_bytes` | 16 MiB | the stream ends with a transport error; parsing is linear in the bytes received |
/// | an error response body read | [`MAX_ERROR_BODY_BYTES`] | 64 KiB | the rest is not read |
/// | response text kept in an error (message, raw body) | [`MAX_TEXT_IN_ERROR`] | 4 KiB | cut, with the full length noted |
/// | `Retry-After` / `retry-after-ms` | `retry.max_delay`, [`MAX_RETRY_AFTER`] | 60 s | the error is returned without waiting |
/// | attempts | `retry.max_attempts` | 3 | the last error is returned |
/// | redirects | [`MAX_REDIRECTS`] | 5, same origin only | the call fails, not retried |
///
/// **Redirects.** A redirect is followed only when its target has the same origin (scheme, host
/// and port) as the request's URL; a redirect to any other origin fails the call with an error
/// that names both origins, so no credential (`Authorization`, `api-key`, `x-api-key`, or any
/// other header) ever reaches another origin. Point the connection's endpoint at the final address
/// instead. A client you build yourself ([`HttpClient::from_reqwest`]) keeps its own redirect
/// policy: give it [`HttpClient::redirect_policy`].
///
/// ```
/// let c = prompty::providers::http::HttpConfig::default();
/// assert_eq!(c.connect_timeout.as_secs(), 10);
/// assert_eq!(c.request_timeout.as_secs(), 600);
/// assert_eq!(c.stream_idle_timeout.as_secs(), 300);
/// assert_eq!(c.stream_timeout.as_secs(), 3600);
/// assert_eq!(c.max_response_bytes, 128 << 20);
/// assert_eq!(c.max_event_bytes, 16 << 20);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfig {
    /// How long establishing a connection (TCP and TLS) may take. Default 10 s.
    pub connect_timeout: Duration,
    /// How long one attempt of a non-streamed request may take, from sending it to the last byte of
    /// the response; for a stream, how long until the response starts. Default 600 s.
    pub request_timeout: Duration,
    /// How long a stream may stay silent between two pieces of data before it is reported broken.
    /// Default 300 s.
    pub stream_idle_timeout: Duration,
    /// How long a whole stream may last, from the moment its response started. Default 3600 s.
    pub stream_timeout: Duration,
    /// The largest non-streamed response body read. Default 128 MiB (large embedding batches or
    /// base64 images may need more).
    pub max_response_bytes: usize,
    /// The largest server-sent event (its `data` lines together, or any single line). Default
    /// 16 MiB.
    pub max_event_bytes: usize,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(600),
            stream_idle_timeout: Duration::from_secs(300),
            stream_timeout: Duration::from_secs(3600),
            max_response_bytes: 128 << 20,
            max_event_bytes: 16 << 20,
            retry: RetryPolicy::default(),
        }
    }
}

/// A failed provider request: what the server said, or why no answer came.
///
/// `Display` gives one line with everything known; the API key is never part of it. Executors turn
/// it into [`Error::Execution`] with that line as the message.
///
/// ```
/// use prompty::providers::http::HttpError;
/// let e = HttpError {
///     provider: "openai".into(),
///     status: Some(429),
///     message: "Rate limit reached".into(),
///     request_id: Some("req_1".into()),
///     body: None,
///     attempts: 3,
/// };
/// assert_eq!(
///     e.to_string(),
///     "openai request failed: HTTP 429 Too Many Requests: Rate limit reached (request id req_1; 3 attempts)"
/// );
/// assert!(e.is_retryable());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpError {
    /// The provider the request went to (`openai`, `azure`, `anthropic`, ...).
    pub provider: String,
    /// The HTTP status, when a response arrived.
    pub status: Option<u16>,
    /// The provider's error message (`error.message` of its JSON body), or what went wrong locally
    /// (at most [`MAX_TEXT_IN_ERROR`] bytes).
    pub message: String,
    /// The request id the server gave (`x-request-id`, `request-id`, `apim-request-id`).
    pub request_id: Option<String>,
    /// The raw response body (at most [`MAX_TEXT_IN_ERROR`] bytes), when it could not be parsed.
    pub body: Option<String>,
    /// How many attempts were made.
    pub attempts: u32,
}

impl HttpError {
    /// Whether the failure is of a kind that is retried (429, 5xx, no response at all).
    pub fn is_retryable(&self) -> bool {
        match self.status {
            Some(s) => s == 429 || (500..600).contains(&s),
            None => true,
        }
    }

    fn local(provider: &str, message: impl Into<String>) -> Self {
        HttpError {
            provider: provider.to_owned(),
            status: None,
            message: message.into(),
            request_id: None,
            body: None,
            attempts: 0,
        }
    }

    /// The error with every secret replaced and every piece of server text capped.
    fn scrubbed(self, secrets: &Secrets) -> Self {
        HttpError {
            message: cap_text(&secrets.scrub(&self.message)),
            request_id: self.request_id.map(|r| cap_text(&secrets.scrub(&r))),
            body: self.body.map(|b| cap_text(&secrets.scrub(&b))),
            ..self
        }
    }
}

impl HttpError {
    /// The error as prompty's [`crate::HttpFailure`] (the payload of [`Error::Http`]).
    pub fn to_failure(&self) -> crate::HttpFailure {
        let reason = self.status.and_then(|s| StatusCode::from_u16(s).ok()).and_then(|s| s.canonical_reason());
        crate::HttpFailure {
            provider: self.provider.clone(),
            status: self.status,
            reason: reason.map(str::to_owned),
            message: self.message.clone(),
            request_id: self.request_id.clone(),
            body: self.body.clone(),
            attempts: self.attempts,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.to_failure().fmt(f)
    }
}

impl From<HttpError> for Error {
    fn from(e: HttpError) -> Self {
        Error::Http(Box::new(e.to_failure()))
    }
}

/// The secret values of one request (every sensitive header value, and the token after its scheme
/// in `Bearer <key>`), with the forms a server may echo them in (JSON-escaped, `\/`-escaped,
/// percent-encoded). `Debug` shows only how many there are.
#[derive(Clone, Default)]
pub(crate) struct Secrets(Arc<Forms>);

/// The forms of a request's secrets.
#[derive(Default)]
struct Forms {
    /// Every form, longest first (replaced in that order, so a form inside a longer one never
    /// breaks the longer one).
    all: Vec<String>,
    /// The forms that contain no other form: looked for first, as a text without them holds none.
    minimal: Vec<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secrets({})", self.0.all.len())
    }
}

impl Secrets {
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        // A program sends the same credentials again and again: the forms of the last few sets
        // seen on this thread are kept, keyed by the sensitive header values themselves.
        const KEPT: usize = 4;
        thread_local! {
            static RECENT: std::cell::RefCell<Vec<(Vec<u8>, Secrets)>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut key = Vec::new();
        for value in headers.values().filter(|v| v.is_sensitive()) {
            key.extend_from_slice(value.as_bytes());
            key.push(b'\n'); // never inside a header value
        }
        if key.is_empty() {
            return Secrets::default();
        }
        if let Some(found) = RECENT.with(|r| r.borrow().iter().find(|(k, _)| *k == key).map(|(_, s)| s.clone())) {
            return found;
        }
        let mut raw = Vec::new();
        for value in headers.values().filter(|v| v.is_sensitive()) {
            let text = String::from_utf8_lossy(value.as_bytes());
            let text = text.trim();
            if let Some((_, token)) = text.split_once(' ') {
                raw.push(token.trim().to_owned());
            }
            raw.push(text.to_owned());
        }
        let secrets = Secrets::new(raw);
        RECENT.with(|r| {
            let mut recent = r.borrow_mut();
            if recent.len() >= KEPT {
                recent.remove(0);
            }
            recent.push((key, secrets.clone()));
        });
        secrets
    }

    fn new(values: Vec<String>) -> Self {
        let mut all = Vec::new();
        for v in values.into_iter().filter(|v| !v.is_empty()) {
            if let Ok(json) = serde_json::to_string(&v) {
                let inner = json[1..json.len() - 1].to_owned();
                all.push(inner.replace('/', "\\/"));
                all.push(inner);
            }
            all.push(percent_encode(&v));
            all.push(v);
        }
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        all.dedup();
        // The forms that hold no other form: a text without any of them holds no form at all.
        let minimal = all.iter().filter(|f| !all.iter().any(|o| o.len() < f.len() && f.contains(o.as_str()))).cloned();
        let minimal = minimal.collect();
        Secrets(Arc::new(Forms { all, minimal }))
    }

    /// `text` with every secret replaced by `[REDACTED]`.
    pub(crate) fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        if !self.0.minimal.iter().any(|m| text.contains(m.as_str())) {
            return out;
        }
        for secret in self.0.all.iter() {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
            }
        }
        out
    }

    /// `bytes` with every secret replaced (bytes that are not UTF-8 are decoded lossily first).
    pub(crate) fn scrub_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        if self.0.all.is_empty() {
            return Cow::Borrowed(bytes);
        }
        match std::str::from_utf8(bytes) {
            Ok(text) => match self.scrub(text) {
                Cow::Borrowed(_) => Cow::Borrowed(bytes),
                Cow::Owned(s) => Cow::Owned(s.into_bytes()),
            },
            Err(_) => Cow::Owned(self.scrub(&String::from_utf8_lossy(bytes)).into_owned().into_bytes()),
        }
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The HTTP client of the provider executors: a `reqwest::Client` (connection pool, TLS) and the
/// [`HttpConfig`] it applies. Cloning is cheap and shares the pool.
///
/// ```
/// use prompty::providers::http::{HttpClient, RetryPolicy};
/// let client = HttpClient::shared().with_retry(RetryPolicy::none());
/// assert_eq!(client.config().retry.max_attempts, 1);
/// assert!(format!("{client:?}").starts_with("HttpClient"));
/// ```
#[derive(Clone)]
pub struct HttpClient {
    client: std::result::Result<reqwest::Client, Arc<str>>,
    config: Arc<HttpConfig>,
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").field("config", &*self.config).field("ready", &self.client.is_ok()).finish()
    }
}

impl Default for HttpClient {
    /// The same as [`HttpClient::shared`].
    fn default() -> Self {
        HttpClient::shared()
    }
}

static SHARED: LazyLock<HttpClient> = LazyLock::new(|| {
    let config = HttpConfig::default();
    HttpClient { client: build_reqwest(&config).map_err(Arc::from), config: Arc::new(config) }
});

/// Installs the crypto provider of prompty's TLS feature (`tls-aws-lc` when on, else `tls-ring`)
/// as rustls's process-wide default, unless the program installed one already; returns whether a
/// default provider is in place.
///
/// prompty builds reqwest without a provider of its own and calls this before it builds an HTTP
/// client. A program that builds its own `reqwest::Client` before prompty has built one calls it
/// first (or installs a provider with rustls itself).
///
/// ```
/// assert!(prompty::providers::http::ensure_tls_provider());
/// assert!(prompty::providers::http::HttpClient::shared().reqwest().is_some());
/// ```
pub fn ensure_tls_provider() -> bool {
    use rustls::crypto::CryptoProvider;
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        #[cfg(feature = "tls-aws-lc")]
        let provider = Some(rustls::crypto::aws_lc_rs::default_provider());
        #[cfg(all(feature = "tls-ring", not(feature = "tls-aws-lc")))]
        let provider = Some(rustls::crypto::ring::default_provider());
        #[cfg(not(any(feature = "tls-ring", feature = "tls-aws-lc")))]
        let provider: Option<CryptoProvider> = None;
        if let Some(provider) = provider.filter(|_| CryptoProvider::get_default().is_none()) {
            // Another thread may have installed one meanwhile: theirs stays.
            let _ = provider.install_default();
        }
    });
    CryptoProvider::get_default().is_some()
}

fn build_reqwest(config: &HttpConfig) -> std::result::Result<reqwest::Client, String> {
    if !ensure_tls_provider() {
        return Err("no TLS crypto provider: enable prompty's `tls-ring` or `tls-aws-lc` feature, or install a \
                    rustls CryptoProvider before the first request"
            .to_owned());
    }
    let mut headers = HeaderMap::new();
    headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(config.connect_timeout)
        .redirect(HttpClient::redirect_policy())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
}

/// A redirect the policy refused.
#[derive(Debug)]
struct RedirectRefused(String);

impl fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RedirectRefused {}

impl HttpClient {
    /// A client with its own connection pool and these settings.
    ///
    /// ```
    /// let c = prompty::providers::http::HttpClient::new(Default::default())?;
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn new(config: HttpConfig) -> Result<Self> {
        let client = build_reqwest(&config).map_err(|message| Error::Execution { message })?;
        Ok(HttpClient { client: Ok(client), config: Arc::new(config) })
    }

    /// The process-wide client with the default [`HttpConfig`], built on first use; the executors
    /// registered at link time use it.
    pub fn shared() -> Self {
        SHARED.clone()
    }

    /// A client around a `reqwest::Client` you configured (proxy, TLS roots, ...). The
    /// `User-Agent` header is still sent; `config` gives the timeouts, sizes and retries. Its
    /// redirect policy is the one you gave it: use [`HttpClient::redirect_policy`] so that no
    /// credential follows a redirect to another origin. reqwest is built without a TLS crypto
    /// provider of its own: call [`ensure_tls_provider`] before building the client (reqwest
    /// panics without one).
    ///
    /// ```
    /// use prompty::providers::http::{ensure_tls_provider, HttpClient, HttpConfig};
    /// ensure_tls_provider();
    /// let client = reqwest::Client::builder().redirect(HttpClient::redirect_policy()).build().unwrap();
    /// let _ = HttpClient::from_reqwest(client, HttpConfig::default());
    /// ```
    pub fn from_reqwest(client: reqwest::Client, config: HttpConfig) -> Self {
        HttpClient { client: Ok(client), config: Arc::new(config) }
    }

    /// The redirect policy of the clients this layer builds: follow at most [`MAX_REDIRECTS`]
    /// redirects, and only to the origin (scheme, host, port) of the request's URL; a redirect to
    /// another origin is an error (no request is sent there).
    pub fn redirect_policy() -> reqwest::redirect::Policy {
        reqwest::redirect::Policy::custom(|attempt| {
            let Some(first) = attempt.previous().first() else { return attempt.follow() };
            let (from, to) = (first.origin(), attempt.url().origin());
            if from != to || !to.is_tuple() {
                let message = format!(
                    "refused a redirect from {} to another origin ({}): credentials are never sent to another \
                     origin; set the connection's endpoint to the final address",
                    from.ascii_serialization(),
                    to.ascii_serialization()
                );
                return attempt.error(RedirectRefused(message));
            }
            if attempt.previous().len() > MAX_REDIRECTS {
                let message = format!("more than {MAX_REDIRECTS} redirects");
                return attempt.error(RedirectRefused(message));
            }
            attempt.follow()
        })
    }

    /// The same client (and pool) with another retry policy.
    pub fn with_retry(self, retry: RetryPolicy) -> Self {
        let config = HttpConfig { retry, ..(*self.config).clone() };
        HttpClient { client: self.client, config: Arc::new(config) }
    }

    /// The settings this client applies.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The underlying `reqwest` client, if it could be built.
    pub fn reqwest(&self) -> Option<&reqwest::Client> {
        self.client.as_ref().ok()
    }

    /// Sends `request` and returns its JSON response, retrying as the policy says.
    pub(crate) async fn json(&self, request: &ApiRequest<'_>) -> std::result::Result<Value, HttpError> {
        let secrets = Secrets::from_headers(&request.headers);
        match self.send(request, false, &secrets).await? {
            Sent::Json(v) => Ok(v),
            Sent::Stream(_) => Err(HttpError::local(request.provider, "internal error: unexpected stream")),
        }
    }

    /// Sends `request` and returns the events of its successful streamed response, bounded by
    /// this client's stream limits and with the request's secrets scrubbed from every event.
    pub(crate) async fn events(
        &self,
        request: &ApiRequest<'_>,
        end: super::sse::End,
    ) -> std::result::Result<RawStream, HttpError> {
        let secrets = Secrets::from_headers(&request.headers);
        match self.send(request, true, &secrets).await? {
            Sent::Stream(response) => {
                let limits = super::sse::Limits {
                    idle: self.config.stream_idle_timeout,
                    total: self.config.stream_timeout,
                    max_event_bytes: self.config.max_event_bytes,
                };
                Ok(super::sse::events(response, end, limits, request.provider, secrets))
            }
            Sent::Json(_) => Err(HttpError::local(request.provider, "internal error: unexpected JSON")),
        }
    }

    async fn send(
        &self,
        request: &ApiRequest<'_>,
        stream: bool,
        secrets: &Secrets,
    ) -> std::result::Result<Sent, HttpError> {
        let provider = request.provider;
        let client = self.client.as_ref().map_err(|m| HttpError::local(provider, m.to_string()))?;
        let policy = self.config.retry;
        let max_attempts = policy.max_attempts.max(1);
        let mut attempt: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let (error, retry_after) = match self.attempt(client, request, stream, secrets).await {
                Ok(sent) => return Ok(sent),
                Err(Failure::Final(e)) => return Err(HttpError { attempts: attempt, ..e }.scrubbed(secrets)),
                Err(Failure::Retryable(e, retry_after)) => (e, retry_after),
            };
            let delay = if attempt < max_attempts { policy.delay(attempt, retry_after) } else { None };
            match delay {
                Some(d) => tokio::time::sleep(d).await,
                None => return Err(HttpError { attempts: attempt, ..error }.scrubbed(secrets)),
            }
        }
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        request: &ApiRequest<'_>,
        stream: bool,
        secrets: &Secrets,
    ) -> std::result::Result<Sent, Failure> {
        let provider = request.provider;
        let builder = match request.url {
            Address::Text(url) => client.request(request.method.clone(), url),
            Address::Parsed(url) => client.request(request.method.clone(), url.clone()),
        };
        let mut builder = builder.headers(request.headers.as_ref().clone());
        if let Some(body) = &request.body {
            builder = builder.header(CONTENT_TYPE, HeaderValue::from_static("application/json")).body(body.clone());
        }
        let timeout = self.config.request_timeout;
        let sent = if stream {
            // The whole-request timeout would cut the stream: bound only the wait for its start.
            builder = builder.header(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
            match tokio::time::timeout(timeout, builder.send()).await {
                Ok(sent) => sent,
                Err(_) => {
                    let message = format!("no response within {timeout:?} (request timeout)");
                    return Err(Failure::Retryable(HttpError::local(provider, message), None));
                }
            }
        } else {
            builder.timeout(timeout).send().await
        };
        let mut response = match sent {
            Err(e) => return Err(transport_failure(provider, &e)),
            Ok(r) => r,
        };
        let status = response.status();
        let request_id = request_id(response.headers());
        let failure = |message: String, body: Option<String>| HttpError {
            provider: provider.to_owned(),
            status: Some(status.as_u16()),
            message,
            request_id: request_id.clone(),
            body,
            attempts: 0,
        };
        if status.is_success() {
            if stream {
                return Ok(Sent::Stream(response));
            }
            // From here on nothing is re-sent: the provider has accepted the request and may have
            // acted on it, so a second attempt could duplicate a generation.
            let limit = self.config.max_response_bytes;
            if response.content_length().is_some_and(|n| u64::try_from(limit).is_ok_and(|l| n > l)) {
                let message = format!(
                    "the response body is larger than {limit} bytes (HttpConfig::max_response_bytes); not retried"
                );
                return Err(Failure::Final(failure(message, None)));
            }
            // reqwest's request timeout (set above) is a deadline for the body too.
            let body = match read_body(&mut response, limit).await {
                Ok(ReadBody::Complete(b)) => b,
                Ok(ReadBody::TooLarge(_)) => {
                    let message = format!(
                        "the response body is larger than {limit} bytes (HttpConfig::max_response_bytes); not retried"
                    );
                    return Err(Failure::Final(failure(message, None)));
                }
                Err(e) if e.is_timeout() => {
                    let message = format!(
                        "the response body did not arrive within {timeout:?} (request timeout); not retried, as \
                         the provider may already have acted on the request"
                    );
                    return Err(Failure::Final(failure(message, None)));
                }
                Err(e) => {
                    let message = format!(
                        "the response was cut short ({}); not retried, as the provider may already have acted on \
                         the request",
                        error_chain(&e)
                    );
                    return Err(Failure::Final(failure(message, None)));
                }
            };
            let body = secrets.scrub_bytes(&body);
            return match serde_json::from_slice::<Value>(&body) {
                Ok(v) => Ok(Sent::Json(v)),
                Err(e) => Err(Failure::Final(failure(
                    format!("the response is not valid JSON: {e}"),
                    Some(truncate_body(&body)),
                ))),
            };
        }
        let retry_after = retry_after(response.headers());
        let body = match tokio::time::timeout(timeout, read_body(&mut response, MAX_ERROR_BODY_BYTES)).await {
            Ok(Ok(ReadBody::Complete(b))) => b,
            Ok(Ok(ReadBody::TooLarge(prefix))) => prefix,
            _ => Vec::new(),
        };
        let body = secrets.scrub_bytes(&body);
        let (message, raw) = match provider_message(&body) {
            Some(m) => (cap_text(&m), None),
            None if body.is_empty() => ("the response has no body".to_owned(), None),
            None => ("the error response could not be parsed".to_owned(), Some(truncate_body(&body))),
        };
        let error = failure(message, raw);
        if error.is_retryable() {
            Err(Failure::Retryable(error, retry_after))
        } else {
            Err(Failure::Final(error))
        }
    }
}

enum ReadBody {
    Complete(Vec<u8>),
    /// The body is larger than the limit: its first bytes (at most the limit), the rest unread.
    TooLarge(Vec<u8>),
}

/// Reads a response body of at most `limit` bytes; of a larger one, only its first `limit` bytes.
async fn read_body(response: &mut reqwest::Response, limit: usize) -> std::result::Result<ReadBody, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = limit.saturating_sub(body.len());
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok(ReadBody::TooLarge(body));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(ReadBody::Complete(body))
}

enum Sent {
    Json(Value),
    Stream(reqwest::Response),
}

enum Failure {
    Retryable(HttpError, Option<Duration>),
    Final(HttpError),
}

fn transport_failure(provider: &str, e: &reqwest::Error) -> Failure {
    let error = HttpError::local(provider, error_chain(e));
    if e.is_builder() || e.is_redirect() {
        Failure::Final(error)
    } else {
        Failure::Retryable(error, None)
    }
}

/// An error and its sources, joined with `: ` (reqwest's own message alone says little).
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// One request to a provider.
pub(crate) struct ApiRequest<'a> {
    /// Provider name for errors.
    pub provider: &'a str,
    pub method: Method,
    pub url: Address<'a>,
    /// Auth and provider headers (values holding keys are marked sensitive).
    pub headers: Cow<'a, HeaderMap>,
    /// The JSON body, serialized.
    pub body: Option<Bytes>,
}

/// Where a request goes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Address<'a> {
    /// A URL as written, parsed for each request (an invalid one fails the request).
    Text(&'a str),
    /// A URL parsed once and kept (a target reused from call to call).
    Parsed(&'a reqwest::Url),
}

impl<'a> From<&'a str> for Address<'a> {
    fn from(url: &'a str) -> Self {
        Address::Text(url)
    }
}

impl<'a> From<&'a String> for Address<'a> {
    fn from(url: &'a String) -> Self {
        Address::Text(url)
    }
}

impl<'a> From<&'a reqwest::Url> for Address<'a> {
    fn from(url: &'a reqwest::Url) -> Self {
        Address::Parsed(url)
    }
}

impl<'a> ApiRequest<'a> {
    /// A POST of `body` as JSON.
    pub fn post(
        provider: &'a str,
        url: impl Into<Address<'a>>,
        headers: Cow<'a, HeaderMap>,
        body: &Value,
    ) -> Result<Self> {
        Self::post_serialized(provider, url, headers, serde_json::to_vec(body))
    }

    /// A POST of a body already serialized as JSON (or the error serializing it).
    pub fn post_serialized(
        provider: &'a str,
        url: impl Into<Address<'a>>,
        headers: Cow<'a, HeaderMap>,
        body: std::result::Result<Vec<u8>, serde_json::Error>,
    ) -> Result<Self> {
        let body =
            body.map_err(|e| Error::Execution { message: format!("{provider}: cannot serialize the request: {e}") })?;
        Ok(ApiRequest { provider, method: Method::POST, url: url.into(), headers, body: Some(Bytes::from(body)) })
    }

    /// A GET.
    pub fn get(provider: &'a str, url: impl Into<Address<'a>>, headers: Cow<'a, HeaderMap>) -> Self {
        ApiRequest { provider, method: Method::GET, url: url.into(), headers, body: None }
    }
}

/// Adds a header carrying a secret (marked sensitive, so `http`'s `Debug` redacts it). A key with
/// no value adds nothing.
pub(crate) fn insert_secret(
    headers: &mut HeaderMap,
    name: HeaderName,
    prefix: &str,
    key: Option<&Secret>,
    provider: &str,
) -> Result<()> {
    let Some(key) = key.filter(|k| !k.is_empty()) else { return Ok(()) };
    let mut value = HeaderValue::try_from(format!("{prefix}{}", key.expose())).map_err(|_| Error::Execution {
        message: format!("{provider}: the API key contains characters that cannot be sent in an HTTP header"),
    })?;
    value.set_sensitive(true);
    headers.insert(name, value);
    Ok(())
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    ["x-request-id", "request-id", "apim-request-id", "x-ms-request-id"]
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// `retry-after-ms`, or `Retry-After` in seconds or as an HTTP date, at most [`MAX_RETRY_AFTER`].
/// A negative, non-finite or unparsable value is ignored; a huge one (`1e30`, `inf`, a date far
/// ahead) counts as [`MAX_RETRY_AFTER`].
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if let Some(d) = bounded_seconds(ms / 1000.0) {
            return Some(d);
        }
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return bounded_seconds(secs);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default().min(MAX_RETRY_AFTER))
}

/// `secs` as a duration of at most [`MAX_RETRY_AFTER`]; `None` for NaN or a negative value.
fn bounded_seconds(secs: f64) -> Option<Duration> {
    if secs.is_nan() || secs < 0.0 {
        return None;
    }
    let max = MAX_RETRY_AFTER.as_secs_f64();
    Some(Duration::try_from_secs_f64(secs.min(max)).unwrap_or(MAX_RETRY_AFTER))
}

/// The provider's error message in a JSON error body: `error.message` (OpenAI, Azure, Anthropic),
/// `error` as a string, `message`, or `detail`.
fn provider_message(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let pick = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let error = v.get("error");
    error
        .and_then(|e| e.get("message"))
        .and_then(pick)
        .or_else(|| error.and_then(pick))
        .or_else(|| v.get("message").and_then(pick))
        .or_else(|| v.get("detail").and_then(pick))
        .or_else(|| Some(serde_json::to_string(&v).ok()?).filter(|_| v.is_object() || v.is_array()))
}

fn truncate_body(body: &[u8]) -> String {
    cut_text(&String::from_utf8_lossy(body), body.len())
}

/// `text`, cut to at most [`MAX_TEXT_IN_ERROR`] bytes (on a character boundary); a text already cut
/// (with its short `... (N bytes)` note) is kept.
fn cap_text(text: &str) -> String {
    if text.len() <= MAX_TEXT_IN_ERROR + 32 {
        return text.to_owned();
    }
    cut_text(text, text.len())
}

fn cut_text(text: &str, full_len: usize) -> String {
    match prompty_core::text::prefix(text, MAX_TEXT_IN_ERROR) {
        whole if whole.len() == text.len() => text.to_owned(),
        part => format!("{part}... ({full_len} bytes)"),
    }
}

/// The endpoint and key a request goes to, resolved from a prompt's connection and the
/// environment.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The endpoint, without a trailing `/`.
    pub endpoint: Option<String>,
    /// The key; `None` or empty: no auth header.
    pub key: Option<Secret>,
}

impl fmt::Debug for Resolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resolved").field("endpoint", &self.endpoint).field("key", &self.key).finish()
    }
}

/// Where a provider looks in the environment.
pub(crate) struct EnvNames {
    /// Endpoint variables, first set wins.
    pub endpoint: &'static [&'static str],
    /// The key variable.
    pub key: &'static str,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn trim_endpoint(e: &str) -> String {
    e.trim().trim_end_matches('/').to_owned()
}

/// Resolves a prompt's `model.connection`:
/// - none: endpoint and key from the environment;
/// - `key`: its endpoint and `apiKey` (the environment fills what it leaves out; an empty `apiKey`
///   sends no key);
/// - `anonymous`: its endpoint (or the environment's), never a key;
/// - `foundry`, `remote`: their endpoint (or the environment's), the key from the environment;
/// - `reference`: the [`Connection`] registered under its name with
///   [`crate::register_connection`], resolved by these same rules.
pub(crate) fn resolve(connection: Option<&Connection>, names: &EnvNames, provider: &str) -> Result<Resolved> {
    let env_endpoint = || names.endpoint.iter().find_map(|n| env(n)).map(|e| trim_endpoint(&e));
    let env_key = || env(names.key).map(Secret::new);
    let endpoint_or_env = |e: &Option<String>| match e.as_deref().filter(|e| !e.trim().is_empty()) {
        Some(e) => Some(trim_endpoint(e)),
        None => env_endpoint(),
    };
    Ok(match connection {
        None => Resolved { endpoint: env_endpoint(), key: env_key() },
        Some(Connection::Key { endpoint, api_key, .. }) => Resolved {
            endpoint: endpoint_or_env(endpoint),
            key: match api_key {
                Some(k) => Some(k.clone()),
                None => env_key(),
            },
        },
        Some(Connection::Anonymous { endpoint, .. }) => Resolved { endpoint: endpoint_or_env(endpoint), key: None },
        Some(Connection::Foundry { endpoint, .. }) | Some(Connection::Remote { endpoint, .. }) => {
            Resolved { endpoint: endpoint_or_env(endpoint), key: env_key() }
        }
        Some(Connection::Reference { name, .. }) => {
            let registered = crate::get_connection_as::<Connection>(name).map_err(|e| Error::Execution {
                message: format!(
                    "{provider}: the prompt's connection refers to '{name}': {e}. Register a `prompty::Connection` \
                     (kind key, anonymous or foundry) with `prompty::register_connection(\"{name}\", ...)`"
                ),
            })?;
            if let Connection::Reference { name: inner, .. } = &*registered {
                return Err(Error::Execution {
                    message: format!(
                        "{provider}: connection '{name}' is registered as another reference ('{inner}'); register \
                         a connection of kind key, anonymous or foundry"
                    ),
                });
            }
            resolve(Some(&registered), names, provider)?
        }
        Some(other) => {
            return Err(Error::Execution {
                message: format!(
                    "{provider}: connection kind '{}' is not supported (use key, anonymous, foundry or reference)",
                    other.kind()
                ),
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let p =
            RetryPolicy { max_attempts: 5, base_delay: Duration::from_millis(100), max_delay: Duration::from_secs(1) };
        for _ in 0..50 {
            let d1 = p.backoff(1);
            assert!(d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100), "{d1:?}");
            let d3 = p.backoff(3);
            assert!(d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400), "{d3:?}");
            assert!(p.backoff(40) <= Duration::from_secs(1));
        }
        assert_eq!(p.delay(1, Some(Duration::from_secs(2))), None);
        assert_eq!(p.delay(1, Some(Duration::from_millis(300))), Some(Duration::from_millis(300)));
    }

    #[test]
    fn retry_after_forms() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&h), Some(Duration::from_millis(150)));
        let mut h = HeaderMap::new();
        let later = SystemTime::now() + Duration::from_secs(30);
        h.insert("retry-after", HeaderValue::try_from(httpdate::fmt_http_date(later)).unwrap());
        let d = retry_after(&h).unwrap();
        assert!(d > Duration::from_secs(27) && d <= Duration::from_secs(30), "{d:?}");
        h.insert("retry-after", HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"));
        assert_eq!(retry_after(&h), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h), None);
    }

    #[test]
    fn retry_after_garbage_never_panics() {
        let with = |name: &'static str, value: &str| {
            let mut h = HeaderMap::new();
            h.insert(name, HeaderValue::try_from(value).unwrap());
            retry_after(&h)
        };
        for v in ["1e30", "inf", "Infinity", "1.8e308", "99999999999999999999999"] {
            assert_eq!(with("retry-after-ms", v), Some(MAX_RETRY_AFTER), "{v}");
            assert_eq!(with("retry-after", v), Some(MAX_RETRY_AFTER), "{v}");
        }
        for v in ["-1", "-inf", "NaN", "nan", "soon", "", "1,5", "0x10"] {
            assert_eq!(with("retry-after-ms", v), None, "{v}");
            assert_eq!(with("retry-after", v), None, "{v}");
        }
        assert_eq!(with("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT"), Some(MAX_RETRY_AFTER));
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, with("retry-after-ms", "1e30")), None, "a huge wait is not honoured: no retry");
    }

    #[test]
    fn secrets_are_scrubbed_in_every_form() {
        let mut h = HeaderMap::new();
        insert_secret(&mut h, reqwest::header::AUTHORIZATION, "Bearer ", Some(&Secret::new("sk-a/b+c")), "o").unwrap();
        h.insert("x-other", HeaderValue::from_static("sk-a/b+c-not-sensitive"));
        let s = Secrets::from_headers(&h);
        assert_eq!(format!("{s:?}"), format!("Secrets({})", s.0.all.len()));
        for text in ["key sk-a/b+c!", "Bearer sk-a/b+c", r#"{"k":"sk-a\/b+c"}"#, "k=sk-a%2Fb%2Bc"] {
            let out = s.scrub(text);
            assert!(out.contains(REDACTED) && !out.contains("b+c") && !out.contains("b%2Bc"), "{text} -> {out}");
        }
        assert!(matches!(s.scrub("nothing here"), Cow::Borrowed(_)));
        assert_eq!(&*s.scrub_bytes(b"\xff sk-a/b+c"), "\u{FFFD} [REDACTED]".as_bytes(), "not UTF-8: decoded lossily");
        let e = HttpError { body: Some("x".repeat(100_000)), ..HttpError::local("p", "sk-a/b+c".repeat(10_000)) };
        let e = e.scrubbed(&s);
        assert!(e.message.len() < MAX_TEXT_IN_ERROR + 64 && !e.message.contains("sk-a"));
        assert!(e.body.unwrap().len() < MAX_TEXT_IN_ERROR + 64);
    }

    #[test]
    fn provider_messages() {
        assert_eq!(provider_message(br#"{"error":{"message":"bad key","type":"x"}}"#).as_deref(), Some("bad key"));
        assert_eq!(
            provider_message(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#)
                .as_deref(),
            Some("Overloaded")
        );
        assert_eq!(provider_message(br#"{"error":"nope"}"#).as_deref(), Some("nope"));
        assert_eq!(provider_message(br#"{"detail":"Not Found"}"#).as_deref(), Some("Not Found"));
        assert_eq!(provider_message(b"<html>502</html>"), None);
    }

    #[test]
    fn errors_never_show_keys() {
        let mut h = HeaderMap::new();
        insert_secret(&mut h, reqwest::header::AUTHORIZATION, "Bearer ", Some(&Secret::new("sk-secret")), "openai")
            .unwrap();
        assert!(!format!("{h:?}").contains("sk-secret"));
        insert_secret(&mut h, HeaderName::from_static("x-api-key"), "", Some(&Secret::new("")), "x").unwrap();
        assert!(h.get("x-api-key").is_none());
        let r = Resolved { endpoint: None, key: Some(Secret::new("sk-secret")) };
        assert!(!format!("{r:?}").contains("sk-secret"));
    }

    #[test]
    fn long_bodies_are_truncated() {
        let body = "é".repeat(5000);
        let t = truncate_body(body.as_bytes());
        assert!(t.len() < 4200 && t.ends_with("(10000 bytes)"));
        assert_eq!(cap_text(&t), t, "a cut text is not cut again");
    }
}
