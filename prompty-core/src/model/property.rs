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
/// In JSON, a member of a collection (`inputs`, `outputs`, `parameters`, `properties`) always has
/// its `name`, even an empty one; the nameless properties that describe a type (`items`, the
/// alternatives of `oneOf`/`anyOf`) have none unless one was given.
///
/// ```
/// use prompty_core::{Property, PropertyKind};
/// let mut p = Property::new("city", PropertyKind::String).required();
/// assert_eq!(serde_json::to_value(&p).unwrap(),
///            serde_json::json!({"name": "city", "kind": "string", "required": true}));
/// p.kind = PropertyKind::Array;
/// p.items = Some(Box::new(Property::new("", PropertyKind::String)));
/// assert_eq!(serde_json::to_value(&p).unwrap()["items"], serde_json::json!({"kind": "string"}));
/// ```
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Property {
    /// The name, used as the template variable.
    #[serde(default)]
    pub name: String,
    /// The kind of value.
    #[serde(default)]
    pub kind: PropertyKind,
    /// Free text for humans and for the model.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether a value must be given (when there is no default).
    #[serde(default)]
    pub required: bool,
    /// Whether `null` is an allowed value.
    #[serde(default)]
    pub nullable: bool,
    /// The value used when none is given.
    #[serde(default)]
    pub default: Option<Value>,
    /// An example value, for documentation only: never used as a value.
    #[serde(default)]
    pub example: Option<Value>,
    /// The allowed values.
    #[serde(default)]
    pub enum_values: Option<Vec<Value>>,
    /// For `array`: the kind of the elements.
    #[serde(default)]
    pub items: Option<Box<Property>>,
    /// For `object`: the fields.
    #[serde(default)]
    pub properties: Option<Vec<Property>>,
    /// For `union`: exactly one of the alternatives.
    #[serde(default)]
    pub one_of: Option<Vec<Property>>,
    /// For `union`: any of the alternatives.
    #[serde(default)]
    pub any_of: Option<Vec<Property>>,
}

/// How a [`Property`] serializes: borrowed fields, with `name` left out for the nameless
/// properties that describe a type.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PropertyJson<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    kind: &'a PropertyKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    required: bool,
    #[serde(skip_serializing_if = "is_false")]
    nullable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    default: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    example: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    enum_values: Option<&'a [Value]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    items: Option<Box<PropertyJson<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    properties: Option<&'a [Property]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    one_of: Option<Vec<PropertyJson<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    any_of: Option<Vec<PropertyJson<'a>>>,
}

impl Property {
    /// The JSON form; `member` says whether the property is a member of a named collection (whose
    /// name is always written) rather than a nameless type description.
    fn json(&self, member: bool) -> PropertyJson<'_> {
        PropertyJson {
            name: (member || !self.name.is_empty()).then_some(self.name.as_str()),
            kind: &self.kind,
            description: self.description.as_deref(),
            required: self.required,
            nullable: self.nullable,
            default: self.default.as_ref(),
            example: self.example.as_ref(),
            enum_values: self.enum_values.as_deref(),
            items: self.items.as_ref().map(|p| Box::new(p.json(false))),
            properties: self.properties.as_deref(),
            one_of: nameless(&self.one_of),
            any_of: nameless(&self.any_of),
        }
    }
}

/// The JSON forms of union alternatives (nameless type descriptions).
fn nameless(alts: &Option<Vec<Property>>) -> Option<Vec<PropertyJson<'_>>> {
    alts.as_ref().map(|alts| alts.iter().map(|p| p.json(false)).collect())
}

impl Serialize for Property {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.json(true).serialize(s)
    }
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
