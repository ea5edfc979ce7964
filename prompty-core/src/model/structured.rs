//! How a prompt's `outputs:` are asked of the model: [`StructuredOutput`].

use serde::{Deserialize, Serialize};

/// How a prompt's `outputs:` are asked of the model: `model.options.structuredOutput` (per
/// prompt) or the connection's `structuredOutput` (every prompt on that connection); the option
/// wins. Whatever the mode, the answer is parsed as JSON into the outputs.
///
/// | mode (in a file) | what is sent (OpenAI Chat Completions) |
/// |---|---|
/// | `jsonSchema` (default) | `response_format: {type: json_schema, json_schema: {name: structured_output, strict: true, schema}}` |
/// | `jsonObject` | `response_format: {type: json_object}`, and the schema in a system message |
/// | `jsonObjectSchema` | `response_format: {type: json_object, schema}`, and the schema in a system message: the schema-constrained form of llama.cpp's servers (llama-server, llama-cpp-python) |
/// | `none` | no `response_format` and no instruction: the prompt itself asks for JSON |
///
/// ```
/// use prompty_core::StructuredOutput;
/// let m: StructuredOutput = serde_json::from_value(serde_json::json!("jsonObject")).unwrap();
/// assert_eq!(m, StructuredOutput::JsonObject);
/// assert_eq!(StructuredOutput::default(), StructuredOutput::JsonSchema);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
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
