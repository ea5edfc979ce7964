//! Inputs and outputs: [`Property`] and its [`PropertyKind`].

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// The kind of a [`Property`]: the simple JSON kinds, the rich kinds that never reach the template
/// engine raw (`thread`, `image`, `file`, `audio`), or any other kind, kept as written.
///
/// ```
/// use prompty_core::PropertyKind;
/// assert_eq!(PropertyKind::from("thread"), PropertyKind::Thread);
/// assert!(PropertyKind::Image.is_rich());
/// assert_eq!(PropertyKind::from("geo").as_str(), "geo");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum PropertyKind {
    /// `string`
    #[default]
    String,
    /// `integer`
    Integer,
    /// `float` (JSON `number`)
    Float,
    /// `boolean`
    Boolean,
    /// `array`, described by [`Property::items`]
    Array,
    /// `object`, described by [`Property::properties`]
    Object,
    /// `union`, described by [`Property::one_of`] or [`Property::any_of`]
    Union,
    /// `thread`: a conversation spliced into the messages with its own roles
    Thread,
    /// `image`: becomes an image content part
    Image,
    /// `file`: becomes a file content part
    File,
    /// `audio`: becomes an audio content part
    Audio,
    /// Any other kind, kept as written.
    Other(String),
}

impl PropertyKind {
    /// The kind as it is written in a `.prompty` file.
    pub fn as_str(&self) -> &str {
        match self {
            PropertyKind::String => "string",
            PropertyKind::Integer => "integer",
            PropertyKind::Float => "float",
            PropertyKind::Boolean => "boolean",
            PropertyKind::Array => "array",
            PropertyKind::Object => "object",
            PropertyKind::Union => "union",
            PropertyKind::Thread => "thread",
            PropertyKind::Image => "image",
            PropertyKind::File => "file",
            PropertyKind::Audio => "audio",
            PropertyKind::Other(s) => s,
        }
    }

    /// Whether values of this kind are replaced by a nonce before rendering (thread, image, file, audio).
    pub fn is_rich(&self) -> bool {
        matches!(self, PropertyKind::Thread | PropertyKind::Image | PropertyKind::File | PropertyKind::Audio)
    }

    /// The kind a default value implies (the scalar shorthand `name: value`).
    pub fn infer(value: &Value) -> PropertyKind {
        match value {
            Value::Bool(_) => PropertyKind::Boolean,
            Value::Number(n) if n.is_f64() => PropertyKind::Float,
            Value::Number(_) => PropertyKind::Integer,
            Value::Array(_) => PropertyKind::Array,
            Value::Object(_) => PropertyKind::Object,
            Value::String(_) | Value::Null => PropertyKind::String,
        }
    }
}

impl From<&str> for PropertyKind {
    fn from(s: &str) -> Self {
        match s {
            "string" => PropertyKind::String,
            "integer" => PropertyKind::Integer,
            "float" | "number" => PropertyKind::Float,
            "boolean" => PropertyKind::Boolean,
            "array" => PropertyKind::Array,
            "object" => PropertyKind::Object,
            "union" => PropertyKind::Union,
            "thread" => PropertyKind::Thread,
            "image" => PropertyKind::Image,
            "file" => PropertyKind::File,
            "audio" => PropertyKind::Audio,
            other => PropertyKind::Other(other.to_owned()),
        }
    }
}

impl Serialize for PropertyKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PropertyKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(PropertyKind::from(s.as_ref()))
    }
}

/// One input or output of a prompt (or a parameter of a function tool).
///
/// In a `.prompty` file a property is written as a mapping (`{name, kind, ...}` in a list, or
/// `name: {kind, ...}` in a map), or as the scalar shorthand `name: value`, which means
/// `{kind: <inferred>, default: value}`.
///
/// ```
/// use prompty_core::{Property, PropertyKind};
/// let p = Property::new("city", PropertyKind::String).required();
/// assert_eq!(serde_json::to_value(&p).unwrap(),
///            serde_json::json!({"name": "city", "kind": "string", "required": true}));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// The name, used as the template variable.
    #[serde(default)]
    pub name: String,
    /// The kind of value.
    #[serde(default)]
    pub kind: PropertyKind,
    /// Free text for humans and for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether a value must be given (when there is no default).
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Whether `null` is an allowed value.
    #[serde(default, skip_serializing_if = "is_false")]
    pub nullable: bool,
    /// The value used when none is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// An example value, for documentation only: never used as a value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub example: Option<Value>,
    /// The allowed values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enum_values: Option<Vec<Value>>,
    /// For `array`: the kind of the elements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Box<Property>>,
    /// For `object`: the fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<Vec<Property>>,
    /// For `union`: exactly one of the alternatives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<Property>>,
    /// For `union`: any of the alternatives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any_of: Option<Vec<Property>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Property {
    /// A property with a name and a kind, optional, with no default.
    pub fn new(name: impl Into<String>, kind: PropertyKind) -> Self {
        Property { name: name.into(), kind, ..Property::default() }
    }

    /// The same property, marked required.
    pub fn required(mut self) -> Self {
        self.required = true;
        self
    }

    /// The same property, with a default value.
    pub fn with_default(mut self, value: Value) -> Self {
        self.default = Some(value);
        self
    }
}
