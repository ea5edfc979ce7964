//! The `render` stage (digest §2.3): render `input.template` with `input.engine` and compare the
//! text exactly, or match it against `expected.nonce_pattern`, or expect a `StrictViolation`.
//! Every render vector is also rendered with `prompty::render_segments`: the segments' texts,
//! concatenated, must pass the same way (a property of segments over the whole render corpus).

use crate::compare::{check, Check};
use crate::regex;
use serde_json::{json, Map, Value};

/// Runs one render vector.
pub fn run(vector: &Value) -> Check {
    let expected = &vector["expected"];
    let observed = observe(expected, render(&vector["input"]));
    let concatenated = observe(
        expected,
        segments(&vector["input"]).map(|segments| segments.iter().map(|s| s.text.as_str()).collect()),
    );
    if concatenated != observed {
        return check(expected, &json!({ "render": observed, "render_segments concatenated": concatenated }));
    }
    check(expected, &observed)
}

/// What a render observed, in the shape of `expected`.
fn observe(expected: &Value, rendered: Result<String, RenderError>) -> Value {
    match rendered {
        Ok(text) => match expected.get("nonce_pattern").and_then(Value::as_str) {
            Some(pattern) => match regex::is_match(&format!("(?s){pattern}"), &text) {
                Ok(true) => expected.clone(),
                Ok(false) => json!({ "nonce_pattern": text }),
                Err(e) => json!({ "error": e }),
            },
            None => json!({ "rendered": text }),
        },
        Err(RenderError::StrictViolation) => json!({ "error": "StrictViolation" }),
        Err(RenderError::Other(message)) => json!({ "error": message }),
    }
}

/// Runs one `render_segments` vector: the same input as a render vector; `expected.segments` (the
/// spec's `RenderSegment`s, compared exactly) or `expected.error: "StrictViolation"`.
pub fn run_segments(vector: &Value) -> Check {
    let observed = match segments(&vector["input"]) {
        Ok(segments) => match serde_json::to_value(&segments) {
            Ok(segments) => json!({ "segments": segments }),
            Err(e) => json!({ "error": e.to_string() }),
        },
        Err(RenderError::StrictViolation) => json!({ "error": "StrictViolation" }),
        Err(RenderError::Other(message)) => json!({ "error": message }),
    };
    check(&vector["expected"], &observed)
}

pub(crate) enum RenderError {
    StrictViolation,
    Other(String),
}

impl From<prompty::Error> for RenderError {
    fn from(e: prompty::Error) -> Self {
        match e {
            prompty::Error::StrictViolation { .. } => RenderError::StrictViolation,
            other => RenderError::Other(other.to_string()),
        }
    }
}

/// Builds the agent `render_test` around the template and renders it.
fn render(input: &Value) -> Result<String, RenderError> {
    let (agent, inputs) = agent(input)?;
    Ok(prompty::render(&agent, &inputs)?)
}

/// Builds the agent `render_test` around the template and renders it into segments.
fn segments(input: &Value) -> Result<Vec<prompty::RenderSegment>, RenderError> {
    let (agent, inputs) = agent(input)?;
    Ok(prompty::render_segments(&agent, &inputs)?)
}

/// The agent `render_test` around the template (`input.strict_props` are its
/// `template.format.options.strictInputs`), and the inputs to render it with.
fn agent(input: &Value) -> Result<(prompty::Agent, Value), RenderError> {
    let template = input["template"].as_str().unwrap_or_default();
    let engine = input["engine"].as_str().unwrap_or("jinja2");
    let mut inputs = input.get("inputs").and_then(Value::as_object).cloned().unwrap_or_default();
    let threads = take_threads(&mut inputs);

    let mut format = json!({ "kind": engine });
    if let Some(strict) = input.get("strict_props") {
        format["options"] = json!({ "strictInputs": strict });
    }
    let mut agent = json!({
        "name": "render_test",
        "instructions": template,
        "template": { "format": format, "parser": { "kind": "prompty" } },
    });
    if !threads.is_empty() {
        let declared: Vec<Value> = threads.iter().map(|name| json!({ "name": name, "kind": "thread" })).collect();
        agent["inputs"] = Value::Array(declared);
    }
    let agent = prompty::Agent::from_value(agent).map_err(prompty::Error::from)?;
    Ok((agent, Value::Object(inputs)))
}

/// Replaces every thread input (`{"_kind": "thread", "messages": [...]}`) by its list of messages,
/// returning the names of those inputs.
fn take_threads(inputs: &mut Map<String, Value>) -> Vec<String> {
    let mut names = Vec::new();
    for (name, value) in inputs.iter_mut() {
        if value.get("_kind").and_then(Value::as_str) == Some("thread") {
            let messages = value.get_mut("messages").map(Value::take).unwrap_or_else(|| json!([]));
            *value = messages;
            names.push(name.clone());
        }
    }
    names
}
