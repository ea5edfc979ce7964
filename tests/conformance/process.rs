//! The `process` stage (digest §2.6): process a raw provider response with an agent that declares
//! an output when `has_outputs` is set, and compare `result` exactly, `""` and `null` being equal.
//! A vector expecting `error` accepts any error.

use crate::compare::Check;
use prompty::providers::{anthropic, openai};
use prompty::Agent;
use serde_json::{json, Value};

/// Runs one process vector.
pub fn run(vector: &Value) -> Check {
    let expected = normalize(vector["expected"].clone());
    let got = match process(&vector["input"]) {
        Ok(result) => normalize(json!({ "result": result })),
        // Any error satisfies an expected error.
        Err(_) if expected.get("error").is_some() => expected.clone(),
        Err(message) => json!({ "error": message }),
    };
    Check::new(expected, got)
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
