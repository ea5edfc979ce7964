//! The typed examples run offline (no API key and no base URL: they print what would be sent).

use std::process::Command;

fn run(exe: &str) -> String {
    let out = Command::new(exe)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("the example runs");
    assert!(out.status.success(), "{exe}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn typed_quickstart() {
    let out = run(env!("CARGO_BIN_EXE_typed_quickstart"));
    assert!(out.contains("Typed prompt 'chat' from prompts/chat.prompty"), "{out}");
    assert!(out.contains("[assistant]\nNice to meet you, Ada. How can I help?"), "{out}");
    assert!(out.contains("[user]\nWhat is a .prompty file?"), "{out}");
}

#[test]
fn structured_output() {
    let out = run(env!("CARGO_BIN_EXE_structured_output"));
    assert!(out.contains("Report the temperature in celsius."), "{out}");
    assert!(out.contains("city:        Lisbon"), "{out}");
    assert!(out.contains("wind:        10 km/h"), "{out}");
}

#[test]
fn typed_tools() {
    let out = run(env!("CARGO_BIN_EXE_typed_tools"));
    // `unit` is bound to the input `preferredUnit` (fahrenheit).
    assert!(out.contains(r#"get_weather({"city": "Oslo"}) = "70°F and sunny in Oslo""#), "{out}");
    assert!(out.contains("convert_currency("), "{out}");
}
