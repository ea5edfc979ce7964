//! The agent loop: a typed prompt with two function tools (`prompts/weather_assistant.prompty`),
//! run with `turn`. The model asks for tools, their `#[prompty::tool]` handlers run, the results go
//! back, and the model answers. Every event of the loop is printed as it happens.
//!
//! ```text
//! cargo run -p prompty-examples --bin agent -- "Weather in Oslo, and 100 EUR in USD?"
//! ```
//!
//! Without `OPENAI_API_KEY` or `OPENAI_BASE_URL` the answers come from a local scripted model (it
//! says so), so the example runs offline; with the key, or `OPENAI_BASE_URL` alone for a keyless
//! local server, a real model answers (`PROMPTY_MODEL` names it).

use prompty::{AgentEvent, TurnOptions};
use prompty_examples::offline::LocalModel;
use prompty_examples::prompts::weather_assistant::{self, Inputs};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let question = std::env::args().nth(1).unwrap_or_else(|| "Weather in Oslo, and 100 EUR in USD?".to_owned());
    if !prompty_examples::model_configured() {
        println!("(offline: a local scripted model answers; {})\n", prompty_examples::OFFLINE_HINT);
        LocalModel::install("openai");
    }
    let options = TurnOptions::new().max_iterations(5).on_event(|event: &AgentEvent| match event {
        AgentEvent::Status { message } => println!("· {message}"),
        AgentEvent::ToolCallStart { name, arguments, .. } => println!("→ {name}({arguments})"),
        AgentEvent::ToolResult { name, result, .. } => println!("← {name}: {result}"),
        AgentEvent::Error { message, .. } => println!("! {message}"),
        _ => {}
    });
    let inputs = Inputs { question, preferred_unit: None };
    let answer = weather_assistant::turn(&inputs, options).await?;
    println!("\n[model]\n{answer}");
    Ok(())
}
