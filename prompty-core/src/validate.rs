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
/// `inputs` must be a JSON object (or `null`, meaning no inputs).
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
        Value::Object(m) => m,
        Value::Null => &Map::new(),
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
