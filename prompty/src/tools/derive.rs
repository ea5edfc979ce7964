//! Runtime support for `#[prompty::tool]`: tool declarations from the JSON Schema of the argument
//! types (schemars), argument decoding and result encoding.

use crate::{Error, FunctionTool, Property, PropertyKind, Result, Tool, ToolKind};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Display;

/// The parameters of a tool whose arguments are the fields of `A`.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Args {
///     /// The city
///     city: String,
///     days: Option<u8>,
/// }
/// let params = prompty::__private::tool_parameters::<Args>();
/// assert_eq!(params[0].name, "city");
/// assert!(params[0].required && !params[1].required);
/// assert_eq!(params[0].description.as_deref(), Some("The city"));
/// assert_eq!(params[1].kind, prompty::PropertyKind::Integer);
/// ```
pub fn tool_parameters<A: JsonSchema>() -> Vec<Property> {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let root = settings.into_generator().into_root_schema_for::<A>().to_value();
    object_properties(&root, &root)
}

/// The `function` tool declaration of a `#[prompty::tool]` fn.
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Args { q: String }
/// let t = prompty::__private::tool_definition::<Args>("search", Some("Searches"));
/// assert_eq!(t.kind.as_str(), "function");
/// ```
pub fn tool_definition<A: JsonSchema>(name: &str, description: Option<&str>) -> Tool {
    Tool {
        name: name.to_owned(),
        description: description.map(str::to_owned),
        bindings: Vec::new(),
        kind: ToolKind::Function(FunctionTool { parameters: tool_parameters::<A>(), strict: None }),
    }
}

/// Decodes a tool's JSON arguments into its argument struct; the error names the tool and the
/// path of the argument that failed.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Args { city: String }
/// let args: Args = prompty::__private::tool_args("get_weather", serde_json::json!({"city": "Oslo"}))?;
/// assert_eq!(args.city, "Oslo");
/// let err = prompty::__private::tool_args::<Args>("get_weather", serde_json::json!({})).err().unwrap();
/// assert!(err.to_string().starts_with("Tool 'get_weather' failed: invalid arguments"));
/// let err = prompty::__private::tool_args::<Args>("get_weather", serde_json::json!({"city": 5})).err().unwrap();
/// assert_eq!(err.to_string(),
///     "Tool 'get_weather' failed: invalid arguments: city: invalid type: integer `5`, expected a string");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn tool_args<A: DeserializeOwned>(name: &str, args: Value) -> Result<A> {
    let args = if args.is_null() { Value::Object(Map::new()) } else { args };
    super::args::decode_arguments(args)
        .map_err(|e| Error::Tool { name: name.to_owned(), message: format!("invalid arguments: {e}") })
}

/// Encodes a tool's return value.
///
/// ```
/// let out = prompty::__private::tool_output("forecast", vec!["sunny", "rain"])?;
/// assert_eq!(out, serde_json::json!(["sunny", "rain"]));
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn tool_output<T: Serialize>(name: &str, value: T) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| Error::Tool { name: name.to_owned(), message: format!("cannot serialize the result: {e}") })
}

/// Encodes a tool's `Result` return value: `Err` becomes [`Error::Tool`] with its message.
///
/// ```
/// use prompty::__private::tool_output_result;
/// assert_eq!(tool_output_result("forecast", Ok::<_, String>("sunny"))?, "sunny");
/// let err = tool_output_result("forecast", Err::<(), _>("offline")).err().unwrap();
/// assert_eq!(err.to_string(), "Tool 'forecast' failed: offline");
/// # Ok::<(), prompty::Error>(())
/// ```
pub fn tool_output_result<T: Serialize, E: Display>(name: &str, value: std::result::Result<T, E>) -> Result<Value> {
    match value {
        Ok(v) => tool_output(name, v),
        Err(e) => Err(Error::Tool { name: name.to_owned(), message: e.to_string() }),
    }
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/")) {
        Some(path) => path.split('/').try_fold(root, |v, seg| v.get(seg)).unwrap_or(schema),
        None => schema,
    }
}

fn object_properties(schema: &Value, root: &Value) -> Vec<Property> {
    let schema = resolve(schema, root);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    props
        .iter()
        .map(|(name, s)| {
            let mut p = property(s, root);
            p.name = name.clone();
            p.required = required.contains(&name.as_str()) && !p.nullable;
            p
        })
        .collect()
}

fn kind_of(t: &str) -> PropertyKind {
    match t {
        "number" => PropertyKind::Float,
        other => PropertyKind::from(other),
    }
}

fn property(schema: &Value, root: &Value) -> Property {
    let described = schema.get("description").and_then(Value::as_str).map(str::to_owned);
    let schema = resolve(schema, root);
    let mut p = Property {
        description: described.or_else(|| schema.get("description").and_then(Value::as_str).map(str::to_owned)),
        ..Property::default()
    };
    // `Option<T>`: `type: [T, "null"]` or `anyOf: [T, {type: null}]`.
    let alternatives = schema.get("anyOf").or_else(|| schema.get("oneOf")).and_then(Value::as_array);
    if let Some(alts) = alternatives {
        let non_null: Vec<&Value> =
            alts.iter().filter(|a| a.get("type").and_then(Value::as_str) != Some("null")).collect();
        if non_null.len() < alts.len() {
            p.nullable = true;
        }
        if non_null.iter().all(|a| a.get("const").is_some()) && !non_null.is_empty() {
            p.kind = PropertyKind::String;
            p.enum_values = Some(non_null.iter().filter_map(|a| a.get("const").cloned()).collect());
            return p;
        }
        if non_null.len() == 1 {
            let inner = property(non_null[0], root);
            return Property {
                description: p.description.or(inner.description.clone()),
                nullable: p.nullable,
                ..inner
            };
        }
        p.kind = PropertyKind::Union;
        let alts = non_null.into_iter().map(|a| property(a, root)).collect();
        if schema.get("oneOf").is_some() {
            p.one_of = Some(alts);
        } else {
            p.any_of = Some(alts);
        }
        return p;
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => {
            p.nullable = ts.iter().any(|t| t == "null");
            ts.iter().filter_map(Value::as_str).find(|t| *t != "null")
        }
        _ => None,
    };
    p.kind = ty.map(kind_of).unwrap_or(PropertyKind::Object);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        p.enum_values = Some(values.iter().filter(|v| !v.is_null()).cloned().collect());
    }
    match p.kind {
        PropertyKind::Array => {
            if let Some(items) = schema.get("items") {
                p.items = Some(Box::new(property(items, root)));
            }
        }
        PropertyKind::Object => {
            let props = object_properties(schema, root);
            if !props.is_empty() {
                p.properties = Some(props);
            }
        }
        _ => {}
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Place {
        /// Name of the place
        name: String,
        lat: f64,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Args {
        count: i64,
        ratio: f32,
        flag: bool,
        tags: Vec<String>,
        unit: Unit,
        place: Place,
        extra: HashMap<String, String>,
        maybe: Option<Place>,
    }

    #[test]
    fn rust_types_map_to_property_kinds() {
        let params = tool_parameters::<Args>();
        let kind = |n: &str| params.iter().find(|p| p.name == n).map(|p| p.kind.clone()).unwrap();
        assert_eq!(kind("count"), PropertyKind::Integer);
        assert_eq!(kind("ratio"), PropertyKind::Float);
        assert_eq!(kind("flag"), PropertyKind::Boolean);
        assert_eq!(kind("tags"), PropertyKind::Array);
        assert_eq!(kind("unit"), PropertyKind::String);
        assert_eq!(kind("place"), PropertyKind::Object);
        assert_eq!(kind("extra"), PropertyKind::Object);
        assert_eq!(kind("maybe"), PropertyKind::Object);
        let get = |n: &str| params.iter().find(|p| p.name == n).unwrap();
        assert_eq!(get("unit").enum_values, Some(vec![serde_json::json!("Celsius"), serde_json::json!("Fahrenheit")]));
        assert_eq!(get("tags").items.as_ref().unwrap().kind, PropertyKind::String);
        let place = get("place").properties.as_ref().unwrap();
        assert_eq!(place[0].description.as_deref(), Some("Name of the place"));
        assert!(get("count").required && !get("maybe").required);
        assert_eq!(get("maybe").properties.as_ref().unwrap().len(), 2);
    }
}
