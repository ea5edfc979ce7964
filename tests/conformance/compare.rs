//! How an observed value is compared with a vector's `expected` (digest §2.0): subset projection.

use serde_json::Value;

/// The outcome of one case: what the vector expects and what the harness observed, already
/// normalized so that the case passes exactly when the two are equal.
pub struct Check {
    /// The vector's `expected`.
    pub expected: Value,
    /// The observed value, projected onto `expected` (or left whole when projecting would hide
    /// everything useful about it).
    pub got: Value,
    /// Where the adapter changed an observation or an expectation before comparing: each is
    /// printed with the case, and a case with one counts as adjusted, not as passed as is.
    pub adjustments: Vec<Adjustment>,
}

impl Check {
    /// A case compared as is (no adjustment).
    pub fn new(expected: Value, got: Value) -> Check {
        Check { expected, got, adjustments: Vec::new() }
    }

    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.got == self.expected
    }
}

/// One change an adapter made before comparing: which rule allowed it and what it changed (with
/// the values on both sides).
pub struct Adjustment {
    /// The rule that allows it.
    pub rule: &'static Rule,
    /// The key (or path) and the values: `total_messages: conversation 5, vector 6`.
    pub what: String,
}

/// A kind of adjustment an adapter may make, and why the specification digest allows it.
pub struct Rule {
    /// A short name, printed with each adjusted case: `count+1`.
    pub name: &'static str,
    /// Why: the place of the digest (or the vector's own contradiction) that justifies it.
    pub why: &'static str,
}

/// Compares `observed` with `expected` by subset projection.
///
/// When the projection does not match and `observed` shares no top-level key with `expected` (an
/// error where a result was expected, or the reverse), the whole observed value is reported, since
/// the projection would only show `null`s.
pub fn check(expected: &Value, observed: &Value) -> Check {
    let projected = project(observed, expected);
    let got = if projected != *expected && disjoint(expected, observed) { observed.clone() } else { projected };
    Check::new(expected.clone(), got)
}

/// Keeps only what `expected` mentions:
/// - objects: only the keys of `expected`, recursively; a key missing from `observed` becomes
///   `null` (so an expected `null` means absent or null);
/// - arrays: element-wise projection; extra observed elements are kept, so a length mismatch fails;
/// - anything else: `observed` as is.
pub fn project(observed: &Value, expected: &Value) -> Value {
    match (expected, observed) {
        (Value::Object(want), Value::Object(have)) => Value::Object(
            want.iter().map(|(key, w)| (key.clone(), project(have.get(key).unwrap_or(&Value::Null), w))).collect(),
        ),
        (Value::Array(want), Value::Array(have)) => Value::Array(
            have.iter()
                .enumerate()
                .map(|(i, h)| match want.get(i) {
                    Some(w) => project(h, w),
                    None => h.clone(),
                })
                .collect(),
        ),
        _ => observed.clone(),
    }
}

/// Whether both are objects and `observed` has none of the keys of `expected`.
fn disjoint(expected: &Value, observed: &Value) -> bool {
    match (expected, observed) {
        (Value::Object(want), Value::Object(have)) => want.keys().all(|k| !have.contains_key(k)),
        _ => false,
    }
}

/// Compact JSON text of a value, for FAIL lines.
pub fn compact(value: &Value) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("<unserializable: {e}>"))
}
