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
