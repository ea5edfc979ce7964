//! Whether `default` and `example` values fit the property that declares them.

use crate::{Property, PropertyKind};
use serde_json::Value;

/// Whether `value` fits the property `p`; else what was expected where (`at` is the path inside
/// the value, `""` at its root).
pub(crate) fn value_fits(value: &Value, p: &Property, at: &str) -> Result<(), String> {
    let place = if at.is_empty() { String::new() } else { format!(" at `{at}`") };
    if value.is_null() {
        return if p.nullable { Ok(()) } else { Err(format!("expected {}{place}, found null", expected(p))) };
    }
    let fits = match &p.kind {
        PropertyKind::String => value.is_string(),
        PropertyKind::Integer => value.is_i64() || value.is_u64(),
        PropertyKind::Float => value.is_number(),
        PropertyKind::Boolean => value.is_boolean(),
        PropertyKind::Array => value.is_array(),
        PropertyKind::Object => value.is_object(),
        PropertyKind::Union => {
            let alternatives: Vec<&Property> = p.one_of.iter().chain(p.any_of.iter()).flatten().collect();
            if !alternatives.is_empty() && !alternatives.iter().any(|alt| value_fits(value, alt, at).is_ok()) {
                let kinds: Vec<String> = alternatives.iter().map(|alt| expected(alt)).collect();
                return Err(format!("expected {}{place}, found {}", kinds.join(" or "), found(value)));
            }
            true
        }
        // Rich kinds and unknown kinds: not checked.
        _ => true,
    };
    if !fits {
        return Err(format!("expected {}{place}, found {}", expected(p), found(value)));
    }
    if let Some(values) = p.enum_values.as_ref().filter(|v| !v.is_empty()) {
        if !values.contains(value) {
            let shown: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
            return Err(format!(
                "expected one of {}{place} (its `enumValues`), found {}",
                shown.join(", "),
                found(value)
            ));
        }
    }
    match value {
        Value::Array(items) => {
            if let Some(item) = &p.items {
                for (i, v) in items.iter().enumerate() {
                    value_fits(v, item, &format!("{at}[{i}]"))?;
                }
            }
        }
        Value::Object(map) => {
            for property in p.properties.iter().flatten() {
                if let Some(v) = map.get(&property.name) {
                    let inner = if at.is_empty() { property.name.clone() } else { format!("{at}.{}", property.name) };
                    value_fits(v, property, &inner)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// What a property's kind expects, as a phrase (`an integer`, `an array of string`).
fn expected(p: &Property) -> String {
    match &p.kind {
        PropertyKind::Array => match &p.items {
            Some(items) => format!("an array of {}", items.kind.as_str()),
            None => "an array".to_owned(),
        },
        PropertyKind::Integer => "an integer".to_owned(),
        PropertyKind::Object => "an object".to_owned(),
        PropertyKind::Union => "a union".to_owned(),
        PropertyKind::Image => "an image".to_owned(),
        PropertyKind::Audio => "an audio".to_owned(),
        kind => format!("a {}", kind.as_str()),
    }
}

/// A value as a phrase (`the string "ten"`, `the float 1.5`).
fn found(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean `{b}`"),
        Value::Number(n) if n.is_f64() => format!("the float `{n}`"),
        Value::Number(n) => format!("the integer `{n}`"),
        Value::String(s) => format!("the string `{s:?}`"),
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}
