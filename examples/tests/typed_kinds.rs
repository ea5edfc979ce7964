//! Every mapping of input kinds to Rust types, defaults (`Option` fields), renames (`firstName` →
//! `first_name`, `type` → `r#type`), nested types and structured outputs, on the prompts of
//! `tests/prompts/` compiled by `prompty-build` from `build.rs`, and on `include_prompty!`.

mod prompts {
    include!(concat!(env!("OUT_DIR"), "/test_prompts.rs"));
}

use prompts::kinds::{self, Inputs, Owner, OwnerAddress, RecordsItem};
use prompty::{Media, Message, Role};
use serde_json::{json, Value};

fn full() -> Inputs {
    Inputs {
        title: "Report".to_owned(),
        first_name: Some("Grace".to_owned()),
        count: 3_i64,
        ratio: Some(1.5_f64),
        verbose: Some(true),
        tags: Some(vec!["a".to_owned(), "b".to_owned()]),
        matrix: Some(vec![vec![1_i64, 2], vec![3]]),
        anything: Some(vec![json!(1), json!("x")]),
        settings: Some(json!({"mode": "fast"})),
        owner: Some(Owner {
            display_name: "Ada".to_owned(),
            address: Some(OwnerAddress { city: "London".to_owned(), zip: None }),
        }),
        records: Some(vec![RecordsItem { id: 7, label: Some("seven".to_owned()) }, RecordsItem { id: 8, label: None }]),
        choice: Some(json!(42)),
        history: Some(vec![Message::new(Role::User, "earlier"), Message::new(Role::Assistant, "reply")]),
        photo: Some(Media::url("https://example.com/cat.png").with_media_type("image/png")),
        attachment: Some(Media::url("data:application/pdf;base64,JVBERi0=")),
        recording: Some(Media::url("https://example.com/a.wav")),
        r#type: None,
    }
}

#[test]
fn fields_serialize_under_the_input_names() {
    let value = serde_json::to_value(full()).unwrap();
    let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "title",
            "firstName",
            "count",
            "ratio",
            "verbose",
            "tags",
            "matrix",
            "anything",
            "settings",
            "owner",
            "records",
            "choice",
            "history",
            "photo",
            "attachment",
            "recording"
        ]
    );
    assert_eq!(value["owner"], json!({"displayName": "Ada", "address": {"city": "London"}}));
    assert_eq!(value["records"], json!([{"id": 7, "label": "seven"}, {"id": 8}]));
    assert_eq!(value["photo"], json!({"source": "https://example.com/cat.png", "mediaType": "image/png"}));
    // `None` is left out, so the prompt's default applies.
    assert!(value.get("type").is_none());
}

#[test]
fn the_json_form_reads_back() {
    let back: Inputs = serde_json::from_value(serde_json::to_value(full()).unwrap()).unwrap();
    assert_eq!(back, full());
    // Missing optional inputs are `None`; a missing required one is an error.
    let minimal: Inputs = serde_json::from_value(json!({"title": "T", "count": 1})).unwrap();
    assert_eq!(minimal.first_name, None);
    assert!(serde_json::from_value::<Inputs>(json!({"title": "T"})).is_err());
}

#[test]
fn defaults_apply_when_none() {
    let inputs: Inputs = serde_json::from_value(json!({"title": "T", "count": 1})).unwrap();
    let messages = kinds::prepare(&inputs).unwrap();
    let system = messages[0].text();
    assert!(system.starts_with("T for Ada: 1 x 0.5 verbose=false type=plain"), "{system}");
}

#[test]
fn typed_prepare_gives_the_messages_of_load_and_prepare() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prompts/kinds.prompty");
    let agent = prompty::load(&path).unwrap();
    for inputs in [full(), serde_json::from_value(json!({"title": "T", "count": 1})).unwrap()] {
        let json: Value = serde_json::to_value(&inputs).unwrap();
        let typed = kinds::prepare(&inputs).unwrap();
        let loaded = prompty::prepare(&agent, &json).unwrap();
        assert_eq!(typed, loaded);
    }
    let typed = kinds::prepare(&full()).unwrap();
    let roles: Vec<Role> = typed.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User]);
    assert!(typed[0].text().contains("Owner: Ada in London"), "{}", typed[0].text());
    assert!(typed[0].text().contains("[7:seven][8:]"), "{}", typed[0].text());
}

#[test]
fn the_agent_is_compiled_in_once() {
    let a = kinds::agent();
    assert!(std::ptr::eq(a, kinds::agent()));
    assert_eq!(a.name, "kinds");
    assert_eq!(kinds::PATH, "tests/prompts/kinds.prompty");
    let source = a.source.as_ref().unwrap();
    assert_eq!(source.path, "tests/prompts/kinds.prompty");
    // The same line as the loader finds.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prompts/kinds.prompty");
    assert_eq!(source.body_line, prompty::load(&path).unwrap().source.unwrap().body_line);
    assert!(kinds::tools().is_empty());
}

// The macro door generates the same module from the same generator.
prompty::include_prompty!("tests/prompts/kinds.prompty" as kinds_again);

#[test]
fn include_prompty_generates_the_same_module() {
    let inputs: kinds_again::Inputs = serde_json::from_value(serde_json::to_value(full()).unwrap()).unwrap();
    assert_eq!(kinds_again::prepare(&inputs).unwrap(), kinds::prepare(&full()).unwrap());
    assert_eq!(kinds_again::AGENT_JSON, kinds::AGENT_JSON);
}

prompty::include_prompty!("prompts/extract_weather.prompty");

#[test]
fn outputs_become_a_struct() {
    let raw = json!({"city": "Paris", "temperature": 21.5, "conditions": ["sunny"], "wind": {"speedKmh": 12.0}});
    let out: extract_weather::Output = prompty::cast(&raw).unwrap();
    assert_eq!(out.city, "Paris");
    assert_eq!(out.conditions, ["sunny"]);
    let wind: extract_weather::OutputWind = out.wind.unwrap();
    assert_eq!((wind.speed_kmh, wind.direction), (12.0, None));
    // A model's JSON text decodes the same way.
    let text = Value::String(raw.to_string());
    assert_eq!(prompty::cast::<extract_weather::Output>(&text).unwrap().temperature, 21.5);
    // Optional outputs may be missing, required ones may not.
    assert!(prompty::cast::<extract_weather::Output>(&json!({"city": "x", "temperature": 1, "conditions": []})).is_ok());
    assert!(prompty::cast::<extract_weather::Output>(&json!({"city": "x"})).is_err());
}
