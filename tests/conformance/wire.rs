//! The `wire` stage (digest §2.5): build an agent from the vector's model, tools, options and
//! outputs, turn its messages into the provider's request body, and compare the whole body (key
//! order ignored, `1` and `1.0` different).

use crate::compare::Check;
use prompty::providers::{anthropic, openai};
use prompty::{Agent, Message};
use serde_json::{json, Map, Value};

/// Runs one wire vector.
pub fn run(vector: &Value) -> Check {
    let observed = match request(&vector["input"]) {
        Ok(body) => json!({ "request_body": body }),
        Err(message) => json!({ "error": message }),
    };
    Check::new(vector["expected"].clone(), observed)
}

fn request(input: &Value) -> Result<Value, String> {
    let provider = input["provider"].as_str().unwrap_or("openai");
    let agent = agent(input)?;
    let messages: Vec<Message> =
        serde_json::from_value(input["messages"].clone()).map_err(|e| format!("messages: {e}"))?;
    let body = match provider {
        "anthropic" => anthropic::messages_request(&agent, &messages),
        _ => openai::request_body(&agent, &messages),
    };
    body.map_err(|e| e.to_string())
}

/// `{name, model: {id, provider, apiType, options?}, tools?, outputs?}`: empty lists and options
/// are left out, as a prompt without them would be.
fn agent(input: &Value) -> Result<Agent, String> {
    let mut model = Map::new();
    model.insert("id".into(), input["model_id"].clone());
    for (from, to) in [("provider", "provider"), ("apiType", "apiType")] {
        if let Some(v) = input.get(from).filter(|v| !v.is_null()) {
            model.insert(to.into(), v.clone());
        }
    }
    if let Some(options) = input.get("options").filter(|o| o.as_object().is_some_and(|o| !o.is_empty())) {
        model.insert("options".into(), options.clone());
    }
    let mut agent = json!({ "name": "wire", "model": model });
    for key in ["tools", "outputs"] {
        if let Some(list) = input.get(key).filter(|l| l.as_array().is_some_and(|l| !l.is_empty())) {
            agent[key] = list.clone();
        }
    }
    Agent::from_value(agent).map_err(|e| format!("agent: {e}"))
}
