//! Model discovery (spec §15): provider model listings mapped to [`ModelInfo`], and enrichment of
//! sparse listings from a built-in table of known model capabilities.
//!
//! ```
//! use prompty::providers::discovery::map_listing;
//! let listing = serde_json::json!({"data": [{"id": "gpt-4o-mini-2024-07-18", "object": "model"}]});
//! let models = map_listing(&listing, "openai");
//! assert_eq!((models[0].id.as_str(), models[0].context_window), ("gpt-4o-mini-2024-07-18", Some(128000)));
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::LazyLock;

/// What is known about one model (the TypeSpec `ModelInfo`). In JSON the fields are camelCase and
/// absent ones are omitted.
///
/// ```
/// let info = prompty::providers::discovery::ModelInfo { id: "gpt-4o".into(), context_window: Some(128000), ..Default::default() };
/// assert_eq!(serde_json::to_value(&info)?, serde_json::json!({"id": "gpt-4o", "contextWindow": 128000}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    /// The model (or deployment) id to put in `model.id`.
    #[serde(default)]
    pub id: String,
    /// A name for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Who publishes or owns the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
    /// The context window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<i64>,
    /// What the model accepts: `text`, `image`, `audio`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_modalities: Option<Vec<String>>,
    /// What the model produces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_modalities: Option<Vec<String>>,
    /// The provider's raw entry, as listed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub additional_properties: Option<Map<String, Value>>,
}

/// Maps one entry of a provider's model listing to a [`ModelInfo`]; the raw entry is kept in
/// `additionalProperties`. Providers:
/// - `openai` (and any other key): `id`, `owned_by`, and a context window when the entry has one
///   (`context_window`, `max_context_length`, `context_length`);
/// - `anthropic`: `id`, `display_name`, `context_length`, `input_modalities`, `output_modalities`;
///   `ownedBy` is `anthropic`;
/// - `foundry` / `azure`: an ARM deployment (`name`, `properties.model.{name, publisher,
///   maxContextLength}`, `properties.capabilities.supported{Input,Output}Modalities`), a flat
///   deployment (`name`, `modelName`, `modelPublisher`), or a catalog model (`id`, `owned_by`,
///   `maxContextLength`).
///
/// ```
/// use prompty::providers::discovery::map_model;
/// let info = map_model(&serde_json::json!({"id": "o3-mini", "object": "model", "owned_by": "system"}), "openai");
/// assert_eq!((info.id.as_str(), info.owned_by.as_deref()), ("o3-mini", Some("system")));
/// assert_eq!(info.additional_properties.unwrap()["object"], "model");
/// ```
pub fn map_model(raw: &Value, provider: &str) -> ModelInfo {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut info = match provider {
        "anthropic" => ModelInfo {
            id: text(raw, "id").unwrap_or_default(),
            display_name: text(raw, "display_name").or_else(|| text(raw, "displayName")),
            owned_by: Some("anthropic".to_owned()),
            context_window: integer(raw, &["context_length", "context_window", "max_input_tokens"]),
            input_modalities: strings(raw.get("input_modalities")),
            output_modalities: strings(raw.get("output_modalities")),
            additional_properties: None,
        },
        "foundry" | "azure" => {
            if let Some(props) = raw.get("properties").filter(|p| p.is_object()) {
                let model = &props["model"];
                let capabilities = &props["capabilities"];
                ModelInfo {
                    id: text(raw, "name").or_else(|| text(raw, "id")).unwrap_or_default(),
                    display_name: text(model, "name"),
                    owned_by: text(model, "publisher").or_else(|| text(model, "format")),
                    context_window: integer(model, &["maxContextLength", "max_context_length"]),
                    input_modalities: strings(capabilities.get("supportedInputModalities")),
                    output_modalities: strings(capabilities.get("supportedOutputModalities")),
                    additional_properties: None,
                }
            } else if raw.get("modelName").is_some() || raw["type"] == "ModelDeployment" {
                ModelInfo {
                    id: text(raw, "name").or_else(|| text(raw, "id")).unwrap_or_default(),
                    display_name: text(raw, "modelName"),
                    owned_by: text(raw, "modelPublisher"),
                    context_window: integer(raw, &["maxContextLength", "max_context_length"]),
                    ..ModelInfo::default()
                }
            } else {
                ModelInfo {
                    id: text(raw, "id").or_else(|| text(raw, "name")).unwrap_or_default(),
                    display_name: text(raw, "displayName").or_else(|| text(raw, "display_name")),
                    owned_by: text(raw, "owned_by").or_else(|| text(raw, "ownedBy")),
                    context_window: integer(raw, &["maxContextLength", "max_context_length"]),
                    ..ModelInfo::default()
                }
            }
        }
        _ => ModelInfo {
            id: text(raw, "id").or_else(|| text(raw, "name")).unwrap_or_default(),
            owned_by: text(raw, "owned_by"),
            context_window: integer(raw, &["context_window", "max_context_length", "context_length"]),
            ..ModelInfo::default()
        },
    };
    info.additional_properties = raw.as_object().cloned();
    info
}

/// Maps a whole listing response (`{"data": [...]}`, an ARM `{"value": [...]}`, or a bare list)
/// with [`map_model`], and fills what each entry leaves out with [`enrich`]: what
/// `list_models` returns.
///
/// ```
/// use prompty::providers::discovery::map_listing;
/// let models = map_listing(&serde_json::json!({"object": "list", "data": [
///     {"id": "gpt-4o", "object": "model", "owned_by": "system"}]}), "openai");
/// assert_eq!(models[0].context_window, Some(128000));
/// ```
pub fn map_listing(raw: &Value, provider: &str) -> Vec<ModelInfo> {
    let items = match raw {
        Value::Array(items) => items.as_slice(),
        _ => raw
            .get("data")
            .or_else(|| raw.get("value"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default(),
    };
    items.iter().map(|item| enrich(map_model(item, provider), provider)).collect()
}

/// Fills the context window and modalities a provider left out from the built-in table of known
/// models (only OpenAI models have entries). The entry is the one whose prefix is the longest prefix
/// of the id ending on a token boundary (`gpt-4o-mini-2024-07-18` uses `gpt-4o-mini`; `gpt-45` does
/// not use `gpt-4`). Values the provider gave always win, an empty list included.
///
/// ```
/// use prompty::providers::discovery::{enrich, ModelInfo};
/// let info = enrich(ModelInfo { id: "gpt-4o-2024-08-06".into(), ..Default::default() }, "openai");
/// assert_eq!(info.context_window, Some(128000));
/// assert_eq!(info.input_modalities, Some(vec!["text".to_owned(), "image".to_owned()]));
/// ```
pub fn enrich(mut info: ModelInfo, provider: &str) -> ModelInfo {
    let Some(entry) = lookup(&info.id, provider) else { return info };
    if info.context_window.is_none() {
        info.context_window = entry.context_window;
    }
    if info.input_modalities.is_none() {
        info.input_modalities.clone_from(&entry.input_modalities);
    }
    if info.output_modalities.is_none() {
        info.output_modalities.clone_from(&entry.output_modalities);
    }
    info
}

/// One entry of the capabilities table.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Capabilities {
    prefix: String,
    #[serde(default)]
    context_window: Option<i64>,
    #[serde(default)]
    input_modalities: Option<Vec<String>>,
    #[serde(default)]
    output_modalities: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
struct Table {
    providers: std::collections::BTreeMap<String, Vec<Capabilities>>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    serde_json::from_str(include_str!("model_capabilities.json")).expect("model_capabilities.json is valid")
});

/// The table entry for a model id: the longest prefix ending on a token boundary.
fn lookup(id: &str, provider: &str) -> Option<&'static Capabilities> {
    TABLE
        .providers
        .get(provider)?
        .iter()
        .filter(|e| {
            let p = e.prefix.as_str();
            id.len() >= p.len()
                && id.is_char_boundary(p.len())
                && id[..p.len()].eq_ignore_ascii_case(p)
                && !id[p.len()..].chars().next().is_some_and(char::is_alphanumeric)
        })
        .max_by_key(|e| e.prefix.len())
}

/// The first of `keys` holding an integer (or an integral number, or a numeric string).
fn integer(v: &Value, keys: &[&str]) -> Option<i64> {
    keys.iter().find_map(|k| match v.get(*k)? {
        Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64)),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    })
}

/// A list of strings (non-strings dropped); anything else is absent.
fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    Some(v?.as_array()?.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(id: &str) -> ModelInfo {
        ModelInfo { id: id.into(), ..ModelInfo::default() }
    }

    #[test]
    fn table_parses_and_prefixes_are_unique() {
        let entries = &TABLE.providers["openai"];
        let mut prefixes: Vec<_> = entries.iter().map(|e| e.prefix.as_str()).collect();
        prefixes.sort_unstable();
        let n = prefixes.len();
        prefixes.dedup();
        assert_eq!(prefixes.len(), n);
    }

    #[test]
    fn longest_prefix_on_a_token_boundary() {
        assert_eq!(lookup("gpt-4o-mini-2024-07-18", "openai").unwrap().prefix, "gpt-4o-mini");
        assert_eq!(lookup("gpt-4o", "openai").unwrap().prefix, "gpt-4o");
        assert_eq!(lookup("gpt-4-0613", "openai").unwrap().prefix, "gpt-4");
        assert_eq!(lookup("gpt-4.1-2025-04-14", "openai").unwrap().prefix, "gpt-4.1");
        assert!(lookup("gpt-45-future", "openai").is_none());
        assert!(lookup("o1x", "openai").is_none());
        assert!(lookup("ft:custom-model:acme::xyz", "openai").is_none());
        assert!(lookup("gpt-4o", "anthropic").is_none());
    }

    #[test]
    fn enrichment_fills_only_missing_fields() {
        let e = enrich(id("gpt-4o"), "openai");
        assert_eq!(
            serde_json::to_value(e).unwrap(),
            json!({"id": "gpt-4o", "contextWindow": 128000, "inputModalities": ["text", "image"], "outputModalities": ["text"]})
        );
        let given = ModelInfo { context_window: Some(999), input_modalities: Some(vec![]), ..id("gpt-4o") };
        let e = enrich(given, "openai");
        assert_eq!(e.context_window, Some(999));
        assert_eq!(e.input_modalities, Some(vec![]));
        assert_eq!(e.output_modalities, Some(vec!["text".to_owned()]));
        let dalle = enrich(id("dall-e-3"), "openai");
        assert_eq!(dalle.context_window, None);
        let emb = serde_json::to_value(enrich(id("text-embedding-3-small"), "openai")).unwrap();
        assert_eq!(emb["outputModalities"], json!([]));
    }

    #[test]
    fn openai_and_anthropic_entries() {
        let raw = json!({"id": "ft:x"});
        assert_eq!(
            serde_json::to_value(map_model(&raw, "openai")).unwrap(),
            json!({"id": "ft:x", "additionalProperties": raw})
        );
        let raw = json!({"id": "claude-3-haiku", "display_name": "Claude 3 Haiku", "context_length": 200000,
                         "input_modalities": ["text", "image"], "output_modalities": ["text"], "type": "model"});
        let info = map_model(&raw, "anthropic");
        assert_eq!(info.display_name.as_deref(), Some("Claude 3 Haiku"));
        assert_eq!(info.owned_by.as_deref(), Some("anthropic"));
        assert_eq!(info.context_window, Some(200000));
        assert_eq!(info.output_modalities, Some(vec!["text".to_owned()]));
    }

    #[test]
    fn foundry_shapes() {
        let arm = json!({"name": "my-gpt4", "properties": {"model": {"name": "gpt-4", "publisher": "OpenAI", "maxContextLength": 8192},
            "capabilities": {"supportedInputModalities": ["text"], "supportedOutputModalities": ["text"]}}});
        let info = map_model(&arm, "foundry");
        assert_eq!(
            (info.id.as_str(), info.display_name.as_deref(), info.owned_by.as_deref()),
            ("my-gpt4", Some("gpt-4"), Some("OpenAI"))
        );
        assert_eq!(info.context_window, Some(8192));
        assert_eq!(info.input_modalities, Some(vec!["text".to_owned()]));

        let flat = json!({"name": "dep", "type": "ModelDeployment", "modelName": "gpt-4o", "modelPublisher": "OpenAI",
                          "capabilities": {"chatCompletion": "true"}});
        let info = map_model(&flat, "foundry");
        assert_eq!(
            (info.id.as_str(), info.display_name.as_deref(), info.owned_by.as_deref()),
            ("dep", Some("gpt-4o"), Some("OpenAI"))
        );
        assert_eq!(info.context_window, None);

        let catalog = json!({"id": "gpt-4", "owned_by": "openai", "maxContextLength": 8192, "status": "succeeded"});
        let info = map_model(&catalog, "azure");
        assert_eq!(
            (info.id.as_str(), info.owned_by.as_deref(), info.context_window),
            ("gpt-4", Some("openai"), Some(8192))
        );
    }

    #[test]
    fn listings_are_mapped_and_enriched() {
        let models = map_listing(&json!({"data": [{"id": "gpt-4o-mini"}, {"id": "unknown"}]}), "openai");
        assert_eq!(models.len(), 2);
        assert_eq!(models[0].context_window, Some(128000));
        assert_eq!(models[1].context_window, None);
        let arm =
            map_listing(&json!({"value": [{"name": "d", "properties": {"model": {"name": "gpt-4o"}}}]}), "foundry");
        assert_eq!(arm[0].display_name.as_deref(), Some("gpt-4o"));
        assert!(map_listing(&json!({}), "openai").is_empty());
        assert_eq!(map_listing(&json!([{"id": "a"}]), "anthropic")[0].id, "a");
    }
}
