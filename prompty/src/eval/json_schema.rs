//! The JSON Schema subset the `json-schema` assertions check answers against (and structured
//! outputs' schemas): types, properties, items, enums, bounds and `pattern`.

use serde_json::Value;

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
        let bound = |key| schema.get(key).and_then(Value::as_f64);
        within(at, n, bound("minimum"), bound("maximum"), "")?;
    }
    if let Some(s) = value.as_str() {
        let bound = |key| schema.get(key).and_then(Value::as_u64);
        within(at, s.chars().count() as u64, bound("minLength"), bound("maxLength"), " characters")?;
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

/// `found` against the inclusive bounds `min` and `max` (each optional); the error says which one
/// it passes, in `unit` (`""` for numbers, `" characters"` for string lengths).
fn within<T: PartialOrd + std::fmt::Display>(
    at: &str,
    found: T,
    min: Option<T>,
    max: Option<T>,
    unit: &str,
) -> std::result::Result<(), String> {
    if let Some(min) = min.filter(|min| found < *min) {
        return Err(format!("{at}: expected at least {min}{unit}, found {found}"));
    }
    if let Some(max) = max.filter(|max| found > *max) {
        return Err(format!("{at}: expected at most {max}{unit}, found {found}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::validate;
    use serde_json::json;

    #[test]
    fn bounds_of_numbers_and_lengths_name_the_bound_passed() {
        let number = json!({"minimum": 1, "maximum": 1000});
        assert_eq!(validate(&json!(0.5), &number).unwrap_err(), "$: expected at least 1, found 0.5");
        assert_eq!(validate(&json!(2100000), &number).unwrap_err(), "$: expected at most 1000, found 2100000");
        assert!(validate(&json!(1000), &number).is_ok());
        let text = json!({"minLength": 2, "maxLength": 3});
        assert_eq!(validate(&json!("é"), &text).unwrap_err(), "$: expected at least 2 characters, found 1");
        assert_eq!(validate(&json!("abcd"), &text).unwrap_err(), "$: expected at most 3 characters, found 4");
        assert!(validate(&json!("éèà"), &text).is_ok());
    }
}
