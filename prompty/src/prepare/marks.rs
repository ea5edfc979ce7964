//! The prepare side of the value marks (format and writing in `registry::marks`): fresh marks for
//! a render, inputs cleared of the mark characters before rendering, and messages cleared of every
//! noncharacter after parsing. A role marker inside an input value must never start a new message.

use super::nonces;
use crate::registry::marks::{has_noncharacter, neutralise, Marks};
use serde_json::{Map, Value};

/// Marks with a fresh nonce from the CSPRNG.
pub(crate) fn fresh() -> Marks {
    Marks::new(nonces::fresh_mark())
}

/// Replaces every noncharacter in the strings and keys of `inputs` (at any depth) with U+FFFD, so
/// no input value can carry a mark character into the render.
pub(crate) fn neutralise_inputs(inputs: &mut Map<String, Value>) {
    neutralise_keys(inputs);
    inputs.values_mut().for_each(neutralise_value);
}

/// [`neutralise_inputs`] of one value, without recursion.
pub(crate) fn neutralise_value(value: &mut Value) {
    fn string(s: &mut String) {
        if let Some(clean) = neutralise(s) {
            *s = clean;
        }
    }
    // Strings are checked where they are found; only containers wait on the stack (which, for a
    // string, is never allocated).
    let mut stack: Vec<&mut Value> = Vec::new();
    match value {
        Value::String(s) => string(s),
        Value::Array(_) | Value::Object(_) => stack.push(value),
        _ => {}
    }
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => string(s),
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                neutralise_keys(map);
                stack.extend(map.values_mut());
            }
            _ => {}
        }
    }
}

/// Whether no key or string of `inputs` (at any depth) holds a noncharacter and no value nests
/// arrays and objects deeper than `max_depth`: then [`neutralise_inputs`] would change nothing.
pub(crate) fn clean_within(inputs: &Map<String, Value>, max_depth: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = Vec::new();
    let check = |map: &'_ Map<String, Value>| map.keys().all(|k| !has_noncharacter(k));
    if !check(inputs) {
        return false;
    }
    stack.extend(inputs.values().map(|v| (v, 0)));
    while let Some((v, depth)) = stack.pop() {
        match v {
            Value::String(s) if has_noncharacter(s) => return false,
            Value::Array(_) | Value::Object(_) if depth >= max_depth => return false,
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => {
                if !check(map) {
                    return false;
                }
                stack.extend(map.values().map(|i| (i, depth + 1)));
            }
            _ => {}
        }
    }
    true
}

fn neutralise_keys(map: &mut Map<String, Value>) {
    if !map.keys().any(|k| has_noncharacter(k)) {
        return;
    }
    let old = std::mem::take(map);
    for (k, v) in old {
        let k = neutralise(&k).unwrap_or(k);
        map.insert(k, v);
    }
}

/// Replaces every noncharacter in the text parts of `messages` with U+FFFD: the last step of
/// `prepare`, so no message carries a mark character, whatever the template, a custom parser or a
/// thread input held.
pub(crate) fn sanitise(messages: &mut [crate::Message]) {
    sanitise_noted(messages, |_, _, _, _| {});
}

/// [`sanitise`] telling `changed(message, part, old, clean)` of each text it changes.
pub(crate) fn sanitise_noted(messages: &mut [crate::Message], mut changed: impl FnMut(usize, usize, &str, &str)) {
    for (m, message) in messages.iter_mut().enumerate() {
        for (p, part) in message.content.iter_mut().enumerate() {
            if let crate::ContentPart::Text { value } = part {
                if let Some(clean) = neutralise(value) {
                    changed(m, p, value, &clean);
                    *value = clean;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_within_finds_noncharacters_and_deep_values() {
        let nested = |depth: usize| (0..depth).fold(Value::Null, |v, _| Value::Array(vec![v]));
        let map = |v: Value| Map::from_iter([("a".to_owned(), v)]);
        assert!(clean_within(&map(serde_json::json!({"b": ["text", 1, null]})), 128));
        assert!(!clean_within(&map(serde_json::json!({"b": ["te\u{FDD0}xt"]})), 128));
        assert!(!clean_within(&map(serde_json::json!({"b\u{FFFE}": 1})), 128));
        assert!(!clean_within(&Map::from_iter([("\u{FDD1}".to_owned(), Value::Null)]), 128));
        // The same bound as `validate_inputs`: 128 levels pass, 129 do not.
        assert!(clean_within(&map(nested(128)), 128));
        assert!(!clean_within(&map(nested(129)), 128));
    }
}
