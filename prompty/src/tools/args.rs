//! Reading the arguments a model sent for a tool call, forgiving the usual slips: code fences around
//! the JSON, text around the object, trailing commas. Never substitutes `{}` for unreadable input.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Decodes arguments into `A`; the error names the path of the argument that failed
/// (`city: invalid type: integer `5`, expected a string`, `stops[1].name: missing field ...`).
/// An error of the whole value (no path) is serde's message alone.
pub(crate) fn decode_arguments<A: DeserializeOwned>(args: Value) -> Result<A, String> {
    serde_path_to_error::deserialize(args).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path.is_empty() || path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}

/// Parses tool-call arguments: as JSON; else without a ```` ``` ```` fence; else the first balanced
/// `{...}` (braces inside strings ignored); else that with trailing commas removed. An empty string
/// is an empty object.
pub(crate) fn parse_arguments(raw: &str) -> Result<Value, String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    let direct = match serde_json::from_str::<Value>(raw) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let unfenced = strip_fence(raw);
    if let Ok(v) = serde_json::from_str::<Value>(unfenced) {
        return Ok(v);
    }
    if let Some(object) = first_object(unfenced) {
        if let Ok(v) = serde_json::from_str::<Value>(object) {
            return Ok(v);
        }
        if let Ok(v) = serde_json::from_str::<Value>(&strip_trailing_commas(object)) {
            return Ok(v);
        }
    }
    Err(format!("arguments are not valid JSON ({direct}): {}", preview(raw)))
}

fn preview(s: &str) -> String {
    let p: String = s.chars().take(80).collect();
    if p.len() < s.len() {
        format!("{p}…")
    } else {
        p
    }
}

/// The text inside a ```` ``` ```` fence (with or without a language tag, on one line or several).
fn strip_fence(s: &str) -> &str {
    let Some(rest) = s.strip_prefix("```") else { return s };
    let rest = rest.trim_end().strip_suffix("```").unwrap_or(rest);
    // Drop a language tag: everything before the first `{`/`[` on the opening line.
    let first_line_end = rest.find('\n').unwrap_or(rest.len());
    match rest[..first_line_end].find(['{', '[']) {
        Some(i) => rest[i..].trim(),
        None => rest[first_line_end..].trim(),
    }
}

/// The first balanced `{...}`, skipping braces inside JSON strings.
fn first_object(s: &str) -> Option<&str> {
    let start = s.find('{')?;
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_str => escaped = true,
            '"' => in_str = !in_str,
            '{' if !in_str => depth += 1,
            '}' if !in_str => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

fn strip_trailing_commas(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let (mut in_str, mut escaped) = (false, false);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if escaped {
            escaped = false;
        } else if c == '\\' && in_str {
            escaped = true;
        } else if c == '"' {
            in_str = !in_str;
        } else if c == ',' && !in_str {
            let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
            if matches!(next, Some('}') | Some(']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{decode_arguments, parse_arguments};
    use serde_json::json;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Stop {
        name: String,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Trip {
        city: String,
        #[serde(default)]
        stops: Vec<Stop>,
    }

    #[test]
    fn an_argument_error_names_the_argument_path() {
        let err = decode_arguments::<Trip>(json!({"city": 5})).unwrap_err();
        assert_eq!(err, "city: invalid type: integer `5`, expected a string");
        let err = decode_arguments::<Trip>(json!({"city": "Oslo", "stops": [{"name": "a"}, {}]})).unwrap_err();
        assert_eq!(err, "stops[1]: missing field `name`");
        let err = decode_arguments::<Trip>(json!({})).unwrap_err();
        assert_eq!(err, "missing field `city`");
        assert_eq!(decode_arguments::<Trip>(json!({"city": "Oslo"})).unwrap().city, "Oslo");
    }

    #[test]
    fn forgives_fences_surrounding_text_and_trailing_commas() {
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap(), json!({"a": 1}));
        assert_eq!(parse_arguments("```json\n{\"a\":1}\n```").unwrap(), json!({"a": 1}));
        assert_eq!(parse_arguments(r#"Sure: {"a":"}{"} thanks"#).unwrap(), json!({"a": "}{"}));
        assert_eq!(parse_arguments(r#"{"a":[1,2,],}"#).unwrap(), json!({"a": [1, 2]}));
        assert_eq!(parse_arguments("```{\"a\": 1}```").unwrap(), json!({"a": 1}));
        assert_eq!(parse_arguments("```json {\"a\": 1}```").unwrap(), json!({"a": 1}));
        assert_eq!(parse_arguments("").unwrap(), json!({}));
        assert!(parse_arguments("not json").is_err());
    }
}
