//! Secrets and their redaction: the sensitive header values of a request, in every form a server
//! may echo them in, replaced by `[REDACTED]` in any text built from a response.

use crate::{Error, Result, Secret};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// What replaces a secret in error text and stream events.
pub(super) const REDACTED: &str = "[REDACTED]";

/// The secret values of one request (every sensitive header value, and the token after its scheme
/// in `Bearer <key>`), with the forms a server may echo them in (JSON-escaped, `\/`-escaped,
/// percent-encoded). `Debug` shows only how many there are.
#[derive(Clone, Default)]
pub(crate) struct Secrets(pub(super) Arc<Forms>);

/// The forms of a request's secrets.
#[derive(Default)]
pub(super) struct Forms {
    /// Every form, longest first (replaced in that order, so a form inside a longer one never
    /// breaks the longer one).
    pub(super) all: Vec<String>,
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
            all.push(super::encode_component(&v));
            all.push(v);
        }
        all.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        all.dedup();
        // The forms that hold no other form: a text without any of them holds no form at all.
        let minimal = all.iter().filter(|f| !all.iter().any(|o| o.len() < f.len() && f.contains(o.as_str()))).cloned();
        let minimal = minimal.collect();
        Secrets(Arc::new(Forms { all, minimal }))
    }

    /// `text` with every secret replaced by `[REDACTED]`: this request's, then every secret value
    /// the process remembers ([`Secret::scrub`]: a server may echo a key that landed in another
    /// field, such as the model's name).
    pub(crate) fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        if self.0.minimal.iter().any(|m| text.contains(m.as_str())) {
            for secret in self.0.all.iter() {
                if out.contains(secret.as_str()) {
                    out = Cow::Owned(out.replace(secret.as_str(), REDACTED));
                }
            }
        }
        match Secret::scrub(&out) {
            Cow::Borrowed(_) => out,
            Cow::Owned(scrubbed) => Cow::Owned(scrubbed),
        }
    }

    /// `bytes` with every secret replaced (bytes that are not UTF-8 are decoded lossily first).
    pub(crate) fn scrub_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        match std::str::from_utf8(bytes) {
            Ok(text) => match self.scrub(text) {
                Cow::Borrowed(_) => Cow::Borrowed(bytes),
                Cow::Owned(s) => Cow::Owned(s.into_bytes()),
            },
            Err(_) => Cow::Owned(self.scrub(&String::from_utf8_lossy(bytes)).into_owned().into_bytes()),
        }
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
    let mut value = HeaderValue::try_from(format!("{prefix}{}", key.expose())).map_err(|_| Error::Config {
        setting: "model.connection.apiKey".to_owned(),
        message: format!("{provider}: the API key contains characters that cannot be sent in an HTTP header"),
    })?;
    value.set_sensitive(true);
    headers.insert(name, value);
    Ok(())
}
