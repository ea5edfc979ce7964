//! The errors of the HTTP layer: [`HttpError`] (what a server said, or why no answer came), the
//! bounds on the response text an error keeps, and [`error_chain`] (an error with its sources).

use super::secrets::Secrets;
use crate::Error;
use reqwest::StatusCode;
use serde_json::Value;
use std::fmt;

/// The longest piece of response text (raw body, provider message) an [`HttpError`] keeps.
pub const MAX_TEXT_IN_ERROR: usize = 4096;

/// How much of an error response's body is read (the rest is dropped unread).
pub const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

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

    pub(crate) fn local(provider: &str, message: impl Into<String>) -> Self {
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
    pub(crate) fn scrubbed(self, secrets: &Secrets) -> Self {
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

/// The provider's error message in a JSON error body: `error.message` (OpenAI, Azure, Anthropic),
/// `error` as a string, `message`, or `detail`.
pub(super) fn provider_message(body: &[u8]) -> Option<String> {
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

pub(super) fn truncate_body(body: &[u8]) -> String {
    cut_text(&String::from_utf8_lossy(body), body.len())
}

/// `text`, cut to at most [`MAX_TEXT_IN_ERROR`] bytes (on a character boundary); a text already cut
/// (with its short `... (N bytes)` note) is kept.
pub(super) fn cap_text(text: &str) -> String {
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
