//! Which model runs the prompt: [`Model`] and [`ModelOptions`].

use super::{Connection, StructuredOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The model a prompt runs on. `model: gpt-4o` in a file is shorthand for `model: {id: gpt-4o}`.
///
/// ```
/// let m = prompty_core::Model::new("gpt-4o");
/// assert_eq!(m.api_type(), "chat");
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The model or deployment id.
    #[serde(default)]
    pub id: String,
    /// The provider key (`openai`, `foundry`, `anthropic`, ...): selects executor and processor.
    /// Checks warn about a key that is not built in ([`crate::analysis::BUILTIN_PROVIDERS`]): only an
    /// executor the program registers under it can run the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `chat` (the default), `embedding`, `image`, `responses`, or another API name. Each built-in
    /// provider serves some ([`crate::analysis::BuiltinProvider::api_types`]) and refuses the
    /// others before any request; checks report those as errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_type: Option<String>,
    /// How the model is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<Connection>,
    /// Generation options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<ModelOptions>,
}

impl ModelOptions {
    /// Every key `model.options` understands, as written in a `.prompty` file (the serialized
    /// names of the fields of [`ModelOptions`]). Compile-time checks warn about any other key.
    ///
    /// ```
    /// assert!(prompty_core::ModelOptions::KNOWN_KEYS.contains(&"maxOutputTokens"));
    /// ```
    pub const KNOWN_KEYS: [&'static str; 12] = [
        "temperature",
        "maxOutputTokens",
        "topP",
        "topK",
        "frequencyPenalty",
        "presencePenalty",
        "seed",
        "stopSequences",
        "allowMultipleToolCalls",
        "toolChoice",
        "structuredOutput",
        "additionalProperties",
    ];
}

impl Model {
    /// A model with an id and nothing else.
    pub fn new(id: impl Into<String>) -> Self {
        Model { id: id.into(), ..Model::default() }
    }

    /// The API type, `chat` when the file names none.
    pub fn api_type(&self) -> &str {
        self.api_type.as_deref().unwrap_or("chat")
    }
}

/// Generation options, named as in the `.prompty` format; each provider maps them to its own names.
/// Keys other than [`ModelOptions::KNOWN_KEYS`] are ignored when a prompt loads; options only one
/// provider understands go under `additionalProperties`, which is sent as written.
///
/// ```
/// let o: prompty_core::ModelOptions =
///     serde_json::from_value(serde_json::json!({"temperature": 0.7, "maxOutputTokens": 1000})).unwrap();
/// assert_eq!(o.max_output_tokens, Some(1000));
/// assert_eq!(serde_json::to_string(&o).unwrap(), r#"{"temperature":0.7,"maxOutputTokens":1000}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelOptions {
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Upper bound on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<i64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Top-k sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// Frequency penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// Presence penalty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    /// Seed for repeatable sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Sequences that stop generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// Whether the model may call several tools at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_multiple_tool_calls: Option<bool>,
    /// Whether and which tool the model must call (`auto`, `none`, `required` or a tool's name),
    /// mapped to each provider's form. Unset: the provider's default (no field sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// How the prompt's `outputs:` are asked for (see [`StructuredOutput`]); it wins over the
    /// connection's `structuredOutput`, and `--structured-output` or `PROMPTY_STRUCTURED_OUTPUT`
    /// win over it. Unset: the connection's, else [`StructuredOutput::JsonSchema`] with an
    /// automatic fallback for a server that refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
    /// Provider-specific options, added to the top level of the request body as written. A key
    /// the runtime also generates (`max_tokens`, `response_format`, `tool_choice`, ...) is
    /// replaced by the one written here: what the author wrote wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<Map<String, Value>>,
}

/// `model.options.toolChoice`: whether the model may, must or must not call a tool, or which one.
///
/// In a file: `auto`, `none`, `required`, or a tool's name (`toolChoice: get_weather`, or
/// `toolChoice: {name: get_weather}` for a tool whose name is one of the three words). A named
/// tool the prompt does not declare is an error when the request is built. No field is sent when
/// the prompt offers no tools. In the agent loop a forced choice (`required` or a name) holds
/// until the first tool round; later calls use `TurnOptions::after_forced_tool` (`auto`).
///
/// | value | OpenAI `tool_choice` | Anthropic `tool_choice` |
/// |---|---|---|
/// | `auto` | `"auto"` | `{"type": "auto"}` |
/// | `none` | `"none"` | `{"type": "none"}` |
/// | `required` | `"required"` | `{"type": "any"}` |
/// | a name | `{"type": "function", "function": {"name": ...}}` | `{"type": "tool", "name": ...}` |
///
/// ```
/// use prompty_core::ToolChoice;
/// let t: ToolChoice = serde_json::from_value(serde_json::json!("get_weather")).unwrap();
/// assert_eq!(t, ToolChoice::Tool("get_weather".into()));
/// let t: ToolChoice = serde_json::from_value(serde_json::json!({"name": "auto"})).unwrap();
/// assert_eq!(t, ToolChoice::Tool("auto".into()));
/// let t: ToolChoice = serde_json::from_value(serde_json::json!("required")).unwrap();
/// assert_eq!(serde_json::to_value(&t).unwrap(), serde_json::json!("required"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the providers' default when tools are offered).
    Auto,
    /// The model must not call a tool.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

impl Serialize for ToolChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::Tool(name) => {
                use serde::ser::SerializeMap;
                let mut m = s.serialize_map(Some(1))?;
                m.serialize_entry("name", name)?;
                m.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error as _;
        match Value::deserialize(d)? {
            Value::String(s) => Ok(match s.as_str() {
                "auto" => ToolChoice::Auto,
                "none" => ToolChoice::None,
                "required" => ToolChoice::Required,
                "" => return Err(D::Error::custom("`toolChoice` is empty: use auto, none, required or a tool's name")),
                _ => ToolChoice::Tool(s),
            }),
            Value::Object(m) => match m.get("name") {
                Some(Value::String(name)) if !name.is_empty() && m.len() == 1 => Ok(ToolChoice::Tool(name.clone())),
                _ => Err(D::Error::custom("`toolChoice` as a mapping must be `{name: <tool name>}`")),
            },
            _ => Err(D::Error::custom("`toolChoice` must be auto, none, required, a tool's name or `{name: <tool>}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The known keys are exactly the serialized names of the fields.
    #[test]
    fn known_keys_are_the_fields() {
        let all = ModelOptions {
            temperature: Some(0.5),
            max_output_tokens: Some(1),
            top_p: Some(0.5),
            top_k: Some(1),
            frequency_penalty: Some(0.0),
            presence_penalty: Some(0.0),
            seed: Some(1),
            stop_sequences: Some(vec![]),
            allow_multiple_tool_calls: Some(true),
            tool_choice: Some(ToolChoice::Auto),
            structured_output: Some(StructuredOutput::None),
            additional_properties: Some(Map::new()),
        };
        let value = serde_json::to_value(all).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        let mut known = ModelOptions::KNOWN_KEYS.to_vec();
        let mut keys = keys;
        known.sort_unstable();
        keys.sort_unstable();
        assert_eq!(keys, known);
    }

    #[test]
    fn tool_choice_round_trips_and_rejects_bad_shapes() {
        for (written, parsed) in [
            (serde_json::json!("auto"), ToolChoice::Auto),
            (serde_json::json!("none"), ToolChoice::None),
            (serde_json::json!("required"), ToolChoice::Required),
            (serde_json::json!({"name": "f"}), ToolChoice::Tool("f".into())),
        ] {
            let t: ToolChoice = serde_json::from_value(written.clone()).unwrap();
            assert_eq!(t, parsed);
            assert_eq!(serde_json::to_value(&t).unwrap(), written);
        }
        for bad in [serde_json::json!(""), serde_json::json!(3), serde_json::json!({"name": 1}), serde_json::json!({})]
        {
            assert!(serde_json::from_value::<ToolChoice>(bad).is_err());
        }
        assert!(serde_json::from_value::<StructuredOutput>(serde_json::json!("xml")).is_err());
    }
}
