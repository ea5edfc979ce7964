//! The JSON schema constraint: random walks over a synthetic vocabulary always end in a document
//! valid against the schema; unsupported schemas are errors with their JSON pointer.

use prompty_local::constrain::{Constraint, JsonSchema, TokenTrie};
use prompty_local::{Error, Vocabulary};
use serde_json::{json, Value};
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// A validator for the supported subset, written independently of the constraint.

fn resolve<'a>(root: &'a Value, r: &str) -> &'a Value {
    let path = r.strip_prefix('#').expect("local ref");
    if path.is_empty() {
        root
    } else {
        root.pointer(path).expect("ref target")
    }
}

fn type_is(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "array" => v.is_array(),
        "object" => v.is_object(),
        _ => panic!("type {t}"),
    }
}

fn valid(v: &Value, s: &Value, root: &Value) -> bool {
    let m = match s {
        Value::Bool(b) => return *b,
        Value::Object(m) => m,
        _ => panic!("schema {s}"),
    };
    if let Some(r) = m.get("$ref") {
        return valid(v, resolve(root, r.as_str().unwrap()), root);
    }
    if let Some(all) = m.get("allOf") {
        return all.as_array().unwrap().iter().all(|x| valid(v, x, root));
    }
    if let Some(any) = m.get("anyOf") {
        return any.as_array().unwrap().iter().any(|x| valid(v, x, root));
    }
    if let Some(one) = m.get("oneOf") {
        return one.as_array().unwrap().iter().filter(|x| valid(v, x, root)).count() == 1;
    }
    if let Some(t) = m.get("type") {
        let mut types: Vec<&str> = match t {
            Value::String(t) => vec![t],
            Value::Array(l) => l.iter().map(|x| x.as_str().unwrap()).collect(),
            _ => panic!(),
        };
        if m.get("nullable") == Some(&Value::Bool(true)) {
            types.push("null");
        }
        if !types.iter().any(|t| type_is(v, t)) {
            return false;
        }
    }
    if let Some(c) = m.get("const") {
        if !json_eq(v, c) {
            return false;
        }
    }
    if let Some(e) = m.get("enum") {
        if !e.as_array().unwrap().iter().any(|x| json_eq(v, x)) {
            return false;
        }
    }
    match v {
        Value::String(s) => {
            let n = s.chars().count() as u64;
            if m.get("minLength").and_then(Value::as_u64).is_some_and(|x| n < x) {
                return false;
            }
            if m.get("maxLength").and_then(Value::as_u64).is_some_and(|x| n > x) {
                return false;
            }
        }
        Value::Number(n) => {
            let f = n.as_f64().unwrap();
            let num = |k: &str| m.get(k).and_then(Value::as_f64);
            if num("minimum").is_some_and(|x| f < x)
                || num("maximum").is_some_and(|x| f > x)
                || num("exclusiveMinimum").is_some_and(|x| f <= x)
                || num("exclusiveMaximum").is_some_and(|x| f >= x)
            {
                return false;
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if m.get("minItems").and_then(Value::as_u64).is_some_and(|x| n < x) {
                return false;
            }
            if m.get("maxItems").and_then(Value::as_u64).is_some_and(|x| n > x) {
                return false;
            }
            if let Some(is) = m.get("items") {
                if !items.iter().all(|i| valid(i, is, root)) {
                    return false;
                }
            }
        }
        Value::Object(o) => {
            let props = m.get("properties").and_then(Value::as_object);
            if let Some(req) = m.get("required") {
                if !req.as_array().unwrap().iter().all(|r| o.contains_key(r.as_str().unwrap())) {
                    return false;
                }
            }
            for (k, x) in o {
                match props.and_then(|p| p.get(k)) {
                    Some(ps) => {
                        if !valid(x, ps, root) {
                            return false;
                        }
                    }
                    None => {
                        if let Some(ap) = m.get("additionalProperties") {
                            if !valid(x, ap, root) {
                                return false;
                            }
                        }
                    }
                }
            }
        }
        _ => {}
    }
    true
}

fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// No whitespace outside strings.
fn compact(text: &[u8]) -> bool {
    let mut in_str = false;
    let mut esc = false;
    for &b in text {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
        } else if b == b'"' {
            in_str = true;
        } else if b.is_ascii_whitespace() {
            return false;
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Random walks

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() % 10_000) as f64 / 10_000.0 < p
    }
}

const EOT: u32 = 1;

fn synthetic_vocab() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = vec![Vec::new(), Vec::new()]; // a control token, end of turn
    for b in 0..=255u8 {
        tokens.push(vec![b]);
    }
    let fragments = [
        "{\"",
        "\":",
        "\",\"",
        "\"}",
        "\"},",
        "\"}}",
        "}}",
        "},{",
        "[{",
        "}]",
        "[]",
        "{}",
        "[\"",
        "\"]",
        "\",",
        ",\"",
        "true",
        "false",
        "null",
        "12",
        "0.5",
        "-1",
        "1e5",
        "e+",
        "E-",
        "00",
        "99",
        ".0",
        "name",
        "get_weather",
        "get_time",
        "arguments",
        "city",
        "temperature",
        "Paris",
        "\":\"",
        "\":{",
        "\":[",
        "\":1",
        "\":0",
        " the",
        " a",
        "é",
        "日本",
        "\\u00e9",
        "\\n",
        "\\\"",
        "\\ud83d",
        "😀",
        "abcdefghijklmnopqrstuvwxyz",
        "\"name\":\"get_weather\"",
        "{\"name\":\"",
        "\"arguments\":{",
        "red",
        "green",
        "blue",
        "\"red\"",
        "\"blue\"",
        "items",
        "x",
        "y",
        " ",
        "\n",
        "\t",
    ];
    for f in fragments {
        tokens.push(f.as_bytes().to_vec());
    }
    tokens.push(vec![0xff, 0xfe]); // never valid UTF-8
    tokens.push(vec![b'a'; 5000]); // very long
    Vocabulary { tokens, end_of_turn: EOT }
}

/// One walk: random allowed tokens until the end of turn, or a cut closed by `completion`.
fn walk(schema: &Value, vocab: &Vocabulary, trie: &Arc<TokenTrie>, rng: &mut Rng, max_steps: usize) -> Vec<u8> {
    let mut c = JsonSchema::new(schema).unwrap_or_else(|e| panic!("{schema}: {e}")).with_trie(trie.clone());
    let mut out = Vec::new();
    let mut allowed = vec![false; vocab.tokens.len()];
    let cut = rng.below(max_steps + 1);
    for _ in 0..cut {
        c.mask(vocab, &mut allowed);
        assert!(!allowed[0], "a control token was allowed");
        let ids: Vec<usize> = (0..allowed.len()).filter(|&i| allowed[i]).collect();
        assert!(!ids.is_empty(), "dead end for {schema} after {:?}", String::from_utf8_lossy(&out));
        if allowed[EOT as usize] && (ids.len() == 1 || rng.chance(0.3)) {
            assert!(c.can_end());
            return out;
        }
        // Prefer structural tokens now and then so walks finish.
        let id = loop {
            let id = ids[rng.below(ids.len())];
            if id != EOT as usize {
                break id;
            }
        };
        assert!(c.advance(&vocab.tokens[id]), "an allowed token was refused");
        out.extend_from_slice(&vocab.tokens[id]);
        if c.is_complete() {
            c.mask(vocab, &mut allowed);
            assert_eq!((0..allowed.len()).filter(|&i| allowed[i]).collect::<Vec<_>>(), vec![EOT as usize]);
            return out;
        }
    }
    let tail = c.completion_bytes();
    out.extend_from_slice(&tail);
    let mut done = c.clone();
    assert!(done.advance(&tail), "the completion is not accepted by the constraint itself");
    assert!(done.can_end(), "after the completion the document cannot end: {:?}", String::from_utf8_lossy(&out));
    out
}

fn check_walks(schema: &Value, walks: usize, seed: u64) {
    let vocab = synthetic_vocab();
    let trie = Arc::new(TokenTrie::new(&vocab));
    let mut rng = Rng(seed | 1);
    for _ in 0..walks {
        let out = walk(schema, &vocab, &trie, &mut rng, 120);
        let value: Value = serde_json::from_slice(&out)
            .unwrap_or_else(|e| panic!("not JSON for {schema}: {:?}: {e}", String::from_utf8_lossy(&out)));
        assert!(valid(&value, schema, schema), "invalid for {schema}: {}", String::from_utf8_lossy(&out));
        assert!(compact(&out), "whitespace outside strings: {}", String::from_utf8_lossy(&out));
    }
}

fn tool(name: &str, props: Value, required: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"const": name},
            "arguments": {"type": "object", "properties": props, "required": required}
        },
        "required": ["name", "arguments"]
    })
}

#[test]
fn tool_call_shape() {
    let schema = tool("get_weather", json!({"city": {"type": "string"}}), json!(["city"]));
    check_walks(&schema, 300, 1);
    let c = JsonSchema::new(&schema).unwrap();
    assert_eq!(c.completion(), r#"{"name":"get_weather","arguments":{"city":""}}"#);
}

#[test]
fn any_of_two_tools() {
    let schema = json!({"anyOf": [
        tool("get_weather", json!({"city": {"type": "string"}}), json!(["city"])),
        tool("get_time", json!({"zone": {"type": "string", "maxLength": 8}, "utc": {"type": "boolean"}}), json!(["zone"])),
    ]});
    check_walks(&schema, 300, 2);
    let mut c = JsonSchema::new(&schema).unwrap();
    assert!(c.advance(br#"{"name":"get_t"#));
    assert_eq!(c.completion(), r#"ime","arguments":{"zone":""}}"#);
    assert!(!c.advance(br#"ime","arguments":{"city""#));
}

#[test]
fn structured_output() {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
        "required": ["city", "temperature"],
        "additionalProperties": false
    });
    check_walks(&schema, 300, 3);
    let mut c = JsonSchema::new(&schema).unwrap();
    assert!(c.advance(br#"{"city":"Paris","temperature":-1"#));
    assert!(!c.is_complete());
    assert_eq!(c.completion(), "}");
    assert!(c.advance(b".5e+1}"));
    assert!(c.is_complete());
    assert!(!c.advance(b" "));
}

#[test]
fn enums_and_consts() {
    check_walks(&json!({"enum": ["red", "green", "blue", 1, 12, 1.5, null, true, {"a": [1]}]}), 300, 4);
    check_walks(&json!({"type": "string", "enum": ["red", "green", "blue", 3]}), 100, 5);
    check_walks(&json!({"const": {"k": "v", "n": [1, 2]}}), 50, 6);
    let mut c = JsonSchema::new(&json!({"enum": [1, 12, 123]})).unwrap();
    assert!(c.advance(b"1"));
    assert!(c.can_end());
    assert!(c.advance(b"2"));
    assert!(!c.advance(b"4"));
    assert!(c.advance(b"3"));
    assert!(c.is_complete());
    // `type` filters the values.
    let mut c = JsonSchema::new(&json!({"type": "string", "enum": ["a", 1]})).unwrap();
    assert!(!c.advance(b"1"));
}

#[test]
fn nested_arrays_of_objects() {
    let schema = json!({
        "type": "object",
        "properties": {
            "rows": {
                "type": "array",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "x": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 4}},
                        "note": {"type": ["string", "null"]}
                    },
                    "required": ["x"]
                }
            }
        },
        "required": ["rows"]
    });
    check_walks(&schema, 300, 7);
    let c = JsonSchema::new(&schema).unwrap();
    assert_eq!(c.completion(), r#"{"rows":[{"x":0}]}"#);
}

#[test]
fn integers_and_bounds() {
    check_walks(&json!({"type": "integer", "minimum": 0}), 200, 8);
    check_walks(&json!({"type": "array", "items": {"type": "integer", "minimum": 0}}), 200, 9);
    check_walks(&json!({"type": "array", "items": {"type": "integer", "minimum": 60, "maximum": 100}}), 200, 10);
    check_walks(
        &json!({"type": "array", "items": {"type": "number", "exclusiveMinimum": -2.5, "maximum": 7.25}}),
        200,
        11,
    );
    check_walks(&json!({"type": "array", "items": {"type": "integer", "maximum": -3}}), 200, 12);
    let mut c = JsonSchema::new(&json!({"type": "integer", "minimum": 0})).unwrap();
    assert!(!c.advance(b"-"));
    assert!(!c.advance(b"1.5"));
    assert!(!c.advance(b"01"));
    let mut c = JsonSchema::new(&json!({"type": "integer", "minimum": 60, "maximum": 100})).unwrap();
    assert!(!c.advance(b"5"));
    assert!(c.advance(b"1"));
    assert_eq!(c.completion(), "00");
    assert_eq!(JsonSchema::new(&json!({"type": "integer", "minimum": 60, "maximum": 100})).unwrap().completion(), "60");
    assert_eq!(JsonSchema::new(&json!({"type": "number", "exclusiveMinimum": 0})).unwrap().completion().len(), 1);
}

#[test]
fn strings_and_escapes() {
    let schema = json!({"type": "string", "minLength": 2, "maxLength": 5});
    check_walks(&schema, 300, 13);
    let mut c = JsonSchema::new(&schema).unwrap();
    assert!(c.advance(b"\"\\u00e9"));
    assert_eq!(c.completion(), "a\"");
    assert!(!c.advance(b"\\ud83d"), "surrogate escapes are refused");
    assert!(!c.advance(b"\x01"), "raw control characters are refused");
    assert!(c.advance("日本".as_bytes()));
    assert!(c.advance(&"😀".as_bytes()[..2]));
    let closed = [b"\"\\u00e9".as_slice(), "日本".as_bytes(), &"😀".as_bytes()[..2], &c.completion_bytes()].concat();
    assert_eq!(serde_json::from_slice::<String>(&closed).unwrap().chars().count(), 4);
    let mut full = c.clone();
    assert!(full.advance(&"😀".as_bytes()[2..]));
    assert!(full.advance(b"x"));
    assert!(!full.advance(b"y"), "maxLength 5 reached");
    assert!(full.advance(b"\""));
    assert!(full.is_complete());
}

#[test]
fn any_value_and_free_objects() {
    check_walks(&json!(true), 300, 14);
    check_walks(&json!({}), 300, 15);
    check_walks(&json!({"type": "object"}), 300, 16);
    check_walks(&json!({"type": "object", "additionalProperties": {"type": "integer"}}), 300, 17);
    let mut c = JsonSchema::new(&json!({"type": "object", "additionalProperties": false})).unwrap();
    assert!(!c.advance(b"{\""));
    assert!(c.advance(b"{}"));
    assert!(c.is_complete());
}

#[test]
fn optional_properties_keep_declared_order() {
    let schema = json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "ab": {"type": "boolean"}, "b": {"type": "string"}, "c": {"type": "null"}},
        "required": ["b"]
    });
    check_walks(&schema, 300, 18);
    let mut c = JsonSchema::new(&schema).unwrap();
    assert!(c.advance(br#"{"ab":true,"b":"x""#));
    assert!(!c.clone().advance(br#","a""#), "a property before the last one written");
    assert!(c.advance(br#","c":null}"#));
    let mut c = JsonSchema::new(&schema).unwrap();
    assert!(!c.advance(br#"{"c":null}"#), "required b skipped");
}

#[test]
fn recursive_refs_are_bounded() {
    let schema = json!({
        "$defs": {"node": {"type": "object", "properties": {"v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
        "$ref": "#/$defs/node"
    });
    check_walks(&schema, 200, 19);
    let mut c = JsonSchema::new(&schema).unwrap();
    let deep = r#"{"v":1,"kids":["#.repeat(7);
    assert!(c.advance(deep.as_bytes()));
    assert!(c.advance(br#"{"v":1,"kids":["#));
    assert!(!c.clone().advance(b"{"), "nesting past the depth cap");
    let tail = c.completion();
    assert_eq!(tail, "]}".to_string() + &"]}".repeat(7));
    let text = format!("{deep}{{\"v\":1,\"kids\":[{tail}");
    let _: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert!(valid(&serde_json::from_str(&text).unwrap(), &schema, &schema));
}

#[test]
fn nullable_and_type_lists() {
    check_walks(&json!({"type": ["integer", "null", "string"], "maxLength": 3}), 300, 20);
    check_walks(&json!({"type": "boolean", "nullable": true}), 100, 21);
    check_walks(&json!({"oneOf": [{"type": "integer"}, {"type": "string"}]}), 100, 22);
    check_walks(&json!({"allOf": [{"type": "array", "items": {"enum": ["x", "y"]}, "maxItems": 2}]}), 100, 23);
}

// ---------------------------------------------------------------------------------------------
// Random schemas

fn random_schema(rng: &mut Rng, depth: usize, defs: &mut serde_json::Map<String, Value>) -> Value {
    let pick = if depth == 0 { rng.below(7) } else { rng.below(14) };
    match pick {
        0 => {
            let mut s = json!({"type": "string"});
            if rng.chance(0.5) {
                s["minLength"] = json!(rng.below(3));
            }
            if rng.chance(0.5) {
                s["maxLength"] = json!(3 + rng.below(5));
            }
            s
        }
        1 => {
            let mut s = json!({"type": "integer"});
            if rng.chance(0.5) {
                s["minimum"] = json!(rng.below(50) as i64 - 10);
            }
            if rng.chance(0.5) {
                s["maximum"] = json!(60 + rng.below(1000) as i64);
            }
            s
        }
        2 => {
            let mut s = json!({"type": "number"});
            if rng.chance(0.4) {
                s["exclusiveMinimum"] = json!(rng.below(100) as f64 / 8.0 - 5.0);
            }
            if rng.chance(0.4) {
                s["maximum"] = json!(20.5);
            }
            s
        }
        3 => json!({"type": "boolean"}),
        4 => json!({"type": "null"}),
        5 => json!({"enum": ["a", "ab", 1, 10, false, [1]]}),
        6 => json!({"const": "get_weather"}),
        7 | 8 => {
            let n = 1 + rng.below(4);
            let mut props = serde_json::Map::new();
            let mut required = Vec::new();
            for i in 0..n {
                let name =
                    ["city", "c", "name", "x", "arguments", "temperature"][rng.below(6)].to_string() + &i.to_string();
                props.insert(name.clone(), random_schema(rng, depth - 1, defs));
                if rng.chance(0.5) {
                    required.push(name);
                }
            }
            json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
        }
        9 => {
            let mut s = json!({"type": "array", "items": random_schema(rng, depth - 1, defs)});
            if rng.chance(0.5) {
                s["minItems"] = json!(rng.below(2));
            }
            if rng.chance(0.5) {
                s["maxItems"] = json!(1 + rng.below(3));
            }
            s
        }
        10 => json!({"anyOf": [random_schema(rng, depth - 1, defs), random_schema(rng, depth - 1, defs)]}),
        11 => {
            let inner = random_schema(rng, depth - 1, defs);
            match inner.get("type").and_then(Value::as_str) {
                Some(t) if t != "null" => {
                    let mut s = inner.clone();
                    s["type"] = json!([t, "null"]);
                    s
                }
                _ => inner,
            }
        }
        12 => {
            let name = format!("d{}", defs.len());
            defs.insert(name.clone(), json!(null));
            let s = random_schema(rng, depth - 1, defs);
            defs.insert(name.clone(), s);
            json!({"$ref": format!("#/$defs/{name}")})
        }
        _ => {
            if rng.chance(0.5) {
                json!({"type": "object"})
            } else {
                json!(true)
            }
        }
    }
}

#[test]
fn random_schemas_random_walks() {
    let mut rng = Rng(0x5eed);
    for i in 0..150 {
        let mut defs = serde_json::Map::new();
        let mut schema = random_schema(&mut rng, 3, &mut defs);
        if !defs.is_empty() {
            if schema.is_object() {
                schema["$defs"] = Value::Object(defs);
            } else {
                schema = json!({"$defs": defs, "allOf": [schema]});
            }
        }
        check_walks(&schema, 20, 100 + i);
    }
}

// ---------------------------------------------------------------------------------------------
// Errors

fn schema_error(schema: Value) -> (String, String) {
    match JsonSchema::new(&schema) {
        Err(Error::Schema { pointer, message }) => (pointer, message),
        other => panic!("{schema}: expected a schema error, got {other:?}"),
    }
}

#[test]
fn unsupported_schemas_name_the_keyword_and_pointer() {
    let cases: Vec<(Value, &str, &str)> = vec![
        (json!({"type": "string", "pattern": "^a"}), "/pattern", "pattern"),
        (
            json!({"properties": {"a/b": {"type": "string", "format": "email", "pattern": "x"}}}),
            "/properties/a~1b/pattern",
            "pattern",
        ),
        (json!({"not": {}}), "/not", "not"),
        (json!({"type": "integer", "multipleOf": 2}), "/multipleOf", "multipleOf"),
        (json!({"type": "array", "items": [{}]}), "/items", "tuple"),
        (json!({"type": "array", "uniqueItems": true}), "/uniqueItems", "uniqueItems"),
        (json!({"type": "object", "anyOf": [{}]}), "", "beside `anyOf`"),
        (json!({"allOf": [{}, {}]}), "/allOf", "exactly one"),
        (json!({"type": "foo"}), "/type", "unknown type"),
        (json!({"type": "object", "properties": {"a": {}}, "required": ["b"]}), "/required", "`b`"),
        (json!({"type": "string", "minLength": 1000}), "/minLength", "512"),
        (json!({"type": "array", "minItems": 1000}), "/minItems", "128"),
        (json!({"type": "integer", "minimum": 5, "maximum": 3}), "", "no integer"),
        (json!({"$ref": "#/$defs/missing"}), "/$ref", "points to nothing"),
        (json!({"$ref": "https://example.com/s.json"}), "/$ref", "not local"),
        (json!({"$ref": "#"}), "", "recursive"),
        (
            json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}),
            "/$defs/a",
            "recursive",
        ),
        (json!({"anyOf": [{"$ref": "#"}, {"type": "null"}]}), "", "recursive"),
        (json!({"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"]}), "", "no instance"),
        (json!({"enum": (0..2000).collect::<Vec<_>>()}), "/enum", "1024"),
        (
            json!({"type": "object", "properties": (0..300).map(|i| (format!("p{i}"), json!({}))).collect::<serde_json::Map<_, _>>()}),
            "/properties",
            "256",
        ),
        (json!({"enum": []}), "/enum", "non-empty"),
        (json!({"type": "string", "enum": [1, 2]}), "/enum", "matches `type`"),
        (json!(42), "", "object or a boolean"),
        (json!(false), "", "no instance"),
    ];
    for (schema, pointer, needle) in cases {
        let (p, m) = schema_error(schema.clone());
        assert_eq!(p, pointer, "{schema}: {m}");
        assert!(m.contains(needle), "{schema}: `{m}` lacks `{needle}`");
    }
    // Too many subschemas.
    let wide = json!({"anyOf": (0..3000).map(|i| json!({"const": i})).collect::<Vec<_>>()});
    let (p, m) = schema_error(wide);
    assert!(p.starts_with("/anyOf/20"), "{p}");
    assert!(m.contains("too large"), "{m}");
    let mut deep = json!({"type": "null"});
    for _ in 0..200 {
        deep = json!({"type": "array", "items": deep});
    }
    let (p, m) = schema_error(deep);
    assert!(p.starts_with("/items/items/items"), "{p}");
    assert!(m.contains("nested"), "{m}");
}

#[test]
fn annotations_are_ignored() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "T", "description": "d", "examples": [1], "default": {}, "x-extra": 1,
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date-time", "description": "d"}},
        "required": ["when"]
    });
    assert_eq!(JsonSchema::new(&schema).unwrap().completion(), r#"{"when":""}"#);
}

// ---------------------------------------------------------------------------------------------
// Hostile input

#[test]
fn hostile_vocabulary_and_refused_bytes() {
    let vocab = Vocabulary {
        tokens: vec![
            Vec::new(),
            vec![0xff],
            vec![b'{'; 100_000],
            b"{}".to_vec(),
            vec![0xc3],
            vec![0xa9],
            b"\"".to_vec(),
            Vec::new(),
        ],
        end_of_turn: 7,
    };
    let mut c = JsonSchema::new(&json!({"type": "object", "additionalProperties": {"type": "string"}})).unwrap();
    let mut allowed = vec![true; vocab.tokens.len()];
    c.mask(&vocab, &mut allowed);
    assert_eq!(allowed, [false, false, false, true, false, false, false, false]);
    // A shorter or longer mask buffer than the vocabulary does not panic.
    let mut short = vec![false; 2];
    c.mask(&vocab, &mut short);
    let mut long = vec![true; 20];
    c.mask(&vocab, &mut long);
    assert!(long[3] && !long[10]);

    let mut s = JsonSchema::new(&json!({"type": "string"})).unwrap();
    assert!(s.advance(b"\""));
    let before = (s.completion_bytes(), s.can_end());
    assert!(!s.advance(b"ab\xff"));
    assert!(!s.advance(b"\xa9"));
    assert!(!s.advance(b"\xc3\x28"));
    assert_eq!((s.completion_bytes(), s.can_end()), before, "a refused advance changed the state");
    s.mask(&vocab, &mut allowed);
    assert_eq!(allowed, [false, false, false, true, true, false, true, false]);
    assert!(s.advance(&[0xc3]));
    s.mask(&vocab, &mut allowed);
    assert_eq!(allowed, [false, false, false, false, false, true, false, false]);
    assert!(s.advance(b""));
}

#[test]
fn mask_matches_advance_and_ends() {
    let vocab = synthetic_vocab();
    let cases: [(Value, &[&str]); 3] = [
        (json!({"type": "array", "items": {"type": "integer"}, "maxItems": 2}), &["[", "12", ",", "-1", "]"]),
        (
            json!({"type": "array", "items": {"type": "string", "maxLength": 3}}),
            &["[\"", "ab", "c", "\"", ",\"", "日", "\\n", "\"]"],
        ),
        (json!({"type": "object"}), &["{\"", "city", " the", "\":", "\"", "abcdefghijklmnopqrstuvwxyz", "\"}"]),
    ];
    for (schema, steps) in cases {
        let mut c = JsonSchema::new(&schema).unwrap();
        let mut allowed = vec![false; vocab.tokens.len()];
        for step in steps {
            c.mask(&vocab, &mut allowed);
            for (id, t) in vocab.tokens.iter().enumerate() {
                if id != EOT as usize {
                    let expected = c.clone().advance(t) && !t.is_empty() && t.len() <= TokenTrie::MAX_TOKEN_BYTES;
                    assert_eq!(allowed[id], expected, "{schema} at {step}: token {:?}", String::from_utf8_lossy(t));
                }
            }
            assert!(!allowed[EOT as usize]);
            assert!(c.advance(step.as_bytes()), "{schema}: {step}");
        }
        c.mask(&vocab, &mut allowed);
        assert!(allowed[EOT as usize]);
        assert!(c.is_complete());
    }
}
