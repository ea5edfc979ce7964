//! Quickstart: load `prompts/chat.prompty`, prepare it with a question, print the messages.
//!
//! ```text
//! cargo run -p prompty-examples --bin quickstart -- "What is Prompty?"
//! ```
//!
//! The earlier conversation (a `thread` input) is spliced in as messages with their own roles; a
//! role marker typed into the question stays inside the user's message.

use serde_json::json;
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let question = std::env::args().nth(1).unwrap_or_else(|| "What is a .prompty file?".to_owned());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("prompts/chat.prompty");
    let agent = prompty::load(&path)?;
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
    for message in prompty::prepare(&agent, &inputs)? {
        println!("[{}]\n{}\n", message.role, message.text());
    }
    Ok(())
}
