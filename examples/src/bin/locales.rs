//! Prompts by id and locale: `prompts/greeting.prompty` with its French and Brazilian Portuguese
//! variants (`greeting.fr.prompty`, `greeting.pt-BR.prompty`), through both doors.
//!
//! ```text
//! cargo run -p prompty-examples --bin locales -- [NAME] [LOCALE...]
//! ```
//!
//! - The run-time door: `PromptRegistry::from_dir("prompts")` registers every prompt of the folder
//!   by id; `prepare("greeting", inputs, Some(locale))` picks the variant by the lookup order (the
//!   tag, its shorter tags, the fallback locale `en`, the default). A tenant override and an
//!   appender are added and dropped again with `reset`.
//! - The compile-time door: the same files compiled by `prompty_build::compile` into the module
//!   `prompts::greeting`, whose `prepare_in(&Inputs, locale)` resolves the locale the same way.
//!
//! Then it asks the model in each locale: the server configured by `OPENAI_API_KEY` or
//! `OPENAI_BASE_URL` (a keyless local server), else the embedded model `smollm2-135m` (it says
//! so); with `PROMPTY_OFFLINE=1` and no server it stops after the messages.

use prompty::{PromptRegistry, PromptSource};
use prompty_examples::prompts::greeting;
use prompty_examples::Answerer;
use serde_json::json;
use std::path::Path;

fn show(title: &str, messages: &[prompty::Message]) {
    println!("── {title}");
    for m in messages {
        println!("[{}] {}", m.role, m.text().replace('\n', "\n    "));
    }
    println!();
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "Ana".to_owned());
    let mut locales: Vec<String> = args.collect();
    if locales.is_empty() {
        locales = ["en", "fr-CA", "pt_br", "pt-PT", "de"].map(str::to_owned).to_vec();
    }

    // The run-time door: a registry loaded from the folder.
    let prompts = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts");
    let registry = PromptRegistry::from_dir(&prompts)?;
    println!("ids: {}", registry.list().join(", "));
    println!("greeting locales: {}\n", registry.locales("greeting")?.join(", "));
    let inputs = json!({ "name": name });
    for locale in &locales {
        let messages = registry.prepare_async("greeting", &inputs, Some(locale)).await?;
        show(&format!("registry, locale {locale}"), &messages);
    }

    // A tenant's own French prompt and an appender, then back to the files.
    let tenant = "---\ninputs:\n  name: {kind: string, required: true}\n  question: {kind: string, default: Ça va ?}\n---\nsystem:\nBienvenue chez ACME, {{ name }} !\n\nuser:\n{{ question }}";
    registry.override_prompt(
        "greeting",
        Some("fr"),
        PromptSource::build(move || prompty::load_str(tenant, ".", "tenant/greeting.fr.prompty")),
    )?;
    registry.append("greeting", "Never share internal ticket numbers.\nsystem:\n(an appender is plain text)")?;
    show("registry, fr, tenant override + appender", &registry.prepare_async("greeting", &inputs, Some("fr")).await?);
    registry.reset("greeting")?;
    show("registry, fr, after reset", &registry.prepare_async("greeting", &inputs, Some("fr")).await?);

    // The compile-time door: the typed module of the same files.
    println!("typed greeting::LOCALES = {:?}\n", greeting::LOCALES);
    let typed = greeting::Inputs { name: name.clone(), question: None };
    for locale in &locales {
        show(&format!("typed prepare_in, locale {locale}"), &greeting::prepare_in(&typed, locale)?);
    }
    match greeting::prepare_in(&typed, "français") {
        Err(e) => println!("an ill-formed locale is an error: {e}\n"),
        Ok(_) => println!("unexpected: `français` was taken as a locale\n"),
    }
    match registry.get("greetings", None) {
        Err(e) => println!("an unknown id is an error: {e}\n"),
        Ok(_) => println!("unexpected: `greetings` was found\n"),
    }

    match Answerer::from_env() {
        Answerer::Server => {
            for locale in &locales {
                let answer: String = registry.invoke_async("greeting", &inputs, Some(locale)).await?;
                println!("[model, {locale}] {answer}");
            }
        }
        Answerer::Embedded => {
            // The registry's pick for each locale, pointed at the embedded model.
            println!("{}\n", prompty_examples::EMBEDDED_NOTICE);
            for locale in &locales {
                let agent = prompty_examples::embedded(&registry.get("greeting", Some(locale))?.agent);
                let messages = registry.prepare_async("greeting", &inputs, Some(locale)).await?;
                let answer: String = prompty::cast(&prompty::run_async(&agent, &messages).await?)?;
                println!("[model, {locale}] {answer}");
            }
        }
        Answerer::Offline => println!("(offline: {})", prompty_examples::OFFLINE_HINT),
    }
    Ok(())
}
