//! What the parser produces and providers consume: [`Message`], [`Role`] and [`ContentPart`].

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// The author of a message.
///
/// ```
/// use prompty_core::Role;
/// assert_eq!(Role::parse("Developer"), Some(Role::Developer));
/// assert_eq!(Role::User.as_str(), "user");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the prompt author.
    System,
    /// Instructions from the prompt author (newer OpenAI models' name for `system`).
    Developer,
    /// The end user.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

impl Role {
    /// The role as written (`system`, `user`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Reads a role name, ignoring ASCII case.
    pub fn parse(s: &str) -> Option<Role> {
        [Role::System, Role::Developer, Role::User, Role::Assistant, Role::Tool]
            .into_iter()
            .find(|r| r.as_str().eq_ignore_ascii_case(s))
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One part of a message's content.
///
/// In JSON a part is `{"kind": "text", "value": "..."}` or `{"kind": "image", "source": "...",
/// "mediaType"?, "detail"?}` (likewise `file` and `audio`); `value` is accepted for `source`.
///
/// ```
/// use prompty_core::ContentPart;
/// let p: ContentPart = serde_json::from_value(serde_json::json!(
///     {"kind": "image", "value": "https://x/cat.png"})).unwrap();
/// assert_eq!(p, ContentPart::image("https://x/cat.png"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        value: String,
    },
    /// An image: a URL or a `data:` URI.
    Image {
        /// URL or data URI.
        #[serde(alias = "value", alias = "url")]
        source: String,
        /// `auto`, `low` or `high`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// Such as `image/png`.
        #[serde(default, rename = "mediaType", skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// A file: a URL or a `data:` URI.
    File {
        /// URL or data URI.
        #[serde(alias = "value", alias = "url")]
        source: String,
        /// Such as `application/pdf`.
        #[serde(default, rename = "mediaType", skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// Audio: a URL, a `data:` URI or base64 data.
    Audio {
        /// URL, data URI or base64.
        #[serde(alias = "value", alias = "url")]
        source: String,
        /// Such as `audio/wav`.
        #[serde(default, rename = "mediaType", skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(value: impl Into<String>) -> Self {
        ContentPart::Text { value: value.into() }
    }

    /// An image part from a URL or data URI.
    pub fn image(source: impl Into<String>) -> Self {
        ContentPart::Image { source: source.into(), detail: None, media_type: None }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentPart::Text { value } => Some(value),
            _ => None,
        }
    }
}

/// A chat message: a role, content parts, and metadata (role-marker attributes, tool call ids...).
///
/// In JSON: `{"role": "user", "content": [...], "metadata"?: {...}}`. On input, `content` may also
/// be a plain string, and `parts` is accepted for `content`.
///
/// ```
/// use prompty_core::{Message, Role};
/// let m: Message = serde_json::from_value(serde_json::json!({"role": "user", "content": "Hi"})).unwrap();
/// assert_eq!(m, Message::new(Role::User, "Hi"));
/// assert_eq!(m.text(), "Hi");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    #[serde(alias = "parts", deserialize_with = "content_from_value")]
    pub content: Vec<ContentPart>,
    /// Attributes of the message (from `role[key=value]:` markers, tool call ids, ...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

impl Message {
    /// A message with one text part.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message { role, content: vec![ContentPart::text(text)], metadata: Map::new() }
    }

    /// The concatenated text of the text parts.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentPart::as_text).collect()
    }
}

fn content_from_value<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ContentPart>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Content {
        Text(String),
        Parts(Vec<ContentPart>),
    }
    Ok(match Content::deserialize(d)? {
        Content::Text(s) => vec![ContentPart::text(s)],
        Content::Parts(p) => p,
    })
}

/// A call of a tool requested by the model. `arguments` is always a JSON string, as the model sent it.
///
/// ```
/// let call = prompty_core::ToolCall::new("call_1", "get_weather", r#"{"city":"Paris"}"#);
/// assert_eq!(call.arguments_value().unwrap()["city"], "Paris");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of the call.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON object as a string.
    pub arguments: String,
}

impl ToolCall {
    /// A tool call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: impl Into<String>) -> Self {
        ToolCall { id: id.into(), name: name.into(), arguments: arguments.into() }
    }

    /// The arguments parsed as JSON (an empty string is an empty object).
    pub fn arguments_value(&self) -> Result<Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(Value::Object(Map::new()));
        }
        serde_json::from_str(&self.arguments)
    }
}
