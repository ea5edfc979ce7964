//! The messages one round of tool calling adds to a conversation (spec §9.4, §9.5): what the model
//! asked for and what the tools answered. Each executor builds them in its provider's shape
//! ([`crate::Executor::format_tool_messages`]); this module holds the shared types and the
//! provider-neutral shape the wire builders of every provider read.

use crate::{ContentPart, Message, Role, ToolCall};
use serde_json::{json, Value};

/// What one tool call returned, as the model will read it.
///
/// ```
/// let r = prompty::ToolResult::ok("call_1", "get_weather", "21°C");
/// assert!(!r.is_error);
/// let e = prompty::ToolResult::error("call_2", "get_weather", "Error: Tool 'get_weather' failed: timeout");
/// assert!(e.is_error);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    /// The id of the call it answers.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The result as text (a JSON result serialized compactly).
    pub output: String,
    /// Whether the call failed (the output then says why).
    pub is_error: bool,
    /// Content the tool attached beside its text (images an MCP tool returned), sent to the model
    /// after the text.
    pub parts: Vec<ContentPart>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(id: impl Into<String>, name: impl Into<String>, output: impl Into<String>) -> Self {
        ToolResult { id: id.into(), name: name.into(), output: output.into(), is_error: false, parts: Vec::new() }
    }

    /// A failed call, with the text the model reads about it.
    pub fn error(id: impl Into<String>, name: impl Into<String>, output: impl Into<String>) -> Self {
        ToolResult { id: id.into(), name: name.into(), output: output.into(), is_error: true, parts: Vec::new() }
    }
}

/// One round of tool calling: the model's response that asked for tools, and the results.
///
/// ```
/// use prompty::{ToolCall, ToolResult, ToolRound};
/// let calls = [ToolCall::new("c1", "get_weather", r#"{"city":"Paris"}"#)];
/// let results = [ToolResult::ok("c1", "get_weather", "sunny")];
/// let round = ToolRound { response: None, text: None, calls: &calls, results: &results };
/// assert_eq!(prompty::tool_messages(&round).len(), 2);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ToolRound<'a> {
    /// The provider's raw response, when the model call was not streamed.
    pub response: Option<&'a Value>,
    /// The text the model wrote beside its calls, when the loop knows it (a streamed response);
    /// otherwise an executor reads it from `response`.
    pub text: Option<&'a str>,
    /// The calls, in the order the model made them.
    pub calls: &'a [ToolCall],
    /// Their results, in the same order.
    pub results: &'a [ToolResult],
}

/// The provider-neutral messages of a round, which every wire builder of prompty reads: an
/// `assistant` message with the text the model wrote (`""` for none) and the calls in
/// [`Message::tool_calls`] (in JSON `metadata.tool_calls`, in the OpenAI shape `{id, type:
/// "function", function: {name, arguments}}`), then one `tool` message per result, in call order,
/// with [`Message::tool_call_id`] (and `metadata.is_error: true` for a failed call). The default of
/// [`crate::Executor::format_tool_messages`].
///
/// ```
/// use prompty::{Role, ToolCall, ToolResult, ToolRound};
/// let calls = [ToolCall::new("c1", "get_weather", r#"{"city":"Paris"}"#)];
/// let results = [ToolResult::ok("c1", "get_weather", "sunny")];
/// let msgs = prompty::tool_messages(&ToolRound { response: None, text: None, calls: &calls, results: &results });
/// assert_eq!(msgs[0].role, Role::Assistant);
/// assert_eq!(msgs[0].tool_calls, calls);
/// assert_eq!((msgs[1].role, msgs[1].text()), (Role::Tool, "sunny".to_owned()));
/// assert_eq!(msgs[1].tool_call_id.as_deref(), Some("c1"));
/// // In JSON, as the spec writes them:
/// let json = serde_json::to_value(&msgs).unwrap();
/// assert_eq!(json[0]["metadata"]["tool_calls"][0]["function"]["name"], "get_weather");
/// assert_eq!(json[1]["metadata"]["tool_call_id"], "c1");
/// ```
pub fn tool_messages(round: &ToolRound<'_>) -> Vec<Message> {
    let mut out = Vec::with_capacity(round.results.len() + 1);
    out.push(assistant_calls(round.text.unwrap_or(""), round.calls));
    out.extend(round.results.iter().map(tool_message));
    out
}

/// The assistant message of a round: its text and the calls.
pub(crate) fn assistant_calls(text: &str, calls: &[ToolCall]) -> Message {
    Message { tool_calls: calls.to_vec(), ..Message::new(Role::Assistant, text) }
}

/// The `tool` message of one result.
pub(crate) fn tool_message(r: &ToolResult) -> Message {
    let mut m = Message::new(Role::Tool, r.output.as_str());
    m.content.extend(r.parts.iter().cloned());
    m.tool_call_id = Some(r.id.clone());
    if r.is_error {
        m.metadata.insert("is_error".into(), json!(true));
    }
    m
}
