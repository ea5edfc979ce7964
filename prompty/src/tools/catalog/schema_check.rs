//! Whether a JSON value is valid against a tool's parameter schema: the part of JSON Schema that
//! tool schemas use, enough to tell overloads of one tool apart ([`super::resolve`]).
//!
//! Checked: `type` (one or a list; `integer` accepts numbers without a fraction), `enum`, `const`
//! (numbers compare by value: `1` equals `1.0`); `properties`, `required`, `additionalProperties`
//! (`false` or a schema), `minProperties`, `maxProperties`; `items` (a schema, or the draft-7 list
//! form), `prefixItems`, `minItems`, `maxItems`, `uniqueItems`; `minLength`, `maxLength` (in
//! characters); `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (numbers, or the
//! draft-4 booleans), `multipleOf`; `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`; the
//! schemas `true` and `false`; local `$ref`s (`#`, `#/$defs/...`, `#/definitions/...`).
//!
//! Not checked (they accept anything): `pattern`, `patternProperties`, `format`, remote `$ref`s and
//! every other keyword: no regular-expression engine or network in the default build.
//!
//! Bounds: a walk deeper than [`MAX_DEPTH`] levels of value and schema, or following more than
//! [`MAX_REFS`] `$ref`s in a row, means invalid, so a cyclic schema cannot loop. Time is linear in
//! the value times the schema, except under combinators, which check each branch.

use serde_json::{Map, Value};

/// How deep the walk over the value and the schema may go.
pub(crate) const MAX_DEPTH: usize = 64;
/// How many `$ref`s may be followed on one path.
pub(crate) const MAX_REFS: usize = 32;

/// Whether `value` is valid against `schema` (a schema that is neither an object nor a boolean
/// accepts nothing).
pub(crate) fn is_valid(schema: &Value, value: &Value) -> bool {
    Check { root: schema }.valid(schema, value, 0, 0)
}

struct Check<'s> {
    root: &'s Value,
}

impl<'s> Check<'s> {
    fn valid(&self, schema: &'s Value, value: &Value, depth: usize, refs: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let s = match schema {
            Value::Bool(b) => return *b,
            Value::Object(s) => s,
            _ => return false,
        };
        if let Some(Value::String(r)) = s.get("$ref") {
            let Some(target) = self.resolve(r) else { return false };
            if refs >= MAX_REFS || !self.valid(target, value, depth + 1, refs + 1) {
                return false;
            }
        }
        let next = depth + 1;
        self.kind(s, value)
            && self.values(s, value)
            && self.object(s, value, next)
            && self.array(s, value, next)
            && string(s, value)
            && number(s, value)
            && self.combinators(s, value, next, refs)
    }

    /// The schema a local `$ref` names.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(self.root);
        }
        let mut at = self.root;
        for part in pointer.strip_prefix('/')?.split('/') {
            let key = part.replace("~1", "/").replace("~0", "~");
            at = match at {
                Value::Object(m) => m.get(&key)?,
                Value::Array(a) => a.get(key.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(at)
    }

    fn kind(&self, s: &Map<String, Value>, value: &Value) -> bool {
        match s.get("type") {
            Some(Value::String(t)) => has_type(t, value),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).any(|t| has_type(t, value)),
            _ => true,
        }
    }

    fn values(&self, s: &Map<String, Value>, value: &Value) -> bool {
        let in_enum = match s.get("enum") {
            Some(Value::Array(options)) => options.iter().any(|o| equal(o, value)),
            _ => true,
        };
        in_enum && s.get("const").is_none_or(|c| equal(c, value))
    }

    fn object(&self, s: &'s Map<String, Value>, value: &Value, depth: usize) -> bool {
        let Value::Object(obj) = value else { return true };
        let properties = s.get("properties").and_then(Value::as_object);
        if let Some(Value::Array(required)) = s.get("required") {
            if !required.iter().filter_map(Value::as_str).all(|k| obj.contains_key(k)) {
                return false;
            }
        }
        let count = obj.len() as u64;
        if s.get("minProperties").and_then(Value::as_u64).is_some_and(|m| count < m)
            || s.get("maxProperties").and_then(Value::as_u64).is_some_and(|m| count > m)
        {
            return false;
        }
        let additional = s.get("additionalProperties");
        obj.iter().all(|(k, v)| match properties.and_then(|p| p.get(k)) {
            Some(sub) => self.valid(sub, v, depth, 0),
            None => additional.is_none_or(|a| self.valid(a, v, depth, 0)),
        })
    }

    fn array(&self, s: &'s Map<String, Value>, value: &Value, depth: usize) -> bool {
        let Value::Array(items) = value else { return true };
        let count = items.len() as u64;
        if s.get("minItems").and_then(Value::as_u64).is_some_and(|m| count < m)
            || s.get("maxItems").and_then(Value::as_u64).is_some_and(|m| count > m)
        {
            return false;
        }
        if s.get("uniqueItems") == Some(&Value::Bool(true))
            && items.iter().enumerate().any(|(i, a)| items[..i].iter().any(|b| equal(a, b)))
        {
            return false;
        }
        // `prefixItems` (2020-12) or the list form of `items` (draft 7) check the first items; the
        // rest go to `items` (2020-12) or `additionalItems` (draft 7).
        let (prefix, rest) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (_, Some(Value::Array(prefix))) => (prefix.as_slice(), s.get("additionalItems")),
            (_, rest) => (&[][..], rest),
        };
        items.iter().enumerate().all(|(i, item)| match prefix.get(i) {
            Some(sub) => self.valid(sub, item, depth, 0),
            None => rest.is_none_or(|r| self.valid(r, item, depth, 0)),
        })
    }

    fn combinators(&self, s: &'s Map<String, Value>, value: &Value, depth: usize, refs: usize) -> bool {
        let list = |key: &str| s.get(key).and_then(Value::as_array).map(Vec::as_slice);
        let ok = |sub: &'s Value| self.valid(sub, value, depth, refs);
        if list("allOf").is_some_and(|all| !all.iter().all(ok))
            || list("anyOf").is_some_and(|any| !any.iter().any(ok))
            || list("oneOf").is_some_and(|one| one.iter().filter(|sub| ok(sub)).count() != 1)
            || s.get("not").is_some_and(ok)
        {
            return false;
        }
        match s.get("if") {
            Some(cond) if ok(cond) => s.get("then").is_none_or(ok),
            Some(_) => s.get("else").is_none_or(ok),
            None => true,
        }
    }
}

fn has_type(t: &str, value: &Value) -> bool {
    match (t, value) {
        ("null", Value::Null) | ("boolean", Value::Bool(_)) | ("string", Value::String(_)) => true,
        ("array", Value::Array(_)) | ("object", Value::Object(_)) | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// JSON equality, numbers compared by value.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

fn string(s: &Map<String, Value>, value: &Value) -> bool {
    let Value::String(text) = value else { return true };
    let len = text.chars().count() as u64;
    !(s.get("minLength").and_then(Value::as_u64).is_some_and(|m| len < m)
        || s.get("maxLength").and_then(Value::as_u64).is_some_and(|m| len > m))
}

fn number(s: &Map<String, Value>, value: &Value) -> bool {
    let Some(n) = value.as_f64().filter(|_| value.is_number()) else { return true };
    let bound = |key: &str| s.get(key).and_then(Value::as_f64);
    // Draft 4 writes `exclusiveMinimum: true` beside `minimum`; later drafts give the bound itself.
    let exclusive = |key: &str| s.get(key) == Some(&Value::Bool(true));
    let below_min = bound("minimum").is_some_and(|m| if exclusive("exclusiveMinimum") { n <= m } else { n < m })
        || bound("exclusiveMinimum").is_some_and(|m| n <= m);
    let above_max = bound("maximum").is_some_and(|m| if exclusive("exclusiveMaximum") { n >= m } else { n > m })
        || bound("exclusiveMaximum").is_some_and(|m| n >= m);
    let off_step = bound("multipleOf").filter(|m| *m > 0.0).is_some_and(|m| {
        let q = n / m;
        (q - q.round()).abs() > 1e-9
    });
    !(below_min || above_max || off_step)
}

#[cfg(test)]
mod tests {
    use super::is_valid;
    use serde_json::json;

    fn check(schema: serde_json::Value, good: &[serde_json::Value], bad: &[serde_json::Value]) {
        for v in good {
            assert!(is_valid(&schema, v), "{schema} should accept {v}");
        }
        for v in bad {
            assert!(!is_valid(&schema, v), "{schema} should refuse {v}");
        }
    }

    #[test]
    fn types_enums_and_consts() {
        check(json!({"type": "integer"}), &[json!(3), json!(3.0), json!(-1)], &[json!(3.5), json!("3")]);
        check(json!({"type": ["string", "null"]}), &[json!("a"), json!(null)], &[json!(1)]);
        check(json!({"type": "number"}), &[json!(1), json!(1.5)], &[json!(true)]);
        check(json!({"type": "boolean"}), &[json!(false)], &[json!(0)]);
        check(json!({"type": "array"}), &[json!([])], &[json!({})]);
        check(json!({"type": "object"}), &[json!({})], &[json!([])]);
        check(json!({"enum": ["c", "f", 1]}), &[json!("c"), json!(1.0)], &[json!("k")]);
        check(json!({"const": {"a": [1]}}), &[json!({"a": [1.0]})], &[json!({"a": [2]})]);
    }

    #[test]
    fn objects() {
        let s = json!({"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"], "additionalProperties": false});
        check(
            s,
            &[json!({"city": "Oslo"}), json!({"city": "Oslo", "days": 2})],
            &[json!({}), json!({"city": 1}), json!({"city": "Oslo", "unit": "c"})],
        );
        check(json!({"additionalProperties": {"type": "integer"}}), &[json!({"a": 1})], &[json!({"a": "x"})]);
        check(
            json!({"minProperties": 1, "maxProperties": 2}),
            &[json!({"a": 1})],
            &[json!({}), json!({"a":1,"b":2,"c":3})],
        );
    }

    #[test]
    fn arrays() {
        check(
            json!({"items": {"type": "string"}, "minItems": 1, "maxItems": 2}),
            &[json!(["a"])],
            &[json!([]), json!(["a", "b", "c"]), json!([1])],
        );
        check(json!({"uniqueItems": true}), &[json!([1, 2])], &[json!([1, 1.0])]);
        check(
            json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}),
            &[json!(["a", 1, 2])],
            &[json!([1]), json!(["a", "b"])],
        );
        check(json!({"items": [{"type": "string"}], "additionalItems": false}), &[json!(["a"])], &[json!(["a", 1])]);
    }

    #[test]
    fn strings_and_numbers() {
        check(json!({"minLength": 2, "maxLength": 3}), &[json!("éé"), json!("abc")], &[json!("a"), json!("abcd")]);
        check(json!({"minimum": 1, "maximum": 3}), &[json!(1), json!(3)], &[json!(0), json!(4)]);
        check(json!({"exclusiveMinimum": 1, "exclusiveMaximum": 3}), &[json!(2)], &[json!(1), json!(3)]);
        check(json!({"minimum": 1, "exclusiveMinimum": true}), &[json!(2)], &[json!(1)]);
        check(json!({"maximum": 3, "exclusiveMaximum": true}), &[json!(2)], &[json!(3)]);
        check(json!({"multipleOf": 0.5}), &[json!(1.5), json!(2)], &[json!(1.2)]);
        // Keywords that are not checked accept.
        check(json!({"pattern": "^x$", "format": "email"}), &[json!("anything")], &[]);
    }

    #[test]
    fn combinators_and_booleans() {
        check(json!({"allOf": [{"type": "integer"}, {"minimum": 2}]}), &[json!(2)], &[json!(1), json!("2")]);
        check(json!({"anyOf": [{"type": "integer"}, {"type": "string"}]}), &[json!(1), json!("a")], &[json!(null)]);
        check(json!({"oneOf": [{"type": "integer"}, {"minimum": 0}]}), &[json!(-1), json!(0.5)], &[json!(1)]);
        check(json!({"not": {"type": "string"}}), &[json!(1)], &[json!("a")]);
        check(
            json!({"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}}),
            &[json!(1), json!("a")],
            &[json!(-1), json!(null)],
        );
        check(json!(true), &[json!(1)], &[]);
        check(json!(false), &[], &[json!(1)]);
        check(json!("not a schema"), &[], &[json!(1)]);
    }

    #[test]
    fn local_refs_and_their_bounds() {
        let s = json!({"$defs": {"unit": {"enum": ["c", "f"]}}, "properties": {"unit": {"$ref": "#/$defs/unit"}}});
        check(s, &[json!({"unit": "c"})], &[json!({"unit": "k"})]);
        let tree = json!({"definitions": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/node"}}}}},
            "$ref": "#/definitions/node"});
        check(tree, &[json!({"kids": [{"kids": []}]})], &[json!({"kids": [1]})]);
        // A reference to itself, and one to nowhere, validate nothing; neither loops.
        check(json!({"$ref": "#"}), &[], &[json!(1)]);
        check(json!({"$ref": "#/nowhere"}), &[], &[json!(1)]);
        check(json!({"$ref": "https://example.com/schema.json"}), &[], &[json!(1)]);
    }

    #[test]
    fn depth_is_bounded() {
        let deep = (0..100).fold(json!(1), |v, _| json!([v]));
        assert!(is_valid(&json!({"type": "array"}), &deep));
        let nested_schema = (0..100).fold(json!({"type": "integer"}), |s, _| json!({"items": s}));
        assert!(!is_valid(&nested_schema, &deep));
    }
}
