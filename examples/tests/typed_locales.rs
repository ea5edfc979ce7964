//! The locale variants of a typed prompt: `prompts/greeting.prompty` with `greeting.fr.prompty`
//! and `greeting.pt-BR.prompty` are one module, `greeting`, whose `_in` functions pick the variant
//! of a requested locale.

use prompty::{Message, Role};
use prompty_examples::prompts::{chat, greeting};

fn inputs() -> greeting::Inputs {
    greeting::Inputs { name: "Ada".into(), question: Some("?".into()) }
}

/// The role and text of each message.
fn texts(messages: &[Message]) -> Vec<(Role, String)> {
    messages.iter().map(|m| (m.role, m.text())).collect()
}

const FRENCH: &str = "Tu es un assistant chaleureux. Salue Ada par son nom, puis réponds en une phrase, en français.";
const BRAZILIAN: &str =
    "Você é um assistente caloroso. Cumprimente Ada pelo nome e responda em uma frase, em português do Brasil.";
const DEFAULT: &str = "You are a warm assistant. Greet Ada by name, then answer in one sentence.";

#[test]
fn the_variants_are_listed_sorted_in_conventional_case() {
    assert_eq!(greeting::LOCALES, ["fr", "pt-BR"]);
    assert_eq!(greeting::LOCALE_PATHS, ["prompts/greeting.fr.prompty", "prompts/greeting.pt-BR.prompty"]);
    assert_eq!(greeting::PATH, "prompts/greeting.prompty");
    // A prompt without variants has none.
    assert!(chat::LOCALES.is_empty());
}

#[test]
fn a_locale_picks_its_variant() -> prompty::Result<()> {
    let fr = greeting::prepare_in(&inputs(), "fr")?;
    assert_eq!(texts(&fr), [(Role::System, FRENCH.to_owned()), (Role::User, "?".to_owned())]);
    // Case-insensitive, `_` for `-`.
    let pt_br = greeting::prepare_in(&inputs(), "pt_br")?;
    assert_eq!(texts(&pt_br), [(Role::System, BRAZILIAN.to_owned()), (Role::User, "?".to_owned())]);
    // A region of a variant's language: `fr-CA` → `fr`.
    assert_eq!(texts(&greeting::prepare_in(&inputs(), "fr-CA")?), texts(&fr));
    assert_eq!(greeting::agent_in("FR")?.source.as_ref().unwrap().path, "prompts/greeting.fr.prompty");
    Ok(())
}

#[test]
fn a_locale_without_a_variant_gets_the_default() -> prompty::Result<()> {
    let default = greeting::prepare(&inputs())?;
    assert_eq!(texts(&default), [(Role::System, DEFAULT.to_owned()), (Role::User, "?".to_owned())]);
    // `pt-PT` → `pt` (no variant) → the fallback `en` (no variant) → the default.
    assert_eq!(texts(&greeting::prepare_in(&inputs(), "pt-PT")?), texts(&default));
    assert_eq!(texts(&greeting::prepare_in(&inputs(), "de")?), texts(&default));
    assert!(std::ptr::eq(greeting::agent_in("de")?, greeting::agent()));
    // A prompt without variants runs its default for every locale.
    let question = chat::Inputs { question: "Hi".into(), name: None, history: None };
    assert_eq!(texts(&chat::prepare_in(&question, "fr")?), texts(&chat::prepare(&question)?));
    Ok(())
}

#[test]
fn the_defaults_of_a_variant_are_its_own() -> prompty::Result<()> {
    let no_question = greeting::Inputs { name: "Ada".into(), question: None };
    let fr = greeting::prepare_in(&no_question, "fr")?;
    assert_eq!(fr[1].text(), "Comment vas-tu ?");
    assert_eq!(greeting::prepare(&no_question)?[1].text(), "How are you?");
    Ok(())
}

#[test]
fn an_invalid_tag_is_an_error() {
    let err = greeting::prepare_in(&inputs(), "not a tag!").unwrap_err();
    assert_eq!(
        err.to_string(),
        "`not a tag!` is not a locale tag (BCP 47, e.g. `fr` or `pt-BR`): ` ` is not a letter, digit or `-`"
    );
    assert!(greeting::agent_in("").is_err());
    assert!(chat::agent_in("123").is_err());
}
