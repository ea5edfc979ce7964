//! The typed examples run offline (no API key, no base URL and `PROMPTY_OFFLINE=1`: they print
//! what would be sent, and the agent examples use their scripted stand-in). The embedded model
//! answering them is `tests/embedded_model.rs`.

use std::process::Command;

fn run(exe: &str) -> String {
    let out = Command::new(exe)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("PROMPTY_OFFLINE", "1")
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

#[test]
fn locales() {
    let out = run(env!("CARGO_BIN_EXE_locales"));
    let section = |title: &str| -> String {
        let start = out.find(&format!("── {title}\n")).unwrap_or_else(|| panic!("no section {title}: {out}"));
        let rest = &out[start + "── ".len()..];
        let end = rest.find("── ").unwrap_or(rest.len());
        rest[..end].to_owned()
    };
    assert!(out.contains("greeting locales: fr, pt-BR"), "{out}");
    assert!(section("registry, locale en").contains("[system] You are a warm assistant. Greet Ana by name"), "{out}");
    assert!(section("registry, locale fr-CA").contains("[system] Tu es un assistant chaleureux. Salue Ana"), "{out}");
    assert!(
        section("registry, locale pt_br").contains("[system] Você é um assistente caloroso. Cumprimente Ana"),
        "{out}"
    );
    // pt-PT: no pt-PT, no pt, no en variant: the default.
    assert!(section("registry, locale pt-PT").contains("Greet Ana by name"), "{out}");
    assert!(section("registry, locale de").contains("Greet Ana by name"), "{out}");
    let tenant = section("registry, fr, tenant override + appender");
    assert!(tenant.contains("[system] Bienvenue chez ACME, Ana !\n    Never share internal ticket numbers.\n    system:\n    (an appender is plain text)"), "{tenant}");
    assert_eq!(tenant.matches("[system]").count(), 1, "{tenant}");
    assert!(section("registry, fr, after reset").contains("Salue Ana"), "{out}");
    assert!(out.contains("typed greeting::LOCALES = [\"fr\", \"pt-BR\"]"), "{out}");
    for (locale, text) in [("en", "Greet Ana"), ("fr-CA", "Salue Ana"), ("pt-PT", "Greet Ana"), ("de", "Greet Ana")] {
        let typed = section(&format!("typed prepare_in, locale {locale}"));
        assert!(typed.contains(text), "{locale}: {typed}");
    }
    assert!(out.contains("an ill-formed locale is an error: `français` is not a locale tag"), "{out}");
    assert!(
        out.contains(
            "an unknown id is an error: no prompt is registered under the id `greetings` (closest: `greeting`)"
        ),
        "{out}"
    );
}

#[test]
fn examples_write_tracy_files_when_asked() {
    let dir = std::env::temp_dir().join(format!("prompty-examples-traces-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_quickstart"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("PROMPTY_OFFLINE", "1")
        .env("PROMPTY_TRACE_DIR", &dir)
        .output()
        .expect("the example runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    // The quickstart loads, then prepares: two roots, two files.
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names[0].starts_with("load.") && names[0].ends_with(".tracy"), "{names:?}");
    assert!(names[1].starts_with("prepare.") && names[1].ends_with(".tracy"), "{names:?}");
    let prepare: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(&names[1])).unwrap()).unwrap();
    assert_eq!(prepare["trace"]["signature"], "prompty.prepare");
    let frames: Vec<&str> =
        prepare["trace"]["__frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(frames, ["render", "parse"]);
}
