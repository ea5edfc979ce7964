//! Our `.tracy` files have the shape of the ones the Python reference runtime writes, so the
//! Prompty trace viewer opens both: `fixtures/python-prompty-2.1.0.prepare.tracy` was written by
//! PyPI `prompty` 2.1.0 (`PromptyTracer`) for `load` + `prepare` of `tests/fixtures/basic.prompty`
//! with the inputs below; this test writes ours for the same prompt and inputs and compares them
//! frame by frame: names in order, the keys of every frame, the `__time` fields and their formats,
//! and the JSON types of results.

use prompty::trace::{self, TracyBackend};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `2026-11-25T09:07:53.494358`
fn is_time(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let b = s.as_bytes();
    b.len() == 26
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            _ => c.is_ascii_digit(),
        })
}

/// The differences between two frames, recursively, as readable lines.
fn compare(path: &str, ours: &Value, theirs: &Value, out: &mut Vec<String>) {
    let keys = |v: &Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default();
        // Usage appears when a frame has some, in both runtimes; `__segments` (the prepared
        // messages' segments, docs/tracing.md) is ours alone, beside the reference's keys.
        k.retain(|k| k != "__usage" && k != "__segments");
        k
    };
    if keys(ours) != keys(theirs) {
        out.push(format!("{path}: keys {:?} vs the reference's {:?}", keys(ours), keys(theirs)));
    }
    if ours["name"] != theirs["name"] {
        out.push(format!("{path}: name {} vs {}", ours["name"], theirs["name"]));
    }
    let time_keys =
        |v: &Value| -> Vec<String> { v["__time"].as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default() };
    if time_keys(ours) != time_keys(theirs) {
        out.push(format!("{path}: __time keys {:?} vs {:?}", time_keys(ours), time_keys(theirs)));
    }
    for key in ["start", "end"] {
        if !is_time(&ours["__time"][key]) {
            out.push(format!("{path}: __time.{key} {} is not YYYY-MM-DDTHH:MM:SS.ffffff", ours["__time"][key]));
        }
    }
    if !ours["__time"]["duration"].is_u64() {
        out.push(format!("{path}: __time.duration {} is not whole milliseconds", ours["__time"]["duration"]));
    }
    for key in ["signature", "result", "inputs"] {
        if kind(&ours[key]) != kind(&theirs[key]) {
            out.push(format!("{path}: {key} is {} vs the reference's {}", kind(&ours[key]), kind(&theirs[key])));
        }
    }
    let frames = |v: &Value| v["__frames"].as_array().cloned().unwrap_or_default();
    let (a, b) = (frames(ours), frames(theirs));
    if a.len() != b.len() {
        out.push(format!("{path}: {} child frames vs the reference's {}", a.len(), b.len()));
    }
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        compare(&format!("{path}/{}[{i}]", x["name"].as_str().unwrap_or("?")), x, y, out);
    }
}

#[test]
fn our_tracy_file_has_the_reference_shape() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let reference: Value = serde_json::from_str(
        &std::fs::read_to_string(here.join("tests/fixtures/python-prompty-2.1.0.prepare.tracy")).unwrap(),
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("prompty-tracy-reference-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let tracy = Arc::new(TracyBackend::new(&dir));
    trace::add("tracy-reference", tracy.clone());
    std::env::set_var("OPENAI_API_KEY", "sk-reference-test");
    let agent = prompty::load(here.join("../tests/fixtures/basic.prompty")).unwrap();
    let messages = prompty::prepare(&agent, &json!({"firstName": "Ada", "question": "Why?"})).unwrap();
    trace::remove("tracy-reference");
    assert_eq!(messages.len(), 2);

    // One file per root: `load` and `prepare` are both roots here.
    let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    let names: Vec<String> = files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0].starts_with("load.") && names[1].starts_with("prepare."), "{names:?}");
    let ours: Value = serde_json::from_str(&std::fs::read_to_string(&files[1]).unwrap()).unwrap();

    let top = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(top(&ours), top(&reference));
    assert_eq!(ours["runtime"], "rust");
    assert_eq!(reference["runtime"], "python");
    let mut differences = Vec::new();
    compare("prepare", &ours["trace"], &reference["trace"], &mut differences);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    // Same inputs recorded, the key redacted in ours as in theirs.
    assert_eq!(ours["trace"]["inputs"]["inputs"]["firstName"], reference["trace"]["inputs"]["inputs"]["firstName"]);
    let text = ours.to_string();
    assert!(!text.contains("sk-reference-test"), "the key leaked into the trace");
    assert!(text.contains("[REDACTED]"));
    // The same messages, in the same order.
    let texts = |v: &Value| -> Vec<String> {
        v["trace"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let parts =
                    m.get("content").or_else(|| m.get("parts")).and_then(Value::as_array).cloned().unwrap_or_default();
                parts.iter().filter_map(|p| p["value"].as_str()).collect::<String>()
            })
            .collect()
    };
    assert_eq!(texts(&ours), texts(&reference));
    // Our one addition: where each message's values are, beside the messages.
    let segments = ours["trace"]["__segments"].as_array().expect("the prepare frame keeps the segments");
    assert_eq!(segments.len(), ours["trace"]["result"].as_array().unwrap().len());
}
