//! One listed tool: [`CatalogEntry`] (what a loader lists and the catalog indexes), and its
//! identity (namespace, name, fingerprint).

use super::wire::wire_name;
use crate::{FunctionDefinition, ToolFunction};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A tool of the catalog: a namespaced name, the JSON Schema of its parameters, where it came
/// from, and (when it can run) the function that runs it.
///
/// Its identity is `(namespace, name, fingerprint)`: the same name with another parameter schema
/// is an overload.
///
/// ```
/// use prompty::catalog::CatalogEntry;
/// use serde_json::json;
/// let e = CatalogEntry::new("weather", "forecast", json!({"type": "object", "properties": {"city": {"type": "string"}}}))
///     .with_description("The forecast of a city")
///     .with_function(prompty::tool_fn_sync(|args| Ok(json!(format!("sunny in {}", args["city"])))));
/// assert_eq!(e.qualified_name(), "weather::forecast");
/// assert_eq!(e.wire_name(), "weather__forecast");
/// assert_eq!(e.fingerprint().len(), 64);
/// ```
pub struct CatalogEntry {
    /// The namespace (a loader sets it: an MCP server's `serverName`, an OpenAPI tool's name, a
    /// file's top-level key, a `#[tool]` fn's `namespace`).
    pub namespace: String,
    /// The tool's name within its namespace.
    pub name: String,
    /// What the tool does, for the model.
    pub description: Option<String>,
    /// The JSON Schema (an object schema) of the tool's parameters.
    pub parameters: Value,
    /// What kind of tool it is: `function`, `mcp`, `openapi`, `file`, or a user loader's kind.
    pub kind: String,
    /// Where it came from, named in errors (`mcp server 'fs'`, `file tools.yaml`, ...).
    pub source: String,
    /// What runs when the model calls it; `None` for a declaration only (a tool from a file with
    /// no implementation registered).
    pub function: Option<Arc<dyn ToolFunction>>,
    /// Anything else the loader knows (annotations, the OpenAPI method and path, ...).
    pub metadata: Map<String, Value>,
    /// The fingerprint, computed once (the catalog reads it on every index rebuild).
    fingerprint: Arc<OnceLock<String>>,
}

impl CatalogEntry {
    /// An entry of kind `function` with no description, source or function yet.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({"type": "object"}));
    /// assert_eq!((e.kind.as_str(), e.function.is_none()), ("function", true));
    /// ```
    pub fn new(namespace: impl Into<String>, name: impl Into<String>, parameters: Value) -> Self {
        CatalogEntry {
            namespace: namespace.into(),
            name: name.into(),
            description: None,
            parameters,
            kind: "function".into(),
            source: String::new(),
            function: None,
            metadata: Map::new(),
            fingerprint: Arc::default(),
        }
    }

    /// The same entry with a description.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({})).with_description("does t");
    /// assert_eq!(e.description.as_deref(), Some("does t"));
    /// ```
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// The same entry of another kind.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({})).with_kind("mcp");
    /// assert_eq!(e.kind, "mcp");
    /// ```
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }

    /// The same entry with its source named.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({})).with_source("file tools.yaml");
    /// assert_eq!(e.source, "file tools.yaml");
    /// ```
    pub fn with_source(mut self, source: impl Into<String>) -> Self {
        self.source = source.into();
        self
    }

    /// The same entry, run by `function`.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({}))
    ///     .with_function(prompty::tool_fn_sync(|_| Ok(serde_json::json!(1))));
    /// assert!(e.function.is_some());
    /// ```
    pub fn with_function(self, function: impl ToolFunction) -> Self {
        self.with_shared_function(Arc::new(function))
    }

    /// The same entry, run by an already shared function.
    ///
    /// ```
    /// let f: std::sync::Arc<dyn prompty::ToolFunction> = std::sync::Arc::new(prompty::tool_fn_sync(|_| Ok(serde_json::json!(1))));
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({})).with_shared_function(f);
    /// assert!(e.function.is_some());
    /// ```
    pub fn with_shared_function(mut self, function: Arc<dyn ToolFunction>) -> Self {
        self.function = Some(function);
        self
    }

    /// The same entry with one more metadata field.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("ns", "t", serde_json::json!({})).with_metadata("method", "GET");
    /// assert_eq!(e.metadata["method"], "GET");
    /// ```
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// `namespace::name`.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("fs", "read_file", serde_json::json!({}));
    /// assert_eq!(e.qualified_name(), "fs::read_file");
    /// ```
    pub fn qualified_name(&self) -> String {
        format!("{}::{}", self.namespace, self.name)
    }

    /// The SHA-256 (hexadecimal) of the parameter schema as canonical JSON (keys sorted, no
    /// whitespace): equal schemas written in another key order have the same fingerprint.
    ///
    /// ```
    /// use prompty::catalog::CatalogEntry;
    /// let a = CatalogEntry::new("n", "t", serde_json::json!({"type": "object", "required": []}));
    /// let b = CatalogEntry::new("n", "t", serde_json::json!({"required": [], "type": "object"}));
    /// assert_eq!(a.fingerprint(), b.fingerprint());
    /// ```
    pub fn fingerprint(&self) -> String {
        self.fingerprint.get_or_init(|| fingerprint(&self.parameters)).clone()
    }

    /// The name the model sees: [`wire_name`](super::wire::wire_name) of the namespace and name.
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("fs", "read_file", serde_json::json!({}));
    /// assert_eq!(e.wire_name(), "fs__read_file");
    /// ```
    pub fn wire_name(&self) -> String {
        wire_name(&self.namespace, &self.name)
    }

    /// The function definition the model sees (named by [`Self::wire_name`]).
    ///
    /// ```
    /// let e = prompty::catalog::CatalogEntry::new("fs", "read_file", serde_json::json!({"type": "object"}));
    /// assert_eq!(e.definition().name, "fs__read_file");
    /// ```
    pub fn definition(&self) -> FunctionDefinition {
        FunctionDefinition {
            name: self.wire_name(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            strict: false,
        }
    }
}

/// A clone computes its fingerprint afresh (its fields may be changed).
impl Clone for CatalogEntry {
    fn clone(&self) -> Self {
        CatalogEntry {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
            description: self.description.clone(),
            parameters: self.parameters.clone(),
            kind: self.kind.clone(),
            source: self.source.clone(),
            function: self.function.clone(),
            metadata: self.metadata.clone(),
            fingerprint: Arc::default(),
        }
    }
}

impl CatalogEntry {
    /// The entry as the catalog keeps it: shared and never changed again, so its fingerprint
    /// (computed afresh: the fields may have changed since) stays right.
    pub(crate) fn sealed(mut self) -> Arc<CatalogEntry> {
        self.fingerprint = Arc::default();
        Arc::new(self)
    }
}

impl fmt::Debug for CatalogEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CatalogEntry")
            .field("namespace", &self.namespace)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("source", &self.source)
            .field("description", &self.description)
            .field("parameters", &self.parameters)
            .field("runs", &self.function.is_some())
            .finish_non_exhaustive()
    }
}

/// Canonical JSON: object keys sorted, no whitespace.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `value` as canonical JSON: object keys sorted, no whitespace.
pub(crate) fn canonical_json(value: &Value) -> String {
    let mut text = String::new();
    canonical(value, &mut text);
    text
}

/// The SHA-256 (hexadecimal) of `schema` as canonical JSON.
pub(crate) fn fingerprint(schema: &Value) -> String {
    let text = canonical_json(schema);
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_nested_keys() {
        let mut a = String::new();
        canonical(&json!({"b": [{"y": 1, "x": 2}], "a": "\"q\""}), &mut a);
        assert_eq!(a, r#"{"a":"\"q\"","b":[{"x":2,"y":1}]}"#);
    }

    #[test]
    fn different_schemas_differ() {
        assert_ne!(fingerprint(&json!({"type": "object"})), fingerprint(&json!({"type": "string"})));
    }
}
