//! Local `$ref` resolution and the expansion of schemas into self-contained JSON Schema.

use super::{bounds, SpecVersion};
use serde_json::{Map, Value};

/// Follows a local JSON pointer (`#/components/schemas/Pet`) from the document root. `~1` is `/`,
/// `~0` is `~`, and `%XX` escapes are decoded, as in a URI fragment.
pub(crate) fn pointer<'a>(root: &'a Value, reference: &str) -> Result<&'a Value, String> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(format!(
            "the $ref '{}' points into another document: only local references (`#/...`) are supported",
            shorten(reference)
        ));
    };
    if fragment.is_empty() {
        return Ok(root);
    }
    let Some(path) = fragment.strip_prefix('/') else {
        return Err(format!("the $ref '{}' is not a JSON pointer (`#/...`)", shorten(reference)));
    };
    let mut here = root;
    for raw in path.split('/') {
        let token = percent_decode(raw).replace("~1", "/").replace("~0", "~");
        let next = match here {
            Value::Object(map) => map.get(&token),
            Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        here = next.ok_or_else(|| format!("the $ref '{}' does not resolve", shorten(reference)))?;
    }
    Ok(here)
}

/// A reference as shown in an error: at most 200 bytes.
fn shorten(reference: &str) -> String {
    super::cut(reference, 200)
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text).decode_utf8_lossy().into_owned()
}

/// Follows `$ref`s of an object that is not a schema (a parameter, a request body, a path item)
/// until a value without `$ref`: at most [`bounds::MAX_REF_DEPTH`] hops, a cycle is an error.
/// Returns the value and the pointer it was found at (`here` when it was not a reference).
pub(crate) fn follow<'a>(root: &'a Value, value: &'a Value, here: &str) -> Result<(&'a Value, String), String> {
    let mut value = value;
    let mut at = here.to_owned();
    let mut seen: Vec<String> = Vec::new();
    while let Some(reference) = value.get("$ref").and_then(Value::as_str) {
        if seen.iter().any(|s| s == reference) {
            return Err(format!("the $ref '{}' is circular", shorten(reference)));
        }
        if seen.len() >= bounds::MAX_REF_DEPTH {
            return Err(format!("more than {} chained $refs", bounds::MAX_REF_DEPTH));
        }
        seen.push(reference.to_owned());
        value = pointer(root, reference)?;
        at = reference.to_owned();
    }
    Ok((value, at))
}

/// Keywords whose value is data, not a schema: copied as they are.
const DATA_KEYWORDS: [&str; 5] = ["example", "examples", "default", "enum", "const"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: [&str; 5] = ["properties", "patternProperties", "definitions", "$defs", "dependentSchemas"];
/// OpenAPI-only keywords a model has no use for (dropped).
const DROPPED: [&str; 4] = ["xml", "externalDocs", "discriminator", "nullable"];
/// The JSON Schema types.
const TYPES: [&str; 7] = ["string", "number", "integer", "boolean", "array", "object", "null"];

/// Expands schemas: every local `$ref` replaced by its target (recursively), OpenAPI-only
/// keywords dropped, 3.0's `nullable` and Swagger 2.0's `file` type rewritten into JSON Schema.
///
/// Bounds: a `$ref` already being expanded (a cycle), or nested more than
/// [`bounds::MAX_REF_DEPTH`] deep, becomes the open schema `{}`; so does anything nested deeper
/// than [`bounds::MAX_SCHEMA_DEPTH`], and everything after the node budget runs out (per
/// operation, [`bounds::MAX_SCHEMA_NODES`], and for the whole document,
/// [`bounds::MAX_DOCUMENT_SCHEMA_NODES`]).
pub(crate) struct Expander<'a> {
    root: &'a Value,
    version: SpecVersion,
    stack: Vec<String>,
    /// Nodes left for the current operation.
    nodes: usize,
    /// Nodes left for the whole document.
    document_nodes: usize,
    /// Whether some schema was cut short by a bound (not by a cycle).
    pub(crate) truncated: bool,
}

impl<'a> Expander<'a> {
    pub(crate) fn new(root: &'a Value, version: SpecVersion) -> Expander<'a> {
        Expander {
            root,
            version,
            stack: Vec::new(),
            nodes: bounds::MAX_SCHEMA_NODES,
            document_nodes: bounds::MAX_DOCUMENT_SCHEMA_NODES,
            truncated: false,
        }
    }

    /// Starts the node budget of another operation.
    pub(crate) fn next_operation(&mut self) {
        self.nodes = bounds::MAX_SCHEMA_NODES;
    }

    /// The expanded form of the schema `value`. Fails only on a `$ref` that does not resolve.
    pub(crate) fn schema(&mut self, value: &Value) -> Result<Value, String> {
        self.expand(value, 0)
    }

    fn take_node(&mut self) -> bool {
        if self.nodes == 0 || self.document_nodes == 0 {
            self.truncated = true;
            return false;
        }
        self.nodes -= 1;
        self.document_nodes -= 1;
        true
    }

    fn expand(&mut self, value: &Value, depth: usize) -> Result<Value, String> {
        if depth > bounds::MAX_SCHEMA_DEPTH {
            self.truncated = true;
            return Ok(Value::Object(Map::new()));
        }
        match value {
            Value::Object(map) => {
                if !self.take_node() {
                    return Ok(Value::Object(Map::new()));
                }
                if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                    return self.reference(reference, map, depth);
                }
                let mut out = Map::new();
                for (key, child) in map {
                    if DROPPED.contains(&key.as_str()) || key.starts_with("x-") {
                        continue;
                    }
                    let expanded = if DATA_KEYWORDS.contains(&key.as_str()) {
                        child.clone()
                    } else if SCHEMA_MAPS.contains(&key.as_str()) {
                        match child {
                            Value::Object(schemas) => {
                                let mut m = Map::new();
                                for (name, schema) in schemas {
                                    m.insert(name.clone(), self.expand(schema, depth + 1)?);
                                }
                                Value::Object(m)
                            }
                            other => other.clone(),
                        }
                    } else {
                        self.expand(child, depth + 1)?
                    };
                    out.insert(key.clone(), expanded);
                }
                self.normalize(&mut out, map);
                Ok(Value::Object(out))
            }
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len().min(1024));
                for item in items {
                    if !self.take_node() {
                        break;
                    }
                    out.push(self.expand(item, depth + 1)?);
                }
                Ok(Value::Array(out))
            }
            other => Ok(other.clone()),
        }
    }

    fn reference(&mut self, reference: &str, map: &Map<String, Value>, depth: usize) -> Result<Value, String> {
        if self.stack.iter().any(|s| s == reference) {
            // A cycle: stop here with an open schema.
            return Ok(Value::Object(Map::new()));
        }
        if self.stack.len() >= bounds::MAX_REF_DEPTH {
            self.truncated = true;
            return Ok(Value::Object(Map::new()));
        }
        let target = pointer(self.root, reference)?;
        self.stack.push(reference.to_owned());
        let expanded = self.expand(target, depth + 1);
        self.stack.pop();
        let mut expanded = expanded?;
        // Keywords next to a `$ref` (allowed in 3.1: a description, a default) win over the target's.
        if let Value::Object(out) = &mut expanded {
            for (key, child) in map.iter().filter(|(k, _)| k.as_str() != "$ref") {
                if DROPPED.contains(&key.as_str()) || key.starts_with("x-") {
                    continue;
                }
                let child =
                    if DATA_KEYWORDS.contains(&key.as_str()) { child.clone() } else { self.expand(child, depth + 1)? };
                out.insert(key.clone(), child);
            }
        }
        Ok(expanded)
    }

    /// JSON Schema spellings of OpenAPI's: `nullable: true` (3.0) adds `"null"` to the type,
    /// `type: file` (2.0) is a binary string, and a type JSON Schema does not know (`int`, seen in
    /// real documents) becomes the one it means, or is dropped.
    fn normalize(&self, out: &mut Map<String, Value>, original: &Map<String, Value>) {
        let fix = |t: &str| -> Option<&'static str> {
            match t {
                t if TYPES.contains(&t) => TYPES.iter().copied().find(|k| *k == t),
                "int" | "long" | "int32" | "int64" => Some("integer"),
                "float" | "double" => Some("number"),
                "bool" => Some("boolean"),
                "str" | "file" => Some("string"),
                _ => None,
            }
        };
        if out.get("type").and_then(Value::as_str) == Some("file") {
            out.entry("format").or_insert_with(|| Value::String("binary".to_owned()));
        }
        match out.get("type") {
            Some(Value::String(t)) => match fix(t) {
                Some(fixed) => {
                    out.insert("type".to_owned(), Value::String(fixed.to_owned()));
                }
                None => {
                    out.remove("type");
                }
            },
            Some(Value::Array(types)) => {
                let mut fixed: Vec<Value> = Vec::new();
                for t in types.iter().filter_map(Value::as_str).filter_map(fix) {
                    if !fixed.iter().any(|f| f == t) {
                        fixed.push(Value::String(t.to_owned()));
                    }
                }
                out.insert("type".to_owned(), Value::Array(fixed));
            }
            Some(_) => {
                out.remove("type");
            }
            None => {}
        }
        let nullable = original.get("nullable").and_then(Value::as_bool) == Some(true);
        if nullable && self.version != SpecVersion::Swagger2 {
            if let Some(Value::String(t)) = out.get("type") {
                let t = t.clone();
                out.insert("type".to_owned(), Value::Array(vec![Value::String(t), Value::String("null".to_owned())]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_unescape() {
        let root = json!({"paths": {"/a/{b}": {"get": 1}}, "x~y": [10, 20]});
        assert_eq!(pointer(&root, "#/paths/~1a~1%7Bb%7D/get").unwrap(), &json!(1));
        assert_eq!(pointer(&root, "#/x~0y/1").unwrap(), &json!(20));
        assert_eq!(pointer(&root, "#").unwrap(), &root);
        assert!(pointer(&root, "#/nope").unwrap_err().contains("does not resolve"));
        assert!(pointer(&root, "other.json#/a").unwrap_err().contains("another document"));
        assert!(pointer(&root, "#nope").unwrap_err().contains("not a JSON pointer"));
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%41%zz"), "A%zz");
    }

    #[test]
    fn cycles_become_open_schemas() {
        let root = json!({"definitions": {
            "Node": {"type": "object", "properties": {"next": {"$ref": "#/definitions/Node"}, "v": {"type": "int"}}}
        }});
        let mut e = Expander::new(&root, SpecVersion::Swagger2);
        let out = e.schema(&root["definitions"]["Node"]).unwrap();
        assert_eq!(
            out,
            json!({"type": "object", "properties": {"next": {"type": "object", "properties": {"next": {}, "v": {"type": "integer"}}}, "v": {"type": "integer"}}})
        );
        assert!(!e.truncated);
    }

    #[test]
    fn exponential_references_hit_the_budget() {
        let mut defs = Map::new();
        for i in 0..40 {
            let next = format!("#/d/S{}", i + 1);
            defs.insert(format!("S{i}"), json!({"properties": {"a": {"$ref": next}, "b": {"$ref": next}}}));
        }
        defs.insert("S40".into(), json!({"type": "string"}));
        let root = json!({"d": defs});
        let mut e = Expander::new(&root, SpecVersion::OpenApi30);
        let _ = e.schema(&root["d"]["S0"]).unwrap();
        assert!(e.truncated);
    }

    #[test]
    fn nullable_and_odd_types() {
        let root = json!({});
        let mut e = Expander::new(&root, SpecVersion::OpenApi30);
        let s = json!({"type": "string", "nullable": true, "xml": {"name": "x"}, "x-extra": 1, "enum": [{"$ref": "#/not-a-ref"}]});
        assert_eq!(e.schema(&s).unwrap(), json!({"type": ["string", "null"], "enum": [{"$ref": "#/not-a-ref"}]}));
        assert_eq!(e.schema(&json!({"type": "whatever"})).unwrap(), json!({}));
        assert_eq!(e.schema(&json!({"type": ["integer", "nope", "integer"]})).unwrap(), json!({"type": ["integer"]}));
        assert_eq!(e.schema(&json!({"type": "file"})).unwrap(), json!({"type": "string", "format": "binary"}));
        assert_eq!(
            e.schema(&json!({"properties": {"type": {"type": "long"}}})).unwrap(),
            json!({"properties": {"type": {"type": "integer"}}})
        );
    }
}
