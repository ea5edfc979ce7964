//! Field lookups in JSON objects that search small objects instead of hashing the key: most
//! objects prompty reads (provider responses, input values) have a handful of fields, where
//! comparing a few keys costs less than SipHash.

use serde_json::{Map, Value};

/// Objects with at most this many fields are searched.
const SEARCHED: usize = 8;

/// The field `name` of `map`.
pub(crate) fn field<'a>(map: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if map.len() <= SEARCHED {
        map.iter().find(|(k, _)| k.as_str() == name).map(|(_, v)| v)
    } else {
        map.get(name)
    }
}

/// The field `name` of `value`, when it is an object that has one.
pub(crate) fn get<'a>(value: &'a Value, name: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => field(map, name),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_and_large_objects_find_the_same_fields() {
        let small = json!({"a": 1, "b": 2});
        let large = Value::Object((0..20).map(|i| (format!("k{i}"), json!(i))).collect());
        assert_eq!(get(&small, "b"), Some(&json!(2)));
        assert_eq!(get(&small, "c"), None);
        assert_eq!(get(&large, "k17"), Some(&json!(17)));
        assert_eq!(get(&large, "k20"), None);
        assert_eq!(get(&json!([1]), "a"), None);
    }
}
