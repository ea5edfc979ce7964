//! How a prompt's `outputs:` are asked of the model: [`StructuredOutput`].

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How a prompt's `outputs:` are asked of the model. Whatever the mode, the answer is parsed as
/// JSON into the outputs.
///
/// | mode (in a file) | what is sent (OpenAI Chat Completions) |
/// |---|---|
/// | `jsonSchema` (default) | `response_format: {type: json_schema, json_schema: {name: structured_output, strict: true, schema}}` |
/// | `jsonObject` | `response_format: {type: json_object}`, and the schema in a system message |
/// | `jsonObjectSchema` | `response_format: {type: json_object, schema}`, and the schema in a system message: the schema-constrained form of llama.cpp's servers (llama-server, llama-cpp-python) |
/// | `none` | no `response_format` and no instruction: the prompt itself asks for JSON |
///
/// Where the mode comes from, first found wins (the OpenAI-compatible providers; Anthropic has
/// a mechanism of its own):
///
/// 1. the command line's `--structured-output MODE` (`prompty run`, `prompty chat`), or
///    `prompty::providers::openai::set_structured_output` in a program;
/// 2. the `PROMPTY_STRUCTURED_OUTPUT` environment variable;
/// 3. the prompt's `model.options.structuredOutput`;
/// 4. its connection's `structuredOutput` (every prompt on that connection);
/// 5. the mode remembered for the endpoint after an automatic fallback;
/// 6. `jsonSchema`.
///
/// A per-run choice (1, 2) beats the file, so one prompt can be pointed at another server
/// without editing it. When none of 1 to 4 chose the mode, a server that rejects it gets the
/// request once more in the next mode of [`StructuredOutput::fallback`] (see
/// `prompty::providers::openai::structured` for the rule and how to switch it off).
///
/// ```
/// use prompty_core::StructuredOutput;
/// let m: StructuredOutput = serde_json::from_value(serde_json::json!("jsonObject")).unwrap();
/// assert_eq!(m, StructuredOutput::JsonObject);
/// assert_eq!(StructuredOutput::default(), StructuredOutput::JsonSchema);
/// assert_eq!("jsonObjectSchema".parse::<StructuredOutput>(), Ok(StructuredOutput::JsonObjectSchema));
/// assert_eq!(StructuredOutput::JsonObjectSchema.to_string(), "jsonObjectSchema");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StructuredOutput {
    /// OpenAI's strict JSON Schema mode (what OpenAI, Azure OpenAI, vLLM, Ollama and LM Studio
    /// accept).
    #[default]
    JsonSchema,
    /// JSON mode; the schema goes in the prompt.
    JsonObject,
    /// JSON mode with the schema beside it in `response_format.schema` (llama.cpp servers
    /// constrain the answer to it); the schema goes in the prompt too.
    JsonObjectSchema,
    /// Nothing is sent: the prompt asks for JSON itself.
    None,
}

impl StructuredOutput {
    /// Every mode, in the order of the documentation.
    ///
    /// ```
    /// assert_eq!(prompty_core::StructuredOutput::ALL.len(), 4);
    /// ```
    pub const ALL: [StructuredOutput; 4] = [
        StructuredOutput::JsonSchema,
        StructuredOutput::JsonObjectSchema,
        StructuredOutput::JsonObject,
        StructuredOutput::None,
    ];

    /// The mode's name in a file, an environment variable or on the command line.
    ///
    /// ```
    /// assert_eq!(prompty_core::StructuredOutput::None.as_str(), "none");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::JsonSchema => "jsonSchema",
            StructuredOutput::JsonObject => "jsonObject",
            StructuredOutput::JsonObjectSchema => "jsonObjectSchema",
            StructuredOutput::None => "none",
        }
    }

    /// The mode an automatic fallback tries after this one was rejected by a server:
    /// `jsonSchema` → `jsonObjectSchema` → `jsonObject`, then nothing. `none` is never chosen
    /// automatically: it drops the schema from the request altogether.
    ///
    /// ```
    /// use prompty_core::StructuredOutput;
    /// assert_eq!(StructuredOutput::JsonSchema.fallback(), Some(StructuredOutput::JsonObjectSchema));
    /// assert_eq!(StructuredOutput::JsonObjectSchema.fallback(), Some(StructuredOutput::JsonObject));
    /// assert_eq!(StructuredOutput::JsonObject.fallback(), None);
    /// assert_eq!(StructuredOutput::None.fallback(), None);
    /// ```
    pub fn fallback(self) -> Option<StructuredOutput> {
        match self {
            StructuredOutput::JsonSchema => Some(StructuredOutput::JsonObjectSchema),
            StructuredOutput::JsonObjectSchema => Some(StructuredOutput::JsonObject),
            StructuredOutput::JsonObject | StructuredOutput::None => None,
        }
    }

    /// The modes' names, for messages: `jsonSchema, jsonObjectSchema, jsonObject or none`.
    ///
    /// ```
    /// assert_eq!(prompty_core::StructuredOutput::names(), "jsonSchema, jsonObjectSchema, jsonObject or none");
    /// ```
    pub fn names() -> &'static str {
        "jsonSchema, jsonObjectSchema, jsonObject or none"
    }
}

impl fmt::Display for StructuredOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a [`StructuredOutput`] mode; its `Display` names the modes and the closest
/// one.
///
/// ```
/// let e = "jsonObjectShema".parse::<prompty_core::StructuredOutput>().unwrap_err();
/// assert_eq!(e.to_string(), "unknown structured output mode 'jsonObjectShema' (did you mean 'jsonObjectSchema'? \
///     the modes are jsonSchema, jsonObjectSchema, jsonObject or none)");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStructuredOutput(pub String);

impl fmt::Display for UnknownStructuredOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown structured output mode '{}' (", self.0)?;
        let names = StructuredOutput::ALL.map(StructuredOutput::as_str);
        if let Some(close) = crate::analysis::closest(&self.0, names) {
            write!(f, "did you mean '{close}'? ")?;
        }
        write!(f, "the modes are {})", StructuredOutput::names())
    }
}

impl std::error::Error for UnknownStructuredOutput {}

impl FromStr for StructuredOutput {
    type Err = UnknownStructuredOutput;

    /// The mode named `text`: as in a file (`jsonObjectSchema`), ignoring case and surrounding
    /// blanks.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim();
        StructuredOutput::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownStructuredOutput(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for mode in StructuredOutput::ALL {
            assert_eq!(serde_json::to_value(mode).unwrap(), serde_json::json!(mode.as_str()));
            assert_eq!(mode.as_str().parse::<StructuredOutput>(), Ok(mode));
            assert_eq!(mode.as_str().to_ascii_uppercase().parse::<StructuredOutput>(), Ok(mode));
        }
        let e = "xml".parse::<StructuredOutput>().unwrap_err().to_string();
        assert_eq!(
            e,
            "unknown structured output mode 'xml' (the modes are jsonSchema, jsonObjectSchema, jsonObject or none)"
        );
    }

    #[test]
    fn the_fallback_chain_ends_and_never_reaches_none() {
        let mut mode = StructuredOutput::JsonSchema;
        let mut seen = vec![mode];
        while let Some(next) = mode.fallback() {
            assert!(!seen.contains(&next));
            seen.push(next);
            mode = next;
        }
        assert_eq!(seen.len(), 3);
        assert!(!seen.contains(&StructuredOutput::None));
    }
}
