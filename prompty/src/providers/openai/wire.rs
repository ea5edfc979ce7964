//! Request bodies for the OpenAI APIs (spec §7.1 to §7.4): Chat Completions, embeddings, image
//! generation and the Responses API. Azure OpenAI and Foundry use the same bodies.
//!
//! Conventions for messages replayed from an earlier tool-calling round (spec §9.5):
//! - an assistant message whose [`Message::tool_calls`] lists the calls the model made (in JSON
//!   `metadata.tool_calls`);
//! - a `tool` message whose [`Message::tool_call_id`] names the call it answers;
//! - for the Responses API also a message whose `metadata.responses_function_call` holds the
//!   original `function_call` item (spec §7.4.1), answered by the message's text, and an assistant
//!   message whose `metadata.responses_output` holds a whole earlier response's `output` items,
//!   replayed as they are (what [`tool_messages`] writes).
//!
//! The metadata keys `responses_output`, `anthropic_content` and `is_error` are never sent as
//! message fields.

use crate::providers::common::{is_uri, merge_additional, model_of, put, split_data_uri, tool_choice};
use crate::{
    properties_schema, Agent, Connection, ContentPart, FunctionDefinition, MaxTokensField, Message, Model, Result,
    Role, StructuredOutput, ToolChoice,
};
use serde_json::{json, Map, Value};

/// [`request_body`](super::request_body) for a server that speaks `dialect` (the executors pass
/// the one they resolved for the call; [`Dialect::resolve`] gives the one of a prompt and an
/// endpoint).
///
/// ```
/// use prompty::providers::openai::{request_body_with, Dialect};
/// use prompty::{Agent, MaxTokensField, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "smollm2", "options": {"maxOutputTokens": 50}}}))?;
/// let local = Dialect::resolve(&agent, None, Some("http://127.0.0.1:8080/v1"));
/// assert_eq!(local.max_tokens_field, MaxTokensField::MaxTokens);
/// let body = request_body_with(&agent, &[Message::new(Role::User, "Hi")], &local)?;
/// assert_eq!(body["max_tokens"], 50);
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn request_body_with(agent: &Agent, messages: &[Message], dialect: &Dialect) -> Result<Value> {
    match api_type(agent) {
        "chat" => chat_request_with(agent, messages, dialect),
        "embedding" | "embeddings" => embedding_request(agent, messages),
        "image" | "images" => image_request(agent, messages),
        "responses" => responses_request_with(agent, messages, dialect),
        other => {
            Err(crate::providers::common::unsupported_api_type("OpenAI", other, "chat, embedding, image or responses"))
        }
    }
}

/// What the server a request goes to understands: which field carries the output token limit,
/// and how structured output is asked for. OpenAI's own API and the many servers that mimic it
/// differ on both (see [`MaxTokensField`] and [`StructuredOutput`]).
///
/// The rule of the prompt alone ([`Dialect::resolve`]):
/// - token field: the connection's `maxTokensField`, else by the endpoint's host
///   ([`MaxTokensField::for_endpoint`]: `max_completion_tokens` for OpenAI's and Azure's hosts and
///   for an unknown endpoint, `max_tokens` for any other);
/// - structured output: `model.options.structuredOutput`, else the connection's
///   `structuredOutput`, else `jsonSchema` (strict).
///
/// The executors (and [`request_body`](super::request_body), which shows what they send) resolve the endpoint from
/// the environment too; and the structured-output mode of a prompt with `outputs:` comes first
/// from `--structured-output` (`set_structured_output`) and `PROMPTY_STRUCTURED_OUTPUT`, then
/// from the prompt as above, and when the prompt does not choose it, from the mode remembered for
/// the endpoint after an automatic fallback (see `set_structured_output_fallback`).
///
/// ```yaml
/// model:
///   id: smollm2
///   connection:
///     kind: anonymous
///     endpoint: http://127.0.0.1:8080/v1
///     maxTokensField: max_tokens          # the default for such a host anyway
///     structuredOutput: jsonObjectSchema  # for every prompt on this connection
///   options:
///     maxOutputTokens: 400
/// ```
///
/// ```
/// use prompty::providers::openai::Dialect;
/// use prompty::{Agent, MaxTokensField, StructuredOutput};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "m", "options": {"structuredOutput": "jsonObject"}}}))?;
/// let d = Dialect::resolve(&agent, None, None);
/// assert_eq!(d, Dialect { max_tokens_field: MaxTokensField::MaxCompletionTokens, structured_output: StructuredOutput::JsonObject });
/// # Ok::<(), prompty::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dialect {
    /// The field of the output token limit (Chat Completions).
    pub max_tokens_field: MaxTokensField,
    /// How `outputs:` are asked for.
    pub structured_output: StructuredOutput,
}

impl Dialect {
    /// The dialect for the agent when its requests go to `endpoint` through `connection` (the
    /// connection actually used, a registered one for a `reference`; its settings win over the
    /// host rule). `None` for either: not known.
    ///
    /// ```
    /// use prompty::providers::openai::Dialect;
    /// use prompty::{Agent, MaxTokensField};
    /// let agent = Agent::from_value(serde_json::json!({"model": "gpt-4o"}))?;
    /// let d = Dialect::resolve(&agent, None, Some("https://api.openai.com/v1"));
    /// assert_eq!(d.max_tokens_field, MaxTokensField::MaxCompletionTokens);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn resolve(agent: &Agent, connection: Option<&Connection>, endpoint: Option<&str>) -> Dialect {
        Dialect::resolve_with(agent, connection, || MaxTokensField::for_endpoint(endpoint))
    }

    /// [`Dialect::resolve`] with the host rule's answer for the endpoint given (or computed
    /// when the connection does not say).
    pub(crate) fn resolve_with(
        agent: &Agent,
        connection: Option<&Connection>,
        host_rule: impl FnOnce() -> MaxTokensField,
    ) -> Dialect {
        let common = connection.and_then(connection_common);
        let option = agent.model.as_ref().and_then(|m| m.options.as_ref()).and_then(|o| o.structured_output);
        Dialect {
            max_tokens_field: common.and_then(|c| c.max_tokens_field).unwrap_or_else(host_rule),
            structured_output: option.or_else(|| common.and_then(|c| c.structured_output)).unwrap_or_default(),
        }
    }

    /// The dialect from the prompt alone: its connection's settings and literal endpoint (an
    /// endpoint left to the environment, or a `reference`, counts as unknown), without the
    /// process's structured-output settings. The executors, and
    /// [`request_body`](super::request_body) which shows what they send, resolve more: see
    /// [`Dialect`].
    ///
    /// ```
    /// use prompty::providers::openai::Dialect;
    /// use prompty::{Agent, MaxTokensField};
    /// let agent = Agent::from_value(serde_json::json!({"model": {"id": "m",
    ///     "connection": {"kind": "anonymous", "endpoint": "http://localhost:11434/v1"}}}))?;
    /// assert_eq!(Dialect::of(&agent).max_tokens_field, MaxTokensField::MaxTokens);
    /// # Ok::<(), prompty::Error>(())
    /// ```
    pub fn of(agent: &Agent) -> Dialect {
        let connection = agent.model.as_ref().and_then(|m| m.connection.as_ref());
        Dialect::resolve(agent, connection, connection.and_then(Connection::endpoint))
    }
}

/// The common fields of a connection kind that has them.
pub(crate) fn connection_common(c: &Connection) -> Option<&crate::ConnectionCommon> {
    match c {
        Connection::Key { common, .. }
        | Connection::Reference { common, .. }
        | Connection::Remote { common, .. }
        | Connection::Anonymous { common, .. }
        | Connection::Foundry { common, .. }
        | Connection::OAuth { common, .. } => Some(common),
        Connection::Other { .. } => None,
    }
}

/// [`chat_request`](super::chat_request) for a server that speaks `dialect`.
///
/// ```
/// use prompty::providers::openai::{chat_request_with, Dialect};
/// use prompty::{Agent, MaxTokensField, Message, Role, StructuredOutput};
/// let agent = Agent::from_value(serde_json::json!({"model": "m",
///     "outputs": [{"name": "city", "kind": "string", "required": true}]}))?;
/// let dialect = Dialect { max_tokens_field: MaxTokensField::MaxTokens, structured_output: StructuredOutput::JsonObject };
/// let body = chat_request_with(&agent, &[Message::new(Role::User, "Paris, 20 C")], &dialect)?;
/// assert_eq!(body["response_format"], serde_json::json!({"type": "json_object"}));
/// // The schema is in a system message in front.
/// assert_eq!(body["messages"][0]["role"], "system");
/// assert!(body["messages"][0]["content"].as_str().unwrap().contains("\"city\""));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn chat_request_with(agent: &Agent, messages: &[Message], dialect: &Dialect) -> Result<Value> {
    let model = model_of(agent)?;
    let options = model.options.as_ref();
    let tools = crate::registry::declared_functions(agent, crate::registry::Unprojectable::Fail)?;
    let format = response_format(agent, dialect.structured_output)?;
    let instructed;
    let messages = match &format {
        Some(f) if f.instruct => {
            instructed = with_schema_instruction(messages, &f.schema);
            instructed.as_slice()
        }
        _ => messages,
    };

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("messages".into(), Value::Array(chat_messages(messages)?));
    if let Some(o) = options {
        put(&mut body, "temperature", o.temperature);
        put(&mut body, dialect.max_tokens_field.as_str(), o.max_output_tokens);
        put(&mut body, "top_p", o.top_p);
        put(&mut body, "frequency_penalty", o.frequency_penalty);
        put(&mut body, "presence_penalty", o.presence_penalty);
        put(&mut body, "seed", o.seed);
        put(&mut body, "stop", o.stop_sequences.clone());
        if !tools.is_empty() {
            put(&mut body, "parallel_tool_calls", o.allow_multiple_tool_calls);
        }
    }
    if !tools.is_empty() {
        let wire = tools.iter().map(|f| json!({"type": "function", "function": function_json(f)})).collect();
        body.insert("tools".into(), Value::Array(wire));
    }
    if let Some(choice) = tool_choice(options, &tools)? {
        let wire = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
        };
        body.insert("tool_choice".into(), wire);
    }
    if let Some(f) = format {
        let wire = match f.mode {
            StructuredOutput::JsonSchema => {
                json!({"type": "json_schema", "json_schema": {"name": "structured_output", "strict": true, "schema": f.schema}})
            }
            StructuredOutput::JsonObjectSchema => json!({"type": "json_object", "schema": f.schema}),
            _ => json!({"type": "json_object"}),
        };
        body.insert("response_format".into(), wire);
    }
    merge_additional(&mut body, options, &["messages"]);
    Ok(Value::Object(body))
}

/// The request body of [`request_body_with`], serialized: the same bytes as
/// `serde_json::to_vec(&request_body_with(..))`. A chat request without tools, outputs, tool choice
/// or additional properties, whose messages are text without metadata (most prompts), is written
/// straight from the messages and options, without building a JSON value first.
#[cfg(any(test, feature = "openai"))]
pub(crate) fn request_body_bytes(
    agent: &Agent,
    messages: &[Message],
    dialect: &Dialect,
) -> Result<std::result::Result<Vec<u8>, serde_json::Error>> {
    if api_type(agent) == "chat" {
        if let Some(body) = plain_chat_body(agent, messages, dialect)? {
            return Ok(serde_json::to_vec(&body));
        }
    }
    Ok(serde_json::to_vec(&request_body_with(agent, messages, dialect)?))
}

/// The chat body of a prompt [`request_body_bytes`] writes directly, `None` for any other.
#[cfg(any(test, feature = "openai"))]
fn plain_chat_body<'a>(
    agent: &'a Agent,
    messages: &'a [Message],
    dialect: &Dialect,
) -> Result<Option<PlainChatBody<'a>>> {
    let model = model_of(agent)?;
    let options = model.options.as_ref();
    let plain_options =
        options.is_none_or(|o| o.tool_choice.is_none() && o.additional_properties.as_ref().is_none_or(Map::is_empty));
    let plain = plain_options
        && agent.outputs.as_deref().is_none_or(<[_]>::is_empty)
        && messages.iter().all(|m| !m.has_metadata() && m.content.iter().all(|p| p.as_text().is_some()))
        // Declared tools (even ones that project to nothing) take the general path: projecting
        // them here too would list an MCP server or read an OpenAPI document twice per request.
        && agent.tools.as_deref().is_none_or(<[_]>::is_empty);
    Ok(plain.then_some(PlainChatBody {
        model: &model.id,
        messages,
        options,
        tokens: dialect.max_tokens_field.as_str(),
    }))
}

/// What [`chat_request_with`] builds for a plain prompt, in the same key order.
#[cfg(any(test, feature = "openai"))]
struct PlainChatBody<'a> {
    model: &'a str,
    messages: &'a [Message],
    options: Option<&'a crate::ModelOptions>,
    tokens: &'static str,
}

#[cfg(any(test, feature = "openai"))]
impl serde::Serialize for PlainChatBody<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("model", self.model)?;
        map.serialize_entry("messages", &PlainMessages(self.messages))?;
        if let Some(o) = self.options {
            // As `put`: an option that is set, in `chat_request_with`'s order.
            fn entry<M: SerializeMap, T: serde::Serialize>(
                map: &mut M,
                key: &str,
                v: Option<&T>,
            ) -> std::result::Result<(), M::Error> {
                match v {
                    Some(v) => map.serialize_entry(key, v),
                    None => Ok(()),
                }
            }
            entry(&mut map, "temperature", o.temperature.as_ref())?;
            entry(&mut map, self.tokens, o.max_output_tokens.as_ref())?;
            entry(&mut map, "top_p", o.top_p.as_ref())?;
            entry(&mut map, "frequency_penalty", o.frequency_penalty.as_ref())?;
            entry(&mut map, "presence_penalty", o.presence_penalty.as_ref())?;
            entry(&mut map, "seed", o.seed.as_ref())?;
            entry(&mut map, "stop", o.stop_sequences.as_ref())?;
        }
        map.end()
    }
}

/// Text messages without metadata, as [`chat_message`] writes them.
#[cfg(any(test, feature = "openai"))]
struct PlainMessages<'a>(&'a [Message]);

#[cfg(any(test, feature = "openai"))]
impl serde::Serialize for PlainMessages<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        struct TextPart<'a>(&'a str);
        impl serde::Serialize for TextPart<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("type", "text")?;
                map.serialize_entry("text", self.0)?;
                map.end()
            }
        }
        struct Content<'a>(&'a [ContentPart]);
        impl serde::Serialize for Content<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                match self.0 {
                    [] => serializer.serialize_str(""),
                    [one] => serializer.serialize_str(one.as_text().unwrap_or_default()),
                    parts => {
                        let mut seq = serializer.serialize_seq(Some(parts.len()))?;
                        for p in parts {
                            seq.serialize_element(&TextPart(p.as_text().unwrap_or_default()))?;
                        }
                        seq.end()
                    }
                }
            }
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for m in self.0 {
            struct Wire<'a>(&'a Message);
            impl serde::Serialize for Wire<'_> {
                fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
                    let mut map = serializer.serialize_map(Some(2))?;
                    map.serialize_entry("role", self.0.role.as_str())?;
                    map.serialize_entry("content", &Content(&self.0.content))?;
                    map.end()
                }
            }
            seq.serialize_element(&Wire(m))?;
        }
        seq.end()
    }
}

/// What the outputs ask for: the mode, the schema (strict for `jsonSchema`, plain otherwise),
/// and whether the schema goes in the prompt.
struct Format {
    mode: StructuredOutput,
    schema: Value,
    instruct: bool,
}

/// The structured-output request of the agent's outputs in `mode`, `None` without outputs or in
/// mode `none`.
fn response_format(agent: &Agent, mode: StructuredOutput) -> Result<Option<Format>> {
    let Some(outputs) = agent.outputs.as_deref().filter(|o| !o.is_empty()) else { return Ok(None) };
    Ok(match mode {
        StructuredOutput::None => None,
        StructuredOutput::JsonSchema => {
            Some(Format { mode, schema: properties_schema(outputs, true)?, instruct: false })
        }
        StructuredOutput::JsonObject | StructuredOutput::JsonObjectSchema => {
            Some(Format { mode, schema: properties_schema(outputs, false)?, instruct: true })
        }
    })
}

/// The instruction that carries the output schema in JSON mode.
///
/// ```
/// let text = prompty::providers::openai::schema_instruction(&serde_json::json!({"type": "object"}));
/// assert!(text.starts_with("Answer with one JSON object") && text.contains(r#"{"type":"object"}"#));
/// ```
pub fn schema_instruction(schema: &Value) -> String {
    format!("Answer with one JSON object only, no other text, that follows this JSON Schema:\n{schema}")
}

/// The messages with the schema instruction: appended to a leading system message whose content
/// is text only, else in a system message of its own in front.
fn with_schema_instruction(messages: &[Message], schema: &Value) -> Vec<Message> {
    let instruction = schema_instruction(schema);
    let mut out = messages.to_vec();
    match out.first_mut() {
        Some(first)
            if first.role == Role::System
                && !first.content.is_empty()
                && first.content.iter().all(|p| p.as_text().is_some()) =>
        {
            let text = format!("{}\n\n{instruction}", first.text());
            first.content = vec![ContentPart::text(text)];
        }
        _ => out.insert(0, Message::new(Role::System, instruction)),
    }
    out
}

/// The embeddings body (spec §7.2): `{model, input}`, where `input` is the one text of the messages
/// as a string, or all their texts as a list. `options.additionalProperties` (`dimensions`,
/// `encoding_format`, ...) are added at the top level.
///
/// ```
/// use prompty::{Agent, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "text-embedding-3-small", "apiType": "embedding"}}))?;
/// let body = prompty::providers::openai::embedding_request(&agent, &[
///     Message::new(Role::User, "one"), Message::new(Role::User, "two")])?;
/// assert_eq!(body["input"], serde_json::json!(["one", "two"]));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn embedding_request(agent: &Agent, messages: &[Message]) -> Result<Value> {
    let model = model_of(agent)?;
    let mut texts: Vec<&str> =
        messages.iter().flat_map(|m| m.content.iter().filter_map(ContentPart::as_text)).collect();
    let input = if texts.len() == 1 { json!(texts.remove(0)) } else { json!(texts) };
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("input".into(), input);
    merge_additional(&mut body, model.options.as_ref(), &["input"]);
    Ok(Value::Object(body))
}

/// The image generation body (spec §7.3): `{model, prompt}`, the prompt being the first text of the
/// last user message (`""` without one). `options.additionalProperties` (`size`, `quality`, `n`,
/// ...) are added at the top level.
///
/// ```
/// use prompty::{Agent, Message, Role};
/// let agent = Agent::from_value(serde_json::json!({"model": {"id": "dall-e-3", "apiType": "image",
///     "options": {"additionalProperties": {"size": "1024x1024"}}}}))?;
/// let body = prompty::providers::openai::image_request(&agent, &[Message::new(Role::User, "A cat")])?;
/// assert_eq!(body, serde_json::json!({"model": "dall-e-3", "prompt": "A cat", "size": "1024x1024"}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn image_request(agent: &Agent, messages: &[Message]) -> Result<Value> {
    let model = model_of(agent)?;
    let prompt = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .and_then(|m| m.content.iter().find_map(ContentPart::as_text))
        .unwrap_or("");
    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    body.insert("prompt".into(), json!(prompt));
    merge_additional(&mut body, model.options.as_ref(), &["prompt"]);
    Ok(Value::Object(body))
}

/// [`responses_request`](super::responses_request) for a server that speaks `dialect`.
pub(crate) fn responses_request_with(agent: &Agent, messages: &[Message], dialect: &Dialect) -> Result<Value> {
    let model = model_of(agent)?;
    let options = model.options.as_ref();
    let tools = crate::registry::declared_functions(agent, crate::registry::Unprojectable::Fail)?;
    let format = response_format(agent, dialect.structured_output)?;
    let instructed;
    let messages = match &format {
        Some(f) if f.instruct => {
            instructed = with_schema_instruction(messages, &f.schema);
            instructed.as_slice()
        }
        _ => messages,
    };

    let mut instructions = Vec::new();
    let mut input = Vec::new();
    let mut replayed_calls: Vec<String> = Vec::new();
    for m in messages {
        if let Some(Value::Array(items)) = m.metadata.get("responses_output") {
            // An earlier response's output items, replayed as they came (reasoning, message,
            // function_call), so the model sees its own turn unchanged.
            for item in items {
                if item["type"] == "function_call" {
                    if let Some(id) = item.get("call_id").and_then(Value::as_str) {
                        replayed_calls.push(id.to_owned());
                    }
                }
                input.push(item.clone());
            }
            continue;
        }
        if let Some(item) = m.metadata.get("responses_function_call") {
            let call_id = match &m.tool_call_id {
                Some(id) => json!(id),
                None => item.get("call_id").cloned().unwrap_or(Value::Null),
            };
            if !call_id.as_str().is_some_and(|id| replayed_calls.iter().any(|c| c == id)) {
                input.push(item.clone());
            }
            input.push(json!({"type": "function_call_output", "call_id": call_id, "output": tool_output(m)}));
            continue;
        }
        match m.role {
            Role::System | Role::Developer => instructions.push(m.text()),
            Role::Tool => input.push(json!({
                "type": "function_call_output",
                "call_id": m.tool_call_id.as_deref().map_or(Value::Null, |id| json!(id)),
                "output": tool_output(m),
            })),
            _ => {
                let calls = &m.tool_calls;
                if calls.is_empty() || m.content.iter().any(|p| p.as_text() != Some("")) {
                    input.push(json!({"role": m.role.as_str(), "content": responses_content(m)}));
                }
                for c in calls {
                    input.push(
                        json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments}),
                    );
                    replayed_calls.push(c.id.clone());
                }
            }
        }
    }

    let mut body = Map::new();
    body.insert("model".into(), json!(model.id));
    if !instructions.is_empty() {
        body.insert("instructions".into(), json!(instructions.join("\n\n")));
    }
    body.insert("input".into(), Value::Array(input));
    if let Some(o) = options {
        put(&mut body, "temperature", o.temperature);
        put(&mut body, "max_output_tokens", o.max_output_tokens);
        put(&mut body, "top_p", o.top_p);
        if !tools.is_empty() {
            put(&mut body, "parallel_tool_calls", o.allow_multiple_tool_calls);
        }
    }
    if !tools.is_empty() {
        let wire = tools
            .iter()
            .map(|f| {
                let mut t = Map::new();
                t.insert("type".into(), json!("function"));
                if let Value::Object(fields) = function_json(f) {
                    t.extend(fields);
                }
                Value::Object(t)
            })
            .collect();
        body.insert("tools".into(), Value::Array(wire));
    }
    if let Some(choice) = tool_choice(options, &tools)? {
        let wire = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), wire);
    }
    if let Some(f) = format {
        let format = match f.mode {
            StructuredOutput::JsonSchema => {
                json!({"type": "json_schema", "name": "structured_output", "strict": true, "schema": f.schema})
            }
            StructuredOutput::JsonObjectSchema => json!({"type": "json_object", "schema": f.schema}),
            _ => json!({"type": "json_object"}),
        };
        body.insert("text".into(), json!({ "format": format }));
    }
    merge_additional(&mut body, options, &["input", "instructions"]);
    Ok(Value::Object(body))
}

/// The messages of one tool round in the OpenAI shape (spec §9.5), what the OpenAI and Foundry
/// executors' [`crate::Executor::format_tool_messages`] return: the provider-neutral messages of
/// [`crate::tool_messages`] (an assistant message with [`Message::tool_calls`], one `tool` message
/// per result), with the text the model wrote beside its calls. For the Responses API the
/// assistant message also keeps the response's `output` items (`metadata.responses_output`), so
/// the next request replays them (reasoning items included) before the `function_call_output`s.
///
/// ```
/// use prompty::{Agent, ToolCall, ToolResult, ToolRound};
/// use serde_json::json;
/// let agent = Agent::from_value(json!({"model": "gpt-4o"}))?;
/// let raw = json!({"choices": [{"message": {"content": "Let me check.", "tool_calls": [
///     {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]}}]});
/// let calls = [ToolCall::new("c1", "get_weather", "{}")];
/// let results = [ToolResult::ok("c1", "get_weather", "sunny")];
/// let round = ToolRound { response: Some(&raw), text: None, calls: &calls, results: &results };
/// let messages = prompty::providers::openai::tool_messages(&agent, &round)?;
/// let body = prompty::providers::openai::chat_request(&agent, &messages)?;
/// assert_eq!(body["messages"][0]["content"], "Let me check.");
/// assert_eq!(body["messages"][0]["tool_calls"][0]["id"], "c1");
/// assert_eq!(body["messages"][1], json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn tool_messages(agent: &Agent, round: &crate::ToolRound<'_>) -> Result<Vec<Message>> {
    let responses = api_type(agent) == "responses";
    let text = match (round.text, round.response) {
        (Some(text), _) => text.to_owned(),
        (None, Some(raw)) if responses => raw
            .get("output")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|i| i["type"] == "message")
            .flat_map(|i| i.get("content").and_then(Value::as_array).into_iter().flatten())
            .filter(|p| p["type"] == "output_text")
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        (None, Some(raw)) => match &raw["choices"][0]["message"]["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
            _ => String::new(),
        },
        (None, None) => String::new(),
    };
    let mut messages = crate::tool_messages(&crate::ToolRound { text: Some(&text), ..*round });
    if responses {
        if let Some(output @ Value::Array(_)) = round.response.and_then(|r| r.get("output")) {
            messages[0].metadata.insert("responses_output".into(), output.clone());
        }
    }
    Ok(messages)
}

/// The whole response of a streamed call, for a tool round's replay: for the Responses API, the
/// `response` of its `response.completed` (or `response.incomplete`) event, which holds every
/// output item (reasoning included). Chat completions need none: their tool round replays from the
/// calls and the text alone.
///
/// ```
/// use serde_json::json;
/// let agent = prompty::Agent::from_value(json!({"model": {"id": "o4-mini", "apiType": "responses"}}))?;
/// let events = [json!({"type": "response.output_item.done"}),
///               json!({"type": "response.completed", "response": {"output": [{"type": "reasoning"}]}})];
/// let whole = prompty::providers::openai::assemble_stream(&agent, &events).unwrap();
/// assert_eq!(whole["output"][0]["type"], "reasoning");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn assemble_stream(agent: &Agent, events: &[Value]) -> Option<Value> {
    if api_type(agent) != "responses" {
        return None;
    }
    events
        .iter()
        .rev()
        .find(|e| matches!(e["type"].as_str(), Some("response.completed" | "response.incomplete")))
        .and_then(|e| e.get("response"))
        .filter(|r| r.get("output").is_some_and(Value::is_array))
        .cloned()
}

/// The API type of the agent's model (`chat` when unset).
pub(crate) fn api_type(agent: &Agent) -> &str {
    agent.model.as_ref().map_or("chat", Model::api_type)
}

/// `{name, description?, parameters, strict?}` of a projected function.
fn function_json(f: &FunctionDefinition) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(f.name));
    if let Some(d) = &f.description {
        m.insert("description".into(), json!(d));
    }
    m.insert("parameters".into(), f.parameters.clone());
    if f.strict {
        m.insert("strict".into(), json!(true));
    }
    Value::Object(m)
}

/// A message in the Chat Completions shape: `{role, ...metadata, content}` (spec §7.1.1), with
/// replayed tool calls in the OpenAI shape.
/// The Chat Completions messages. Chat accepts only text in `tool` messages: the other parts of a
/// run of tool messages (images a tool attached) follow the run in one `user` message, each
/// introduced by the id of the call it came from.
fn chat_messages(messages: &[Message]) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(messages.len());
    let mut held: Vec<Value> = Vec::new();
    for m in messages {
        if m.role != Role::Tool && !held.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut held)}));
        }
        if m.role == Role::Tool && m.content.iter().any(|p| p.as_text().is_none()) {
            let mut text_only = m.clone();
            text_only.content.retain(|p| p.as_text().is_some());
            out.push(chat_message(&text_only)?);
            let id = m.tool_call_id.as_deref().unwrap_or("");
            held.push(json!({"type": "text", "text": format!("Content returned by tool call {id}:")}));
            held.extend(m.content.iter().filter(|p| p.as_text().is_none()).map(chat_part));
        } else {
            out.push(chat_message(m)?);
        }
    }
    if !held.is_empty() {
        out.push(json!({"role": "user", "content": held}));
    }
    Ok(out)
}

fn chat_message(m: &Message) -> Result<Value> {
    let mut wire = Map::new();
    wire.insert("role".into(), json!(m.role.as_str()));
    if !m.tool_calls.is_empty() {
        let calls = m
            .tool_calls
            .iter()
            .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
            .collect();
        wire.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        wire.insert("tool_call_id".into(), json!(id));
    }
    for (k, v) in &m.metadata {
        match k.as_str() {
            "role"
            | "content"
            | "responses_function_call"
            | "responses_output"
            | "anthropic_content"
            | "is_error"
            | "tool_calls"
            | "tool_call_id" => {}
            _ => {
                wire.insert(k.clone(), v.clone());
            }
        }
    }
    let content = match m.content.as_slice() {
        [] => json!(""),
        [ContentPart::Text { value }] => json!(value),
        parts => Value::Array(parts.iter().map(chat_part).collect()),
    };
    wire.insert("content".into(), content);
    Ok(Value::Object(wire))
}

/// A content part in the Chat Completions shape (spec §7.1.2).
fn chat_part(p: &ContentPart) -> Value {
    match p {
        ContentPart::Text { value } => json!({"type": "text", "text": value}),
        ContentPart::Image { source, detail, media_type } => {
            let mut image = Map::new();
            image.insert("url".into(), json!(image_url(source, media_type.as_deref())));
            if let Some(d) = detail.as_deref().filter(|d| !d.is_empty()) {
                image.insert("detail".into(), json!(d));
            }
            json!({"type": "image_url", "image_url": image})
        }
        ContentPart::Audio { source, media_type } => {
            let (data, format) = audio_data(source, media_type.as_deref());
            json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
        }
        ContentPart::File { source, .. } => {
            if source.starts_with("data:") {
                json!({"type": "file", "file": {"file_data": source}})
            } else {
                json!({"type": "file", "file": {"url": source}})
            }
        }
    }
}

/// The content of a Responses input item: one text part as a string, else typed parts.
fn responses_content(m: &Message) -> Value {
    match m.content.as_slice() {
        [] => json!(""),
        [ContentPart::Text { value }] => json!(value),
        parts => Value::Array(parts.iter().map(|p| responses_part(p, m.role)).collect()),
    }
}

/// A content part in the Responses API shape (`input_text`, `input_image`, ...).
fn responses_part(p: &ContentPart, role: Role) -> Value {
    match p {
        ContentPart::Text { value } if role == Role::Assistant => json!({"type": "output_text", "text": value}),
        ContentPart::Text { value } => json!({"type": "input_text", "text": value}),
        ContentPart::Image { source, detail, media_type } => {
            let mut part = Map::new();
            part.insert("type".into(), json!("input_image"));
            part.insert("image_url".into(), json!(image_url(source, media_type.as_deref())));
            if let Some(d) = detail.as_deref().filter(|d| !d.is_empty()) {
                part.insert("detail".into(), json!(d));
            }
            Value::Object(part)
        }
        ContentPart::Audio { source, media_type } => {
            let (data, format) = audio_data(source, media_type.as_deref());
            json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
        }
        ContentPart::File { source, .. } => {
            if source.starts_with("data:") {
                json!({"type": "input_file", "file_data": source})
            } else {
                json!({"type": "input_file", "file_url": source})
            }
        }
    }
}

/// The output of a tool message: its text, or typed parts when it carries more than text.
fn tool_output(m: &Message) -> Value {
    if m.content.iter().all(|p| p.as_text().is_some()) {
        json!(m.text())
    } else {
        Value::Array(m.content.iter().map(|p| responses_part(p, Role::User)).collect())
    }
}

/// An image source as a URL: URLs and data URIs as they are; bare base64 with a media type becomes
/// a data URI.
fn image_url(source: &str, media_type: Option<&str>) -> String {
    match media_type {
        Some(mt) if !is_uri(source) => format!("data:{mt};base64,{source}"),
        _ => source.to_owned(),
    }
}

/// The base64 data and the `format` of an audio part (spec §7.1.2); a data URI is split.
fn audio_data(source: &str, media_type: Option<&str>) -> (String, String) {
    let (uri_type, data) = match split_data_uri(source) {
        Some((mt, data)) => (Some(mt), data),
        None => (None, source),
    };
    let format = audio_format(media_type.or(uri_type).unwrap_or("audio/wav"));
    (data.to_owned(), format)
}

/// The `input_audio.format` of a media type: wav, mp3, flac, ogg, else the subtype.
pub(crate) fn audio_format(media_type: &str) -> String {
    let mt = media_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match mt.as_str() {
        "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "wav".into(),
        "audio/mp3" | "audio/mpeg" | "audio/mpeg3" | "audio/x-mp3" => "mp3".into(),
        "audio/flac" | "audio/x-flac" => "flac".into(),
        "audio/ogg" => "ogg".into(),
        other => other.strip_prefix("audio/").unwrap_or(other).to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::inspect::{chat_request, request_body, responses_request};
    use super::*;
    use crate::{Property, PropertyKind, ToolCall};

    fn agent(model: Value) -> Agent {
        Agent::from_value(json!({ "name": "t", "model": model })).unwrap()
    }

    fn user(text: &str) -> Message {
        Message::new(Role::User, text)
    }

    /// The body written directly is byte for byte the serialized JSON value, and other prompts
    /// fall back to the JSON value.
    #[test]
    fn plain_chat_bodies_are_the_serialized_values() {
        let text_parts = Message::with_content(
            Role::Tool,
            vec![ContentPart::text("a \"quoted\"\n"), ContentPart::text("é \u{1F600}")],
        );
        let empty = Message::with_content(Role::Assistant, vec![]);
        let mut with_meta = user("hi");
        with_meta.metadata.insert("name".into(), json!("ann"));
        let image = Message::with_content(Role::User, vec![ContentPart::image("https://x/cat.png")]);
        let models = [
            json!({"id": "gpt-4"}),
            json!({"id": "m", "options": {"temperature": 0.2, "maxOutputTokens": 5, "topP": 1.0, "frequencyPenalty": -0.5,
                "presencePenalty": 0, "seed": -3, "stopSequences": ["END", "\u{0}"]}}),
            json!({"id": "m", "options": {"additionalProperties": {"temperature": 1, "user": "u"}, "temperature": 0.5}}),
            json!({"id": "m", "connection": {"kind": "anonymous", "endpoint": "http://localhost:1/v1"},
                "options": {"maxOutputTokens": 7}}),
        ];
        let conversations: [Vec<Message>; 5] = [
            vec![Message::new(Role::System, "Be brief."), user("Hi \u{FFFD} </script>")],
            vec![text_parts, empty],
            vec![with_meta],
            vec![image],
            vec![],
        ];
        for model in models {
            let a = agent(model);
            for messages in &conversations {
                let dialect = Dialect::of(&a);
                let direct = request_body_bytes(&a, messages, &dialect).unwrap().unwrap();
                let value = serde_json::to_vec(&request_body_with(&a, messages, &dialect).unwrap()).unwrap();
                assert_eq!(String::from_utf8(direct).unwrap(), String::from_utf8(value).unwrap());
            }
        }
        let mut nan = agent(json!({"id": "m"}));
        nan.model.as_mut().unwrap().options =
            Some(crate::ModelOptions { temperature: Some(f64::NAN), ..Default::default() });
        let dialect = Dialect::of(&nan);
        let direct = request_body_bytes(&nan, &[user("x")], &dialect).unwrap().unwrap();
        assert_eq!(direct, serde_json::to_vec(&request_body_with(&nan, &[user("x")], &dialect).unwrap()).unwrap());
    }

    #[test]
    fn single_text_part_is_a_string_and_several_parts_an_array() {
        let a = agent(json!({"id": "gpt-4"}));
        let multi =
            Message::with_content(Role::User, vec![ContentPart::text("Look"), ContentPart::image("https://x/cat.png")]);
        let body = chat_request(&a, &[user("Hi"), multi]).unwrap();
        assert_eq!(body["messages"][0]["content"], json!("Hi"));
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": "https://x/cat.png"}}])
        );
    }

    #[test]
    fn image_detail_is_kept_and_never_empty() {
        let part = |detail: Option<&str>| ContentPart::Image {
            source: "https://x/a.png".into(),
            detail: detail.map(str::to_owned),
            media_type: None,
        };
        assert_eq!(chat_part(&part(Some("high")))["image_url"], json!({"url": "https://x/a.png", "detail": "high"}));
        assert_eq!(chat_part(&part(Some("")))["image_url"], json!({"url": "https://x/a.png"}));
    }

    #[test]
    fn bare_base64_image_with_media_type_becomes_a_data_uri() {
        let p = ContentPart::Image { source: "AAAA".into(), detail: None, media_type: Some("image/png".into()) };
        assert_eq!(chat_part(&p)["image_url"]["url"], json!("data:image/png;base64,AAAA"));
    }

    #[test]
    fn audio_formats_follow_the_table() {
        assert_eq!(audio_format("audio/wav"), "wav");
        assert_eq!(audio_format("audio/x-wav"), "wav");
        assert_eq!(audio_format("audio/mpeg"), "mp3");
        assert_eq!(audio_format("audio/mp3"), "mp3");
        assert_eq!(audio_format("audio/flac"), "flac");
        assert_eq!(audio_format("audio/ogg"), "ogg");
        assert_eq!(audio_format("audio/webm"), "webm");
        let p = ContentPart::Audio { source: "data:audio/mpeg;base64,QUJD".into(), media_type: None };
        assert_eq!(chat_part(&p), json!({"type": "input_audio", "input_audio": {"data": "QUJD", "format": "mp3"}}));
    }

    #[test]
    fn files_use_url_or_file_data() {
        let url = ContentPart::File { source: "https://x/a.pdf".into(), media_type: None };
        assert_eq!(chat_part(&url), json!({"type": "file", "file": {"url": "https://x/a.pdf"}}));
        let data = ContentPart::File { source: "data:application/pdf;base64,AA".into(), media_type: None };
        assert_eq!(chat_part(&data)["file"], json!({"file_data": "data:application/pdf;base64,AA"}));
    }

    #[test]
    fn options_are_mapped_and_additional_properties_win() {
        let a = agent(json!({"id": "gpt-4", "options": {
            "temperature": 0.5, "maxOutputTokens": 10, "topP": 0.9, "topK": 3, "frequencyPenalty": 0.1,
            "presencePenalty": 0.2, "seed": 7, "stopSequences": ["x"],
            "additionalProperties": {"temperature": 2, "logprobs": true}}}));
        let body = chat_request(&a, &[user("Hi")]).unwrap();
        assert_eq!(body["temperature"], json!(2), "what the author wrote under additionalProperties wins");
        assert_eq!(body["max_completion_tokens"], json!(10));
        assert_eq!(body["top_p"], json!(0.9));
        assert_eq!(body["frequency_penalty"], json!(0.1));
        assert_eq!(body["presence_penalty"], json!(0.2));
        assert_eq!(body["seed"], json!(7));
        assert_eq!(body["stop"], json!(["x"]));
        assert_eq!(body["logprobs"], json!(true));
        assert!(body.get("max_tokens").is_none());
        assert!(body.get("top_k").is_none());
    }

    #[test]
    fn additional_properties_replace_generated_keys_but_not_the_conversation() {
        let a = Agent::from_value(json!({"model": {"id": "m", "options": {"maxOutputTokens": 5,
            "additionalProperties": {"response_format": {"type": "text"}, "max_completion_tokens": 9,
                                     "messages": [], "tool_choice": "none"}}},
            "outputs": [{"name": "x", "kind": "string"}],
            "tools": [{"name": "f", "kind": "function"}]}))
        .unwrap();
        let body = chat_request(&a, &[user("Hi")]).unwrap();
        assert_eq!(body["response_format"], json!({"type": "text"}));
        assert_eq!(body["max_completion_tokens"], json!(9));
        assert_eq!(body["tool_choice"], json!("none"));
        assert_eq!(body["messages"], json!([{"role": "user", "content": "Hi"}]));
    }

    #[test]
    fn token_field_follows_the_dialect() {
        let with = |connection: Value| {
            Agent::from_value(
                json!({"model": {"id": "m", "options": {"maxOutputTokens": 7}, "connection": connection}}),
            )
            .unwrap()
        };
        let local = with(json!({"kind": "key", "endpoint": "http://127.0.0.1:1/v1"}));
        let body = chat_request(&local, &[user("Hi")]).unwrap();
        assert_eq!((body.get("max_tokens"), body.get("max_completion_tokens")), (Some(&json!(7)), None));
        let openai = with(json!({"kind": "key", "endpoint": "https://api.openai.com/v1"}));
        assert_eq!(chat_request(&openai, &[user("Hi")]).unwrap()["max_completion_tokens"], json!(7));
        let forced = with(json!({"kind": "key", "endpoint": "http://127.0.0.1:1/v1",
            "maxTokensField": "max_completion_tokens"}));
        assert_eq!(chat_request(&forced, &[user("Hi")]).unwrap()["max_completion_tokens"], json!(7));
        // The executor's endpoint (from the environment, say) decides when the prompt has none.
        let bare = agent(json!({"id": "m", "options": {"maxOutputTokens": 7}}));
        let d = Dialect::resolve(&bare, None, Some("http://localhost:8000/v1"));
        assert_eq!(request_body_with(&bare, &[user("Hi")], &d).unwrap()["max_tokens"], json!(7));
        // Responses keep their own field.
        let r = agent(json!({"id": "m", "apiType": "responses", "options": {"maxOutputTokens": 7}}));
        assert_eq!(request_body_with(&r, &[user("Hi")], &d).unwrap()["max_output_tokens"], json!(7));
    }

    #[test]
    fn structured_output_modes() {
        let a = |mode: Option<&str>, conn: Option<&str>| {
            let mut model = json!({"id": "m"});
            if let Some(mode) = mode {
                model["options"] = json!({"structuredOutput": mode});
            }
            if let Some(conn) = conn {
                model["connection"] = json!({"kind": "anonymous", "endpoint": "http://h/v1", "structuredOutput": conn});
            }
            Agent::from_value(json!({"model": model,
                "outputs": [{"name": "city", "kind": "string", "required": true}, {"name": "n", "kind": "integer"}]}))
            .unwrap()
        };
        let sys = Message::new(Role::System, "Extract.");
        let body = chat_request(&a(Some("jsonObject"), None), &[sys.clone(), user("Paris")]).unwrap();
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        let first = body["messages"][0]["content"].as_str().unwrap();
        assert!(first.starts_with("Extract.\n\nAnswer with one JSON object"), "{first}");
        assert!(first.contains(r#""required":["city"]"#), "{first}");
        assert_eq!(body["messages"].as_array().unwrap().len(), 2);

        // The connection's mode, and the prompt's winning over it.
        let body = chat_request(&a(None, Some("jsonObjectSchema")), &[user("Paris")]).unwrap();
        assert_eq!(body["response_format"]["type"], json!("json_object"));
        assert_eq!(body["response_format"]["schema"]["properties"]["city"], json!({"type": "string"}));
        assert_eq!(body["messages"][0]["role"], json!("system"), "a system message of its own in front");
        assert_eq!(body["messages"][1], json!({"role": "user", "content": "Paris"}));
        let body = chat_request(&a(Some("none"), Some("jsonObjectSchema")), &[user("Paris")]).unwrap();
        assert!(body.get("response_format").is_none());
        assert_eq!(body["messages"], json!([{"role": "user", "content": "Paris"}]));
        let body = chat_request(&a(Some("jsonSchema"), Some("none")), &[user("Paris")]).unwrap();
        assert_eq!(body["response_format"]["type"], json!("json_schema"));

        let mut r = a(Some("jsonObject"), None);
        r.model.as_mut().unwrap().api_type = Some("responses".into());
        let body = request_body(&r, &[sys, user("Paris")]).unwrap();
        assert_eq!(body["text"], json!({"format": {"type": "json_object"}}));
        assert!(body["instructions"].as_str().unwrap().contains("JSON Schema"));
    }

    #[test]
    fn tool_choice_per_api_and_unknown_names() {
        let a = |choice: Value, api: &str| {
            Agent::from_value(json!({"model": {"id": "m", "apiType": api, "options": {"toolChoice": choice}},
                "tools": [{"name": "get_weather", "kind": "function"}]}))
            .unwrap()
        };
        for (choice, chat, responses) in [
            (json!("auto"), json!("auto"), json!("auto")),
            (json!("none"), json!("none"), json!("none")),
            (json!("required"), json!("required"), json!("required")),
            (
                json!("get_weather"),
                json!({"type": "function", "function": {"name": "get_weather"}}),
                json!({"type": "function", "name": "get_weather"}),
            ),
        ] {
            assert_eq!(request_body(&a(choice.clone(), "chat"), &[user("Hi")]).unwrap()["tool_choice"], chat);
            assert_eq!(request_body(&a(choice, "responses"), &[user("Hi")]).unwrap()["tool_choice"], responses);
        }
        let err = request_body(&a(json!({"name": "get_wether"}), "chat"), &[user("Hi")]).unwrap_err();
        // Found before any request: a configuration error naming the setting, never retried.
        assert!(
            matches!(&err, crate::Error::Config { setting, .. } if setting == "model.options.toolChoice"),
            "{err:?}"
        );
        let err = err.to_string();
        assert!(err.contains("'get_wether'") && err.contains("get_weather"), "{err}");
        // Without tools: nothing is sent, but a named tool is still an error.
        let bare = agent(json!({"id": "m", "options": {"toolChoice": "required"}}));
        assert!(chat_request(&bare, &[user("Hi")]).unwrap().get("tool_choice").is_none());
        let bare = agent(json!({"id": "m", "options": {"toolChoice": "f"}}));
        assert!(chat_request(&bare, &[user("Hi")]).unwrap_err().to_string().contains("'f'"));
    }

    #[test]
    fn no_tools_means_no_tools_key_and_parallel_flag_only_with_tools() {
        let a = agent(json!({"id": "gpt-4", "options": {"allowMultipleToolCalls": false}}));
        let body = chat_request(&a, &[user("Hi")]).unwrap();
        assert!(body.get("tools").is_none());
        assert!(body.get("parallel_tool_calls").is_none());

        let a = Agent::from_value(json!({"model": {"id": "gpt-4", "options": {"allowMultipleToolCalls": false}},
            "tools": [{"name": "f", "kind": "function", "parameters": [{"name": "x", "kind": "string"}]}]}))
        .unwrap();
        let body = chat_request(&a, &[user("Hi")]).unwrap();
        assert_eq!(body["parallel_tool_calls"], json!(false));
        assert_eq!(body["tools"][0]["function"]["name"], json!("f"));
    }

    #[test]
    fn structured_output_is_strict() {
        let mut a = agent(json!({"id": "gpt-4"}));
        let mut address = Property::new("address", PropertyKind::Object);
        address.properties = Some(vec![Property::new("street", PropertyKind::String)]);
        a.outputs = Some(vec![Property::new("city", PropertyKind::String).required(), address]);
        let body = chat_request(&a, &[user("Hi")]).unwrap();
        let format = &body["response_format"];
        assert_eq!(format["type"], json!("json_schema"));
        assert_eq!(format["json_schema"]["name"], json!("structured_output"));
        assert_eq!(format["json_schema"]["strict"], json!(true));
        let schema = &format["json_schema"]["schema"];
        assert_eq!(schema["required"], json!(["city", "address"]));
        assert_eq!(schema["additionalProperties"], json!(false));
        assert_eq!(schema["properties"]["address"]["type"], json!(["object", "null"]));
        assert_eq!(schema["properties"]["address"]["additionalProperties"], json!(false));
        assert_eq!(schema["properties"]["address"]["properties"]["street"]["type"], json!(["string", "null"]));
    }

    #[test]
    fn tool_call_replays_come_out_in_the_openai_shape() {
        let a = agent(json!({"id": "gpt-4"}));
        let mut assistant = Message::new(Role::Assistant, "");
        assistant
            .insert_metadata(
                "tool_calls",
                json!([{"id": "c1", "name": "get_weather", "arguments": {"city": "Paris"}},
                   {"id": "c2", "type": "function", "function": {"name": "t", "arguments": "{}"}}]),
            )
            .unwrap();
        let mut tool = Message::new(Role::Tool, "sunny");
        tool.insert_metadata("tool_call_id", json!("c1")).unwrap();
        let body = chat_request(&a, &[user("Hi"), assistant, tool]).unwrap();
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "c2", "type": "function", "function": {"name": "t", "arguments": "{}"}}]})
        );
        assert_eq!(body["messages"][2], json!({"role": "tool", "tool_call_id": "c1", "content": "sunny"}));
    }

    #[test]
    fn images_of_tool_results_follow_the_tool_messages_in_a_user_message() {
        let a = agent(json!({"id": "gpt-4o"}));
        let calls = [ToolCall::new("c1", "img", "{}"), ToolCall::new("c2", "t", "{}")];
        let mut r1 = crate::ToolResult::ok("c1", "img", "a tiny image");
        r1.parts.push(ContentPart::Image { source: "iVBO".into(), detail: None, media_type: Some("image/png".into()) });
        let results = [r1, crate::ToolResult::ok("c2", "t", "done")];
        let round =
            crate::tool_messages(&crate::ToolRound { response: None, text: None, calls: &calls, results: &results });
        let mut msgs = vec![user("Hi")];
        msgs.extend(round);
        let body = chat_request(&a, &msgs).unwrap();
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent.len(), 5);
        assert_eq!(sent[2], json!({"role": "tool", "tool_call_id": "c1", "content": "a tiny image"}));
        assert_eq!(sent[3]["role"], "tool");
        assert_eq!(
            sent[4],
            json!({"role": "user", "content": [
                {"type": "text", "text": "Content returned by tool call c1:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}}]})
        );
    }

    #[test]
    fn images_of_tool_results_go_in_the_function_call_output_for_responses() {
        let a = agent(json!({"id": "gpt-4o", "apiType": "responses"}));
        let calls = [ToolCall::new("c1", "img", "{}")];
        let mut r = crate::ToolResult::ok("c1", "img", "a tiny image");
        r.parts.push(ContentPart::Image { source: "iVBO".into(), detail: None, media_type: Some("image/png".into()) });
        let mut msgs = vec![user("Hi")];
        msgs.extend(crate::tool_messages(&crate::ToolRound {
            response: None,
            text: None,
            calls: &calls,
            results: &[r],
        }));
        let body = responses_request(&a, &msgs).unwrap();
        assert_eq!(
            body["input"][2],
            json!({"type": "function_call_output", "call_id": "c1", "output": [
                {"type": "input_text", "text": "a tiny image"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBO"}]})
        );
    }

    #[test]
    fn other_metadata_is_passed_through() {
        let a = agent(json!({"id": "gpt-4"}));
        let mut m = user("Hi");
        m.metadata.insert("name".into(), json!("Bob"));
        let body = chat_request(&a, &[m]).unwrap();
        assert_eq!(body["messages"][0], json!({"role": "user", "name": "Bob", "content": "Hi"}));
    }

    #[test]
    fn embedding_and_image_bodies() {
        let a = agent(json!({"id": "e", "apiType": "embedding"}));
        assert_eq!(request_body(&a, &[user("x")]).unwrap(), json!({"model": "e", "input": "x"}));
        let a = agent(json!({"id": "d", "apiType": "image"}));
        let body = request_body(&a, &[user("first"), Message::new(Role::Assistant, "ok"), user("last")]).unwrap();
        assert_eq!(body, json!({"model": "d", "prompt": "last"}));
        assert_eq!(image_request(&a, &[Message::new(Role::System, "s")]).unwrap()["prompt"], json!(""));
    }

    #[test]
    fn unknown_api_type_and_missing_model_are_errors() {
        let a = agent(json!({"id": "x", "apiType": "speech"}));
        assert!(request_body(&a, &[]).unwrap_err().to_string().contains("speech"));
        assert!(chat_request(&Agent::default(), &[]).is_err());
    }

    #[test]
    fn responses_moves_system_to_instructions_and_replays_calls() {
        let a = Agent::from_value(json!({"model": {"id": "gpt-4o", "apiType": "responses"},
            "tools": [{"name": "f", "kind": "function", "description": "F", "strict": true,
                       "parameters": [{"name": "x", "kind": "string", "required": true}]}],
            "outputs": [{"name": "city", "kind": "string"}]}))
        .unwrap();
        let mut assistant = Message::new(Role::Assistant, "");
        assistant
            .insert_metadata("tool_calls", json!([{"id": "c1", "name": "f", "arguments": "{\"x\":\"1\"}"}]))
            .unwrap();
        let mut tool = Message::new(Role::Tool, "done");
        tool.insert_metadata("tool_call_id", json!("c1")).unwrap();
        let msgs = [Message::new(Role::System, "A"), Message::new(Role::Developer, "B"), user("Hi"), assistant, tool];
        let body = responses_request(&a, &msgs).unwrap();
        assert_eq!(body["instructions"], json!("A\n\nB"));
        assert_eq!(
            body["input"],
            json!([{"role": "user", "content": "Hi"},
                   {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\":\"1\"}"},
                   {"type": "function_call_output", "call_id": "c1", "output": "done"}])
        );
        assert_eq!(body["tools"][0]["strict"], json!(true));
        assert_eq!(body["tools"][0]["name"], json!("f"));
        assert_eq!(body["text"]["format"]["schema"]["properties"]["city"]["type"], json!(["string", "null"]));
    }

    #[test]
    fn responses_replays_function_call_items_from_metadata() {
        let a = agent(json!({"id": "gpt-4o", "apiType": "responses"}));
        let mut tool = Message::new(Role::Tool, "72F");
        tool.metadata.insert(
            "responses_function_call".into(),
            json!({"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": "{}"}),
        );
        tool.insert_metadata("tool_call_id", json!("call_1")).unwrap();
        let body = responses_request(&a, &[tool]).unwrap();
        assert_eq!(
            body["input"],
            json!([{"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": "{}"},
                   {"type": "function_call_output", "call_id": "call_1", "output": "72F"}])
        );
    }

    #[test]
    fn a_responses_tool_round_replays_the_output_items_then_the_outputs() {
        let a = agent(json!({"id": "o4-mini", "apiType": "responses"}));
        let raw = json!({"output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "w", "arguments": "{}"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "w", "arguments": "{}"}]});
        let calls = [ToolCall::new("call_1", "w", "{}"), ToolCall::new("call_2", "w", "{}")];
        let results = [crate::ToolResult::ok("call_1", "w", "a"), crate::ToolResult::error("call_2", "w", "Error: x")];
        let round = crate::ToolRound { response: Some(&raw), text: None, calls: &calls, results: &results };
        let mut msgs = vec![user("Hi")];
        msgs.extend(tool_messages(&a, &round).unwrap());
        let body = responses_request(&a, &msgs).unwrap();
        let mut want = vec![json!({"role": "user", "content": "Hi"})];
        want.extend(raw["output"].as_array().unwrap().iter().cloned());
        want.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "a"}));
        want.push(json!({"type": "function_call_output", "call_id": "call_2", "output": "Error: x"}));
        assert_eq!(body["input"], json!(want));
    }

    #[test]
    fn private_metadata_never_becomes_a_message_field() {
        let a = agent(json!({"id": "gpt-4"}));
        let calls = [ToolCall::new("c1", "w", "{}")];
        let results = [crate::ToolResult::error("c1", "w", "Error: Tool 'w' failed: down")];
        let raw = json!({"choices": [{"message": {"content": null, "tool_calls": []}}]});
        let round = crate::ToolRound { response: Some(&raw), text: None, calls: &calls, results: &results };
        let body = chat_request(&a, &tool_messages(&a, &round).unwrap()).unwrap();
        assert_eq!(body["messages"][0]["content"], "");
        assert_eq!(
            body["messages"][1],
            json!({"role": "tool", "tool_call_id": "c1", "content": "Error: Tool 'w' failed: down"})
        );
    }

    #[test]
    fn responses_parts_use_input_types() {
        let m =
            Message::with_content(Role::User, vec![ContentPart::text("see"), ContentPart::image("https://x/a.png")]);
        assert_eq!(
            responses_content(&m),
            json!([{"type": "input_text", "text": "see"}, {"type": "input_image", "image_url": "https://x/a.png"}])
        );
    }

    #[test]
    fn data_uris_split() {
        assert_eq!(split_data_uri("data:image/png;base64,AAA"), Some(("image/png", "AAA")));
        assert_eq!(split_data_uri("data:text/plain,hi"), None);
        assert_eq!(split_data_uri("https://x"), None);
    }
}
