//! Template values shared by the jinja renderer and its direct path: how a value prints, the
//! input context of one render, and JSON values as template values.

use minijinja::value::{Enumerator, Object, Value, ValueKind};
use serde_json::{Map, Value as Json};
use std::borrow::Cow;
use std::sync::Arc;

/// Prints a value the way the Prompty Jinja subset prints it.
pub(crate) fn format_value(value: &Value, out: &mut impl std::fmt::Write) -> std::fmt::Result {
    match value.kind() {
        ValueKind::Undefined | ValueKind::None => Ok(()),
        ValueKind::Bool => out.write_str(if value.is_true() { "true" } else { "false" }),
        ValueKind::String => out.write_str(value.as_str().unwrap_or_default()),
        // An integer of 64 bits prints as its digits (what `{value}` prints), written without `fmt`.
        ValueKind::Number if value.is_integer() => match value.as_i64() {
            Some(i) => write_integer(out, i),
            None => write!(out, "{value}"),
        },
        ValueKind::Number => match f64::try_from(value.clone()) {
            Ok(f) if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 => write!(out, "{}", f as i64),
            Ok(f) => write!(out, "{f}"),
            Err(_) => write!(out, "{value}"),
        },
        _ => write!(out, "{value}"),
    }
}

/// Writes `i` in decimal, as `Display` does.
fn write_integer(out: &mut impl std::fmt::Write, i: i64) -> std::fmt::Result {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut n = i.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if i < 0 {
        out.write_char('-')?;
    }
    // Only ASCII digits were written.
    out.write_str(std::str::from_utf8(&digits[at..]).unwrap_or_default())
}

/// The inputs of one render, looked up by name: a list, not a map (no hashing; inputs are few).
/// Each name has a tag (its length and first and last bytes) compared before the name itself, so
/// a lookup among names alike (`field_00` ... `field_49`) compares few of them in full.
#[derive(Debug)]
pub(crate) struct Inputs(Vec<(Cow<'static, str>, Value)>, Vec<u32>);

/// The tag of an input name (see [`Inputs`]).
fn name_tag(name: &str) -> u32 {
    let bytes = name.as_bytes();
    let (first, last) = (bytes.first().copied().unwrap_or(0), bytes.last().copied().unwrap_or(0));
    ((bytes.len().min(0xFFFF) as u32) << 16) | (u32::from(first) << 8) | u32::from(last)
}

impl Inputs {
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        let tag = name_tag(key);
        self.1.iter().zip(&self.0).find(|(t, (name, _))| **t == tag && name == key).map(|(_, (_, v))| v)
    }
}

impl Object for Inputs {
    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        self.get_value_by_str(key.as_str()?)
    }

    fn get_value_by_str(self: &Arc<Self>, key: &str) -> Option<Value> {
        self.get(key).cloned()
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.0.iter().map(|(name, _)| Value::from(name.as_ref())).collect())
    }
}

/// The context a render of `prepare` looks its inputs up in.
pub(crate) fn context(inputs: Vec<(Cow<'static, str>, Value)>) -> Value {
    let tags = inputs.iter().map(|(name, _)| name_tag(name)).collect();
    Value::from_object(Inputs(inputs, tags))
}

/// The context a JSON input map renders with.
pub(crate) fn json_context(inputs: &Map<String, Json>) -> Value {
    context(inputs.iter().map(|(k, v)| (Cow::Owned(k.clone()), json_value(v))).collect())
}

/// A JSON value as a template value: the same value `Value::from(Serde(json))` gives (unsigned
/// integers as `u64`, negative ones as `i64`, other numbers as `f64`, arrays as lists, objects as
/// maps in their order), built directly rather than through serde. Inputs are depth-bounded
/// before they get here, so the recursion is.
pub(crate) fn json_value(json: &Json) -> Value {
    match json {
        Json::Null => Value::from(()),
        Json::Bool(b) => Value::from(*b),
        Json::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => Value::from(u),
            (None, Some(i)) => Value::from(i),
            _ => Value::from(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::from_object(items.iter().map(json_value).collect::<Vec<Value>>()),
        Json::Object(map) => {
            let mut entries = indexmap::IndexMap::with_capacity(map.len());
            for (k, v) in map {
                entries.insert(Value::from(k.as_str()), json_value(v));
            }
            Value::from_object(entries)
        }
    }
}
