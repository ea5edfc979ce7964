//! Checking and completing the inputs of a prompt: [`validate_inputs`].

use crate::{Agent, Error, Result};
use serde_json::{Map, Value};

/// Checks `inputs` against the agent's declared inputs and fills defaults.
///
/// - a declared input that is absent takes its `default`;
/// - absent, without a default, and `required`: an error naming the input;
/// - absent, optional, without a default: left out (`example` is never used as a value);
/// - inputs the agent does not declare pass through; values are not type-checked.
///
/// `inputs` must be a JSON object (or `null`, meaning no inputs). An input value nested deeper
/// than 128 levels of arrays and objects is refused with an error naming the input, so
/// that no later stage (rendering, marking, the wire format) recurses without bound.
///
/// ```
/// use serde_json::json;
/// let agent = prompty_core::Agent::from_value(json!({"inputs": [
///     {"name": "city", "kind": "string", "required": true},
///     {"name": "unit", "kind": "string", "default": "celsius"}]}))?;
/// let filled = prompty_core::validate_inputs(&agent, &json!({"city": "Paris"}))?;
/// assert_eq!(serde_json::Value::Object(filled), json!({"city": "Paris", "unit": "celsius"}));
/// let err = prompty_core::validate_inputs(&agent, &json!({})).unwrap_err();
/// assert_eq!(err.to_string(), "Missing required input: city");
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn validate_inputs(agent: &Agent, inputs: &Value) -> Result<Map<String, Value>> {
    let given = match inputs {
        Value::Object(m) => {
            check_depths(m)?;
            m
        }
        Value::Null => &Map::new(),
        other if depth_exceeds(other, MAX_INPUT_DEPTH) => {
            return Err(Error::InvalidInputs {
                message: format!("inputs must be a JSON object of name to value, found a value nested deeper than {MAX_INPUT_DEPTH} levels"),
            })
        }
        other => {
            return Err(Error::InvalidInputs {
                message: format!("inputs must be a JSON object of name to value, found {other}"),
            })
        }
    };
    validate_input_map(agent, given.clone())
}

/// [`validate_inputs`] on an owned map of inputs: fills defaults in place, without copying.
///
/// ```
/// let agent = prompty_core::Agent::from_value(serde_json::json!({"inputs": {"unit": "celsius"}}))?;
/// let filled = prompty_core::validate_input_map(&agent, serde_json::Map::new())?;
/// assert_eq!(filled["unit"], "celsius");
/// # Ok::<(), prompty_core::Error>(())
/// ```
pub fn validate_input_map(agent: &Agent, inputs: Map<String, Value>) -> Result<Map<String, Value>> {
    if let Err(e) = check_depths(&inputs) {
        // Dropping a deep value recurses once per level: take it apart without recursion.
        inputs.into_iter().for_each(|(_, v)| drop_flat(v));
        return Err(e);
    }
    let mut out = inputs;
    for prop in agent.inputs.as_deref().unwrap_or_default() {
        if out.contains_key(&prop.name) {
            continue;
        }
        match &prop.default {
            Some(default) => {
                out.insert(prop.name.clone(), default.clone());
            }
            None if prop.required => return Err(Error::MissingInput { name: prop.name.clone() }),
            None => {}
        }
    }
    Ok(out)
}

/// How deeply an input value may nest arrays and objects: 128 levels (as `serde_json` parses).
/// [`validate_inputs`] refuses deeper values.
///
/// ```
/// assert_eq!(prompty_core::MAX_INPUT_DEPTH, 128);
/// ```
pub const MAX_INPUT_DEPTH: usize = 128;

/// Refuses an input nested deeper than [`MAX_INPUT_DEPTH`], naming it.
fn check_depths(inputs: &Map<String, Value>) -> Result<()> {
    inputs.iter().try_for_each(|(name, value)| check_input_depth(name, value))
}

/// Refuses the value of input `name` when it nests arrays and objects deeper than
/// [`MAX_INPUT_DEPTH`] (what [`validate_inputs`] checks of every input).
///
/// ```
/// let deep = (0..200).fold(serde_json::Value::Null, |v, _| serde_json::json!([v]));
/// let err = prompty_core::check_input_depth("doc", &deep).unwrap_err();
/// assert!(err.to_string().contains("input 'doc'"));
/// assert!(prompty_core::check_input_depth("doc", &serde_json::json!([[1]])).is_ok());
/// ```
pub fn check_input_depth(name: &str, value: &Value) -> Result<()> {
    if depth_exceeds(value, MAX_INPUT_DEPTH) {
        return Err(Error::InvalidInputs {
            message: format!("input '{name}' nests arrays and objects deeper than {MAX_INPUT_DEPTH} levels"),
        });
    }
    Ok(())
}

/// Whether `value` nests more than `max` arrays and objects, found without recursion (a scalar is
/// depth 0, `[1]` depth 1).
fn depth_exceeds(value: &Value, max: usize) -> bool {
    // Only containers are queued, with the depth of their contents.
    let mut pending: Vec<(&Value, usize)> = Vec::new();
    let mut next = Some((value, 1));
    while let Some((v, depth)) = next.take().or_else(|| pending.pop()) {
        let is_container = matches!(v, Value::Array(_) | Value::Object(_));
        if is_container && depth > max {
            return true;
        }
        let children = |c: &'_ Value| matches!(c, Value::Array(_) | Value::Object(_));
        match v {
            Value::Array(items) => pending.extend(items.iter().filter(|c| children(c)).map(|c| (c, depth + 1))),
            Value::Object(map) => pending.extend(map.values().filter(|c| children(c)).map(|c| (c, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Drops `value` without recursion, however deep it is.
fn drop_flat(value: Value) {
    let mut pending = vec![value];
    while let Some(v) = pending.pop() {
        match v {
            Value::Array(items) => pending.extend(items),
            Value::Object(map) => pending.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> Value {
        let mut v = Value::Null;
        for _ in 0..depth {
            v = Value::Array(vec![v]);
        }
        v
    }

    #[test]
    fn depth_is_counted_without_recursion() {
        assert!(!depth_exceeds(&Value::Null, 0));
        assert!(!depth_exceeds(&nested(128), 128));
        assert!(depth_exceeds(&nested(129), 128));
        let deep = nested(200_000);
        assert!(depth_exceeds(&deep, 128));
        drop_flat(deep);
    }

    #[test]
    fn a_deep_input_is_refused_by_name() {
        let agent = Agent::from_value(serde_json::json!({})).unwrap();
        let mut map = Map::new();
        map.insert("doc".into(), nested(100_000));
        let err = validate_input_map(&agent, map).unwrap_err();
        assert!(err.to_string().contains("input 'doc'"), "{err}");
        let mut map = Map::new();
        map.insert("doc".into(), nested(128));
        assert!(validate_input_map(&agent, map).is_ok());
    }
}
