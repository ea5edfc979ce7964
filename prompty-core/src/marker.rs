//! Role markers: the lines of a rendered template that start a message (`system:`, `user:`,
//! `assistant[name=Bob]:`). One definition, read by the runtime's parser (which splits messages at
//! them), its strict-input check (a strict value may hold none) and the editor's outline.
//!
//! ```
//! use prompty_core::{marker, Role};
//! let m = marker::head("  # user[name=Bob]:  ").unwrap();
//! assert_eq!((m.role, &m.attributes["name"], m.word.clone()), (Role::User, &serde_json::json!("Bob"), 4..8));
//! assert!(m.rest.trim().is_empty());
//! assert!(marker::head("users: many").is_none());
//! ```

use crate::Role;
use serde_json::{Map, Value};
use std::ops::Range;

/// The start of a line that is a role marker: what [`head`] read.
///
/// ```
/// let m = prompty_core::marker::head("system: be brief").unwrap();
/// assert_eq!((m.word, m.rest), (0..6, " be brief"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Head<'a> {
    /// The role (never [`Role::Tool`]: the parser reserves it).
    pub role: Role,
    /// The attributes in `[...]` (the message's metadata).
    pub attributes: Map<String, Value>,
    /// The rest of the line after the colon (a marker line has nothing but whitespace here).
    pub rest: &'a str,
    /// The bytes of the role's word in the line.
    pub word: Range<usize>,
}

/// Reads the start of `line` as
///
/// ```text
/// ws* ('#' ws*)? role ('[' ws* (key ws* '=' ws* value (ws* ',' ws* key ws* '=' ws* value)*)? ws* ']')? ws* ':'
/// ```
///
/// where role is `system`, `user`, `assistant` or `developer` in any case, a key is letters, digits
/// and `_`, and a value is `"quoted"` (anything but `"`) or bare (up to `,` or `]`). Attribute
/// values `true`/`false` are booleans, numbers are numbers, anything else a string without its
/// quotes. One pass, linear in the line.
///
/// ```
/// let m = prompty_core::marker::head("assistant[id=7, ok=true]:").unwrap();
/// assert_eq!(serde_json::Value::Object(m.attributes), serde_json::json!({"id": 7, "ok": true}));
/// assert!(prompty_core::marker::head("tool:").is_none());
/// ```
#[inline]
pub fn head(line: &str) -> Option<Head<'_>> {
    let s = line.trim_start();
    let s = s.strip_prefix('#').unwrap_or(s).trim_start();
    // Most lines are no marker: their first letter says so.
    if !matches!(s.as_bytes().first()?.to_ascii_lowercase(), b's' | b'u' | b'a' | b'd') {
        return None;
    }
    let start = line.len() - s.len();
    let word_len = s.bytes().take_while(u8::is_ascii_alphabetic).count();
    let (word, rest) = s.split_at(word_len);
    let role = match Role::parse(word)? {
        Role::Tool => return None,
        r => r,
    };
    let (attributes, rest) = match rest.strip_prefix('[') {
        Some(inner) => attributes(inner)?,
        None => (Map::new(), rest),
    };
    let rest = rest.trim_start().strip_prefix(':')?;
    Some(Head { role, attributes, rest, word: start..start + word_len })
}

/// Reads `key=value, key="quoted value"` pairs up to the closing `]`; the pairs and the text after
/// the `]`, or `None` when malformed.
fn attributes(s: &str) -> Option<(Map<String, Value>, &str)> {
    let mut map = Map::new();
    let mut rest = s.trim_start();
    if let Some(after) = rest.strip_prefix(']') {
        return Some((map, after));
    }
    loop {
        let key_len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if key_len == 0 {
            return None;
        }
        let (key, after_key) = rest.split_at(key_len);
        let after = after_key.trim_start().strip_prefix('=')?.trim_start();
        let (value, remaining) = if let Some(q) = after.strip_prefix('"') {
            let end = q.find('"')?;
            (Value::String(q[..end].to_owned()), &q[end + 1..])
        } else {
            let end = after.find([',', ']']).unwrap_or(after.len());
            (coerce(after[..end].trim()), &after[end..])
        };
        map.insert(key.to_owned(), value);
        let remaining = remaining.trim_start();
        if let Some(r) = remaining.strip_prefix(',') {
            rest = r.trim_start();
        } else {
            return remaining.strip_prefix(']').map(|after| (map, after));
        }
    }
}

fn coerce(raw: &str) -> Value {
    if raw.eq_ignore_ascii_case("true") {
        return Value::Bool(true);
    }
    if raw.eq_ignore_ascii_case("false") {
        return Value::Bool(false);
    }
    if let Ok(i) = raw.parse::<i64>() {
        return Value::from(i);
    }
    if let Some(n) = raw.parse::<f64>().ok().filter(|f| f.is_finite()).and_then(serde_json::Number::from_f64) {
        return Value::Number(n);
    }
    Value::String(raw.trim_matches('\'').to_owned())
}
