//! What the `local` provider gives the model: messages as the chat template reads them, the
//! generation options, what decoding is constrained to (structured output, tool calls), and the
//! raw response in the OpenAI Chat Completions shape.

use crate::providers::common::tool_choice;
use crate::{
    properties_schema, Agent, ContentPart, Error, FunctionDefinition, Message, ModelOptions, Result, Role,
    StructuredOutput, ToolChoice,
};
use prompty_local::{ChatMessage, FinishReason, GenerateOptions, Generation};
use serde_json::{json, Map, Value};

/// The output token limit when `maxOutputTokens` is not set: at most this many tokens, and never
/// more than the context window leaves after the prompt.
///
/// ```
/// assert_eq!(prompty::providers::local::DEFAULT_MAX_OUTPUT_TOKENS, 512);
/// ```
pub const DEFAULT_MAX_OUTPUT_TOKENS: usize = 512;

/// The model options the `local` provider reads; the others (`frequencyPenalty`,
/// `presencePenalty`, `allowMultipleToolCalls`, `additionalProperties`) are ignored with a
/// warning.
pub(crate) const READ_OPTIONS: &[&str] = prompty_core::analysis::LOCAL_OPTIONS;

/// What decoding is constrained to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Decoding {
    /// Free text.
    Free,
    /// The whole answer is a JSON document of this schema.
    Json(Value),
    /// Free text, unless the answer starts with `{`: then a JSON document of this schema (a tool call).
    TextOrJson(Value),
}

/// How one chat call runs: the tools offered, the decoding, and the instruction added to the
/// system message (the tools, the output schema).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    /// The tools the model may call (none with `toolChoice: none`).
    pub tools: Vec<FunctionDefinition>,
    pub decoding: Decoding,
    pub instruction: Option<String>,
}

/// The JSON a call of `f` is: `{"name": "<f>", "arguments": {...}}`.
pub(crate) fn tool_call_schema(f: &FunctionDefinition) -> Value {
    let mut parameters = f.parameters.clone();
    if !parameters.is_object() {
        parameters = json!({"type": "object"});
    }
    json!({
        "type": "object",
        "properties": {"name": {"type": "string", "enum": [f.name]}, "arguments": parameters},
        "required": ["name", "arguments"],
        "additionalProperties": false
    })
}

/// One schema, or an `anyOf` of several.
fn any_of(mut schemas: Vec<Value>) -> Value {
    if schemas.len() == 1 {
        schemas.remove(0)
    } else {
        json!({"anyOf": schemas})
    }
}

/// The schema of the agent's `outputs:` as structured output (`None`: no outputs, or mode
/// `none`): the outputs' schema with no other properties, or any JSON object for `jsonObject`.
fn output_schema(agent: &Agent) -> Result<Option<Value>> {
    let Some(outputs) = agent.outputs.as_deref().filter(|o| !o.is_empty()) else { return Ok(None) };
    let mode = agent.model.as_ref().and_then(|m| m.options.as_ref()).and_then(|o| o.structured_output);
    Ok(match mode.unwrap_or_default() {
        StructuredOutput::None => None,
        StructuredOutput::JsonObject => Some(json!({"type": "object"})),
        StructuredOutput::JsonSchema | StructuredOutput::JsonObjectSchema => {
            let mut schema = properties_schema(outputs, false)?;
            schema["additionalProperties"] = json!(false);
            Some(schema)
        }
    })
}

/// The plan of a chat call of `agent` (see [`Plan`]):
/// - `toolChoice` a tool's name: the answer is a call of it; `required`: a call of any tool;
///   `none`: the tools are not offered;
/// - `auto` (or unset): free text or a call; with `outputs:` too, the answer is JSON: a call or
///   the structured output;
/// - `outputs:` without tools: the answer is JSON of their schema (`structuredOutput: jsonObject`:
///   any JSON object; `none`: free text).
pub(crate) fn plan(agent: &Agent) -> Result<Plan> {
    let options = agent.model.as_ref().and_then(|m| m.options.as_ref());
    let declared = crate::registry::declared_functions(agent, crate::registry::Unprojectable::Fail)?;
    let choice = tool_choice(options, &declared)?.cloned();
    let output = output_schema(agent)?;
    let (tools, forced): (Vec<FunctionDefinition>, bool) = match &choice {
        _ if declared.is_empty() => (Vec::new(), false),
        Some(ToolChoice::None) => (Vec::new(), false),
        Some(ToolChoice::Tool(name)) => (declared.into_iter().filter(|f| &f.name == name).collect(), true),
        Some(ToolChoice::Required) => (declared, true),
        Some(ToolChoice::Auto) | None => (declared, false),
    };
    let calls: Vec<Value> = tools.iter().map(tool_call_schema).collect();
    let decoding = match (calls.is_empty(), forced, &output) {
        (true, _, None) => Decoding::Free,
        (true, _, Some(schema)) => Decoding::Json(schema.clone()),
        (false, true, _) => Decoding::Json(any_of(calls)),
        (false, false, None) => Decoding::TextOrJson(any_of(calls)),
        (false, false, Some(schema)) => Decoding::Json(any_of(calls.into_iter().chain([schema.clone()]).collect())),
    };
    let mut instruction = Vec::new();
    if !tools.is_empty() {
        instruction.push(tools_instruction(&tools, forced));
    }
    if let Some(schema) = &output {
        instruction.push(format!("Answer with one JSON object that follows this JSON Schema:\n{schema}"));
    }
    let instruction = (!instruction.is_empty()).then(|| instruction.join("\n\n"));
    Ok(Plan { tools, decoding, instruction })
}

/// The system text that describes the tools and how to call one.
pub(crate) fn tools_instruction(tools: &[FunctionDefinition], forced: bool) -> String {
    let mut text = String::from("You can call these tools:\n");
    for f in tools {
        text.push_str("- ");
        text.push_str(&f.name);
        if let Some(d) = f.description.as_deref().filter(|d| !d.trim().is_empty()) {
            text.push_str(": ");
            text.push_str(d.trim());
        }
        text.push_str(&format!("\n  arguments (JSON Schema): {}\n", f.parameters));
    }
    text.push_str(
        "To call a tool, answer with only this JSON object: {\"name\": \"<tool name>\", \"arguments\": {<the \
         arguments>}}.",
    );
    if !forced {
        text.push_str(" Otherwise answer in plain text.");
    }
    text
}

/// A tool call as the model writes it: `{"name": ..., "arguments": ...}`.
fn call_text(name: &str, arguments: &str) -> String {
    let arguments: Value = serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()));
    json!({"name": name, "arguments": arguments}).to_string()
}

/// The messages as the chat template reads them: roles `system` (also `developer`), `user`,
/// `assistant` (an earlier tool call as its JSON, after the text), `tool` (a tool's result as
/// text); the plan's instruction appended to a leading system message, else in one of its own in
/// front. A part that is not text is an error: the model reads text only.
pub(crate) fn chat_messages(messages: &[Message], instruction: Option<&str>) -> Result<Vec<ChatMessage>> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    for (i, m) in messages.iter().enumerate() {
        let mut text = String::new();
        for p in &m.content {
            match p {
                ContentPart::Text { value } => text.push_str(value),
                other => {
                    let kind = match other {
                        ContentPart::Image { .. } => "an image",
                        ContentPart::Audio { .. } => "an audio",
                        _ => "a file",
                    };
                    return Err(Error::Config {
                        setting: "model.provider".to_owned(),
                        message: format!(
                            "message {i} ({}) has {kind} part: the local provider reads text only; pass the content \
                             as text, or use a provider whose model reads it",
                            m.role.as_str()
                        ),
                    });
                }
            }
        }
        let role = match m.role {
            Role::System | Role::Developer => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        for c in &m.tool_calls {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&call_text(&c.name, &c.arguments));
        }
        out.push(ChatMessage::new(role, text));
    }
    if let Some(instruction) = instruction {
        match out.first_mut() {
            Some(first) if first.role == "system" => {
                first.content = format!("{}\n\n{instruction}", first.content);
            }
            _ => out.insert(0, ChatMessage::new("system", instruction)),
        }
    }
    Ok(out)
}

/// The set options the `local` provider does not read, by their names in the file.
pub(crate) fn ignored_options(o: &ModelOptions) -> Vec<&'static str> {
    let mut out = Vec::new();
    if o.frequency_penalty.is_some() {
        out.push("frequencyPenalty");
    }
    if o.presence_penalty.is_some() {
        out.push("presencePenalty");
    }
    if o.allow_multiple_tool_calls.is_some() {
        out.push("allowMultipleToolCalls");
    }
    if o.additional_properties.as_ref().is_some_and(|m| !m.is_empty()) {
        out.push("additionalProperties");
    }
    debug_assert!(out.iter().all(|k| !READ_OPTIONS.contains(k)));
    out
}

/// The generation options of `options`, for a prompt that leaves `room` tokens of the context
/// window: `maxOutputTokens` (else [`DEFAULT_MAX_OUTPUT_TOKENS`] bounded by `room`),
/// `temperature`, `topP`, `topK`, `seed`, `stopSequences`; an unset option keeps the engine's
/// default (temperature 0.7, top-p 0.95, a random seed). A value out of range is an error naming it.
pub(crate) fn generate_options(options: Option<&ModelOptions>, room: usize) -> Result<GenerateOptions> {
    let bad = |key: &str, message: String| Error::Config { setting: format!("model.options.{key}"), message };
    let mut g =
        GenerateOptions { max_tokens: DEFAULT_MAX_OUTPUT_TOKENS.min(room).max(1), ..GenerateOptions::default() };
    let Some(o) = options else { return Ok(g) };
    if let Some(n) = o.max_output_tokens {
        g.max_tokens = usize::try_from(n)
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| bad("maxOutputTokens", format!("{n} is not a positive number of tokens")))?;
    }
    if let Some(t) = o.temperature {
        if !(0.0..=100.0).contains(&t) {
            return Err(bad("temperature", format!("{t} is out of range: use 0 (greedy) or more")));
        }
        g.temperature = t as f32;
    }
    if let Some(p) = o.top_p {
        if !(p > 0.0 && p <= 1.0) {
            return Err(bad("topP", format!("{p} is out of range: use a number above 0 and at most 1")));
        }
        g.top_p = p as f32;
    }
    if let Some(k) = o.top_k {
        g.top_k = usize::try_from(k).ok().filter(|k| *k > 0);
        if g.top_k.is_none() {
            return Err(bad("topK", format!("{k} is not a positive number of tokens")));
        }
    }
    if let Some(seed) = o.seed {
        g.seed = Some(seed as u64);
    }
    if let Some(stop) = &o.stop_sequences {
        g.stop = stop.iter().filter(|s| !s.is_empty()).cloned().collect();
    }
    Ok(g)
}

/// `{name, arguments}` of an answer that is a call of one of `tools` (the arguments as a JSON
/// string); `None` for any other text.
pub(crate) fn tool_call_of(text: &str, tools: &[FunctionDefinition]) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(text.trim()).ok()?;
    let name = value.get("name")?.as_str()?;
    if !tools.iter().any(|f| f.name == name) {
        return None;
    }
    let arguments = match value.get("arguments") {
        Some(a @ Value::Object(_)) => a.to_string(),
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => "{}".to_owned(),
        Some(_) => return None,
    };
    Some((name.to_owned(), arguments))
}

/// `finish_reason` of a generation.
pub(crate) fn finish_reason(finish: FinishReason, called: bool) -> &'static str {
    match finish {
        _ if called => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::Stop | FinishReason::Cancelled => "stop",
    }
}

/// `usage` of a generation.
pub(crate) fn usage(prompt: usize, completion: usize) -> Value {
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

/// The wire form of a tool call: `{id, type: function, function: {name, arguments}}`.
pub(crate) fn wire_call(id: &str, name: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}})
}

/// The raw response of a chat call: an OpenAI `chat.completion`.
pub(crate) fn completion(id: &str, created: u64, model: &str, g: &Generation, call: Option<&Value>) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    match call {
        Some(call) => {
            message.insert("content".into(), Value::Null);
            message.insert("tool_calls".into(), json!([call]));
        }
        None => {
            message.insert("content".into(), json!(g.text));
        }
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(g.finish, call.is_some())}],
        "usage": usage(g.prompt_tokens, g.completion_tokens),
    })
}

/// One event of a streamed chat call: an OpenAI `chat.completion.chunk` with `delta` and
/// `finish_reason` (or, with no delta, the usage alone).
pub(crate) fn chunk(id: &str, created: u64, model: &str, delta: Option<Value>, finish: Option<&str>) -> Value {
    let choices = match delta {
        Some(delta) => json!([{"index": 0, "delta": delta, "finish_reason": finish}]),
        None => json!([]),
    };
    json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": choices})
}

/// The raw response of an embedding call: an OpenAI embeddings `list`.
pub(crate) fn embeddings(model: &str, vectors: Vec<Vec<f32>>, prompt_tokens: usize) -> Value {
    let data: Vec<Value> = vectors
        .into_iter()
        .enumerate()
        .map(|(index, embedding)| json!({"object": "embedding", "index": index, "embedding": embedding}))
        .collect();
    json!({
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolCall;

    fn f(name: &str) -> FunctionDefinition {
        FunctionDefinition {
            name: name.into(),
            description: Some(format!("Does {name}.")),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            strict: false,
        }
    }

    fn generation(text: &str, finish: FinishReason) -> Generation {
        Generation { text: text.into(), prompt_tokens: 7, completion_tokens: 3, finish }
    }

    #[test]
    fn messages_become_template_text() {
        let mut assistant = Message::new(Role::Assistant, "Let me check.");
        assistant.tool_calls = vec![ToolCall::new("call_1", "weather", r#"{"city":"Paris"}"#)];
        let mut tool = Message::new(Role::Tool, "sunny");
        tool.tool_call_id = Some("call_1".into());
        let messages = [
            Message::new(Role::Developer, "Be brief."),
            Message::new(Role::User, "Weather in Paris?"),
            assistant,
            tool,
        ];
        let chat = chat_messages(&messages, Some("TOOLS")).unwrap();
        let pairs: Vec<(&str, &str)> = chat.iter().map(|m| (m.role.as_str(), m.content.as_str())).collect();
        assert_eq!(
            pairs,
            [
                ("system", "Be brief.\n\nTOOLS"),
                ("user", "Weather in Paris?"),
                ("assistant", "Let me check.\n{\"name\":\"weather\",\"arguments\":{\"city\":\"Paris\"}}"),
                ("tool", "sunny"),
            ]
        );
        // No system message: the instruction comes first in one of its own.
        let chat = chat_messages(&[Message::new(Role::User, "Hi")], Some("TOOLS")).unwrap();
        assert_eq!((chat[0].role.as_str(), chat[0].content.as_str()), ("system", "TOOLS"));
        assert_eq!(chat.len(), 2);
    }

    #[test]
    fn a_part_that_is_not_text_is_refused_by_name() {
        let mut m = Message::new(Role::User, "What is this?");
        m.content.push(ContentPart::Image { source: "https://x/y.png".into(), detail: None, media_type: None });
        let e = chat_messages(&[m], None).unwrap_err().to_string();
        assert!(e.contains("image") && e.contains("reads text only") && e.contains("message 0 (user)"), "{e}");
    }

    #[test]
    fn options_map_and_are_checked() {
        let g = generate_options(None, 100).unwrap();
        assert_eq!(g.max_tokens, 100, "the default is bounded by the context left");
        assert_eq!(generate_options(None, 10_000).unwrap().max_tokens, DEFAULT_MAX_OUTPUT_TOKENS);
        assert_eq!(generate_options(None, 0).unwrap().max_tokens, 1);
        let o: ModelOptions = serde_json::from_value(json!({"maxOutputTokens": 20, "temperature": 0, "topP": 0.5,
            "topK": 40, "seed": 42, "stopSequences": ["\n\n", ""], "frequencyPenalty": 1, "additionalProperties": {"x": 1}}))
        .unwrap();
        let g = generate_options(Some(&o), 8).unwrap();
        assert_eq!((g.max_tokens, g.temperature, g.top_p, g.top_k, g.seed), (20, 0.0, 0.5, Some(40), Some(42)));
        assert_eq!(g.stop, ["\n\n"]);
        assert_eq!(ignored_options(&o), ["frequencyPenalty", "additionalProperties"]);
        for (key, value) in
            [("maxOutputTokens", json!(0)), ("temperature", json!(-1)), ("topP", json!(0)), ("topK", json!(-3))]
        {
            let o: ModelOptions = serde_json::from_value(json!({key: value})).unwrap();
            let e = generate_options(Some(&o), 8).unwrap_err().to_string();
            assert!(e.contains(&format!("model.options.{key}")), "{e}");
        }
    }

    #[test]
    fn tool_calls_are_read_from_the_answer() {
        let tools = [f("weather")];
        assert_eq!(
            tool_call_of(r#" {"name": "weather", "arguments": {"city": "Paris"}} "#, &tools),
            Some(("weather".into(), r#"{"city":"Paris"}"#.into()))
        );
        assert_eq!(tool_call_of(r#"{"name": "other", "arguments": {}}"#, &tools), None);
        assert_eq!(tool_call_of("The weather is fine.", &tools), None);
        assert_eq!(tool_call_of(r#"{"name": "weather", "arguments": 3}"#, &tools), None);
    }

    #[test]
    fn the_response_is_a_chat_completion() {
        let g = generation("Hello", FinishReason::Length);
        let r = completion("chatcmpl-1", 5, "smollm2-135m", &g, None);
        assert_eq!(r["object"], "chat.completion");
        assert_eq!(r["choices"][0]["message"], json!({"role": "assistant", "content": "Hello"}));
        assert_eq!(r["choices"][0]["finish_reason"], "length");
        assert_eq!(r["usage"], json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}));
        let call = wire_call("call_1", "weather", "{}");
        let r = completion("chatcmpl-2", 5, "m", &generation("{...}", FinishReason::Stop), Some(&call));
        assert_eq!(r["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(r["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "weather");
        assert_eq!(r["choices"][0]["finish_reason"], "tool_calls");
        let e = embeddings("m", vec![vec![0.5, 0.25]], 4);
        assert_eq!(e["data"][0], json!({"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}));
        assert_eq!(e["usage"]["prompt_tokens"], 4);
        let c = chunk("c", 1, "m", Some(json!({"content": "Hi"})), None);
        assert_eq!(
            (c["object"].as_str(), &c["choices"][0]["delta"]["content"]),
            (Some("chat.completion.chunk"), &json!("Hi"))
        );
    }

    fn agent(options: Value, outputs: bool) -> Agent {
        let mut a = json!({"name": "t", "model": {"id": "smollm2-135m", "provider": "local", "options": options},
            "tools": [
                {"name": "weather", "kind": "function", "description": "The weather.",
                 "parameters": [{"name": "city", "kind": "string", "required": true}]},
                {"name": "time", "kind": "function", "parameters": []}]});
        if outputs {
            a["outputs"] = json!([{"name": "answer", "kind": "string", "required": true}]);
        }
        Agent::from_value(a).unwrap()
    }

    #[test]
    fn the_plan_follows_the_tool_choice_and_the_outputs() {
        // auto: free text or a call of either tool.
        let p = plan(&agent(json!({}), false)).unwrap();
        assert_eq!(p.tools.len(), 2);
        let Decoding::TextOrJson(schema) = &p.decoding else { panic!("{:?}", p.decoding) };
        assert_eq!(schema["anyOf"].as_array().unwrap().len(), 2);
        assert!(p.instruction.as_deref().unwrap().contains("- weather: The weather."));
        // A tool's name: a call of that tool only.
        let p = plan(&agent(json!({"toolChoice": "time"}), false)).unwrap();
        assert_eq!(p.decoding, Decoding::Json(tool_call_schema(&p.tools[0])));
        assert_eq!((p.tools.len(), p.tools[0].name.as_str()), (1, "time"));
        // required: a call of any tool.
        let p = plan(&agent(json!({"toolChoice": "required"}), false)).unwrap();
        let Decoding::Json(schema) = &p.decoding else { panic!("{:?}", p.decoding) };
        assert_eq!(schema["anyOf"].as_array().unwrap().len(), 2);
        // none: no tools offered, free text.
        let p = plan(&agent(json!({"toolChoice": "none"}), false)).unwrap();
        assert_eq!((p.tools.len(), &p.decoding, &p.instruction), (0, &Decoding::Free, &None));
        // auto with outputs: JSON, a call or the structured output.
        let p = plan(&agent(json!({}), true)).unwrap();
        let Decoding::Json(schema) = &p.decoding else { panic!("{:?}", p.decoding) };
        assert_eq!(schema["anyOf"][2]["required"], json!(["answer"]));
        assert_eq!(schema["anyOf"][2]["additionalProperties"], json!(false));
        // Outputs without tools, per structuredOutput.
        let p = plan(&agent(json!({"toolChoice": "none"}), true)).unwrap();
        assert!(matches!(&p.decoding, Decoding::Json(s) if s["properties"]["answer"]["type"] == "string"));
        assert!(p.instruction.unwrap().contains("JSON Schema"));
        let p = plan(&agent(json!({"toolChoice": "none", "structuredOutput": "jsonObject"}), true)).unwrap();
        assert_eq!(p.decoding, Decoding::Json(json!({"type": "object"})));
        let p = plan(&agent(json!({"toolChoice": "none", "structuredOutput": "none"}), true)).unwrap();
        assert_eq!(p.decoding, Decoding::Free);
        // A tool the prompt does not declare.
        let e = plan(&agent(json!({"toolChoice": "nope"}), false)).unwrap_err().to_string();
        assert!(e.contains("model.options.toolChoice"), "{e}");
    }

    #[test]
    fn the_tool_call_schema_names_the_tool() {
        let s = tool_call_schema(&f("weather"));
        assert_eq!(s["properties"]["name"]["enum"], json!(["weather"]));
        assert_eq!(s["properties"]["arguments"]["required"], json!(["city"]));
        assert_eq!(s["required"], json!(["name", "arguments"]));
        let text = tools_instruction(&[f("weather")], false);
        assert!(
            text.contains("- weather: Does weather.") && text.contains("\"arguments\"") && text.contains("plain text")
        );
        assert!(!tools_instruction(&[f("weather")], true).contains("plain text"));
    }
}
