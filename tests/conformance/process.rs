//! The `process` stage (digest §2.6): process a raw provider response with an agent that declares
//! an output when `has_outputs` is set, and compare `result` exactly, `""` and `null` being equal.
//! A vector expecting `error` accepts any error. Both are adjustments, reported where they apply.

use crate::compare::{Adjustment, Check, Rule};
use prompty::providers::{anthropic, openai};
use prompty::Agent;
use serde_json::{json, Value};

/// `null` and `""` equal.
const NULL_AS_EMPTY: Rule = Rule { name: "null-as-empty", why: "digest §2.6: a result `\"\"` and `null` are equal" };
/// Any error for an expected error.
const ANY_ERROR: Rule = Rule { name: "any-error", why: "digest §2.6: an expected error accepts any error" };

/// Runs one process vector.
pub fn run(vector: &Value) -> Check {
    let mut adjustments = Vec::new();
    let expected = normalize(vector["expected"].clone());
    let got = match process(&vector["input"]) {
        Ok(result) => {
            let raw = json!({ "result": result });
            let got = normalize(raw.clone());
            if got != raw && got == expected {
                adjustments.push(Adjustment { rule: &NULL_AS_EMPTY, what: "result null read as \"\"".into() });
            }
            got
        }
        // Any error satisfies an expected error.
        Err(message) if expected.get("error").is_some() => {
            adjustments.push(Adjustment { rule: &ANY_ERROR, what: format!("error {message:?} accepted") });
            expected.clone()
        }
        Err(message) => json!({ "error": message }),
    };
    let mut check = Check::new(expected, got);
    check.adjustments = adjustments;
    check
}

fn process(input: &Value) -> Result<Value, String> {
    let provider = input["provider"].as_str().unwrap_or("openai");
    let mut agent = json!({
        "name": "process",
        "model": {"id": "gpt-4", "provider": provider, "apiType": input["apiType"].as_str().unwrap_or("chat")},
    });
    if input["has_outputs"] == true {
        agent["outputs"] = json!([{"name": "result", "kind": "string"}]);
    }
    let agent = Agent::from_value(agent).map_err(|e| format!("agent: {e}"))?;
    let response = input["response"].clone();
    let result = match provider {
        "anthropic" => anthropic::process_response(&agent, response),
        _ => openai::process_response(&agent, response),
    };
    // The JSON form of the spec (§8.1): tool calls as a list of `{id, name, arguments}`.
    result.map(prompty::Processed::into_value).map_err(|e| e.to_string())
}

/// A `null` result is the same as `""`.
fn normalize(mut value: Value) -> Value {
    if let Some(result) = value.get_mut("result").filter(|r| r.is_null()) {
        *result = json!("");
    }
    value
}
