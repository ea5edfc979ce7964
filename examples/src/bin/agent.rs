//! The agent loop: a typed prompt with two function tools (`prompts/weather_assistant.prompty`),
//! run with `turn`. The model asks for tools, their `#[prompty::tool]` handlers run, the results go
//! back, and the model answers. Every event of the loop is printed as it happens.
//!
//! ```text
//! cargo run -p prompty-examples --bin agent -- "Weather in Oslo, and 100 EUR in USD?"
//! ```
//!
//! With `OPENAI_API_KEY`, or `OPENAI_BASE_URL` alone for a keyless local server, that server's
//! model answers (`PROMPTY_MODEL` names it). Without either, the embedded model `smollm2-135m`
//! does (it says so): its first answer is made a tool call, decoded under the tools' parameter
//! schemas so that it always parses, and it answers from the result
//! (`prompty_examples::embedded_for_tools`). With `PROMPTY_OFFLINE=1` as well, a local scripted model answers.

use prompty::{AgentEvent, ToolChoice, TurnOptions};
use prompty_examples::offline::LocalModel;
use prompty_examples::prompts::weather_assistant::{self, Inputs};
use prompty_examples::Answerer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let question = std::env::args().nth(1).unwrap_or_else(|| "Weather in Oslo, and 100 EUR in USD?".to_owned());
    let answerer = Answerer::from_env();
    match answerer {
        Answerer::Server => {}
        Answerer::Embedded => println!("{}\n", prompty_examples::EMBEDDED_NOTICE),
        Answerer::Offline => {
            println!("(offline: a local scripted model answers; {})\n", prompty_examples::OFFLINE_HINT);
            LocalModel::install("openai");
        }
    }
    let options = TurnOptions::new().max_iterations(5).on_event(|event: &AgentEvent| match event {
        AgentEvent::Status { message } => println!("· {message}"),
        AgentEvent::ToolCallStart { name, arguments, .. } => println!("→ {name}({arguments})"),
        AgentEvent::ToolResult { name, result, .. } => println!("← {name}: {result}"),
        AgentEvent::Error { message, .. } => println!("! {message}"),
        _ => {}
    });
    let inputs = Inputs { question, preferred_unit: None };
    let answer: String = if answerer == Answerer::Embedded {
        // The typed prompt's agent, pointed at the embedded model, with its typed messages and
        // handlers, through the untyped loop.
        let agent = prompty_examples::embedded_for_tools(weather_assistant::agent());
        let messages = weather_assistant::prepare(&inputs)?;
        let options = options.tools(weather_assistant::tools()).after_forced_tool(ToolChoice::None);
        let out = prompty::run_turn_async(&agent, messages, &serde_json::to_value(&inputs)?, options).await?;
        prompty::cast(&out.result)?
    } else {
        weather_assistant::turn(&inputs, options).await?
    };
    println!("\n[model]\n{answer}");
    Ok(())
}
