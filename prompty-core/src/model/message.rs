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
/// The `kind` discriminator is closed and case-sensitive: any other kind (`video`, `Text`) is an
/// error naming it, never a part kept as written.
///
/// ```
/// use prompty_core::ContentPart;
/// let p: ContentPart = serde_json::from_value(serde_json::json!(
///     {"kind": "image", "value": "https://x/cat.png"})).unwrap();
/// assert_eq!(p, ContentPart::image("https://x/cat.png"));
/// let err = serde_json::from_value::<ContentPart>(serde_json::json!({"kind": "Text", "value": "x"}));
/// assert!(err.unwrap_err().to_string().contains("`kind` is `Text`"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
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
        source: String,
        /// `auto`, `low` or `high`.
        #[serde(skip_serializing_if = "Option::is_none")]
        detail: Option<String>,
        /// Such as `image/png`.
        #[serde(rename = "mediaType", skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// A file: a URL or a `data:` URI.
    File {
        /// URL or data URI.
        source: String,
        /// Such as `application/pdf`.
        #[serde(rename = "mediaType", skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// Audio: a URL, a `data:` URI or base64 data.
    Audio {
        /// URL, data URI or base64.
        source: String,
        /// Such as `audio/wav`.
        #[serde(rename = "mediaType", skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

/// The fields of a text part.
#[derive(Deserialize)]
struct TextFields {
    value: String,
}

/// The fields of an image, file or audio part (`detail` is only kept for images).
#[derive(Deserialize)]
struct SourceFields {
    #[serde(alias = "value", alias = "url")]
    source: String,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default, rename = "mediaType")]
    media_type: Option<String>,
}

impl<'de> Deserialize<'de> for ContentPart {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let mut fields = Map::<String, Value>::deserialize(d)?;
        let kind = match fields.remove("kind") {
            Some(Value::String(kind)) => kind,
            Some(other) => {
                return Err(D::Error::custom(format!("a content part's `kind` must be a string, found {other}")))
            }
            None => return Err(D::Error::missing_field("kind")),
        };
        let fields = Value::Object(fields);
        let source = |fields: Value| SourceFields::deserialize(fields).map_err(D::Error::custom);
        Ok(match kind.as_str() {
            "text" => ContentPart::Text { value: TextFields::deserialize(fields).map_err(D::Error::custom)?.value },
            "image" => {
                let f = source(fields)?;
                ContentPart::Image { source: f.source, detail: f.detail, media_type: f.media_type }
            }
            "file" => {
                let f = source(fields)?;
                ContentPart::File { source: f.source, media_type: f.media_type }
            }
            "audio" => {
                let f = source(fields)?;
                ContentPart::Audio { source: f.source, media_type: f.media_type }
            }
            _ => {
                return Err(D::Error::custom(format!(
                    "unknown content part kind: `kind` is `{kind}`, expected one of `text`, `image`, `file`, `audio` \
                     (kinds are case-sensitive)"
                )))
            }
        })
    }
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
    use serde::de::Error as _;
    // Through a value, so that a bad part's own error (an unknown `kind`, a missing field) reaches
    // the caller instead of a generic "did not match any variant".
    match Value::deserialize(d)? {
        Value::String(s) => Ok(vec![ContentPart::text(s)]),
        Value::Array(items) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| ContentPart::deserialize(item).map_err(|e| D::Error::custom(format!("content[{i}]: {e}"))))
            .collect(),
        other => Err(D::Error::custom(format!(
            "a message's content must be a string or a list of content parts, found {other}"
        ))),
    }
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
