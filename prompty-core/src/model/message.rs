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

/// A chat message: a role, content parts, the tool calls it carries, and metadata (role-marker
/// attributes, provider replay data...).
///
/// In JSON: `{"role": "user", "content": [...], "metadata"?: {...}}`. On input, `content` may also
/// be a plain string, and `parts` is accepted for `content`. The typed fields live inside
/// `metadata` in JSON, as the spec writes them: [`Message::tool_calls`] is `metadata.tool_calls`
/// (written in the OpenAI shape `{id, type: "function", function: {name, arguments}}`; read in
/// that shape or flat `{id, name, arguments}`, `arguments` a JSON string or a value that is
/// serialized), and [`Message::tool_call_id`] is `metadata.tool_call_id`. The `metadata` map never
/// holds those two keys: reading a message moves them into the typed fields, and keys set there by
/// hand are neither serialized nor sent.
///
/// ```
/// use prompty_core::{Message, Role, ToolCall};
/// let m: Message = serde_json::from_value(serde_json::json!({"role": "user", "content": "Hi"})).unwrap();
/// assert_eq!(m, Message::new(Role::User, "Hi"));
/// assert_eq!(m.text(), "Hi");
///
/// let asked = serde_json::json!({"role": "assistant", "content": "", "metadata": {"tool_calls": [
///     {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}]}});
/// let m: Message = serde_json::from_value(asked.clone()).unwrap();
/// assert_eq!(m.tool_calls, [ToolCall::new("c1", "now", "{}")]);
/// assert!(m.metadata.is_empty());
/// assert_eq!(serde_json::to_value(&m).unwrap()["metadata"], asked["metadata"]);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    pub content: Vec<ContentPart>,
    /// The tools the model asked for, in order (an assistant message of a tool round).
    pub tool_calls: Vec<ToolCall>,
    /// The id of the call a `tool` message answers.
    pub tool_call_id: Option<String>,
    /// Other attributes of the message (from `role[key=value]:` markers, provider replay data, ...).
    pub metadata: Map<String, Value>,
}

/// The metadata keys that are typed fields of [`Message`].
const TYPED_KEYS: [&str; 2] = ["tool_calls", "tool_call_id"];

impl Message {
    /// A message with one text part.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message::with_content(role, vec![ContentPart::text(text)])
    }

    /// A message with these parts, no tool calls and no metadata.
    ///
    /// ```
    /// use prompty_core::{ContentPart, Message, Role};
    /// let m = Message::with_content(Role::User, vec![ContentPart::image("https://x/cat.png")]);
    /// assert!(m.text().is_empty() && m.tool_calls.is_empty() && m.metadata.is_empty());
    /// ```
    pub fn with_content(role: Role, content: Vec<ContentPart>) -> Self {
        Message { role, content, tool_calls: Vec::new(), tool_call_id: None, metadata: Map::new() }
    }

    /// A message from its role, parts and metadata as JSON holds them: `metadata.tool_calls` and
    /// `metadata.tool_call_id` become the typed fields (what deserializing does). An error says
    /// which entry cannot be read.
    ///
    /// ```
    /// use prompty_core::{ContentPart, Message, Role};
    /// let mut metadata = serde_json::Map::new();
    /// metadata.insert("tool_call_id".into(), "c1".into());
    /// metadata.insert("name".into(), "clock".into());
    /// let m = Message::from_metadata(Role::Tool, vec![ContentPart::text("12:00")], metadata).unwrap();
    /// assert_eq!(m.tool_call_id.as_deref(), Some("c1"));
    /// assert_eq!(m.metadata.len(), 1);
    /// ```
    pub fn from_metadata(role: Role, content: Vec<ContentPart>, metadata: Map<String, Value>) -> Result<Self, String> {
        if !has_typed_keys(&metadata) {
            // The common case: no typed entry, the map is kept as it is (no entry hashed again).
            return Ok(Message { role, content, tool_calls: Vec::new(), tool_call_id: None, metadata });
        }
        let mut m = Message::with_content(role, content);
        for (key, value) in metadata {
            m.insert_metadata(key, value)?;
        }
        Ok(m)
    }

    /// Sets one entry of the message's metadata as JSON holds it: `tool_calls` (a list in the
    /// OpenAI shape or flat, `null` for none) and `tool_call_id` (a string or a number, `null` for
    /// none) set the typed fields, any other key goes to [`Message::metadata`]. An error says why
    /// the value cannot be read.
    ///
    /// ```
    /// use prompty_core::{Message, Role, ToolCall};
    /// let mut m = Message::new(Role::Assistant, "");
    /// m.insert_metadata("tool_calls", serde_json::json!([{"id": "c1", "name": "now", "arguments": {}}]))?;
    /// assert_eq!(m.tool_calls, [ToolCall::new("c1", "now", "{}")]);
    /// assert!(m.insert_metadata("tool_calls", serde_json::json!("now")).is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn insert_metadata(&mut self, key: impl Into<String>, value: Value) -> Result<(), String> {
        let key = key.into();
        let role = self.role;
        match key.as_str() {
            "tool_calls" => {
                self.tool_calls = tool_calls_from_value(&value)
                    .map_err(|why| format!("{role} message: metadata.tool_calls {why}"))?;
            }
            "tool_call_id" => {
                self.tool_call_id = match value {
                    Value::Null => None,
                    Value::String(id) => Some(id),
                    Value::Number(n) => Some(n.to_string()),
                    other => {
                        return Err(format!("{role} message: metadata.tool_call_id must be a string, found {other}"))
                    }
                };
            }
            _ => {
                self.metadata.insert(key, value);
            }
        }
        Ok(())
    }

    /// The concatenated text of the text parts.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(ContentPart::as_text).collect()
    }

    /// The message's `metadata` as JSON writes it: the typed fields first (`tool_calls` in the
    /// OpenAI shape, `tool_call_id`), then the other attributes.
    ///
    /// ```
    /// use prompty_core::{Message, Role, ToolCall};
    /// let m = Message { tool_calls: vec![ToolCall::new("c1", "now", "{}")], ..Message::new(Role::Assistant, "") };
    /// let json = serde_json::to_value(m.metadata_json()).unwrap();
    /// assert_eq!(json["tool_calls"][0]["function"]["name"], "now");
    /// ```
    pub fn metadata_json(&self) -> impl Serialize + '_ {
        MetadataOf(self)
    }

    /// Whether the message has metadata in JSON: tool calls, a tool call id or other attributes.
    pub fn has_metadata(&self) -> bool {
        !self.tool_calls.is_empty() || self.tool_call_id.is_some() || self.metadata.keys().any(|k| !is_typed_key(k))
    }
}

fn is_typed_key(k: &str) -> bool {
    TYPED_KEYS.contains(&k)
}

/// The calls of `metadata.tool_calls`: a list in the OpenAI shape or flat, `null` for none.
fn tool_calls_from_value(calls: &Value) -> Result<Vec<ToolCall>, &'static str> {
    let items = match calls {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        _ => return Err("must be a list"),
    };
    items
        .iter()
        .map(|item| {
            let f = item.get("function").filter(|f| f.is_object()).unwrap_or(item);
            let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
            let id = text(item.get("id")).or_else(|| text(item.get("call_id"))).unwrap_or_default();
            let name = text(f.get("name")).ok_or("has an entry without `name`")?;
            let arguments = match f.get("arguments") {
                None | Some(Value::Null) => "{}".to_owned(),
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            };
            Ok(ToolCall { id, name, arguments })
        })
        .collect()
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("role", &self.role)?;
        map.serialize_entry("content", &self.content)?;
        if self.has_metadata() {
            map.serialize_entry("metadata", &MetadataOf(self))?;
        }
        map.end()
    }
}

/// The JSON `metadata` of a message: the typed fields first, then the other attributes.
struct MetadataOf<'a>(&'a Message);

impl Serialize for MetadataOf<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Function<'a>(&'a ToolCall);
        impl Serialize for Function<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(2))?;
                map.serialize_entry("name", &self.0.name)?;
                map.serialize_entry("arguments", &self.0.arguments)?;
                map.end()
            }
        }
        struct Call<'a>(&'a ToolCall);
        impl Serialize for Call<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let mut map = serializer.serialize_map(Some(3))?;
                map.serialize_entry("id", &self.0.id)?;
                map.serialize_entry("type", "function")?;
                map.serialize_entry("function", &Function(self.0))?;
                map.end()
            }
        }
        let m = self.0;
        let mut map = serializer.serialize_map(None)?;
        if !m.tool_calls.is_empty() {
            let calls: Vec<Call<'_>> = m.tool_calls.iter().map(Call).collect();
            map.serialize_entry("tool_calls", &calls)?;
        }
        if let Some(id) = &m.tool_call_id {
            map.serialize_entry("tool_call_id", id)?;
        }
        for (k, v) in m.metadata.iter().filter(|(k, _)| !is_typed_key(k)) {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The fields of a message as JSON holds them.
#[derive(Deserialize)]
struct MessageFields {
    role: Role,
    #[serde(alias = "parts", deserialize_with = "content_from_value")]
    content: Vec<ContentPart>,
    #[serde(default)]
    metadata: Map<String, Value>,
}

/// Whether a metadata map holds an entry that is a typed field of [`Message`].
pub(crate) fn has_typed_keys(metadata: &Map<String, Value>) -> bool {
    !metadata.is_empty() && (metadata.contains_key("tool_calls") || metadata.contains_key("tool_call_id"))
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        let f = MessageFields::deserialize(d)?;
        Message::from_metadata(f.role, f.content, f.metadata).map_err(D::Error::custom)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON of typed fields is byte for byte the metadata the messages held before the fields
    /// were typed (the shape `tool_messages` wrote and providers replay), other keys after them.
    #[test]
    fn typed_fields_round_trip_to_the_same_json_bytes() {
        let text = r#"[{"role":"assistant","content":[{"kind":"text","value":""}],"metadata":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}],"responses_output":[]}},{"role":"tool","content":[{"kind":"text","value":"ok"}],"metadata":{"tool_call_id":"c1","is_error":true}},{"role":"user","content":[{"kind":"text","value":"hi"}]}]"#;
        let messages: Vec<Message> = serde_json::from_str(text).unwrap();
        assert_eq!(messages[0].tool_calls, [ToolCall::new("c1", "f", "{\"a\":1}")]);
        assert_eq!(messages[1].tool_call_id.as_deref(), Some("c1"));
        assert!(!messages[0].metadata.contains_key("tool_calls") && !messages[1].metadata.contains_key("tool_call_id"));
        assert!(!messages[2].has_metadata());
        assert_eq!(serde_json::to_string(&messages).unwrap(), text);
    }

    #[test]
    fn flat_calls_are_read_and_bad_ones_are_errors_naming_the_field() {
        let flat = serde_json::json!({"role": "assistant", "content": "", "metadata": {"tool_calls": [
            {"call_id": "c2", "name": "g", "arguments": {"x": 1}}, {"id": "c3", "name": "h"}]}});
        let m: Message = serde_json::from_value(flat).unwrap();
        assert_eq!(m.tool_calls, [ToolCall::new("c2", "g", "{\"x\":1}"), ToolCall::new("c3", "h", "{}")]);
        let bad = serde_json::json!({"role": "assistant", "content": "", "metadata": {"tool_calls": "f"}});
        let err = serde_json::from_value::<Message>(bad).unwrap_err().to_string();
        assert!(err.contains("metadata.tool_calls must be a list"), "{err}");
        let bad = serde_json::json!({"role": "tool", "content": "", "metadata": {"tool_call_id": [1]}});
        assert!(serde_json::from_value::<Message>(bad).is_err());
        let none =
            serde_json::json!({"role": "tool", "content": "", "metadata": {"tool_calls": null, "tool_call_id": null}});
        assert!(!serde_json::from_value::<Message>(none).unwrap().has_metadata());
    }
}
