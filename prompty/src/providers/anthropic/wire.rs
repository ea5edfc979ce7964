//! Request bodies for the Anthropic Messages API (spec §7.5, §7.6).
//!
//! Replays of an earlier tool-calling round (spec §9.5) use the same message conventions as the
//! OpenAI bodies: an assistant message's [`crate::Message::tool_calls`] become `tool_use` blocks,
//! and `tool` messages (with [`crate::Message::tool_call_id`]) become `tool_result` blocks,
//! consecutive ones batched into one user message.

use crate::providers::common::{is_uri, merge_additional, model_of, put, split_data_uri, tool_choice};
use crate::{Agent, ContentPart, Error, Message, Result, Role, ToolChoice};
use serde_json::{json, Map, Value};

/// `max_tokens` when the prompt sets no `maxOutputTokens` (the API requires one).
///
/// ```
/// assert_eq!(prompty::providers::anthropic::DEFAULT_MAX_TOKENS, 4096);
/// ```
pub const DEFAULT_MAX_TOKENS: i64 = 4096;

/// The Messages API body: `model`, `system` (the system and developer messages' text, joined by a
/// blank line), `messages` (content always as a list of blocks), `max_tokens` (`maxOutputTokens`,
/// else 4096), `temperature`, `top_p`, `top_k`, `stop_sequences` (other options are ignored),
/// `tools` as `{name, description, input_schema}`, `tool_choice` from `toolChoice` (`auto` →
/// `{type: auto}`, `none` → `{type: none}`, `required` → `{type: any}`, a tool's name →
/// `{type: tool, name}`; `disable_parallel_tool_use: true` beside it when
/// `allowMultipleToolCalls` is false). `options.additionalProperties` are added at the top level
/// last and replace what was generated under the same key (except `messages` and `system`).
///
/// Images become `image` blocks with a base64 source (a data URI is split into media type and
/// data) or a URL source; files become `document` blocks likewise. Audio is not accepted.
///
/// ```
/// use prompty::{Agent, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "claude-sonnet-4-20250514", "provider": "anthropic"}}))?;
/// let body = prompty::providers::anthropic::messages_request(&agent, &[
///     Message::new(Role::System, "Be helpful"), Message::new(Role::User, "Hello")])?;
/// assert_eq!(body, serde_json::json!({
///     "model": "claude-sonnet-4-20250514",
///     "system": "Be helpful",
///     "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
///     "max_tokens": 4096}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn messages_request(agent: &Agent, messages: &[Message]) -> Result<Value> {
    let model = model_of(agent)?;
    let options = model.options.as_ref();
    let tools = function_tools(agent)?;

    let mut system = Vec::new();
    let mut wire: Vec<Value> = Vec::new();
    let mut results: Vec<Value> = Vec::new(); // tool results waiting to be sent as one user message
    for m in messages {
        if m.role == Role::Tool {
            results.push(tool_result(m)?);
            continue;
        }
        if !results.is_empty() {
            wire.push(json!({"role": "user", "content": std::mem::take(&mut results)}));
        }
        match m.role {
            Role::System | Role::Developer => system.push(m.text()),
            _ => wire.push(json!({"role": m.role.as_str(), "content": message_blocks(m)?})),
        }
    }
    if !results.is_empty() {
        wire.push(json!({"role": "user", "content": results}));
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(wire));
    body.insert("max_tokens".into(), json!(options.and_then(|o| o.max_output_tokens).unwrap_or(DEFAULT_MAX_TOKENS)));
    if let Some(o) = options {
        put(&mut body, "temperature", o.temperature);
        put(&mut body, "top_p", o.top_p);
        put(&mut body, "top_k", o.top_k);
        put(&mut body, "stop_sequences", o.stop_sequences.clone());
    }
    let single = options.is_some_and(|o| o.allow_multiple_tool_calls == Some(false));
    let choice = tool_choice(options, &tools)?;
    if !tools.is_empty() && (single || choice.is_some()) {
        let mut wire = match choice.unwrap_or(&ToolChoice::Auto) {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        if single && wire["type"] != "none" {
            wire["disable_parallel_tool_use"] = json!(true);
        }
        body.insert("tool_choice".into(), wire);
    }
    if !tools.is_empty() {
        let wire = tools
            .iter()
            .map(|f| {
                let mut t = Map::new();
                t.insert("name".into(), json!(f.name));
                if let Some(d) = &f.description {
                    t.insert("description".into(), json!(d));
                }
                t.insert("input_schema".into(), f.parameters.clone());
                Value::Object(t)
            })
            .collect();
        body.insert("tools".into(), Value::Array(wire));
    }
    merge_additional(&mut body, options, &["messages", "system"]);
    Ok(Value::Object(body))
}

/// The content blocks of a user or assistant message; an assistant's replayed tool calls follow its
/// text as `tool_use` blocks.
fn message_blocks(m: &Message) -> Result<Vec<Value>> {
    if let Some(Value::Array(blocks)) = m.metadata.get("anthropic_content") {
        if m.role == Role::Assistant && !blocks.is_empty() {
            // The blocks of an earlier response, replayed as they came (thinking included).
            return Ok(blocks.clone());
        }
    }
    let calls = &m.tool_calls;
    let mut blocks = m.content.iter().map(block).collect::<Result<Vec<_>>>()?;
    if blocks.len() > 1 || !calls.is_empty() {
        // Anthropic rejects empty text blocks beside other blocks.
        blocks.retain(|b| b["type"] != "text" || b["text"] != "");
    }
    for c in calls {
        let input: Value = match c.arguments_value() {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(Error::Execution {
                    message: format!("tool call '{}' ({}): arguments are not a JSON object", c.id, c.name),
                })
            }
        };
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": ""}));
    }
    Ok(blocks)
}

/// A `tool_result` block for a tool message: its text as a string, or blocks for richer results.
fn tool_result(m: &Message) -> Result<Value> {
    let content = match m.content.as_slice() {
        [ContentPart::Text { value }] => json!(value),
        parts if parts.iter().all(|p| p.as_text().is_some()) => json!(m.text()),
        parts => Value::Array(parts.iter().map(block).collect::<Result<_>>()?),
    };
    let mut result = Map::new();
    result.insert("type".into(), json!("tool_result"));
    result.insert("tool_use_id".into(), m.tool_call_id.as_deref().map_or(Value::Null, |id| json!(id)));
    result.insert("content".into(), content);
    if let Some(flag @ Value::Bool(true)) = m.metadata.get("is_error") {
        result.insert("is_error".into(), flag.clone());
    }
    Ok(Value::Object(result))
}

/// The messages of one tool round in the Anthropic shape (spec §9.5), what the Anthropic
/// executor's [`crate::Executor::format_tool_messages`] returns: an assistant message holding
/// the response's content blocks as they came (`metadata.anthropic_content`: thinking, text,
/// `tool_use`; also readable by other providers through [`Message::tool_calls`]), then one `tool`
/// message per result, which [`messages_request`] batches into a single user message of
/// `tool_result` blocks (`is_error` for failed calls).
///
/// ```
/// use prompty::{Agent, ToolCall, ToolResult, ToolRound};
/// use serde_json::json;
/// let agent = Agent::from_value(json!({"model": {"id": "claude-sonnet-4-20250514", "provider": "anthropic"}}))?;
/// let raw = json!({"content": [{"type": "text", "text": "Checking."},
///     {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}}]});
/// let calls = [ToolCall::new("t1", "get_weather", r#"{"city":"Oslo"}"#)];
/// let results = [ToolResult::ok("t1", "get_weather", "cold")];
/// let round = ToolRound { response: Some(&raw), text: None, calls: &calls, results: &results };
/// let messages = prompty::providers::anthropic::tool_messages(&agent, &round)?;
/// let body = prompty::providers::anthropic::messages_request(&agent, &messages)?;
/// assert_eq!(body["messages"][0]["content"], raw["content"]);
/// assert_eq!(body["messages"][1], json!({"role": "user", "content": [
///     {"type": "tool_result", "tool_use_id": "t1", "content": "cold"}]}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn tool_messages(_agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
    let blocks = round.response.and_then(|r| r.get("content")).and_then(Value::as_array);
    let text = match (round.text, blocks) {
        (Some(text), _) => text.to_owned(),
        (None, Some(blocks)) => {
            blocks.iter().filter(|b| b["type"] == "text").filter_map(|b| b["text"].as_str()).collect()
        }
        (None, None) => String::new(),
    };
    let mut messages = crate::tool_messages(&crate::ToolRound { text: Some(&text), ..*round });
    if let Some(blocks) = blocks {
        messages[0].metadata.insert("anthropic_content".into(), Value::Array(blocks.clone()));
    }
    Ok(messages)
}

/// The Messages API response the events of a stream make: its content blocks in index order, as
/// they would have come whole (text, `thinking` with its signature, `redacted_thinking`,
/// `tool_use` with its input parsed). What the Anthropic executor's
/// [`crate::Executor::assemble_stream`] returns, so that a streamed tool round replays its
/// thinking blocks like a whole one.
///
/// ```
/// use serde_json::json;
/// let events = [
///     json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
///     json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Hmm"}}),
///     json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig"}}),
///     json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
///     json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"a\":"}}),
///     json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "1}"}}),
/// ];
/// let whole = prompty::providers::anthropic::assemble_message(&events);
/// assert_eq!(whole["content"], json!([
///     {"type": "thinking", "thinking": "Hmm", "signature": "sig"},
///     {"type": "tool_use", "id": "t1", "name": "f", "input": {"a": 1}}]));
/// ```
pub fn assemble_message(events: &[Value]) -> Value {
    let mut blocks: std::collections::BTreeMap<u64, Value> = std::collections::BTreeMap::new();
    let mut inputs: std::collections::BTreeMap<u64, String> = std::collections::BTreeMap::new();
    for event in events {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event["type"].as_str().unwrap_or_default() {
            "content_block_start" if event["content_block"].is_object() => {
                blocks.insert(index, event["content_block"].clone());
            }
            "content_block_delta" => {
                let Some(Value::Object(block)) = blocks.get_mut(&index) else { continue };
                let delta = &event["delta"];
                let (key, piece) = match delta["type"].as_str().unwrap_or_default() {
                    "text_delta" => ("text", &delta["text"]),
                    "thinking_delta" => ("thinking", &delta["thinking"]),
                    "signature_delta" => ("signature", &delta["signature"]),
                    "input_json_delta" => {
                        inputs.entry(index).or_default().push_str(delta["partial_json"].as_str().unwrap_or_default());
                        continue;
                    }
                    _ => continue,
                };
                let text = format!(
                    "{}{}",
                    block.get(key).and_then(Value::as_str).unwrap_or_default(),
                    piece.as_str().unwrap_or_default()
                );
                block.insert(key.to_owned(), Value::String(text));
            }
            _ => {}
        }
    }
    for (index, input) in inputs {
        if let (Some(Value::Object(block)), Ok(value)) = (blocks.get_mut(&index), serde_json::from_str::<Value>(&input))
        {
            block.insert("input".to_owned(), value);
        }
    }
    json!({"type": "message", "role": "assistant", "content": blocks.into_values().collect::<Vec<_>>()})
}

/// One content block.
fn block(p: &ContentPart) -> Result<Value> {
    Ok(match p {
        ContentPart::Text { value } => json!({"type": "text", "text": value}),
        ContentPart::Image { source, media_type, .. } => {
            json!({"type": "image", "source": source_json(source, media_type.as_deref(), "image/png")})
        }
        ContentPart::File { source, media_type } => {
            json!({"type": "document", "source": source_json(source, media_type.as_deref(), "application/pdf")})
        }
        ContentPart::Audio { .. } => {
            return Err(Error::Config {
                setting: "model.provider".to_owned(),
                message: "the Anthropic Messages API does not accept audio parts: leave the audio out of the \
                          messages, or use a provider that takes audio (openai)"
                    .into(),
            })
        }
    })
}

/// The `source` of an image or document: a data URI or bare base64 data as a base64 source, a URL
/// as a URL source.
fn source_json(source: &str, media_type: Option<&str>, default_type: &str) -> Value {
    if let Some((uri_type, data)) = split_data_uri(source) {
        let media_type = if uri_type.is_empty() { media_type.unwrap_or(default_type) } else { uri_type };
        return json!({"type": "base64", "media_type": media_type, "data": data});
    }
    if is_uri(source) {
        return json!({"type": "url", "url": source});
    }
    json!({"type": "base64", "media_type": media_type.unwrap_or(default_type), "data": source})
}

/// The tools Anthropic sees: those whose kind has a projection; tools of other kinds are left
/// out, as spec §7.5 says, instead of failing the request.
fn function_tools(agent: &Agent) -> Result<Vec<crate::FunctionDefinition>> {
    crate::registry::declared_functions(agent, crate::registry::Unprojectable::Skip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(model: Value) -> Agent {
        Agent::from_value(json!({"name": "t", "model": model})).unwrap()
    }

    #[test]
    fn tool_choice_maps_to_anthropic_forms() {
        let a = |options: Value| {
            Agent::from_value(json!({"model": {"id": "c", "provider": "anthropic", "options": options},
                "tools": [{"name": "get_weather", "kind": "function"}]}))
            .unwrap()
        };
        let hi = [Message::new(Role::User, "Hi")];
        for (choice, wire) in [
            ("auto", json!({"type": "auto"})),
            ("none", json!({"type": "none"})),
            ("required", json!({"type": "any"})),
            ("get_weather", json!({"type": "tool", "name": "get_weather"})),
        ] {
            let body = messages_request(&a(json!({"toolChoice": choice})), &hi).unwrap();
            assert_eq!(body["tool_choice"], wire, "{choice}");
        }
        let body =
            messages_request(&a(json!({"toolChoice": "required", "allowMultipleToolCalls": false})), &hi).unwrap();
        assert_eq!(body["tool_choice"], json!({"type": "any", "disable_parallel_tool_use": true}));
        let body = messages_request(&a(json!({"allowMultipleToolCalls": false})), &hi).unwrap();
        assert_eq!(body["tool_choice"], json!({"type": "auto", "disable_parallel_tool_use": true}));
        assert!(messages_request(&a(json!({})), &hi).unwrap().get("tool_choice").is_none());
        let err = messages_request(&a(json!({"toolChoice": "get_time"})), &hi).unwrap_err().to_string();
        assert!(err.contains("'get_time'") && err.contains("get_weather"), "{err}");
    }

    #[test]
    fn max_tokens_defaults_and_options_map() {
        let a = agent(json!({"id": "c"}));
        let body = messages_request(&a, &[Message::new(Role::User, "Hi")]).unwrap();
        assert_eq!(body["max_tokens"], json!(4096));
        assert!(body.get("system").is_none());
        let a = agent(json!({"id": "c", "options": {"maxOutputTokens": 10, "temperature": 0.5, "topP": 0.9,
            "topK": 40, "stopSequences": ["END"], "seed": 1, "frequencyPenalty": 0.1, "presencePenalty": 0.2,
            "additionalProperties": {"max_tokens": 1, "metadata": {"user_id": "u"}}}}));
        let body = messages_request(&a, &[Message::new(Role::User, "Hi")]).unwrap();
        assert_eq!(
            body,
            json!({"model": "c", "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
                   "max_tokens": 1, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "stop_sequences": ["END"],
                   "metadata": {"user_id": "u"}})
        );
    }

    #[test]
    fn system_and_developer_messages_are_joined() {
        let a = agent(json!({"id": "c"}));
        let msgs =
            [Message::new(Role::System, "A"), Message::new(Role::Developer, "B"), Message::new(Role::User, "Hi")];
        let body = messages_request(&a, &msgs).unwrap();
        assert_eq!(body["system"], json!("A\n\nB"));
        assert_eq!(body["messages"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn images_and_documents() {
        let p = |s: &str, mt: Option<&str>| ContentPart::Image {
            source: s.into(),
            detail: None,
            media_type: mt.map(Into::into),
        };
        assert_eq!(
            block(&p("base64data", Some("image/png"))).unwrap(),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "base64data"}})
        );
        assert_eq!(
            block(&p("data:image/jpeg;base64,AAA", None)).unwrap()["source"],
            json!({"type": "base64", "media_type": "image/jpeg", "data": "AAA"})
        );
        assert_eq!(
            block(&p("https://x/a.png", None)).unwrap()["source"],
            json!({"type": "url", "url": "https://x/a.png"})
        );
        let doc = ContentPart::File { source: "data:application/pdf;base64,JVBE".into(), media_type: None };
        assert_eq!(
            block(&doc).unwrap(),
            json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"}})
        );
        let audio = ContentPart::Audio { source: "x".into(), media_type: None };
        assert!(block(&audio).is_err());
    }

    #[test]
    fn tools_without_a_projector_are_left_out() {
        let agent = Agent::from_value(json!({
            "model": {"id": "claude", "provider": "anthropic"},
            "tools": [
                {"name": "calendar", "kind": "calendar_service", "options": {"region": "eu"}},
                {"name": "get_weather", "kind": "function", "parameters": {"city": {"kind": "string"}}}
            ]
        }))
        .unwrap();
        let body = messages_request(&agent, &[Message::new(Role::User, "hi")]).unwrap();
        let names: Vec<_> = body["tools"].as_array().unwrap().iter().map(|t| t["name"].clone()).collect();
        assert_eq!(names, vec![json!("get_weather")]);
    }

    #[test]
    fn tools_use_input_schema() {
        let a = Agent::from_value(json!({"model": {"id": "c", "options": {"allowMultipleToolCalls": false}},
            "tools": [{"name": "f", "kind": "function", "description": "F",
                       "parameters": [{"name": "x", "kind": "string", "required": true}]}]}))
        .unwrap();
        let body = messages_request(&a, &[Message::new(Role::User, "Hi")]).unwrap();
        assert_eq!(
            body["tools"],
            json!([{"name": "f", "description": "F", "input_schema": {"type": "object",
                     "properties": {"x": {"type": "string"}}, "required": ["x"]}}])
        );
        assert_eq!(body["tool_choice"], json!({"type": "auto", "disable_parallel_tool_use": true}));
    }

    #[test]
    fn an_image_a_tool_attached_goes_inside_its_tool_result() {
        let mut r = crate::ToolResult::ok("t1", "img", "a tiny image");
        r.parts.push(ContentPart::Image { source: "iVBO".into(), detail: None, media_type: Some("image/png".into()) });
        let calls = [crate::ToolCall::new("t1", "img", "{}")];
        let msgs = crate::tool_messages(&crate::ToolRound { response: None, text: None, calls: &calls, results: &[r] });
        let block = tool_result(&msgs[1]).unwrap();
        assert_eq!(
            block["content"],
            json!([{"type": "text", "text": "a tiny image"},
                   {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}}])
        );
    }

    #[test]
    fn tool_replays_become_tool_use_and_batched_tool_results() {
        let a = agent(json!({"id": "c"}));
        let mut assistant = Message::new(Role::Assistant, "Let me check.");
        assistant
            .insert_metadata(
                "tool_calls",
                json!([{"id": "t1", "type": "function", "function": {"name": "w", "arguments": "{\"city\":\"Paris\"}"}},
                   {"id": "t2", "name": "w", "arguments": "{\"city\":\"Rome\"}"}]),
            )
            .unwrap();
        let mut r1 = Message::new(Role::Tool, "sunny");
        r1.insert_metadata("tool_call_id", json!("t1")).unwrap();
        let mut r2 = Message::new(Role::Tool, "rainy");
        r2.insert_metadata("tool_call_id", json!("t2")).unwrap();
        let body = messages_request(&a, &[Message::new(Role::User, "Weather?"), assistant, r1, r2]).unwrap();
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "t2", "name": "w", "input": {"city": "Rome"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "sunny"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "rainy"}]}
            ])
        );
    }

    #[test]
    fn empty_assistant_text_is_dropped_beside_tool_use() {
        let mut assistant = Message::new(Role::Assistant, "");
        assistant.insert_metadata("tool_calls", json!([{"id": "t1", "name": "w", "arguments": "{}"}])).unwrap();
        assert_eq!(
            message_blocks(&assistant).unwrap(),
            [json!({"type": "tool_use", "id": "t1", "name": "w", "input": {}})]
        );
        let mut bad = Message::new(Role::Assistant, "");
        bad.insert_metadata("tool_calls", json!([{"id": "t1", "name": "w", "arguments": "nope"}])).unwrap();
        assert!(message_blocks(&bad).is_err());
    }
}
