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

/// The deepest nesting of schemas and values [`validate`] follows.
const MAX_VALIDATE_DEPTH: usize = 64;

/// Checks `value` against a JSON Schema subset: `type` (one or a list), `properties`, `required`,
/// `items`, `enum`, `const`, `additionalProperties` (`false` or a schema), `minimum`/`maximum`,
/// `minLength`/`maxLength` (in characters) and `pattern` (Rust `regex` syntax, `search` semantics);
/// other keywords are ignored. The error names the first place (`$.a.b[0]`) that does not fit
/// and why.
pub(crate) fn validate(value: &Value, schema: &Value) -> std::result::Result<(), String> {
    validate_at(value, schema, "$", 0)
}

fn type_fits(value: &Value, ty: &str) -> bool {
    match ty {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.as_f64().is_some_and(|n| n.fract() == 0.0),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

fn validate_at(value: &Value, schema: &Value, at: &str, depth: usize) -> std::result::Result<(), String> {
    if depth > MAX_VALIDATE_DEPTH {
        return Err(format!("{at}: nested deeper than {MAX_VALIDATE_DEPTH} levels"));
    }
    let Some(schema) = schema.as_object() else {
        return match schema {
            Value::Bool(false) => Err(format!("{at}: no value is allowed here")),
            _ => Ok(()),
        };
    };
    if let Some(ty) = schema.get("type") {
        let types: Vec<&str> = match ty {
            Value::String(t) => vec![t.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !types.is_empty() && !types.iter().any(|t| type_fits(value, t)) {
            return Err(format!("{at}: expected {}, found {}", types.join(" or "), short(value)));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            return Err(format!(
                "{at}: expected one of {}, found {}",
                short(&Value::Array(options.clone())),
                short(value)
            ));
        }
    }
    if let Some(expected) = schema.get("const") {
        if expected != value {
            return Err(format!("{at}: expected {}, found {}", short(expected), short(value)));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            if n < min {
                return Err(format!("{at}: expected at least {min}, found {n}"));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            if n > max {
                return Err(format!("{at}: expected at most {max}, found {n}"));
            }
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
            if len < min {
                return Err(format!("{at}: expected at least {min} characters, found {len}"));
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            if len > max {
                return Err(format!("{at}: expected at most {max} characters, found {len}"));
            }
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            let re =
                regex::Regex::new(pattern).map_err(|e| format!("{at}: the schema's pattern does not compile: {e}"))?;
            if !re.is_match(s) {
                return Err(format!("{at}: expected text matching /{pattern}/, found {}", short(value)));
            }
        }
    }
    if let Some(object) = value.as_object() {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    return Err(format!("{at}: the required property `{name}` is missing"));
                }
            }
        }
        for (key, v) in object {
            let path = format!("{at}.{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => validate_at(v, sub, &path, depth + 1)?,
                None => match schema.get("additionalProperties") {
                    Some(Value::Bool(false)) => return Err(format!("{at}: the property `{key}` is not allowed")),
                    Some(sub @ Value::Object(_)) => validate_at(v, sub, &path, depth + 1)?,
                    _ => {}
                },
            }
        }
    }
    if let (Some(items), Some(list)) = (schema.get("items"), value.as_array()) {
        for (i, v) in list.iter().enumerate() {
            validate_at(v, items, &format!("{at}[{i}]"), depth + 1)?;
        }
    }
    Ok(())
}
