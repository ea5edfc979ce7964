//! Constrained decoding: only tokens that keep the output a valid JSON document of a schema.
//!
//! [`JsonSchema`] compiles a JSON schema into a pushdown automaton over bytes. Its state is a
//! small set of alternatives (one per `anyOf` branch, type of a type list, … still alive), each a
//! stack of frames; bytes prune the set. [`Constraint::mask`] walks a byte trie of the model's
//! vocabulary ([`TokenTrie`], built once per vocabulary and cached) with that state, dropping a
//! whole subtree of tokens at the first byte the schema rejects.
//!
//! The output is canonical compact JSON: no whitespace outside strings, object keys written
//! exactly as `"name":` in the order the schema declares them.
//!
//! # Keywords
//!
//! Supported: `type` (one or a list, `nullable: true`), `enum`, `const`, `anyOf`, `oneOf`
//! (treated as `anyOf`: the output matches at least one branch; make branches disjoint, e.g. by a
//! `const` name), `allOf` with one schema, `$ref` to a local JSON pointer (`#`, `#/$defs/…`,
//! `#/definitions/…`), `properties`, `required`, `additionalProperties` and
//! `unevaluatedProperties` (an object with declared `properties` gets only those; one without
//! any gets any keys, its values following `additionalProperties`), `items`, `minItems`,
//! `maxItems`, `uniqueItems: false`, `minLength`, `maxLength`, `minimum`, `maximum`,
//! `exclusiveMinimum`, `exclusiveMaximum` (numbers with bounds are written without exponent).
//! Schemas `true`/`{}` allow any JSON value, `false` none.
//!
//! Ignored annotations: `title`, `description`, `examples`, `default`, `$schema`, `$id`,
//! `$comment`, `deprecated`, `readOnly`, `writeOnly`, `contentMediaType`, `contentEncoding`,
//! `$defs`/`definitions` (only as `$ref` targets), `x-…` extensions, and `format` (an annotation
//! in JSON Schema 2020-12; the string is not checked against it).
//!
//! Everything else is an [`Error::Schema`] naming the keyword: notably `pattern` and
//! `patternProperties` (a regular expression is not enforced token by token here: remove it or use
//! `enum`), `not`, `if`/`then`/`else`, `allOf` of several schemas, `anyOf` beside other keywords,
//! `multipleOf`, `uniqueItems: true`, `prefixItems`/tuple `items`, `contains`, `minProperties`,
//! `maxProperties`, `propertyNames`, `dependentRequired`, `dependentSchemas`, remote `$ref`.
//!
//! # Bounds
//!
//! See the associated constants of [`JsonSchema`]: strings, arrays, objects without declared
//! properties, digits, nesting and the alternatives tracked at once are capped, so every output
//! ends; the schema itself is capped in size. Caps only narrow what the model may write: what it
//! writes stays valid.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::{Error, Vocabulary};

/// A rule on what the model may write next. [`crate::Model::generate`] asks it before each token.
pub trait Constraint: Send {
    /// Sets `allowed[id]` to `true` for every token id of `vocab` that may come next, and to
    /// `false` for the others (`allowed.len() == vocab.tokens.len()`). When the document may end
    /// here, `vocab.end_of_turn` is allowed.
    fn mask(&mut self, vocab: &Vocabulary, allowed: &mut [bool]);
    /// Takes the bytes of the token chosen. `false` when they were not allowed (the state is then unchanged).
    fn advance(&mut self, bytes: &[u8]) -> bool;
    /// Whether the document is complete and nothing more may be written.
    fn is_complete(&self) -> bool;
    /// The shortest text that makes the output so far a complete, valid document.
    fn completion(&self) -> String;
    /// [`Constraint::completion`] as bytes: exact even when the output so far ends inside a
    /// multi-byte UTF-8 character (the completion then starts with its continuation bytes, which
    /// a `String` cannot hold on its own). Use this one to close a cut-off output.
    fn completion_bytes(&self) -> Vec<u8> {
        self.completion().into_bytes()
    }
}

// ---------------------------------------------------------------------------------------------
// Compiled schema

const ANY: u32 = 0;
const STR_ANY: u32 = 1;
const NUM_ANY: u32 = 2;
const SCALARS: u32 = 3; // false, null, true
const ARR_ANY: u32 = 4;
const MAP_ANY: u32 = 5;
const KEY: u32 = 6;
const COLON: u32 = 7;
const NEVER: u32 = 8;
const BUILTIN: usize = 9;

#[derive(Debug, Clone, Copy, PartialEq)]
struct NumSpec {
    integer: bool,
    /// Lower bound and whether it is exclusive (for integers always inclusive).
    lo: Option<(f64, bool)>,
    hi: Option<(f64, bool)>,
}

impl NumSpec {
    fn bounded(&self) -> bool {
        self.lo.is_some() || self.hi.is_some()
    }
    fn frac_cap(&self) -> usize {
        if self.integer {
            0
        } else if self.bounded() {
            JsonSchema::MAX_BOUNDED_FRACTION_DIGITS
        } else {
            JsonSchema::MAX_FRACTION_DIGITS
        }
    }
    fn in_range(&self, v: f64) -> bool {
        if !v.is_finite() {
            return false;
        }
        if let Some((lo, ex)) = self.lo {
            if v < lo || (ex && v == lo) {
                return false;
            }
        }
        if let Some((hi, ex)) = self.hi {
            if v > hi || (ex && v == hi) {
                return false;
            }
        }
        true
    }
}

#[derive(Debug)]
struct Prop {
    /// `"name":` as written.
    key: Vec<u8>,
    node: u32,
    required: bool,
}

#[derive(Debug)]
enum Node {
    Alt(Vec<u32>),
    Ref(u32),
    /// Exact JSON texts, sorted and deduplicated.
    Lits(Vec<Vec<u8>>),
    Str {
        min: u32,
        max: u32,
    },
    Num(NumSpec),
    Obj(Vec<Prop>),
    /// An object with any keys; values of `values`.
    Map {
        values: u32,
        max: u32,
    },
    Arr {
        items: u32,
        min: u32,
        max: u32,
    },
}

#[derive(Debug)]
struct Compiled {
    nodes: Vec<Node>,
    /// The shortest value of each node (`None`: no instance within the bounds).
    canon: Vec<Option<Vec<u8>>>,
    /// Containers nesting in `canon` (`u16::MAX` when there is none).
    cdepth: Vec<u16>,
    root: u32,
}

impl Compiled {
    fn fits(&self, depth: u16, node: u32) -> bool {
        let d = self.cdepth[node as usize];
        d != u16::MAX && depth as usize + d as usize <= JsonSchema::MAX_DEPTH
    }
    fn canon(&self, node: u32) -> &[u8] {
        self.canon[node as usize].as_deref().unwrap_or(b"null")
    }
    fn props(&self, node: u32) -> &[Prop] {
        match &self.nodes[node as usize] {
            Node::Obj(p) => p,
            _ => &[],
        }
    }
    fn lits(&self, node: u32) -> &[Vec<u8>] {
        match &self.nodes[node as usize] {
            Node::Lits(l) => l,
            _ => &[],
        }
    }
    /// Property indices that may come next in an object at `next`: optional ones up to and
    /// including the first required one, those whose value fits the depth.
    fn window(&self, node: u32, next: u32, depth: u16) -> impl Iterator<Item = usize> + '_ {
        let props = self.props(node);
        let end = props[next as usize..].iter().position(|p| p.required).map_or(props.len(), |i| next as usize + i + 1);
        (next as usize..end).filter(move |&i| self.fits(depth, props[i].node))
    }
    fn required_left(&self, node: u32, next: u32) -> bool {
        self.props(node)[next as usize..].iter().any(|p| p.required)
    }
}

// ---------------------------------------------------------------------------------------------
// Schema compiler

const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "examples",
    "default",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "format",
    "$defs",
    "definitions",
    "contentMediaType",
    "contentEncoding",
];

const SUPPORTED: &[&str] = &[
    "type",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "nullable",
    "properties",
    "required",
    "additionalProperties",
    "unevaluatedProperties",
    "items",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
];

fn is_annotation(k: &str) -> bool {
    ANNOTATIONS.contains(&k) || k.starts_with("x-")
}

fn err(pointer: &str, message: impl Into<String>) -> Error {
    Error::Schema { pointer: pointer.to_string(), message: message.into() }
}

fn child(ptr: &str, key: &str) -> String {
    format!("{ptr}/{}", key.replace('~', "~0").replace('/', "~1"))
}

struct Compiler<'a> {
    root: &'a Value,
    nodes: Vec<Node>,
    ptrs: Vec<String>,
    memo: HashMap<String, u32>,
    literal_bytes: usize,
    nesting: usize,
}

impl<'a> Compiler<'a> {
    fn add(&mut self, node: Node, ptr: &str) -> Result<u32, Error> {
        if self.nodes.len() >= JsonSchema::MAX_SCHEMA_NODES {
            return Err(err(
                ptr,
                format!(
                    "the schema is too large for constrained decoding (more than {} subschemas): simplify it",
                    JsonSchema::MAX_SCHEMA_NODES
                ),
            ));
        }
        self.nodes.push(node);
        self.ptrs.push(ptr.to_string());
        Ok(self.nodes.len() as u32 - 1)
    }

    fn compile(&mut self, schema: &'a Value, ptr: &str) -> Result<u32, Error> {
        if let Some(&id) = self.memo.get(ptr) {
            return Ok(id);
        }
        if self.nesting >= JsonSchema::MAX_SCHEMA_NESTING {
            return Err(err(
                ptr,
                format!(
                    "the schema is nested more than {} levels deep: flatten it with `$defs`",
                    JsonSchema::MAX_SCHEMA_NESTING
                ),
            ));
        }
        self.nesting += 1;
        let id = self.compile_inner(schema, ptr);
        self.nesting -= 1;
        id
    }

    fn compile_inner(&mut self, schema: &'a Value, ptr: &str) -> Result<u32, Error> {
        let id = self.add(Node::Alt(Vec::new()), ptr)?;
        self.memo.insert(ptr.to_string(), id);
        let node = self.compile_node(schema, ptr)?;
        self.nodes[id as usize] = node;
        Ok(id)
    }

    fn compile_node(&mut self, schema: &'a Value, ptr: &str) -> Result<Node, Error> {
        let map = match schema {
            Value::Bool(true) => return Ok(Node::Ref(ANY)),
            Value::Bool(false) => return Ok(Node::Ref(NEVER)),
            Value::Object(m) => m,
            other => {
                return Err(err(ptr, format!("a schema must be an object or a boolean, not `{other}`")));
            }
        };
        for k in map.keys() {
            if is_annotation(k) || SUPPORTED.contains(&k.as_str()) {
                continue;
            }
            let hint = match k.as_str() {
                "pattern" | "patternProperties" => {
                    "a regular expression is not enforced by the constrained decoder: remove it, or list the values with `enum`"
                }
                "not" | "if" | "then" | "else" => "conditional and negated schemas are not supported: remove it",
                "multipleOf" => "not supported: remove it, or list the values with `enum`",
                "prefixItems" | "contains" | "additionalItems" | "unevaluatedItems" => {
                    "not supported: use `items` with one schema for every item"
                }
                "minProperties" | "maxProperties" | "propertyNames" | "dependentRequired" | "dependentSchemas"
                | "dependencies" => "not supported: declare the properties with `properties` and `required`",
                "$dynamicRef" | "$recursiveRef" | "$anchor" | "$dynamicAnchor" | "$recursiveAnchor" => {
                    "not supported: use `$ref` to `#/$defs/…`"
                }
                _ => "not supported by the constrained decoder: remove it",
            };
            return Err(err(&child(ptr, k), format!("keyword `{k}`: {hint}")));
        }
        let assertions: Vec<&str> = map.keys().map(String::as_str).filter(|k| !is_annotation(k)).collect();
        let alone = |kw: &str| -> Result<(), Error> {
            if let Some(other) = assertions.iter().find(|k| **k != kw) {
                return Err(err(
                    ptr,
                    format!("`{other}` beside `{kw}` is not supported: move it into the schemas `{kw}` leads to"),
                ));
            }
            Ok(())
        };

        if let Some(r) = map.get("$ref") {
            alone("$ref")?;
            let rptr = child(ptr, "$ref");
            let Some(r) = r.as_str() else {
                return Err(err(&rptr, "`$ref` must be a string"));
            };
            let Some(path) = r.strip_prefix('#') else {
                return Err(err(
                    &rptr,
                    format!("`$ref` `{r}` is not local: only `#/$defs/…` references are supported; inline the schema"),
                ));
            };
            let target = if path.is_empty() { Some(self.root) } else { self.root.pointer(path) };
            let Some(target) = target else {
                return Err(err(&rptr, format!("`$ref` `{r}` points to nothing: define it (e.g. under `$defs`)")));
            };
            return Ok(Node::Ref(self.compile(target, path)?));
        }
        if let Some(all) = map.get("allOf") {
            alone("allOf")?;
            let aptr = child(ptr, "allOf");
            match all.as_array().map(Vec::as_slice) {
                Some([one]) => return Ok(Node::Ref(self.compile(one, &child(&aptr, "0"))?)),
                _ => {
                    return Err(err(&aptr, "`allOf` is supported with exactly one schema: merge the schemas into one"))
                }
            }
        }
        for kw in ["anyOf", "oneOf"] {
            if let Some(list) = map.get(kw) {
                alone(kw)?;
                let aptr = child(ptr, kw);
                let Some(list) = list.as_array().filter(|l| !l.is_empty()) else {
                    return Err(err(&aptr, format!("`{kw}` must be a non-empty array of schemas")));
                };
                let mut alts = Vec::new();
                for (i, s) in list.iter().enumerate() {
                    alts.push(self.compile(s, &child(&aptr, &i.to_string()))?);
                }
                return Ok(Node::Alt(alts));
            }
        }

        // Types: declared, or inferred from the keywords present.
        let mut types: Vec<String> = match map.get("type") {
            None => Vec::new(),
            Some(Value::String(t)) => vec![t.clone()],
            Some(Value::Array(list)) => {
                let mut out = Vec::new();
                for t in list {
                    match t.as_str() {
                        Some(t) => out.push(t.to_string()),
                        None => return Err(err(&child(ptr, "type"), "`type` must be a string or an array of strings")),
                    }
                }
                if out.is_empty() {
                    return Err(err(&child(ptr, "type"), "`type` is an empty list: name at least one type"));
                }
                out
            }
            Some(_) => return Err(err(&child(ptr, "type"), "`type` must be a string or an array of strings")),
        };
        for t in &types {
            if !["object", "array", "string", "number", "integer", "boolean", "null"].contains(&t.as_str()) {
                return Err(err(
                    &child(ptr, "type"),
                    format!("unknown type `{t}`: use object, array, string, number, integer, boolean or null"),
                ));
            }
        }
        if types.iter().any(|t| t == "number") {
            types.retain(|t| t != "integer");
        }
        let declared = !types.is_empty();
        match map.get("nullable") {
            None | Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => types.push("null".into()),
            Some(_) => return Err(err(&child(ptr, "nullable"), "`nullable` must be a boolean")),
        }

        if map.contains_key("enum") || map.contains_key("const") {
            return self.compile_enum(map, ptr, if declared { Some(&types) } else { None });
        }

        if !declared {
            let has = |ks: &[&str]| ks.iter().any(|k| map.contains_key(*k));
            if has(&["properties", "required", "additionalProperties", "unevaluatedProperties"]) {
                types.push("object".into());
            }
            if has(&["items", "minItems", "maxItems", "uniqueItems"]) {
                types.push("array".into());
            }
            if has(&["minLength", "maxLength"]) {
                types.push("string".into());
            }
            if has(&["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
                types.push("number".into());
            }
            if types.iter().all(|t| t == "null") {
                if types.is_empty() {
                    return Ok(Node::Ref(ANY));
                }
                // `nullable` alone: any value (null included).
                return Ok(Node::Ref(ANY));
            }
        }
        types.dedup();
        let mut alts = Vec::new();
        for t in &types {
            let node = self.compile_typed(t, map, ptr)?;
            alts.push(self.add(node, ptr)?);
        }
        if alts.len() == 1 {
            return Ok(Node::Ref(alts[0]));
        }
        Ok(Node::Alt(alts))
    }

    fn compile_enum(
        &mut self,
        map: &'a serde_json::Map<String, Value>,
        ptr: &str,
        types: Option<&Vec<String>>,
    ) -> Result<Node, Error> {
        for k in map.keys() {
            if !is_annotation(k) && !["enum", "const", "type", "nullable"].contains(&k.as_str()) {
                return Err(err(
                    &child(ptr, k),
                    format!("`{k}` beside `enum`/`const` is not supported: list only valid values in `enum`"),
                ));
            }
        }
        let mut values: Vec<&Value> = Vec::new();
        let (kw, list) = if let Some(c) = map.get("const") {
            if map.contains_key("enum") {
                return Err(err(ptr, "`const` and `enum` together: keep one"));
            }
            values.push(c);
            ("const", &values)
        } else {
            match map.get("enum").and_then(Value::as_array) {
                Some(l) if !l.is_empty() => {
                    values.extend(l.iter());
                    ("enum", &values)
                }
                _ => return Err(err(&child(ptr, "enum"), "`enum` must be a non-empty array")),
            }
        };
        if list.len() > JsonSchema::MAX_ENUM_VALUES {
            return Err(err(
                &child(ptr, kw),
                format!("more than {} values: shorten the list", JsonSchema::MAX_ENUM_VALUES),
            ));
        }
        let type_ok = |v: &Value| -> bool {
            let Some(types) = types else { return true };
            types.iter().any(|t| match t.as_str() {
                "null" => v.is_null(),
                "boolean" => v.is_boolean(),
                "string" => v.is_string(),
                "number" => v.is_number(),
                "integer" => v.as_f64().is_some_and(|f| f.fract() == 0.0),
                "array" => v.is_array(),
                "object" => v.is_object(),
                _ => false,
            })
        };
        let mut lits: Vec<Vec<u8>> = list
            .iter()
            .filter(|v| type_ok(v))
            .map(|v| serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec()))
            .collect();
        if lits.is_empty() {
            return Err(err(&child(ptr, kw), format!("no value of `{kw}` matches `type`: fix one of them")));
        }
        self.literal_bytes += lits.iter().map(Vec::len).sum::<usize>();
        if self.literal_bytes > JsonSchema::MAX_LITERAL_BYTES {
            return Err(err(
                &child(ptr, kw),
                format!(
                    "the schema's `enum`/`const` values exceed {} bytes: shorten them",
                    JsonSchema::MAX_LITERAL_BYTES
                ),
            ));
        }
        lits.sort();
        lits.dedup();
        Ok(Node::Lits(lits))
    }

    fn count(map: &serde_json::Map<String, Value>, ptr: &str, kw: &str) -> Result<Option<u64>, Error> {
        match map.get(kw) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) => Ok(Some(n)),
                None => Err(err(&child(ptr, kw), format!("`{kw}` must be a non-negative integer"))),
            },
        }
    }

    fn compile_typed(&mut self, t: &str, map: &'a serde_json::Map<String, Value>, ptr: &str) -> Result<Node, Error> {
        match t {
            "null" => Ok(Node::Lits(vec![b"null".to_vec()])),
            "boolean" => Ok(Node::Lits(vec![b"false".to_vec(), b"true".to_vec()])),
            "string" => {
                let min = Self::count(map, ptr, "minLength")?.unwrap_or(0);
                let max =
                    Self::count(map, ptr, "maxLength")?.unwrap_or(u64::MAX).min(JsonSchema::MAX_STRING_CHARS as u64);
                if min > max {
                    return Err(err(&child(ptr, "minLength"), format!("`minLength` {min} is above the maximum length {max} (`maxLength`, or the decoder's cap of {} characters)", JsonSchema::MAX_STRING_CHARS)));
                }
                Ok(Node::Str { min: min as u32, max: max as u32 })
            }
            "number" | "integer" => self.compile_number(t == "integer", map, ptr),
            "array" => {
                let min = Self::count(map, ptr, "minItems")?.unwrap_or(0);
                let max =
                    Self::count(map, ptr, "maxItems")?.unwrap_or(u64::MAX).min(JsonSchema::MAX_ARRAY_ITEMS as u64);
                if min > max {
                    return Err(err(&child(ptr, "minItems"), format!("`minItems` {min} is above the maximum {max} (`maxItems`, or the decoder's cap of {} items)", JsonSchema::MAX_ARRAY_ITEMS)));
                }
                match map.get("uniqueItems") {
                    None | Some(Value::Bool(false)) => {}
                    Some(Value::Bool(true)) if max <= 1 => {}
                    Some(_) => {
                        return Err(err(
                            &child(ptr, "uniqueItems"),
                            "`uniqueItems: true` is not supported: remove it (or set `maxItems: 1`)",
                        ));
                    }
                }
                let items = match map.get("items") {
                    None => ANY,
                    Some(Value::Array(_)) => {
                        return Err(err(
                            &child(ptr, "items"),
                            "tuple `items` (an array of schemas) is not supported: use one schema for every item",
                        ));
                    }
                    Some(s) => self.compile(s, &child(ptr, "items"))?,
                };
                Ok(Node::Arr { items, min: min as u32, max: max as u32 })
            }
            _ => self.compile_object(map, ptr),
        }
    }

    fn compile_number(
        &mut self,
        integer: bool,
        map: &serde_json::Map<String, Value>,
        ptr: &str,
    ) -> Result<Node, Error> {
        let num = |kw: &str| -> Result<Option<f64>, Error> {
            match map.get(kw) {
                None => Ok(None),
                Some(Value::Bool(_)) if kw.starts_with("exclusive") => Ok(None),
                Some(v) => v
                    .as_f64()
                    .filter(|f| f.is_finite())
                    .map(Some)
                    .ok_or_else(|| err(&child(ptr, kw), format!("`{kw}` must be a number"))),
            }
        };
        let draft4 = |kw: &str| matches!(map.get(kw), Some(Value::Bool(true)));
        let mut lo: Option<(f64, bool)> = num("minimum")?.map(|v| (v, draft4("exclusiveMinimum")));
        let mut hi: Option<(f64, bool)> = num("maximum")?.map(|v| (v, draft4("exclusiveMaximum")));
        if let Some(x) = num("exclusiveMinimum")? {
            if lo.is_none_or(|(v, _)| x >= v) {
                lo = Some((x, true));
            }
        }
        if let Some(x) = num("exclusiveMaximum")? {
            if hi.is_none_or(|(v, _)| x <= v) {
                hi = Some((x, true));
            }
        }
        let limit = 1e15;
        for (b, kw) in [(lo, "minimum"), (hi, "maximum")] {
            if b.is_some_and(|(v, _)| v.abs() > limit) {
                return Err(err(&child(ptr, kw), format!("bounds beyond ±1e15 are not supported: drop `{kw}`")));
            }
        }
        if integer {
            lo = lo.map(|(v, ex)| (if ex { v.floor() + 1.0 } else { v.ceil() }, false));
            hi = hi.map(|(v, ex)| (if ex { v.ceil() - 1.0 } else { v.floor() }, false));
        }
        if let (Some((l, lx)), Some((h, hx))) = (lo, hi) {
            let empty = l > h || ((lx || hx) && l >= h);
            if empty {
                return Err(err(
                    ptr,
                    format!(
                        "no {} lies between the minimum {l} and the maximum {h}: fix the bounds",
                        if integer { "integer" } else { "number" }
                    ),
                ));
            }
            if !integer && l != h && h - l < 1e-5 {
                return Err(err(ptr, "the range between minimum and maximum is narrower than 1e-5: use `const`"));
            }
        }
        Ok(Node::Num(NumSpec { integer, lo, hi }))
    }

    fn compile_object(&mut self, map: &'a serde_json::Map<String, Value>, ptr: &str) -> Result<Node, Error> {
        let props = match map.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => return Err(err(&child(ptr, "properties"), "`properties` must be an object")),
        };
        let required: Vec<&str> = match map.get("required") {
            None => Vec::new(),
            Some(Value::Array(l)) => {
                let mut out = Vec::new();
                for r in l {
                    match r.as_str() {
                        Some(r) => out.push(r),
                        None => return Err(err(&child(ptr, "required"), "`required` must be an array of strings")),
                    }
                }
                out
            }
            Some(_) => return Err(err(&child(ptr, "required"), "`required` must be an array of strings")),
        };
        match props.filter(|p| !p.is_empty()) {
            Some(props) => {
                if props.len() > JsonSchema::MAX_PROPERTIES {
                    return Err(err(
                        &child(ptr, "properties"),
                        format!("more than {} properties: split the object", JsonSchema::MAX_PROPERTIES),
                    ));
                }
                for r in &required {
                    if !props.contains_key(*r) {
                        return Err(err(
                            &child(ptr, "required"),
                            format!("required property `{r}` is not declared in `properties`: declare it"),
                        ));
                    }
                }
                let pptr = child(ptr, "properties");
                let mut out = Vec::new();
                for (name, s) in props {
                    let node = self.compile(s, &child(&pptr, name))?;
                    let mut key = serde_json::to_vec(name).unwrap_or_default();
                    key.push(b':');
                    self.literal_bytes += key.len();
                    out.push(Prop { key, node, required: required.contains(&name.as_str()) });
                }
                if self.literal_bytes > JsonSchema::MAX_LITERAL_BYTES {
                    return Err(err(&pptr, "the schema's property names are too long in total: shorten them"));
                }
                Ok(Node::Obj(out))
            }
            None => {
                if let Some(r) = required.first() {
                    return Err(err(
                        &child(ptr, "required"),
                        format!("required property `{r}` is not declared in `properties`: declare it"),
                    ));
                }
                let closed = |kw: &str| matches!(map.get(kw), Some(Value::Bool(false)));
                if closed("additionalProperties") || closed("unevaluatedProperties") {
                    return Ok(Node::Lits(vec![b"{}".to_vec()]));
                }
                if map.get("unevaluatedProperties").is_some_and(|v| v != &Value::Bool(true)) {
                    return Err(err(
                        &child(ptr, "unevaluatedProperties"),
                        "only `unevaluatedProperties: false` is supported: use `additionalProperties`",
                    ));
                }
                let values = match map.get("additionalProperties") {
                    None => ANY,
                    Some(s) => self.compile(s, &child(ptr, "additionalProperties"))?,
                };
                Ok(Node::Map { values, max: JsonSchema::MAX_OBJECT_ENTRIES as u32 })
            }
        }
    }
}

fn compile(schema: &Value) -> Result<Compiled, Error> {
    let mut c = Compiler {
        root: schema,
        nodes: Vec::new(),
        ptrs: Vec::new(),
        memo: HashMap::new(),
        literal_bytes: 0,
        nesting: 0,
    };
    let any = Node::Alt(vec![MAP_ANY, ARR_ANY, STR_ANY, NUM_ANY, SCALARS]);
    let builtin = [
        any,
        Node::Str { min: 0, max: JsonSchema::MAX_STRING_CHARS as u32 },
        Node::Num(NumSpec { integer: false, lo: None, hi: None }),
        Node::Lits(vec![b"false".to_vec(), b"null".to_vec(), b"true".to_vec()]),
        Node::Arr { items: ANY, min: 0, max: JsonSchema::MAX_ARRAY_ITEMS as u32 },
        Node::Map { values: ANY, max: JsonSchema::MAX_OBJECT_ENTRIES as u32 },
        Node::Str { min: 0, max: JsonSchema::MAX_KEY_CHARS as u32 },
        Node::Lits(vec![b":".to_vec()]),
        Node::Alt(Vec::new()),
    ];
    for n in builtin {
        c.add(n, "")?;
    }
    debug_assert_eq!(c.nodes.len(), BUILTIN);
    let root = c.compile(schema, "")?;
    let Compiler { nodes, ptrs, .. } = c;

    // A `$ref`/`anyOf` cycle that writes nothing in between would expand forever.
    let mut state = vec![0u8; nodes.len()];
    fn visit(n: usize, nodes: &[Node], ptrs: &[String], state: &mut [u8]) -> Result<(), Error> {
        match state[n] {
            1 => return Err(err(&ptrs[n], "recursive `$ref` that reaches itself without an object or array in between: put the recursion inside `properties` or `items`")),
            2 => return Ok(()),
            _ => {}
        }
        state[n] = 1;
        match &nodes[n] {
            Node::Ref(t) => visit(*t as usize, nodes, ptrs, state)?,
            Node::Alt(list) => {
                for t in list {
                    visit(*t as usize, nodes, ptrs, state)?;
                }
            }
            _ => {}
        }
        state[n] = 2;
        Ok(())
    }
    for n in 0..nodes.len() {
        visit(n, &nodes, &ptrs, &mut state)?;
    }

    // Shortest instances, by a fixpoint (recursive schemas converge from below).
    let mut canon: Vec<Option<Vec<u8>>> = vec![None; nodes.len()];
    let mut cdepth = vec![u16::MAX; nodes.len()];
    for _round in 0..nodes.len() * 2 + 8 {
        let mut changed = false;
        for n in 0..nodes.len() {
            let cand: Option<(Vec<u8>, u16)> = match &nodes[n] {
                Node::Alt(list) => list
                    .iter()
                    .filter_map(|&t| canon[t as usize].as_ref().map(|c| (c.clone(), cdepth[t as usize])))
                    .min_by_key(|(c, _)| c.len()),
                Node::Ref(t) => canon[*t as usize].clone().map(|c| (c, cdepth[*t as usize])),
                Node::Lits(l) => l.iter().min_by_key(|x| x.len()).map(|x| (x.clone(), 0)),
                Node::Str { min, .. } => {
                    let mut s = vec![b'"'];
                    s.extend(std::iter::repeat_n(b'a', *min as usize));
                    s.push(b'"');
                    Some((s, 0))
                }
                Node::Num(spec) => canon_number(spec).map(|s| (s.into_bytes(), 0)),
                Node::Obj(props) => {
                    let mut s = vec![b'{'];
                    let mut d = 1u16;
                    let mut ok = true;
                    for p in props.iter().filter(|p| p.required) {
                        match &canon[p.node as usize] {
                            Some(c) => {
                                if s.len() > 1 {
                                    s.push(b',');
                                }
                                s.extend_from_slice(&p.key);
                                s.extend_from_slice(c);
                                d = d.max(cdepth[p.node as usize].saturating_add(1));
                            }
                            None => ok = false,
                        }
                    }
                    s.push(b'}');
                    ok.then_some((s, d))
                }
                Node::Map { .. } => Some((b"{}".to_vec(), 1)),
                Node::Arr { items, min, .. } => {
                    if *min == 0 {
                        Some((b"[]".to_vec(), 1))
                    } else {
                        canon[*items as usize].as_ref().map(|c| {
                            let mut s = vec![b'['];
                            for i in 0..*min {
                                if i > 0 {
                                    s.push(b',');
                                }
                                s.extend_from_slice(c);
                            }
                            s.push(b']');
                            (s, cdepth[*items as usize].saturating_add(1))
                        })
                    }
                }
            };
            if let Some((c, d)) = cand {
                if c.len() > JsonSchema::MAX_SHORTEST_BYTES || d as usize > JsonSchema::MAX_DEPTH {
                    continue;
                }
                let better = match &canon[n] {
                    None => true,
                    Some(old) => c.len() < old.len() || (c.len() == old.len() && d < cdepth[n]),
                };
                if better {
                    canon[n] = Some(c);
                    cdepth[n] = d;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    if canon[root as usize].is_none() {
        return Err(err(
            "",
            format!(
                "the schema has no instance within the decoder's bounds (nesting ≤ {}, shortest value ≤ {} bytes): a required recursive `$ref`, `false`, or too many required items",
                JsonSchema::MAX_DEPTH,
                JsonSchema::MAX_SHORTEST_BYTES
            ),
        ));
    }
    Ok(Compiled { nodes, canon, cdepth, root })
}

// ---------------------------------------------------------------------------------------------
// Numbers

const NUM_BUF: usize = 40;

#[derive(Debug, Default)]
struct NumParse {
    neg: bool,
    int: usize,
    int_start: usize,
    dot: bool,
    frac: usize,
    exp: bool,
    exp_digits: usize,
}

impl NumParse {
    fn complete(&self) -> bool {
        self.int > 0 && (!self.dot || self.frac > 0) && (!self.exp || self.exp_digits > 0)
    }
}

/// Parses a prefix of a JSON number allowed by `spec` and the digit caps.
fn parse_num(s: &[u8], spec: &NumSpec) -> Option<NumParse> {
    let mut p = NumParse::default();
    let mut i = 0;
    if s.first() == Some(&b'-') {
        p.neg = true;
        i = 1;
    }
    p.int_start = i;
    while i < s.len() && s[i].is_ascii_digit() {
        if p.int == 1 && s[p.int_start] == b'0' {
            return None;
        }
        p.int += 1;
        i += 1;
    }
    let int_cap = if spec.integer { JsonSchema::MAX_INTEGER_DIGITS } else { JsonSchema::MAX_INTEGER_DIGITS + 1 };
    if p.int > int_cap {
        return None;
    }
    if i < s.len() && s[i] == b'.' {
        if p.int == 0 || spec.integer {
            return None;
        }
        p.dot = true;
        i += 1;
        while i < s.len() && s[i].is_ascii_digit() {
            p.frac += 1;
            i += 1;
        }
        if p.frac > spec.frac_cap() {
            return None;
        }
    }
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        if p.int == 0 || (p.dot && p.frac == 0) || spec.integer || spec.bounded() {
            return None;
        }
        p.exp = true;
        i += 1;
        if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
            i += 1;
        }
        while i < s.len() && s[i].is_ascii_digit() {
            p.exp_digits += 1;
            i += 1;
        }
        if p.exp_digits > JsonSchema::MAX_EXPONENT_DIGITS {
            return None;
        }
    }
    (i == s.len()).then_some(p)
}

/// Whether the prefix `s` (already syntactically valid) can still become a number within bounds.
fn num_feasible(s: &[u8], p: &NumParse, spec: &NumSpec) -> bool {
    if !spec.bounded() {
        return true;
    }
    let step = if spec.integer { 1.0 } else { 10f64.powi(-(spec.frac_cap() as i32)) };
    let digits = &s[p.int_start..p.int_start + p.int];
    let int_val: f64 = std::str::from_utf8(digits).ok().and_then(|d| d.parse().ok()).unwrap_or(0.0);
    let int_cap = if spec.integer { JsonSchema::MAX_INTEGER_DIGITS } else { JsonSchema::MAX_INTEGER_DIGITS + 1 };
    let mut intervals: Vec<(f64, f64)> = Vec::new();
    if p.neg && spec.lo.is_some_and(|(lo, _)| lo >= 0.0) {
        // `-0` would do, but a minimum of 0 or more means no sign.
        return false;
    }
    if p.int == 0 {
        intervals.push((0.0, 10f64.powi(int_cap.min(16) as i32) - step));
    } else if !p.dot {
        if digits == b"0" {
            intervals.push((0.0, if spec.integer { 0.0 } else { 1.0 - step }));
        } else {
            for k in 0..=(int_cap.saturating_sub(p.int)).min(17) {
                let m = 10f64.powi(k as i32);
                intervals.push((int_val * m, (int_val + 1.0) * m - step));
            }
        }
    } else {
        let text = std::str::from_utf8(&s[p.int_start..]).unwrap_or("0");
        let text = text.strip_suffix('.').unwrap_or(text);
        let v: f64 = text.parse().unwrap_or(0.0);
        if p.frac >= spec.frac_cap() {
            intervals.push((v, v));
        } else {
            intervals.push((v, v + 10f64.powi(-(p.frac as i32)) - step));
        }
    }
    intervals.iter().any(|&(a, c)| {
        let (a, c) = if p.neg { (-c, -a) } else { (a, c) };
        let lo_ok = spec.lo.is_none_or(|(lo, ex)| if ex { c > lo } else { c >= lo });
        let hi_ok = spec.hi.is_none_or(|(hi, ex)| if ex { a < hi } else { a <= hi });
        lo_ok && hi_ok
    })
}

fn num_accepts(s: &[u8], spec: &NumSpec) -> bool {
    parse_num(s, spec).is_some_and(|p| num_feasible(s, &p, spec))
}

fn num_final(s: &[u8], spec: &NumSpec) -> bool {
    match parse_num(s, spec) {
        Some(p) if p.complete() => {
            std::str::from_utf8(s).ok().and_then(|t| t.parse::<f64>().ok()).is_some_and(|v| spec.in_range(v))
        }
        _ => false,
    }
}

/// The shortest suffix that completes the number prefix `s`: iterative deepening over feasible
/// characters (feasibility prunes hard), then a greedy walk if a search budget runs out.
fn num_completion(s: &[u8], spec: &NumSpec) -> Option<Vec<u8>> {
    fn search(cur: &mut Vec<u8>, left: usize, spec: &NumSpec, budget: &mut usize) -> bool {
        if num_final(cur, spec) {
            return true;
        }
        if left == 0 || *budget == 0 {
            return false;
        }
        for &c in b"0123456789.-" {
            *budget = budget.saturating_sub(1);
            cur.push(c);
            if num_accepts(cur, spec) && search(cur, left - 1, spec, budget) {
                return true;
            }
            cur.pop();
        }
        false
    }
    let mut budget = 4096;
    for k in 0..=NUM_BUF.saturating_sub(s.len()) {
        let mut cur = s.to_vec();
        if search(&mut cur, k, spec, &mut budget) {
            return Some(cur[s.len()..].to_vec());
        }
        if budget == 0 {
            break;
        }
    }
    let mut cur = s.to_vec();
    while !num_final(&cur, spec) {
        if cur.len() >= NUM_BUF {
            return None;
        }
        let c = b"0123456789.-".iter().find(|&&c| {
            cur.push(c);
            let ok = num_accepts(&cur, spec);
            cur.pop();
            ok
        })?;
        cur.push(*c);
    }
    Some(cur[s.len()..].to_vec())
}

fn canon_number(spec: &NumSpec) -> Option<String> {
    let fmt = |v: f64| -> String {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            format!("{}", v as i64)
        } else {
            format!("{v}")
        }
    };
    let mut cands = vec!["0".to_string()];
    if let Some((lo, _)) = spec.lo {
        cands.push(fmt(lo));
    }
    if let Some((hi, _)) = spec.hi {
        cands.push(fmt(hi));
    }
    let valid = |s: &str| num_final(s.as_bytes(), spec) && (1..=s.len()).all(|i| num_accepts(&s.as_bytes()[..i], spec));
    let mut best: Option<String> = cands.into_iter().filter(|c| valid(c)).min_by_key(String::len);
    if best.is_none() {
        for first in [b"" as &[u8], b"-"] {
            for d in b'0'..=b'9' {
                let mut p = first.to_vec();
                p.push(d);
                if num_accepts(&p, spec) {
                    if let Some(rest) = num_completion(&p, spec) {
                        p.extend_from_slice(&rest);
                        let s = String::from_utf8(p).ok()?;
                        if best.as_ref().is_none_or(|b| s.len() < b.len()) {
                            best = Some(s);
                        }
                    }
                }
            }
        }
    }
    best
}

// ---------------------------------------------------------------------------------------------
// The automaton

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Comma,
    Inside,
    After,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pend {
    None,
    Backslash,
    Hex { n: u8, d: bool },
    Utf8 { need: u8, lo: u8, hi: u8 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Root { done: bool },
    Value { node: u32 },
    Lits { node: u32, lo: u32, hi: u32, pos: u32 },
    Str { node: u32, chars: u32, pend: Pend },
    Num { node: u32, len: u8, buf: [u8; NUM_BUF] },
    Obj { node: u32, next: u32, phase: Phase },
    Key { node: u32, next: u32, j: u32, pos: u32 },
    Arr { node: u32, count: u32, phase: Phase },
    Map { node: u32, count: u32, phase: Phase },
}

enum StrStep {
    Reject,
    Close,
    Go(u32, Pend),
}

#[derive(Debug)]
struct Link {
    frame: Frame,
    rest: Option<Arc<Link>>,
}

/// One alternative: a stack of frames (`top` plus a shared tail).
#[derive(Debug, Clone)]
struct Alt {
    top: Frame,
    rest: Option<Arc<Link>>,
    depth: u16,
}

fn rest_eq(a: &Option<Arc<Link>>, b: &Option<Arc<Link>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(x), Some(y)) => Arc::ptr_eq(x, y) || (x.frame == y.frame && rest_eq(&x.rest, &y.rest)),
        _ => false,
    }
}

impl PartialEq for Alt {
    fn eq(&self, other: &Self) -> bool {
        self.depth == other.depth && self.top == other.top && rest_eq(&self.rest, &other.rest)
    }
}

impl Alt {
    fn push(&mut self, frame: Frame) {
        let old = std::mem::replace(&mut self.top, frame);
        self.rest = Some(Arc::new(Link { frame: old, rest: self.rest.take() }));
    }
    fn pop(&mut self) {
        if let Some(link) = self.rest.take() {
            self.top = link.frame;
            self.rest = link.rest.clone();
        }
    }
    fn parent(&self) -> Option<&Frame> {
        self.rest.as_ref().map(|l| &l.frame)
    }
}

fn push_alt(out: &mut Vec<Alt>, a: Alt) {
    if out.len() < JsonSchema::MAX_ALTERNATIVES && !out.contains(&a) {
        out.push(a);
    }
}

impl Compiled {
    /// The top frame finished a value: pop it and tell the container below.
    fn finish(&self, mut a: Alt) -> Alt {
        if matches!(a.top, Frame::Obj { .. } | Frame::Arr { .. } | Frame::Map { .. }) {
            a.depth = a.depth.saturating_sub(1);
        }
        a.pop();
        match &mut a.top {
            Frame::Root { done } => *done = true,
            Frame::Obj { phase, .. } | Frame::Arr { phase, .. } | Frame::Map { phase, .. } => *phase = Phase::After,
            _ => {}
        }
        a
    }

    fn lits_complete(&self, node: u32, lo: u32, pos: u32) -> bool {
        self.lits(node).get(lo as usize).is_some_and(|l| l.len() == pos as usize)
    }

    fn start(&self, mut a: Alt, node: u32, b: u8, out: &mut Vec<Alt>) {
        match &self.nodes[node as usize] {
            Node::Alt(list) => {
                for &n in list {
                    if self.fits(a.depth, n) {
                        self.start(a.clone(), n, b, out);
                    }
                }
            }
            Node::Ref(n) => self.start(a, *n, b, out),
            Node::Lits(l) => {
                a.top = Frame::Lits { node, lo: 0, hi: l.len() as u32, pos: 0 };
                self.step(a, b, out);
            }
            Node::Str { .. } => {
                if b == b'"' {
                    a.top = Frame::Str { node, chars: 0, pend: Pend::None };
                    push_alt(out, a);
                }
            }
            Node::Num(_) => {
                if b == b'-' || b.is_ascii_digit() {
                    a.top = Frame::Num { node, len: 0, buf: [0; NUM_BUF] };
                    self.step(a, b, out);
                }
            }
            Node::Obj(_) => {
                if b == b'{' {
                    a.top = Frame::Obj { node, next: 0, phase: Phase::Open };
                    a.depth += 1;
                    push_alt(out, a);
                }
            }
            Node::Arr { .. } => {
                if b == b'[' {
                    a.top = Frame::Arr { node, count: 0, phase: Phase::Open };
                    a.depth += 1;
                    push_alt(out, a);
                }
            }
            Node::Map { .. } => {
                if b == b'{' {
                    a.top = Frame::Map { node, count: 0, phase: Phase::Open };
                    a.depth += 1;
                    push_alt(out, a);
                }
            }
        }
    }

    fn step(&self, mut a: Alt, b: u8, out: &mut Vec<Alt>) {
        match a.top {
            Frame::Root { .. } => {}
            Frame::Value { node } => self.start(a, node, b, out),
            Frame::Lits { node, lo, hi, pos } => {
                let lits = self.lits(node);
                let complete = self.lits_complete(node, lo, pos);
                let range = &lits[lo as usize..hi as usize];
                let first = range.iter().position(|l| l.get(pos as usize) == Some(&b));
                if let Some(f) = first {
                    let n = range[f..].iter().take_while(|l| l.get(pos as usize) == Some(&b)).count();
                    let (nlo, nhi) = (lo + f as u32, lo + (f + n) as u32);
                    let mut c = a.clone();
                    c.top = Frame::Lits { node, lo: nlo, hi: nhi, pos: pos + 1 };
                    if self.lits_complete(node, nlo, pos + 1) && nhi == nlo + 1 {
                        c = self.finish(c);
                    }
                    push_alt(out, c);
                }
                if complete {
                    let p = self.finish(a);
                    self.step(p, b, out);
                }
            }
            Frame::Str { node, chars, pend } => match self.str_step(node, chars, pend, b) {
                StrStep::Reject => {}
                StrStep::Close => push_alt(out, self.finish(a)),
                StrStep::Go(chars, pend) => {
                    a.top = Frame::Str { node, chars, pend };
                    push_alt(out, a);
                }
            },
            Frame::Num { node, len, buf } => {
                let Node::Num(spec) = &self.nodes[node as usize] else { return };
                let len = len as usize;
                if len < NUM_BUF && matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                    let mut nb = buf;
                    nb[len] = b;
                    if num_accepts(&nb[..=len], spec) {
                        let mut c = a.clone();
                        c.top = Frame::Num { node, len: len as u8 + 1, buf: nb };
                        push_alt(out, c);
                    }
                }
                if num_final(&buf[..len], spec) {
                    let p = self.finish(a);
                    self.step(p, b, out);
                }
            }
            Frame::Obj { node, next, phase } => match (phase, b) {
                (Phase::Open | Phase::After, b'}') if !self.required_left(node, next) => push_alt(out, self.finish(a)),
                (Phase::After, b',') if self.window(node, next, a.depth).next().is_some() => {
                    a.top = Frame::Obj { node, next, phase: Phase::Comma };
                    push_alt(out, a);
                }
                (Phase::Open | Phase::Comma, _) => {
                    let props = self.props(node);
                    let j = self.window(node, next, a.depth).find(|&i| props[i].key[0] == b);
                    if let Some(j) = j {
                        a.top = Frame::Obj { node, next, phase: Phase::Inside };
                        a.push(Frame::Key { node, next, j: j as u32, pos: 1 });
                        push_alt(out, a);
                    }
                }
                _ => {}
            },
            Frame::Key { node, next, j, pos } => {
                let props = self.props(node);
                let pos = pos as usize;
                let prefix = &props[j as usize].key[..pos];
                let found = self
                    .window(node, next, a.depth)
                    .find(|&i| props[i].key.len() > pos && props[i].key[..pos] == *prefix && props[i].key[pos] == b);
                if let Some(i) = found {
                    if props[i].key.len() == pos + 1 {
                        a.pop();
                        a.top = Frame::Obj { node, next: i as u32 + 1, phase: Phase::Inside };
                        a.push(Frame::Value { node: props[i].node });
                    } else {
                        a.top = Frame::Key { node, next, j: i as u32, pos: pos as u32 + 1 };
                    }
                    push_alt(out, a);
                }
            }
            Frame::Arr { node, count, phase } => {
                let Node::Arr { items, min, max } = self.nodes[node as usize] else { return };
                match (phase, b) {
                    (Phase::Open | Phase::After, b']') if count >= min => push_alt(out, self.finish(a)),
                    (Phase::After, b',') if count < max && self.fits(a.depth, items) => {
                        a.top = Frame::Arr { node, count: count + 1, phase: Phase::Inside };
                        a.push(Frame::Value { node: items });
                        push_alt(out, a);
                    }
                    (Phase::Open, _) if max > 0 && self.fits(a.depth, items) => {
                        a.top = Frame::Arr { node, count: 1, phase: Phase::Inside };
                        a.push(Frame::Value { node: items });
                        self.step(a, b, out);
                    }
                    _ => {}
                }
            }
            Frame::Map { node, count, phase } => {
                let Node::Map { values, max } = self.nodes[node as usize] else { return };
                match (phase, b) {
                    (Phase::Open | Phase::After, b'}') => push_alt(out, self.finish(a)),
                    (Phase::After, b',') if count < max && self.fits(a.depth, values) => {
                        a.top = Frame::Map { node, count, phase: Phase::Comma };
                        push_alt(out, a);
                    }
                    (Phase::Open | Phase::Comma, b'"') if count < max && self.fits(a.depth, values) => {
                        a.top = Frame::Map { node, count: count + 1, phase: Phase::Inside };
                        a.push(Frame::Value { node: values });
                        a.push(Frame::Lits { node: COLON, lo: 0, hi: 1, pos: 0 });
                        a.push(Frame::Str { node: KEY, chars: 0, pend: Pend::None });
                        push_alt(out, a);
                    }
                    _ => {}
                }
            }
        }
    }

    fn str_step(&self, node: u32, chars: u32, pend: Pend, b: u8) -> StrStep {
        let (min, max) = match self.nodes[node as usize] {
            Node::Str { min, max } => (min, max),
            _ => (0, 0),
        };
        let go = |chars: u32, pend: Pend| StrStep::Go(chars, pend);
        match pend {
            Pend::None => match b {
                b'"' if chars >= min => StrStep::Close,
                b'"' => StrStep::Reject,
                _ if chars >= max => StrStep::Reject,
                b'\\' => go(chars + 1, Pend::Backslash),
                0..=0x1f => StrStep::Reject,
                0x20..=0x7f => go(chars + 1, Pend::None),
                0xc2..=0xdf => go(chars + 1, Pend::Utf8 { need: 1, lo: 0x80, hi: 0xbf }),
                0xe0 => go(chars + 1, Pend::Utf8 { need: 2, lo: 0xa0, hi: 0xbf }),
                0xed => go(chars + 1, Pend::Utf8 { need: 2, lo: 0x80, hi: 0x9f }),
                0xe1..=0xef => go(chars + 1, Pend::Utf8 { need: 2, lo: 0x80, hi: 0xbf }),
                0xf0 => go(chars + 1, Pend::Utf8 { need: 3, lo: 0x90, hi: 0xbf }),
                0xf1..=0xf3 => go(chars + 1, Pend::Utf8 { need: 3, lo: 0x80, hi: 0xbf }),
                0xf4 => go(chars + 1, Pend::Utf8 { need: 3, lo: 0x80, hi: 0x8f }),
                _ => StrStep::Reject,
            },
            Pend::Backslash => match b {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => go(chars, Pend::None),
                b'u' => go(chars, Pend::Hex { n: 0, d: false }),
                _ => StrStep::Reject,
            },
            Pend::Hex { n, d } => {
                // No surrogate escapes (\uD800–\uDFFF): such characters are written as UTF-8.
                if !b.is_ascii_hexdigit() || (n == 1 && d && !(b'0'..=b'7').contains(&b)) {
                    StrStep::Reject
                } else if n == 3 {
                    go(chars, Pend::None)
                } else {
                    go(chars, Pend::Hex { n: n + 1, d: n == 0 && (b == b'd' || b == b'D') })
                }
            }
            Pend::Utf8 { need, lo, hi } => {
                if !(lo..=hi).contains(&b) {
                    StrStep::Reject
                } else if need == 1 {
                    go(chars, Pend::None)
                } else {
                    go(chars, Pend::Utf8 { need: need - 1, lo: 0x80, hi: 0xbf })
                }
            }
        }
    }

    fn can_end(&self, a: &Alt) -> bool {
        let at_root = matches!(a.parent(), Some(Frame::Root { .. }));
        match a.top {
            Frame::Root { done } => done,
            Frame::Num { node, len, buf } => {
                at_root
                    && matches!(&self.nodes[node as usize], Node::Num(spec) if num_final(&buf[..len as usize], spec))
            }
            Frame::Lits { node, lo, pos, .. } => at_root && self.lits_complete(node, lo, pos),
            _ => false,
        }
    }

    fn completion(&self, a: &Alt) -> Vec<u8> {
        let mut out = Vec::new();
        let mut key_next: Option<u32> = None;
        let mut frame = Some(a.top);
        let mut rest = a.rest.as_ref();
        // Depth inside the current frame, for choosing optional properties that fit.
        let mut depth = a.depth;
        while let Some(f) = frame {
            match f {
                Frame::Root { .. } => {}
                Frame::Value { node } => out.extend_from_slice(self.canon(node)),
                Frame::Lits { node, lo, hi, pos } => {
                    let lits = &self.lits(node)[lo as usize..hi as usize];
                    if let Some(l) = lits.iter().min_by_key(|l| l.len()) {
                        out.extend_from_slice(&l[pos as usize..]);
                    }
                }
                Frame::Str { node, chars, pend } => {
                    match pend {
                        Pend::None => {}
                        Pend::Backslash => out.push(b'n'),
                        Pend::Hex { n, .. } => out.extend(std::iter::repeat_n(b'0', 4 - n as usize)),
                        Pend::Utf8 { need, lo, .. } => {
                            out.push(lo);
                            out.extend(std::iter::repeat_n(0x80, need as usize - 1));
                        }
                    }
                    if let Node::Str { min, .. } = self.nodes[node as usize] {
                        out.extend(std::iter::repeat_n(b'a', min.saturating_sub(chars) as usize));
                    }
                    out.push(b'"');
                }
                Frame::Num { node, len, buf } => {
                    if let Node::Num(spec) = &self.nodes[node as usize] {
                        out.extend(num_completion(&buf[..len as usize], spec).unwrap_or_default());
                    }
                }
                Frame::Key { node, j, pos, .. } => {
                    let p = &self.props(node)[j as usize];
                    out.extend_from_slice(&p.key[pos as usize..]);
                    out.extend_from_slice(self.canon(p.node));
                    key_next = Some(j + 1);
                }
                Frame::Obj { node, next, phase } => {
                    let next = key_next.take().unwrap_or(next);
                    let props = self.props(node);
                    let mut first = phase == Phase::Open || phase == Phase::Comma;
                    if phase == Phase::Comma && !self.required_left(node, next) {
                        let pick = self
                            .window(node, next, depth)
                            .min_by_key(|&i| props[i].key.len() + self.canon(props[i].node).len());
                        if let Some(i) = pick {
                            out.extend_from_slice(&props[i].key);
                            out.extend_from_slice(self.canon(props[i].node));
                        }
                    }
                    for p in props[next as usize..].iter().filter(|p| p.required) {
                        if !first {
                            out.push(b',');
                        }
                        first = false;
                        out.extend_from_slice(&p.key);
                        out.extend_from_slice(self.canon(p.node));
                    }
                    out.push(b'}');
                    depth = depth.saturating_sub(1);
                }
                Frame::Arr { node, count, phase } => {
                    if let Node::Arr { items, min, .. } = self.nodes[node as usize] {
                        for i in count..min {
                            if i > 0 || phase != Phase::Open {
                                out.push(b',');
                            }
                            out.extend_from_slice(self.canon(items));
                        }
                    }
                    out.push(b']');
                    depth = depth.saturating_sub(1);
                }
                Frame::Map { node, phase, .. } => {
                    if phase == Phase::Comma {
                        if let Node::Map { values, .. } = self.nodes[node as usize] {
                            out.extend_from_slice(b"\"\":");
                            out.extend_from_slice(self.canon(values));
                        }
                    }
                    out.push(b'}');
                    depth = depth.saturating_sub(1);
                }
            }
            frame = rest.map(|l| l.frame);
            rest = rest.and_then(|l| l.rest.as_ref());
        }
        out
    }
}

// ---------------------------------------------------------------------------------------------
// Vocabulary trie

#[derive(Debug, Clone, Copy)]
struct TrieNode {
    byte: u8,
    children: (u32, u32),
    ids: (u32, u32),
}

/// A byte trie of a model's vocabulary, for [`Constraint::mask`]: built once per vocabulary
/// (about 50 ms for 49,152 tokens) and shared. [`JsonSchema`] builds and caches one by itself
/// (keyed by a fingerprint of the vocabulary, last 4 vocabularies kept); an engine can also build
/// it at load time and hand it over with [`JsonSchema::with_trie`].
///
/// Empty tokens (control tokens), the end-of-turn token and tokens longer than
/// [`TokenTrie::MAX_TOKEN_BYTES`] are left out: a constraint never allows them as text.
///
/// ```
/// use prompty_local::Vocabulary;
/// use prompty_local::constrain::TokenTrie;
/// let vocab = Vocabulary { tokens: vec![b"{".to_vec(), b"}".to_vec(), Vec::new()], end_of_turn: 2 };
/// let trie = TokenTrie::new(&vocab);
/// assert_eq!(trie.token_count(), 2);
/// ```
#[derive(Debug)]
pub struct TokenTrie {
    all: Trie,
    /// Tokens that are plain string content (whole UTF-8 characters, no `"`, `\\` or control
    /// character): inside a string far from its length cap they are all allowed at once.
    plain_ids: Vec<u32>,
    plain_max_chars: u32,
    /// The other tokens, walked one byte at a time inside a string.
    special: Trie,
    fingerprint: u64,
    vocab_len: usize,
    end_of_turn: u32,
}

#[derive(Debug)]
struct Trie {
    nodes: Vec<TrieNode>,
    ids: Vec<u32>,
}

impl Trie {
    /// Breadth-first from tokens sorted by bytes: the children of each node are contiguous.
    fn build(sorted: &[(&[u8], u32)]) -> Trie {
        let mut trie = Trie {
            nodes: vec![TrieNode { byte: 0, children: (1, 1), ids: (0, 0) }],
            ids: Vec::with_capacity(sorted.len()),
        };
        let mut queue: std::collections::VecDeque<(usize, usize, usize, usize)> = std::collections::VecDeque::new();
        queue.push_back((0, 0, sorted.len(), 0));
        while let Some((node, lo, hi, depth)) = queue.pop_front() {
            let mut i = lo;
            let start = trie.ids.len() as u32;
            while i < hi && sorted[i].0.len() == depth {
                trie.ids.push(sorted[i].1);
                i += 1;
            }
            trie.nodes[node].ids = (start, trie.ids.len() as u32);
            let first = trie.nodes.len() as u32;
            while i < hi {
                let b = sorted[i].0[depth];
                let mut k = i;
                while k < hi && sorted[k].0[depth] == b {
                    k += 1;
                }
                let child = trie.nodes.len();
                trie.nodes.push(TrieNode { byte: b, children: (0, 0), ids: (0, 0) });
                queue.push_back((child, i, k, depth + 1));
                i = k;
            }
            trie.nodes[node].children = (first, trie.nodes.len() as u32);
        }
        trie
    }
}

fn fingerprint(vocab: &Vocabulary) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    vocab.end_of_turn.hash(&mut h);
    vocab.tokens.hash(&mut h);
    h.finish()
}

impl TokenTrie {
    /// Tokens longer than this many bytes are never allowed.
    pub const MAX_TOKEN_BYTES: usize = 256;

    /// Builds the trie of `vocab`.
    pub fn new(vocab: &Vocabulary) -> Self {
        let mut sorted: Vec<(&[u8], u32)> = vocab
            .tokens
            .iter()
            .enumerate()
            .filter(|(id, t)| {
                !t.is_empty() && t.len() <= Self::MAX_TOKEN_BYTES && *id as u64 != vocab.end_of_turn as u64
            })
            .map(|(id, t)| (t.as_slice(), id as u32))
            .collect();
        sorted.sort();
        let mut plain_ids = Vec::new();
        let mut plain_max_chars = 0u32;
        let mut special = Vec::new();
        for &(bytes, id) in &sorted {
            match std::str::from_utf8(bytes) {
                Ok(text) if !text.chars().any(|c| c == '"' || c == '\\' || c < ' ') => {
                    plain_ids.push(id);
                    plain_max_chars = plain_max_chars.max(text.chars().count() as u32);
                }
                _ => special.push((bytes, id)),
            }
        }
        TokenTrie {
            all: Trie::build(&sorted),
            special: Trie::build(&special),
            plain_ids,
            plain_max_chars,
            fingerprint: fingerprint(vocab),
            vocab_len: vocab.tokens.len(),
            end_of_turn: vocab.end_of_turn,
        }
    }

    /// Tokens in the trie.
    pub fn token_count(&self) -> usize {
        self.all.ids.len()
    }

    fn matches(&self, vocab: &Vocabulary) -> bool {
        self.vocab_len == vocab.tokens.len()
            && self.end_of_turn == vocab.end_of_turn
            && self.fingerprint == fingerprint(vocab)
    }
}

static TRIES: Mutex<Vec<Arc<TokenTrie>>> = Mutex::new(Vec::new());

fn shared_trie(vocab: &Vocabulary) -> Arc<TokenTrie> {
    let fp = fingerprint(vocab);
    let mut cache = TRIES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = cache
        .iter()
        .find(|t| t.fingerprint == fp && t.vocab_len == vocab.tokens.len() && t.end_of_turn == vocab.end_of_turn)
    {
        return t.clone();
    }
    let t = Arc::new(TokenTrie::new(vocab));
    if cache.len() >= 4 {
        cache.remove(0);
    }
    cache.push(t.clone());
    t
}

// ---------------------------------------------------------------------------------------------
// The constraint

/// A constraint that keeps the output a JSON value valid against a JSON schema.
///
/// The value is the decoding state: clone it to fork. See the [module documentation](self) for
/// the keywords supported and the associated constants for the bounds.
///
/// ```
/// use prompty_local::constrain::{Constraint, JsonSchema};
/// let schema = serde_json::json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}},
///     "required": ["city", "temperature"]
/// });
/// let mut c = JsonSchema::new(&schema)?;
/// assert!(c.advance(br#"{"city":"Par"#));
/// assert_eq!(c.completion(), r#"","temperature":0}"#);
/// assert!(c.advance(br#"is""#));
/// assert!(!c.advance(b" ")); // no whitespace outside strings
/// assert!(!c.advance(br#"}"#)); // `temperature` is required
/// assert!(c.advance(br#","temperature":21.5}"#));
/// assert!(c.is_complete());
/// # Ok::<(), prompty_local::Error>(())
/// ```
#[derive(Clone)]
pub struct JsonSchema {
    schema: Arc<Compiled>,
    alts: Vec<Alt>,
    trie: Option<(usize, usize, Arc<TokenTrie>)>,
}

impl std::fmt::Debug for JsonSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonSchema")
            .field("nodes", &self.schema.nodes.len())
            .field("alternatives", &self.alts.len())
            .field("complete", &self.is_complete())
            .finish()
    }
}

impl JsonSchema {
    /// Characters of a string (a `maxLength` above it is lowered to it; a `minLength` above it is an error).
    pub const MAX_STRING_CHARS: usize = 512;
    /// Characters of a key of an object without declared properties.
    pub const MAX_KEY_CHARS: usize = 64;
    /// Items of an array (`maxItems` above it is lowered to it; `minItems` above it is an error).
    pub const MAX_ARRAY_ITEMS: usize = 128;
    /// Entries of an object without declared properties.
    pub const MAX_OBJECT_ENTRIES: usize = 64;
    /// Digits before the decimal point of an integer (one more for a `number`).
    pub const MAX_INTEGER_DIGITS: usize = 18;
    /// Digits after the decimal point of a `number`.
    pub const MAX_FRACTION_DIGITS: usize = 15;
    /// Digits after the decimal point of a `number` with bounds.
    pub const MAX_BOUNDED_FRACTION_DIGITS: usize = 6;
    /// Digits of an exponent.
    pub const MAX_EXPONENT_DIGITS: usize = 2;
    /// Objects and arrays open at once.
    pub const MAX_DEPTH: usize = 16;
    /// Alternatives (`anyOf` branches, types, …) tracked at once; further ones are dropped, which
    /// keeps the output valid but may make some valid documents unreachable.
    pub const MAX_ALTERNATIVES: usize = 32;
    /// Subschemas of a schema.
    pub const MAX_SCHEMA_NODES: usize = 2048;
    /// Values of one `enum`.
    pub const MAX_ENUM_VALUES: usize = 1024;
    /// Bytes of all `enum`/`const` values and property names of a schema.
    pub const MAX_LITERAL_BYTES: usize = 64 * 1024;
    /// Bytes of the shortest instance of a subschema.
    pub const MAX_SHORTEST_BYTES: usize = 16 * 1024;
    /// Subschemas nested in one another (through `$ref` too).
    pub const MAX_SCHEMA_NESTING: usize = 64;
    /// Properties of one object.
    pub const MAX_PROPERTIES: usize = 256;

    /// Compiles `schema`; an [`Error::Schema`] names the keyword it does not support.
    pub fn new(schema: &serde_json::Value) -> Result<Self, Error> {
        let compiled = compile(schema)?;
        let root = compiled.root;
        let mut alt = Alt { top: Frame::Root { done: false }, rest: None, depth: 0 };
        alt.push(Frame::Value { node: root });
        Ok(JsonSchema { schema: Arc::new(compiled), alts: vec![alt], trie: None })
    }

    /// Uses `trie` (built once per vocabulary) for [`Constraint::mask`] instead of looking it up.
    pub fn with_trie(mut self, trie: Arc<TokenTrie>) -> Self {
        self.trie = Some((0, 0, trie));
        self
    }

    /// Whether the document may end here (a number at the top level may also go on).
    pub fn can_end(&self) -> bool {
        self.alts.iter().any(|a| self.schema.can_end(a))
    }

    fn step_all(&self, alts: &[Alt], b: u8, out: &mut Vec<Alt>) {
        out.clear();
        for a in alts {
            self.schema.step(a.clone(), b, out);
        }
    }

    fn trie_for(&mut self, vocab: &Vocabulary) -> Arc<TokenTrie> {
        let key = (vocab.tokens.as_ptr() as usize, vocab.tokens.len());
        if let Some((p, l, t)) = &self.trie {
            if (*p, *l) == key {
                return t.clone();
            }
            if *p == 0 && t.matches(vocab) {
                let t = t.clone();
                self.trie = Some((key.0, key.1, t.clone()));
                return t;
            }
        }
        let t = shared_trie(vocab);
        self.trie = Some((key.0, key.1, t.clone()));
        t
    }

    fn walk(
        &self,
        trie: &Trie,
        node: usize,
        depth: usize,
        alts: &[Alt],
        bufs: &mut Vec<Vec<Alt>>,
        allowed: &mut [bool],
    ) {
        if let [a @ Alt { top: Frame::Str { node: snode, chars, pend }, .. }] = alts {
            // Fast path inside a string: the state is (characters, pending escape or UTF-8).
            return self.walk_str(trie, node, depth, a, *snode, *chars, *pend, bufs, allowed);
        }
        let (c0, c1) = trie.nodes[node].children;
        while bufs.len() <= depth {
            bufs.push(Vec::new());
        }
        let mut next = std::mem::take(&mut bufs[depth]);
        for c in c0..c1 {
            let child = trie.nodes[c as usize];
            self.step_all(alts, child.byte, &mut next);
            if next.is_empty() {
                continue;
            }
            mark(trie, &child, allowed);
            if child.children.0 < child.children.1 {
                self.walk(trie, c as usize, depth + 1, &next, bufs, allowed);
            }
        }
        next.clear();
        bufs[depth] = next;
    }

    #[allow(clippy::too_many_arguments)]
    fn walk_str(
        &self,
        trie: &Trie,
        node: usize,
        depth: usize,
        alt: &Alt,
        snode: u32,
        chars: u32,
        pend: Pend,
        bufs: &mut Vec<Vec<Alt>>,
        allowed: &mut [bool],
    ) {
        let (c0, c1) = trie.nodes[node].children;
        for c in c0..c1 {
            let child = trie.nodes[c as usize];
            match self.schema.str_step(snode, chars, pend, child.byte) {
                StrStep::Reject => continue,
                StrStep::Go(chars, pend) => {
                    mark(trie, &child, allowed);
                    if child.children.0 < child.children.1 {
                        self.walk_str(trie, c as usize, depth + 1, alt, snode, chars, pend, bufs, allowed);
                    }
                }
                StrStep::Close => {
                    let mut a = alt.clone();
                    a.top = Frame::Str { node: snode, chars, pend };
                    let closed = [self.schema.finish(a)];
                    mark(trie, &child, allowed);
                    if child.children.0 < child.children.1 {
                        self.walk(trie, c as usize, depth + 1, &closed, bufs, allowed);
                    }
                }
            }
        }
    }
}

fn mark(trie: &Trie, node: &TrieNode, allowed: &mut [bool]) {
    for &id in &trie.ids[node.ids.0 as usize..node.ids.1 as usize] {
        if let Some(slot) = allowed.get_mut(id as usize) {
            *slot = true;
        }
    }
}

impl Constraint for JsonSchema {
    fn mask(&mut self, vocab: &Vocabulary, allowed: &mut [bool]) {
        allowed.fill(false);
        let trie = self.trie_for(vocab);
        let mut bufs = Vec::new();
        match self.alts.as_slice() {
            [a @ Alt { top: Frame::Str { node, chars, pend: Pend::None }, .. }] if matches!(self.schema.nodes[*node as usize], Node::Str { max, .. } if max.saturating_sub(*chars) >= trie.plain_max_chars) =>
            {
                for &id in &trie.plain_ids {
                    if let Some(slot) = allowed.get_mut(id as usize) {
                        *slot = true;
                    }
                }
                self.walk_str(&trie.special, 0, 0, a, *node, *chars, Pend::None, &mut bufs, allowed);
            }
            _ => self.walk(&trie.all, 0, 0, &self.alts, &mut bufs, allowed),
        }
        if self.can_end() {
            if let Some(slot) = allowed.get_mut(vocab.end_of_turn as usize) {
                *slot = true;
            }
        }
    }

    fn advance(&mut self, bytes: &[u8]) -> bool {
        let mut cur = self.alts.clone();
        let mut next = Vec::new();
        for &b in bytes {
            self.step_all(&cur, b, &mut next);
            if next.is_empty() {
                return false;
            }
            std::mem::swap(&mut cur, &mut next);
        }
        self.alts = cur;
        true
    }

    fn is_complete(&self) -> bool {
        if !self.can_end() {
            return false;
        }
        let mut out = Vec::new();
        (0..=255u8).all(|b| {
            self.step_all(&self.alts, b, &mut out);
            out.is_empty()
        })
    }

    fn completion(&self) -> String {
        String::from_utf8_lossy(&self.completion_bytes()).into_owned()
    }

    fn completion_bytes(&self) -> Vec<u8> {
        self.alts.iter().map(|a| self.schema.completion(a)).min_by_key(Vec::len).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(integer: bool, lo: Option<(f64, bool)>, hi: Option<(f64, bool)>) -> NumSpec {
        NumSpec { integer, lo, hi }
    }

    #[test]
    fn number_syntax() {
        let any = spec(false, None, None);
        for ok in ["-", "0", "-0", "0.", "0.5", "12e", "12E+", "1.5e-0", "123"] {
            assert!(parse_num(ok.as_bytes(), &any).is_some(), "{ok}");
        }
        for bad in ["01", "-.", ".5", "1..", "1e5e", "1.e", "+1", "--1", "1e123"] {
            assert!(parse_num(bad.as_bytes(), &any).is_none(), "{bad}");
        }
        let int = spec(true, None, None);
        assert!(parse_num(b"1.", &int).is_none());
        assert!(parse_num(b"1e", &int).is_none());
        assert!(parse_num(&[b'9'; 19], &int).is_none(), "digit cap");
        assert!(parse_num(&[b'9'; 18], &int).is_some());
    }

    #[test]
    fn number_bounds() {
        let s = spec(true, Some((60.0, false)), Some((100.0, false)));
        let ok = |t: &str| num_accepts(t.as_bytes(), &s);
        assert!(ok("6") && ok("60") && ok("99") && ok("1") && ok("10") && ok("100"));
        assert!(!ok("5") && !ok("101") && !ok("-") && !ok("0") && !ok("1000"));
        assert_eq!(num_completion(b"1", &s).unwrap(), b"00");
        assert_eq!(num_completion(b"6", &s).unwrap(), b"0");
        assert_eq!(canon_number(&s).unwrap(), "60");
        let neg = spec(true, None, Some((-3.0, false)));
        assert_eq!(canon_number(&neg).unwrap(), "-3");
        assert!(!num_accepts(b"2", &neg));
        assert_eq!(num_completion(b"-", &neg).unwrap(), b"3");
        let real = spec(false, Some((0.5, true)), Some((0.75, false)));
        assert!(num_accepts(b"0.", &real) && num_accepts(b"0.7", &real) && !num_accepts(b"0.8", &real));
        assert!(!num_accepts(b"1", &real));
        assert!(!num_final(b"0.5", &real));
        let tail = num_completion(b"0.5", &real).unwrap();
        let v: f64 = format!("0.5{}", String::from_utf8(tail).unwrap()).parse().unwrap();
        assert!(v > 0.5 && v <= 0.75);
        assert!(!num_accepts(b"1e", &real), "no exponent with bounds");
        let nonneg = spec(false, Some((0.0, false)), None);
        assert!(!num_accepts(b"-", &nonneg));
    }

    #[test]
    fn trie_shares_prefixes_and_skips_control_tokens() {
        let vocab = Vocabulary {
            tokens: vec![b"ab".to_vec(), b"a".to_vec(), Vec::new(), b"abc".to_vec(), b"b".to_vec(), b"x".to_vec()],
            end_of_turn: 5,
        };
        let trie = TokenTrie::new(&vocab);
        assert_eq!(trie.token_count(), 4);
        // root, a, b, ab, abc
        assert_eq!(trie.all.nodes.len(), 5);
        assert_eq!(trie.plain_ids.len(), 4);
        assert_eq!(trie.plain_max_chars, 3);
        assert!(trie.matches(&vocab));
        let mut other = vocab.clone();
        other.tokens[0] = b"zz".to_vec();
        assert!(!trie.matches(&other));
    }

    #[test]
    fn shortest_instances() {
        let c = compile(&json!({
            "$defs": {"t": {"type": "object", "properties": {"k": {"$ref": "#/$defs/t"}, "v": {"type": "string", "minLength": 2}}, "required": ["v"]}},
            "type": "array", "minItems": 2, "items": {"$ref": "#/$defs/t"}
        }))
        .unwrap();
        assert_eq!(c.canon(c.root), br#"[{"v":"aa"},{"v":"aa"}]"#);
        assert_eq!(c.cdepth[c.root as usize], 2);
    }

    #[test]
    fn alternatives_prune_and_fork() {
        let mut c = JsonSchema::new(
            &json!({"anyOf": [{"type": "string"}, {"type": "string", "maxLength": 1}, {"type": "integer"}]}),
        )
        .unwrap();
        assert!(c.advance(b"\""));
        assert_eq!(c.alts.len(), 2);
        let fork = c.clone();
        assert!(c.advance(b"ab"));
        assert_eq!(c.alts.len(), 1);
        assert_eq!(fork.alts.len(), 2, "a clone is an independent state");
    }
}
