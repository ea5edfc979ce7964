//! Request-building helpers every provider's wire format shares: the model of a prompt, options
//! put into a body, `additionalProperties`, the tool choice, media sources and replayed tool calls.

use crate::{Agent, Error, FunctionDefinition, Model, ModelOptions, Result, ToolChoice};
use serde_json::{Map, Value};

/// The `toolChoice` to send: none without tools (a named tool must then still be declared), and
/// a configuration error ([`Error::Config`], found before any request) for a named tool the
/// prompt does not declare.
pub(crate) fn tool_choice<'a>(
    options: Option<&'a ModelOptions>,
    tools: &[FunctionDefinition],
) -> Result<Option<&'a ToolChoice>> {
    let Some(choice) = options.and_then(|o| o.tool_choice.as_ref()) else { return Ok(None) };
    if let ToolChoice::Tool(name) = choice {
        if !tools.iter().any(|f| &f.name == name) {
            let declared: Vec<&str> = tools.iter().map(|f| f.name.as_str()).collect();
            let declared = if declared.is_empty() { "none".to_owned() } else { declared.join(", ") };
            return Err(Error::Config {
                setting: "model.options.toolChoice".to_owned(),
                message: format!(
                    "it names the tool '{name}', which the prompt does not declare (its tools: {declared}): name a \
                     declared tool, or use auto, none or required"
                ),
            });
        }
    }
    Ok(if tools.is_empty() { None } else { Some(choice) })
}

/// The agent's model, or an error saying it has none.
pub(crate) fn model_of(agent: &Agent) -> Result<&Model> {
    agent.model.as_ref().ok_or_else(|| Error::Config {
        setting: "model".to_owned(),
        message: format!("prompt '{}' has no `model`: set `model: <id>` in its frontmatter", agent.name),
    })
}

/// The configuration error of a `model.apiType` the provider does not serve; `known` lists those
/// it does.
pub(crate) fn unsupported_api_type(provider: &str, api: &str, known: &str) -> Error {
    Error::Config {
        setting: "model.apiType".to_owned(),
        message: format!("'{api}' is not supported by the {provider} provider (use {known})"),
    }
}

/// Inserts `key: value` when the option is set.
pub(crate) fn put<T: serde::Serialize>(body: &mut Map<String, Value>, key: &str, value: Option<T>) {
    if let Some(v) = value.and_then(|v| serde_json::to_value(v).ok()) {
        body.insert(key.to_owned(), v);
    }
}

/// Adds `options.additionalProperties` at the top level: what the author wrote replaces what was
/// generated under the same key, except the keys in `keep` (those that carry the conversation).
pub(crate) fn merge_additional(body: &mut Map<String, Value>, options: Option<&ModelOptions>, keep: &[&str]) {
    for (k, v) in options.and_then(|o| o.additional_properties.as_ref()).into_iter().flatten() {
        if !keep.contains(&k.as_str()) {
            body.insert(k.clone(), v.clone());
        }
    }
}

/// Whether a source is a URL or a data URI (rather than bare base64 data).
pub(crate) fn is_uri(source: &str) -> bool {
    source.starts_with("data:") || source.contains("://")
}

/// `(media_type, data)` of a base64 data URI (`data:image/png;base64,AAAA`).
pub(crate) fn split_data_uri(source: &str) -> Option<(&str, &str)> {
    let rest = source.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let mut fields = header.split(';');
    let media_type = fields.next().unwrap_or("");
    fields.any(|f| f.eq_ignore_ascii_case("base64")).then_some((media_type, data))
}
