//! Typed quickstart: `prompts/chat.prompty` as Rust types. `prompty-build` compiled the file into
//! the module `prompty_examples::prompts::chat` (see `build.rs` and `src/lib.rs`): its inputs are a
//! struct, so a misspelled or missing input, or a value of the wrong type, is a compile error.
//!
//! ```text
//! cargo run -p prompty-examples --bin typed_quickstart -- "What is Prompty?"
//! ```
//!
//! It prints the messages the model receives and asks the model: with `OPENAI_API_KEY` set, or
//! `OPENAI_BASE_URL` alone for a keyless local server, that server's (`PROMPTY_MODEL` names it);
//! without either, the embedded model `smollm2-135m` (it says so); with `PROMPTY_OFFLINE=1` as
//! well, none (it stops after the messages).

use prompty::{Message, Role};
use prompty_examples::prompts::chat;
use prompty_examples::Answerer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let question = std::env::args().nth(1).unwrap_or_else(|| "What is a .prompty file?".to_owned());
    let inputs = chat::Inputs {
        // Required: a plain field.
        question,
        // Defaulted in the file (`friend`): an `Option`; `None` would use the default.
        name: Some("Ada".to_owned()),
        history: Some(vec![
            Message::new(Role::User, "Hi! I write prompts for a living."),
            Message::new(Role::Assistant, "Nice to meet you, Ada. How can I help?"),
        ]),
    };
    // No file is read and no YAML parsed here: the prompt was compiled into the binary. Its
    // `${env:...}` references (`PROMPTY_MODEL`, `OPENAI_BASE_URL`, `OPENAI_API_KEY`) are resolved
    // from this program's environment at the first call: the model shown is the model asked.
    let agent = chat::agent();
    let model = agent.model.as_ref().map_or("(none)", |m| m.id.as_str());
    println!("Typed prompt '{}' from {} (model {model})\n", agent.name, chat::PATH);
    for message in chat::prepare(&inputs)? {
        println!("[{}]\n{}\n", message.role, message.text());
    }

    let answer: String = match Answerer::from_env() {
        Answerer::Server => chat::invoke(&inputs).await?,
        Answerer::Embedded => {
            // The typed module's agent, pointed at the embedded model, with the messages of its
            // typed `prepare`, through the untyped API.
            println!("{}\n", prompty_examples::EMBEDDED_NOTICE);
            let agent = prompty_examples::embedded(chat::agent());
            prompty::cast(&prompty::run_async(&agent, &chat::prepare(&inputs)?).await?)?
        }
        Answerer::Offline => {
            println!("(offline: {}; these messages are what would be sent)", prompty_examples::OFFLINE_HINT);
            return Ok(());
        }
    };
    println!("[model]\n{answer}");
    Ok(())
}
