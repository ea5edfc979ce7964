//! The client: [`HttpClient`] and its bounds ([`HttpConfig`]), requests ([`ApiRequest`]) sent
//! through the one retry loop, and their responses read within those bounds.

use super::error::{cap_text, error_chain, provider_message, truncate_body, HttpError, MAX_ERROR_BODY_BYTES};
use super::retry::{retry_after, with_retries, Attempt, RetryPolicy};
use super::secrets::Secrets;
use super::sse;
use super::tls::ensure_tls_provider;
use crate::{Error, RawStream, Result};
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, USER_AGENT};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

/// The `User-Agent` every request carries: `prompty-rs/<version>`.
///
/// ```
/// assert!(prompty::providers::http::USER_AGENT_VALUE.starts_with("prompty-rs/"));
/// ```
pub const USER_AGENT_VALUE: &str = concat!("prompty-rs/", env!("CARGO_PKG_VERSION"));

/// How many redirects within one origin are followed.
pub const MAX_REDIRECTS: usize = 5;

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
/// | response text kept in an error (message, raw body) | [`MAX_TEXT_IN_ERROR`](super::MAX_TEXT_IN_ERROR) | 4 KiB | cut, with the full length noted |
/// | `Retry-After` / `retry-after-ms` | `retry.max_delay`, [`MAX_RETRY_AFTER`](super::MAX_RETRY_AFTER) | 60 s | the error is returned without waiting |
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

fn build_reqwest(config: &HttpConfig) -> std::result::Result<reqwest::Client, String> {
    reqwest_builder(config.connect_timeout)?
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", error_chain(&e)))
}

/// A `reqwest` client builder with what every HTTP client of prompty has: a TLS crypto provider
/// ([`ensure_tls_provider`]), `User-Agent: prompty-rs/<version>`, the same-origin redirect rule
/// ([`HttpClient::redirect_policy`]) and `connect_timeout`. Used by [`HttpClient`] and by the MCP
/// transport (rmcp takes a `reqwest::Client`).
pub(crate) fn reqwest_builder(connect_timeout: Duration) -> std::result::Result<reqwest::ClientBuilder, String> {
    if !ensure_tls_provider() {
        return Err("no TLS crypto provider: enable prompty's `tls-ring` or `tls-aws-lc` feature, or install a \
                    rustls CryptoProvider before the first request"
            .to_owned());
    }
    let mut headers = HeaderMap::new();
    headers.insert(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE));
    Ok(reqwest::Client::builder()
        .default_headers(headers)
        .connect_timeout(connect_timeout)
        .redirect(HttpClient::redirect_policy()))
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
    pub(crate) async fn json(&self, request: &ApiRequest<'_>) -> Result<Value> {
        let secrets = Secrets::from_headers(&request.headers);
        match self.send(request, Reply::Json, &secrets).await? {
            Sent::Json(v) => Ok(v),
            Sent::Stream(_) => Err(HttpError::local(request.provider, "internal error: unexpected stream").into()),
        }
    }

    /// Sends `request` and returns the events of its successful streamed response, bounded by
    /// this client's stream limits and with the request's secrets scrubbed from every event.
    pub(crate) async fn events(&self, request: &ApiRequest<'_>, end: sse::End) -> Result<RawStream> {
        let secrets = Secrets::from_headers(&request.headers);
        match self.send(request, Reply::Events, &secrets).await? {
            Sent::Stream(response) => {
                let limits = sse::Limits {
                    idle: self.config.stream_idle_timeout,
                    total: self.config.stream_timeout,
                    max_event_bytes: self.config.max_event_bytes,
                };
                Ok(sse::events(response, end, limits, request.provider, secrets))
            }
            Sent::Json(_) => Err(HttpError::local(request.provider, "internal error: unexpected JSON").into()),
        }
    }

    /// Sends `request` (a GET of a file) and returns its successful response with the body unread,
    /// for the caller to read within bounds of its own (a download). Retried as the policy says
    /// until a success status arrives; `request_timeout` bounds the wait for that status only.
    #[cfg(feature = "local")]
    pub(crate) async fn response(&self, request: &ApiRequest<'_>) -> Result<reqwest::Response> {
        let secrets = Secrets::from_headers(&request.headers);
        match self.send(request, Reply::Body, &secrets).await? {
            Sent::Stream(response) => Ok(response),
            Sent::Json(_) => Err(HttpError::local(request.provider, "internal error: unexpected JSON").into()),
        }
    }

    /// Sends `request` through the retry loop. A URL that cannot be built is a configuration
    /// error ([`Error::Config`]): no request, no retry, no wait.
    async fn send(&self, request: &ApiRequest<'_>, reply: Reply, secrets: &Secrets) -> Result<Sent> {
        let provider = request.provider;
        let client = self.client.as_ref().map_err(|m| HttpError::local(provider, m.to_string()))?;
        let parsed;
        let url = match request.url {
            Address::Parsed(url) => url,
            Address::Text(text) => {
                parsed = reqwest::Url::parse(text).map_err(|e| unbuildable_url(provider, text, &e, secrets))?;
                &parsed
            }
        };
        let outcome = with_retries(&self.config.retry, || self.attempt(client, url, request, reply, secrets)).await;
        outcome.map_err(|(error, attempts)| HttpError { attempts, ..error }.scrubbed(secrets).into())
    }

    async fn attempt(
        &self,
        client: &reqwest::Client,
        url: &reqwest::Url,
        request: &ApiRequest<'_>,
        reply: Reply,
        secrets: &Secrets,
    ) -> Attempt<Sent, HttpError> {
        let stream = reply != Reply::Json;
        let provider = request.provider;
        let builder = client.request(request.method.clone(), url.clone());
        let mut builder = builder.headers(request.headers.as_ref().clone());
        if let Some(body) = &request.body {
            builder = builder.header(CONTENT_TYPE, HeaderValue::from_static("application/json")).body(body.clone());
        }
        let timeout = self.config.request_timeout;
        let sent = if stream {
            // The whole-request timeout would cut the stream: bound only the wait for its start.
            if reply == Reply::Events {
                builder = builder.header(reqwest::header::ACCEPT, HeaderValue::from_static("text/event-stream"));
            }
            match tokio::time::timeout(timeout, builder.send()).await {
                Ok(sent) => sent,
                Err(_) => {
                    let message = format!("no response within {timeout:?} (request timeout)");
                    return Attempt::Retry(HttpError::local(provider, message), None);
                }
            }
        } else {
            builder.timeout(timeout).send().await
        };
        let mut response = match sent {
            Err(e) => return transport_failure(provider, &e),
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
                return Attempt::Done(Sent::Stream(response));
            }
            // From here on nothing is re-sent: the provider has accepted the request and may have
            // acted on it, so a second attempt could duplicate a generation.
            let limit = self.config.max_response_bytes;
            if response.content_length().is_some_and(|n| u64::try_from(limit).is_ok_and(|l| n > l)) {
                let message = format!(
                    "the response body is larger than {limit} bytes (HttpConfig::max_response_bytes); not retried"
                );
                return Attempt::Fail(failure(message, None));
            }
            // reqwest's request timeout (set above) is a deadline for the body too.
            let body = match read_body(&mut response, limit).await {
                Ok(ReadBody::Complete(b)) => b,
                Ok(ReadBody::TooLarge(_)) => {
                    let message = format!(
                        "the response body is larger than {limit} bytes (HttpConfig::max_response_bytes); not retried"
                    );
                    return Attempt::Fail(failure(message, None));
                }
                Err(e) if e.is_timeout() => {
                    let message = format!(
                        "the response body did not arrive within {timeout:?} (request timeout); not retried, as \
                         the provider may already have acted on the request"
                    );
                    return Attempt::Fail(failure(message, None));
                }
                Err(e) => {
                    let message = format!(
                        "the response was cut short ({}); not retried, as the provider may already have acted on \
                         the request",
                        error_chain(&e)
                    );
                    return Attempt::Fail(failure(message, None));
                }
            };
            let body = secrets.scrub_bytes(&body);
            return match serde_json::from_slice::<Value>(&body) {
                Ok(v) => Attempt::Done(Sent::Json(v)),
                Err(e) => {
                    Attempt::Fail(failure(format!("the response is not valid JSON: {e}"), Some(truncate_body(&body))))
                }
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
        let message = match status {
            StatusCode::NOT_FOUND => format!("{message}{}", not_found_note(request, url, secrets)),
            _ => message,
        };
        let error = failure(message, raw);
        if error.is_retryable() && !request.not_retried.is_some_and(|handled| handled(&error)) {
            Attempt::Retry(error, retry_after)
        } else {
            Attempt::Fail(error)
        }
    }
}

/// A response body read within a limit.
pub(crate) enum ReadBody {
    /// The whole body.
    Complete(Vec<u8>),
    /// The body is larger than the limit: its first bytes (at most the limit), the rest unread.
    TooLarge(Vec<u8>),
}

/// Reads a response body of at most `limit` bytes; of a larger one, only its first `limit` bytes.
pub(crate) async fn read_body(
    response: &mut reqwest::Response,
    limit: usize,
) -> std::result::Result<ReadBody, reqwest::Error> {
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

/// What a request's successful response is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reply {
    /// A JSON body, read whole within `max_response_bytes`.
    Json,
    /// Server-sent events (`Accept: text/event-stream`), read by the caller.
    Events,
    /// Any body, read by the caller.
    #[cfg_attr(not(feature = "local"), allow(dead_code))]
    Body,
}

enum Sent {
    Json(Value),
    Stream(reqwest::Response),
}

fn transport_failure(provider: &str, e: &reqwest::Error) -> Attempt<Sent, HttpError> {
    let error = HttpError::local(provider, error_chain(e));
    if e.is_builder() || e.is_redirect() {
        Attempt::Fail(error)
    } else {
        Attempt::Retry(error, None)
    }
}

/// A URL as an error shows it: without its query, fragment and user information (where keys may
/// be), at most 200 bytes, with the request's secrets scrubbed.
fn shown_url(text: &str, secrets: &Secrets) -> String {
    let shown = text.split(['?', '#']).next().unwrap_or("");
    let shown = match shown.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let (authority, path) = rest.split_at(authority_end);
            let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
            format!("{scheme}://{host}{path}")
        }
        None => shown.rsplit_once('@').map_or(shown, |(_, host)| host).to_owned(),
    };
    secrets.scrub(prompty_core::text::prefix(&shown, 200)).into_owned()
}

/// Whether a URL path has a version segment: `v1`, `v1beta`, `v2alpha1` (a `v` and a digit
/// first), or a date such as `2024-10-21`.
fn has_version_segment(path: &str) -> bool {
    path.split('/').any(|segment| {
        let b = segment.as_bytes();
        let v = b.len() >= 2 && b[0].eq_ignore_ascii_case(&b'v') && b[1].is_ascii_digit();
        let date = b.len() == 10
            && b.iter().enumerate().all(|(i, c)| if i == 4 || i == 7 { *c == b'-' } else { c.is_ascii_digit() });
        v || date
    })
}

/// What a 404 adds to its message: the method and URL called (see [`shown_url`]) and, when the
/// request names the endpoint it was built on and neither that endpoint's path nor the query
/// (`api-version`) has a version, the endpoint's `/v1` form: OpenAI-compatible servers serve
/// their API under `/v1`, and an endpoint without it is the common cause of a bare 404.
fn not_found_note(request: &ApiRequest<'_>, url: &reqwest::Url, secrets: &Secrets) -> String {
    let mut note = format!("; the request went to {} {}", request.method, shown_url(url.as_str(), secrets));
    let versioned = has_version_segment(url.path()) || url.query_pairs().any(|(k, _)| k == "api-version");
    if let Some(endpoint) = request.endpoint.filter(|_| !versioned) {
        let endpoint = shown_url(endpoint.trim_end_matches('/'), secrets);
        note.push_str(&format!(
            "; the endpoint `{endpoint}` has no version segment, and OpenAI-compatible servers serve their API \
             under `/v1`: set the endpoint (the connection's `endpoint` in the prompt, or the provider's endpoint \
             environment variable) to `{endpoint}/v1`"
        ));
    }
    note
}

/// The configuration error of a request URL that cannot be built (`relative URL without a base`,
/// a bad host, ...): it names the setting to fix; the URL is shown without its query and user
/// information, and with the request's secrets scrubbed.
fn unbuildable_url(provider: &str, text: &str, e: &dyn fmt::Display, secrets: &Secrets) -> Error {
    let shown = shown_url(text, secrets);
    Error::Config {
        setting: "model.connection.endpoint".to_owned(),
        message: format!(
            "{provider}: the request URL `{shown}` cannot be built ({e}): set the connection's endpoint (in the \
             prompt, or the provider's endpoint environment variable) to an absolute URL such as \
             `https://api.example.com/v1`; not retried"
        ),
    }
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
    /// The endpoint the URL was built on (`{endpoint}/{api path}`), for the hint of a 404.
    pub endpoint: Option<&'a str>,
    /// A failure the caller handles itself (a server rejecting a structured-output mode, which
    /// the same request would meet again): returned at once instead of retried.
    pub not_retried: Option<&'a (dyn Fn(&HttpError) -> bool + Sync)>,
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
        Ok(ApiRequest {
            provider,
            method: Method::POST,
            url: url.into(),
            headers,
            body: Some(Bytes::from(body)),
            endpoint: None,
            not_retried: None,
        })
    }

    /// A GET.
    pub fn get(provider: &'a str, url: impl Into<Address<'a>>, headers: Cow<'a, HeaderMap>) -> Self {
        ApiRequest {
            provider,
            method: Method::GET,
            url: url.into(),
            headers,
            body: None,
            endpoint: None,
            not_retried: None,
        }
    }

    /// The same request, built on `endpoint` (named by the hint of a 404).
    pub fn on_endpoint(self, endpoint: &'a str) -> Self {
        ApiRequest { endpoint: Some(endpoint), ..self }
    }
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    ["x-request-id", "request-id", "apim-request-id", "x-ms-request-id"]
        .iter()
        .find_map(|h| headers.get(*h))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}
