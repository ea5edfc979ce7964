//! The OpenTelemetry GenAI semantic-convention attributes of a model call: what was asked
//! (`gen_ai.request.*`) from the agent, what came back (`gen_ai.response.*`, `gen_ai.usage.*`)
//! from the provider's raw response (OpenAI Chat Completions and Responses, Anthropic Messages).

use crate::{Agent, Model};
use serde_json::{Map, Value};

/// Adds `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model` and the request
/// options of the agent's model to `a`.
pub(crate) fn request(agent: &Agent, a: &mut Map<String, Value>) {
    request_of(agent.model.as_ref(), a);
}

/// [`request`] from the model alone.
pub(crate) fn request_of(model: Option<&Model>, a: &mut Map<String, Value>) {
    let Some(model) = model else { return };
    let operation = match model.api_type() {
        "embedding" | "embeddings" => "embeddings",
        "image" | "images" => "image_generation",
        _ => "chat",
    };
    a.insert("gen_ai.operation.name".into(), operation.into());
    if let Some(provider) = &model.provider {
        let name = match provider.as_str() {
            "azure" => "azure.ai.openai",
            "foundry" => "azure.ai.inference",
            other => other,
        };
        a.insert("gen_ai.provider.name".into(), name.into());
    }
    if !model.id.is_empty() {
        a.insert("gen_ai.request.model".into(), model.id.clone().into());
    }
    if let Some(o) = &model.options {
        let mut put = |key: &str, v: Option<Value>| {
            if let Some(v) = v {
                a.insert(format!("gen_ai.request.{key}"), v);
            }
        };
        put("temperature", o.temperature.map(Value::from));
        put("max_tokens", o.max_output_tokens.map(Value::from));
        put("top_p", o.top_p.map(Value::from));
        put("top_k", o.top_k.map(Value::from));
        put("frequency_penalty", o.frequency_penalty.map(Value::from));
        put("presence_penalty", o.presence_penalty.map(Value::from));
        put("seed", o.seed.map(Value::from));
        put("stop_sequences", o.stop_sequences.clone().map(Value::from));
    }
}

/// `gen_ai.response.id`, `gen_ai.response.model`, `gen_ai.response.finish_reasons` and
/// `gen_ai.usage.input_tokens` / `output_tokens` from a raw response.
pub(crate) fn response(raw: &Value, a: &mut Map<String, Value>) {
    if let Some(id) = raw.get("id").and_then(Value::as_str) {
        a.insert("gen_ai.response.id".into(), id.into());
    }
    if let Some(model) = raw.get("model").and_then(Value::as_str) {
        a.insert("gen_ai.response.model".into(), model.into());
    }
    let mut reasons: Vec<Value> = Vec::new();
    if let Some(choices) = raw.get("choices").and_then(Value::as_array) {
        reasons.extend(choices.iter().filter_map(|c| c.get("finish_reason")).filter(|r| r.is_string()).cloned());
    }
    for key in ["stop_reason", "status"] {
        if let Some(r) = raw.get(key).filter(|r| r.is_string()) {
            reasons.push(r.clone());
        }
    }
    if !reasons.is_empty() {
        a.insert("gen_ai.response.finish_reasons".into(), Value::Array(reasons));
    }
    let (input, output) = usage(raw);
    if let Some(n) = input {
        a.insert("gen_ai.usage.input_tokens".into(), n.into());
    }
    if let Some(n) = output {
        a.insert("gen_ai.usage.output_tokens".into(), n.into());
    }
}

/// The input and output token counts of a raw response: `usage.prompt_tokens` (or
/// `input_tokens`) and `usage.completion_tokens` (or `output_tokens`), when given as numbers.
pub(crate) fn usage(raw: &Value) -> (Option<u64>, Option<u64>) {
    let Some(usage) = raw.get("usage") else { return (None, None) };
    let first = |keys: &[&str]| keys.iter().find_map(|k| usage.get(*k).and_then(Value::as_u64));
    (first(&["prompt_tokens", "input_tokens"]), first(&["completion_tokens", "output_tokens"]))
}

/// The name the GenAI conventions give a model call's span, `"{gen_ai.operation.name}
/// {gen_ai.request.model}"` (`"chat gpt-4o"`), or the operation alone without a model; `None`
/// without an operation.
pub(crate) fn client_span_name(a: &Map<String, Value>) -> Option<String> {
    let attr = |k: &str| a.get(k).and_then(Value::as_str).filter(|s| !s.is_empty());
    let op = attr("gen_ai.operation.name")?;
    Some(match attr("gen_ai.request.model") {
        Some(model) => format!("{op} {model}"),
        None => op.to_owned(),
    })
}

/// The attributes of a tool call's span: `gen_ai.operation.name = "execute_tool"`,
/// `gen_ai.tool.name` and `gen_ai.tool.call.id` (when the model gave one).
pub(crate) fn tool(name: &str, call_id: &str, a: &mut Map<String, Value>) {
    a.insert("gen_ai.operation.name".into(), "execute_tool".into());
    a.insert("gen_ai.tool.name".into(), name.into());
    if !call_id.is_empty() {
        a.insert("gen_ai.tool.call.id".into(), call_id.into());
    }
}

/// The recorded inputs of a model call (its messages), with the request's `gen_ai.*` attributes
/// added: one recorder for every `execute` span.
pub(crate) fn execute_inputs<'a>(
    agent: &'a Agent,
    messages: &'a [crate::Message],
) -> impl FnOnce(&mut Map<String, Value>) -> Value + 'a {
    move |attributes| {
        request(agent, attributes);
        serde_json::json!({"messages": messages})
    }
}

/// The recorded result of a model call (its raw response), with the response's `gen_ai.*`
/// attributes added.
pub(crate) fn execute_result(raw: &Value, attributes: &mut Map<String, Value>) -> Value {
    response(raw, attributes);
    raw.clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_and_response_attributes() {
        let agent = crate::load_str(
            "---\nmodel:\n  id: gpt-4o\n  provider: openai\n  options: {temperature: 0.2, maxOutputTokens: 50, stopSequences: [END]}\n---\nHi",
            ".",
            "a.prompty",
        )
        .unwrap();
        let mut a = Map::new();
        request(&agent, &mut a);
        assert_eq!(a["gen_ai.operation.name"], "chat");
        assert_eq!(a["gen_ai.provider.name"], "openai");
        assert_eq!(a["gen_ai.request.model"], "gpt-4o");
        assert_eq!(a["gen_ai.request.temperature"], 0.2);
        assert_eq!(a["gen_ai.request.max_tokens"], 50);
        assert_eq!(a["gen_ai.request.stop_sequences"], json!(["END"]));
        let raw = json!({"id": "chatcmpl-1", "model": "gpt-4o-2024", "choices": [{"finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}});
        response(&raw, &mut a);
        assert_eq!(a["gen_ai.response.id"], "chatcmpl-1");
        assert_eq!(a["gen_ai.response.finish_reasons"], json!(["stop"]));
        assert_eq!(
            (a["gen_ai.usage.input_tokens"].clone(), a["gen_ai.usage.output_tokens"].clone()),
            (json!(7), json!(3))
        );
        let mut b = Map::new();
        response(
            &json!({"id": "msg_1", "stop_reason": "end_turn", "usage": {"input_tokens": 4, "output_tokens": 2}}),
            &mut b,
        );
        assert_eq!(b["gen_ai.response.finish_reasons"], json!(["end_turn"]));
        assert_eq!(b["gen_ai.usage.input_tokens"], 4);
    }
}
