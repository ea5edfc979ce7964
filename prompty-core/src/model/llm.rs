//! Which model runs the prompt: [`Model`] and [`ModelOptions`].

use super::Connection;
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// `chat` (the default), `embedding`, `image`, `responses`, or another API name.
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
    pub const KNOWN_KEYS: [&'static str; 10] = [
        "temperature",
        "maxOutputTokens",
        "topP",
        "topK",
        "frequencyPenalty",
        "presencePenalty",
        "seed",
        "stopSequences",
        "allowMultipleToolCalls",
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
    /// Provider-specific options, passed through to the request as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<Map<String, Value>>,
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
}
