//! The one HTTP layer of prompty, shared by the provider executors, OpenAPI tools, MCP over HTTP
//! and the OTLP exporter: one [`HttpClient`] (a `reqwest` client with the
//! bounds of [`HttpConfig`] and a `User-Agent: prompty-rs/<version>` header), a [`RetryPolicy`]
//! (429, 5xx and connection errors are retried with exponential backoff and jitter, honouring
//! `Retry-After`; other 4xx never are), and [`HttpError`], which says what went wrong: the HTTP
//! status, the provider's own error message, the request id and, when the body could not be
//! parsed, the raw body.
//!
//! API keys are [`Secret`](crate::Secret)s: they are written into sensitive header values and never appear in an
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
//! use prompty::http::{HttpClient, HttpConfig, RetryPolicy};
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
//!
//! The layer's parts, each in a file of its own: `client` ([`HttpClient`]: the client, its bounds,
//! requests and responses), `retry` ([`RetryPolicy`]: one backoff, one `Retry-After` reader, one
//! retry loop, and the request budget the agent loop shares with it), `secrets` (redaction),
//! `credentials` (connections and the environment), `tls` ([`ensure_tls_provider`]), `sse`
//! (server-sent events) and `error` ([`HttpError`]). It imports only the layers below it (the
//! registries, for registered connections; prompty-core), never a provider, a tool or the loop.
//! Everything but the retry policy needs one of the cargo features that send HTTP requests
//! (`openai`, `anthropic`, `mcp-http`, `openapi`, `otel`). The former path `prompty::providers::http`
//! names this same module.
//!
// Without those features the items above are not compiled: their links lead to the features.
#![cfg_attr(
    not(feature = "http"),
    doc = "[`HttpClient`]: crate#cargo-features\n[`HttpClient::shared`]: crate#cargo-features\n\
           [`HttpConfig`]: crate#cargo-features\n[`HttpError`]: crate#cargo-features\n\
           [`ensure_tls_provider`]: crate#cargo-features"
)]

mod retry;
pub(crate) use retry::{exponential, jittered, RequestBudget};
pub use retry::{RetryPolicy, MAX_RETRY_AFTER};

#[cfg(feature = "http")]
mod client;
#[cfg(feature = "http")]
mod credentials;
#[cfg(feature = "http")]
mod error;
#[cfg(feature = "http")]
mod secrets;
#[cfg(feature = "http")]
pub(crate) mod sse;
#[cfg(feature = "http")]
mod tls;

#[cfg(feature = "http")]
#[allow(unused_imports)] // which of them a build uses depends on its features
pub(crate) use client::{read_body, reqwest_builder, Address, ApiRequest, ReadBody};
#[cfg(feature = "http")]
pub use client::{HttpClient, HttpConfig, MAX_REDIRECTS, USER_AGENT_VALUE};
#[cfg(feature = "http")]
#[allow(unused_imports)] // which of them a build uses depends on its features
pub(crate) use credentials::{resolve, EnvNames, Resolved};
#[cfg(feature = "http")]
#[allow(unused_imports)] // which of them a build uses depends on its features
pub(crate) use error::error_chain;
#[cfg(feature = "http")]
pub use error::{HttpError, MAX_ERROR_BODY_BYTES, MAX_TEXT_IN_ERROR};
#[cfg(feature = "http")]
#[allow(unused_imports)] // which of them a build uses depends on its features
pub(crate) use retry::{retry_after, with_retries, Attempt};
#[cfg(feature = "http")]
#[allow(unused_imports)] // which of them a build uses depends on its features
pub(crate) use secrets::{insert_secret, Secrets};
#[cfg(feature = "http")]
pub use tls::ensure_tls_provider;

/// What [`encode_component`] leaves as it is: the unreserved characters of RFC 3986
/// (`A-Z a-z 0-9 - . _ ~`).
#[cfg(feature = "http")]
const UNRESERVED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// `text` percent-encoded for any part of a URL (a path segment, a query name or value, a form
/// field): every byte but the unreserved characters, as `%XX` in upper case.
#[cfg(feature = "http")]
pub(crate) fn encode_component(text: &str) -> String {
    percent_encoding::utf8_percent_encode(text, UNRESERVED).to_string()
}

#[cfg(all(test, feature = "http"))]
mod tests;
