//! The typed path gives exactly the messages that `prompty::load` + `prepare` give for the same
//! file and inputs, on the shared fixtures (`tests/fixtures`) and the large synthetic prompt
//! (`tests/bench`), with the benchmark's inputs and with defaults.
//!
//! `tools_mcp.prompty` and `tools_openapi.prompty` are not here: their templates read `question`,
//! which they do not declare, so they do not compile as typed prompts (prompty-build's tests pin
//! that error).

use prompty::{LoadOptions, Media, Message};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

prompty::include_prompty!("../tests/fixtures/basic.prompty");
prompty::include_prompty!("../tests/fixtures/embedding.prompty");
prompty::include_prompty!("../tests/fixtures/image.prompty");
prompty::include_prompty!("../tests/fixtures/minimal.prompty");
prompty::include_prompty!("../tests/fixtures/multimodal.prompty");
prompty::include_prompty!("../tests/fixtures/responses.prompty");
prompty::include_prompty!("../tests/fixtures/structured.prompty");
prompty::include_prompty!("../tests/fixtures/summarize.prompty");
prompty::include_prompty!("../tests/fixtures/threaded.prompty");
prompty::include_prompty!("../tests/fixtures/tools_function.prompty");
prompty::include_prompty!("../tests/bench/large.prompty");

/// The handler of `tools_function.prompty`'s `get_weather` tool: its arguments are checked
/// against the declared parameters at compile time.
#[prompty::tool]
fn get_weather(location: String, unit: String) -> String {
    format!("21 degrees {unit} in {location}")
}

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests").join(path)
}

fn bench_inputs() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("bench/inputs.json")).unwrap()).unwrap()
}

/// Loads the file at run time (without resolving `${env:}`: prepare does not need the key) and
/// compares `prepare` with the typed `prepare` for the same inputs.
fn same<I: Serialize + DeserializeOwned>(file: &str, typed: fn(&I) -> prompty::Result<Vec<Message>>, inputs: Value) {
    let agent = prompty::load_with(data(file), &LoadOptions::new().keep_env_references()).unwrap();
    let expected = prompty::prepare(&agent, &inputs).unwrap();
    let typed_inputs: I = serde_json::from_value(inputs.clone()).unwrap_or_else(|e| panic!("{file}: {e}"));
    let actual = typed(&typed_inputs).unwrap();
    assert_eq!(actual, expected, "{file} with {inputs}");
    assert!(!actual.is_empty(), "{file}");
}

#[test]
fn basic() {
    same("fixtures/basic.prompty", basic::prepare, bench_inputs()["basic"].clone());
    same("fixtures/basic.prompty", basic::prepare, json!({}));
    let defaults = basic::prepare(&basic::Inputs::default()).unwrap();
    assert!(defaults[0].text().contains("helping Jane Doe"));
}

#[test]
fn threaded() {
    same("fixtures/threaded.prompty", threaded::prepare, bench_inputs()["threaded"].clone());
    same("fixtures/threaded.prompty", threaded::prepare, json!({}));
}

#[test]
fn tools_function() {
    same("fixtures/tools_function.prompty", tools_function::prepare, bench_inputs()["tools_function"].clone());
    same("fixtures/tools_function.prompty", tools_function::prepare, json!({}));
    let tools = tools_function::tools();
    assert_eq!(tools.names().collect::<Vec<_>>(), ["get_weather"]);
}

#[test]
fn large() {
    let inputs: Value =
        serde_json::from_str(&std::fs::read_to_string(data("bench/large_inputs.json")).unwrap()).unwrap();
    same("bench/large.prompty", large::prepare, inputs);
}

#[test]
fn the_other_fixtures() {
    same("fixtures/embedding.prompty", embedding::prepare, json!({"text": "embed me"}));
    same("fixtures/embedding.prompty", embedding::prepare, json!({}));
    same("fixtures/image.prompty", image::prepare, json!({"prompt": "a cat"}));
    same("fixtures/minimal.prompty", minimal::prepare, json!({}));
    same("fixtures/responses.prompty", responses::prepare, json!({"question": "1+1?"}));
    same("fixtures/structured.prompty", structured::prepare, json!({}));
    same("fixtures/summarize.prompty", summarize::prepare, json!({"text": "Long text.", "context": "ctx"}));
    same("fixtures/summarize.prompty", summarize::prepare, json!({"text": "Long text."}));
}

#[test]
fn multimodal() {
    let photo = Media::url("https://example.com/cat.png").with_media_type("image/png").with_detail("low");
    let recording = Media::url("data:audio/wav;base64,UklGRg==").with_media_type("audio/wav");
    let inputs = json!({"question": "What is this?", "photo": photo, "recording": recording});
    same("fixtures/multimodal.prompty", multimodal::prepare, inputs);
    same("fixtures/multimodal.prompty", multimodal::prepare, json!({"photo": {"source": "https://x/y.png"}}));
}

#[test]
fn structured_output_type() {
    let out: structured::Output =
        prompty::cast(&json!({"temperature": 72, "condition": "sunny", "city": "Paris"})).unwrap();
    assert_eq!((out.temperature, out.condition.as_str(), out.city.as_str()), (72, "sunny", "Paris"));
}

#[test]
fn typed_render_segments_are_the_untyped_ones() {
    let inputs = bench_inputs()["basic"].clone();
    let agent = prompty::load_with(data("fixtures/basic.prompty"), &LoadOptions::new().keep_env_references()).unwrap();
    let expected = prompty::render_segments(&agent, &inputs).unwrap();
    let typed: basic::Inputs = serde_json::from_value(inputs).unwrap();
    let segments = basic::render_segments(&typed).unwrap();
    assert_eq!(segments, expected);
    assert!(segments.iter().any(|s| s.kind == prompty::SegmentKind::Interp && s.source.is_some()), "{segments:#?}");
}
