//! Redaction of recorded values ([`redact`]), and the usage sums of spans.

use super::MAX_TRACE_STRING;
use serde::Serialize;
use serde_json::{Map, Value};

/// What a redacted value becomes.
const REDACTED: &str = "[REDACTED]";

/// The parts of a key that make its value secret.
const SENSITIVE: &[&str] = &["secret", "password", "api_key", "apikey", "token", "auth", "credential", "cookie"];

/// Whether the value of `key` is secret: the key contains one of `secret`, `password`, `api_key`,
/// `apikey`, `token`, `auth`, `credential`, `cookie` (ASCII case-insensitive), except where
/// `token` is followed by `s` or `count` (usage counts: `prompt_tokens`, `totalTokenCount`) and
/// `auth` begins the word `author` or `authors`. `-` and `.` count as `_` (`x-api-key`).
///
/// ```
/// use prompty::trace::redaction;
/// for key in ["apiKey", "api_key", "x-api-key", "API.KEY", "Authorization", "authorization_code", "OAuth", "x-auth-token", "session_cookie", "clientSecret", "refresh_token", "credentials"] {
///     assert!(redaction::is_sensitive(key), "{key}");
/// }
/// for key in ["prompt_tokens", "completion_tokens", "total_tokens", "cached_tokens", "promptTokenCount", "author", "authors", "author_name", "key", "name"] {
///     assert!(!redaction::is_sensitive(key), "{key}");
/// }
/// ```
pub fn is_sensitive(key: &str) -> bool {
    let b = key.as_bytes();
    (0..b.len()).any(|i| {
        let rest = &b[i..];
        SENSITIVE.iter().any(|word| {
            starts_with_ci(rest, word) && {
                let after = &rest[word.len()..];
                match *word {
                    "token" => {
                        !(starts_with_ci(after, "s")
                            || starts_with_ci(after, "count")
                            || starts_with_ci(after, "_count"))
                    }
                    "auth" => !is_author(after),
                    _ => true,
                }
            }
        })
    })
}

/// Whether `hay` starts with `word` (lower case), ignoring ASCII case and taking `-` and `.` for
/// `_` (`x-api-key`, `api.key`).
fn starts_with_ci(hay: &[u8], word: &str) -> bool {
    let same = |h: &u8, w: &u8| match h {
        b'-' | b'.' => *w == b'_',
        h => h.eq_ignore_ascii_case(w),
    };
    hay.len() >= word.len() && hay.iter().zip(word.as_bytes()).all(|(h, w)| same(h, w))
}

/// Whether what follows `auth` makes the word `author` or `authors` (not `authorization`).
fn is_author(after: &[u8]) -> bool {
    if !starts_with_ci(after, "or") {
        return false;
    }
    let rest = &after[2..];
    let rest = if starts_with_ci(rest, "s") { &rest[1..] } else { rest };
    !rest.first().is_some_and(u8::is_ascii_alphabetic)
}

/// Redacts a JSON value in place: the value of every sensitive key ([`is_sensitive`]), at any
/// depth, becomes `[REDACTED]`; every secret value the process remembers
/// ([`crate::Secret::scrub`]) becomes `[REDACTED]` inside any string, whatever its key; strings
/// longer than [`MAX_TRACE_STRING`] are cut.
///
/// ```
/// use serde_json::json;
/// let mut v = json!({"connection": {"apiKey": "sk-1", "endpoint": "https://x"}, "usage": {"total_tokens": 3},
///                    "headers": [{"Authorization": "Bearer t"}], "author": "Ann"});
/// prompty::trace::redaction::redact_in_place(&mut v);
/// assert_eq!(v, json!({"connection": {"apiKey": "[REDACTED]", "endpoint": "https://x"}, "usage": {"total_tokens": 3},
///                      "headers": [{"Authorization": "[REDACTED]"}], "author": "Ann"}));
/// ```
pub fn redact_in_place(value: &mut Value) {
    redact_with(value, &crate::Secret::remembered());
}

/// [`redact_in_place`] with the remembered secret values looked up once.
fn redact_with(value: &mut Value, remembered: &prompty_core::Remembered) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_sensitive(key) && !v.is_null() {
                    *v = Value::String(REDACTED.to_owned());
                } else {
                    redact_with(v, remembered);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_with(v, remembered)),
        Value::String(s) => {
            // A secret value that landed under an ordinary key (`format`, `kind`, a message).
            remembered.scrub_in_place(s);
            if s.len() > MAX_TRACE_STRING {
                if let Some(left) = prompty_core::text::truncate(s, MAX_TRACE_STRING) {
                    s.push_str(&format!("…[{left} more bytes]"));
                }
            }
        }
        _ => {}
    }
}

/// Serializes `value` for a trace: [`crate::Secret`]s as `[REDACTED]`, then
/// [`redact_in_place`]. A value that cannot be serialized is recorded as its error message.
///
/// ```
/// use serde_json::json;
/// let connection = json!({"kind": "key", "apiKey": "sk-secret"});
/// assert_eq!(prompty::trace::redact(&connection)["apiKey"], "[REDACTED]");
/// let key = prompty::Secret::new("sk-secret");
/// assert_eq!(prompty::trace::redact(&json!({"header": "x"}))["header"], "x");
/// assert_eq!(prompty::trace::redact(&key), "[REDACTED]");
/// ```
pub fn redact<T: Serialize + ?Sized>(value: &T) -> Value {
    let mut v = crate::Secret::redacted(|| serde_json::to_value(value))
        .unwrap_or_else(|e| Value::String(format!("<not serializable: {e}>")));
    redact_in_place(&mut v);
    v
}

/// [`redact`] of a JSON value the caller owns.
///
/// ```
/// let v = prompty::trace::redact_value(serde_json::json!({"password": "p"}));
/// assert_eq!(v["password"], "[REDACTED]");
/// ```
pub fn redact_value(mut value: Value) -> Value {
    redact_in_place(&mut value);
    value
}

/// Adds the numbers of `from` to `into` (keys kept as the provider named them; nested objects,
/// arrays and non-numbers skipped). Integers stay integers.
pub(crate) fn add_usage(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (key, value) in from {
        let Value::Number(n) = value else { continue };
        let sum = match (into.get(key), n.as_u64(), n.as_f64()) {
            (None, _, _) => value.clone(),
            (Some(Value::Number(cur)), Some(add), _) if cur.as_u64().is_some() => {
                Value::from(cur.as_u64().unwrap_or(0).saturating_add(add))
            }
            (Some(Value::Number(cur)), _, Some(add)) => {
                serde_json::Number::from_f64(cur.as_f64().unwrap_or(0.0) + add).map_or(Value::Null, Value::Number)
            }
            _ => continue,
        };
        into.insert(key.clone(), sum);
    }
}

/// The usage of a result: its `usage` object, or the sum of the `usage` objects of a list of
/// results (a stream's chunks).
pub(crate) fn usage_of(result: &Value) -> Map<String, Value> {
    let mut usage = Map::new();
    match result {
        Value::Object(map) => {
            if let Some(Value::Object(u)) = map.get("usage") {
                add_usage(&mut usage, u);
            }
        }
        Value::Array(items) => {
            for item in items {
                if let Some(Value::Object(u)) = item.get("usage") {
                    add_usage(&mut usage, u);
                }
            }
        }
        _ => {}
    }
    usage
}
