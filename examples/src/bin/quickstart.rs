//! Quickstart: load `prompts/chat.prompty`, prepare it with a question, print the messages, and,
//! when a model is configured, ask it.
//!
//! ```text
//! cargo run -p prompty-examples --bin quickstart -- "What is Prompty?"
//! ```
//!
//! The model is called when `OPENAI_API_KEY` is set, or `OPENAI_BASE_URL` alone for a keyless
//! local server (llama.cpp, vLLM, Ollama, LM Studio: `OPENAI_BASE_URL=http://127.0.0.1:8080/v1`);
//! `PROMPTY_MODEL` names the model (default `gpt-4o-mini`). Without either, the embedded model
//! answers (`smollm2-135m`, provider `local`, downloaded once into the user's cache; it says so);
//! with `PROMPTY_OFFLINE=1` as well, the example stops after printing the messages. The earlier
//! conversation (a `thread` input) is spliced in as messages with their own roles; a role marker
//! typed into the question stays inside the user's message.

use prompty_examples::Answerer;
use serde_json::json;
use std::path::Path;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let question = std::env::args().nth(1).unwrap_or_else(|| "What is a .prompty file?".to_owned());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts/chat.prompty");
    let agent = prompty::load_async(&path).await?;
    let model = agent.model.as_ref().map(|m| m.id.as_str()).unwrap_or("(none)");
    println!("Loaded '{}' ({} inputs, model {model})\n", agent.name, agent.inputs.as_ref().map_or(0, Vec::len));

    let inputs = json!({
        "name": "Ada",
        "question": question,
        "history": [
            {"role": "user", "content": "Hi! I write prompts for a living."},
            {"role": "assistant", "content": "Nice to meet you, Ada. How can I help?"}
        ]
    });
    let messages = prompty::prepare_async(&agent, &inputs).await?;
    for message in &messages {
        println!("[{}]\n{}\n", message.role, message.text());
    }

    let agent = match Answerer::from_env() {
        Answerer::Server => agent,
        Answerer::Embedded => {
            println!("{}\n", prompty_examples::EMBEDDED_NOTICE);
            prompty_examples::embedded(&agent)
        }
        Answerer::Offline => {
            println!("(offline: {})", prompty_examples::OFFLINE_HINT);
            return Ok(());
        }
    };
    let answer: String = prompty::cast(&prompty::run_async(&agent, &messages).await?)?;
    println!("[model]\n{answer}");
    Ok(())
}
