//! JSON Schema of properties (spec §7.1.4): what the model sees for tool parameters and structured
//! outputs.

use crate::{Error, Property, PropertyKind, Result};
use serde_json::{json, Map, Value};

/// The JSON Schema type of a property kind (`float` is `number`; rich kinds are strings: URLs).
fn json_type(kind: &PropertyKind) -> &str {
    match kind {
        PropertyKind::Float => "number",
        PropertyKind::Thread | PropertyKind::Image | PropertyKind::File | PropertyKind::Audio => "string",
        other => other.as_str(),
    }
}

/// The object schema of a list of properties: `{type: object, properties, required?}`.
///
/// With `strict` (OpenAI strict mode) every property is listed in `required`, optional ones accept
/// `null` (`type: [T, "null"]`), and every object has `additionalProperties: false`, recursively.
///
/// ```
/// use prompty::{Property, PropertyKind};
/// let props = [Property::new("city", PropertyKind::String).required(), Property::new("days", PropertyKind::Integer)];
/// assert_eq!(prompty::properties_schema(&props, false)?, serde_json::json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
///     "required": ["city"]}));
/// assert_eq!(prompty::properties_schema(&props, true)?["properties"]["days"]["type"],
///            serde_json::json!(["integer", "null"]));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn properties_schema(props: &[Property], strict: bool) -> Result<Value> {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in props {
        let mut schema = property_schema(p, strict)?;
        if strict && !p.required {
            make_nullable(&mut schema);
        }
        if p.required || strict {
            required.push(Value::String(p.name.clone()));
        }
        properties.insert(p.name.clone(), schema);
    }
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        out.insert("required".into(), Value::Array(required));
    }
    if strict {
        out.insert("additionalProperties".into(), json!(false));
    }
    Ok(Value::Object(out))
}

/// Applies OpenAI strict mode to a JSON Schema written elsewhere (an MCP tool's input schema, an
/// OpenAPI operation's parameters), as [`properties_schema`] does for declared properties: every
/// object schema, nested ones too, gets `additionalProperties: false` and lists all its
/// properties in `required`; those that were optional accept `null`. Nesting deeper than 32
/// levels is left as it is.
///
/// ```
/// let mut s = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a"]});
/// prompty::strict_schema(&mut s);
/// assert_eq!(s, serde_json::json!({"type": "object", "additionalProperties": false, "required": ["a", "b"],
///     "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"]}}}));
/// ```
pub fn strict_schema(schema: &mut Value) {
    strict_at(schema, 0);
}

fn strict_at(schema: &mut Value, depth: usize) {
    if depth > 32 {
        return;
    }
    let Value::Object(obj) = schema else { return };
    if obj.get("properties").is_some_and(Value::is_object) {
        let required: Vec<String> = match obj.get("required") {
            Some(Value::Array(r)) => r.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
            _ => Vec::new(),
        };
        let Some(Value::Object(props)) = obj.get_mut("properties") else { return };
        let mut all = Vec::with_capacity(props.len());
        for (name, prop) in props.iter_mut() {
            strict_at(prop, depth + 1);
            if !required.contains(name) {
                make_nullable(prop);
            }
            all.push(Value::String(name.clone()));
        }
        obj.insert("required".into(), Value::Array(all));
        obj.insert("additionalProperties".into(), Value::Bool(false));
    } else if obj.get("type").and_then(Value::as_str) == Some("object") {
        obj.insert("properties".into(), json!({}));
        obj.insert("required".into(), json!([]));
        obj.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Some(items) = obj.get_mut("items") {
        strict_at(items, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(alts)) = obj.get_mut(key) {
            for a in alts {
                strict_at(a, depth + 1);
            }
        }
    }
}

/// Lets an optional property be `null` in strict mode: `type: [T, "null"]`, `null` added to an
/// `enum`, and a union gains a `{type: null}` alternative.
fn make_nullable(schema: &mut Value) {
    if let Some(t) = schema.get_mut("type") {
        if let Value::String(s) = t {
            *t = json!([s.clone(), "null"]);
        }
    }
    if let Some(Value::Array(values)) = schema.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = schema.get_mut(key) {
            alts.push(json!({"type": "null"}));
        }
    }
}

/// The schema of one property (without its name).
///
/// ```
/// let p = prompty::Property::new("tags", prompty::PropertyKind::Array);
/// assert_eq!(prompty::property_schema(&p, false)?, serde_json::json!({"type": "array"}));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn property_schema(p: &Property, strict: bool) -> Result<Value> {
    let mut s = Map::new();
    match &p.kind {
        PropertyKind::Union => {
            let (key, alts) = match (&p.one_of, &p.any_of) {
                (Some(a), None) if !a.is_empty() => ("oneOf", a),
                (None, Some(a)) if !a.is_empty() => ("anyOf", a),
                _ => {
                    return Err(Error::Format(crate::FormatError::InvalidInputs {
                        message: format!(
                            "union property '{}' must declare exactly one non-empty `oneOf` or `anyOf`",
                            p.name
                        ),
                    }))
                }
            };
            let alts = alts.iter().map(|a| property_schema(a, strict)).collect::<Result<Vec<_>>>()?;
            s.insert(key.into(), Value::Array(alts));
        }
        PropertyKind::Object => {
            s.insert("type".into(), json!("object"));
            if let Some(props) = &p.properties {
                if let Value::Object(inner) = properties_schema(props, strict)? {
                    for (k, v) in inner {
                        if k != "type" {
                            s.insert(k, v);
                        }
                    }
                }
            } else if strict {
                s.insert("additionalProperties".into(), json!(false));
            }
        }
        PropertyKind::Array => {
            s.insert("type".into(), json!("array"));
            if let Some(items) = &p.items {
                s.insert("items".into(), property_schema(items, strict)?);
            }
        }
        PropertyKind::Other(k) if k.is_empty() => {}
        kind => {
            s.insert("type".into(), json!(json_type(kind)));
        }
    }
    if let Some(d) = &p.description {
        s.insert("description".into(), json!(d));
    }
    if let Some(e) = &p.enum_values {
        s.insert("enum".into(), Value::Array(e.clone()));
    }
    Ok(Value::Object(s))
}
