//! A typed prompt with function tools: `prompts/weather_assistant.prompty` declares `get_weather`
//! and `convert_currency` (`kind: function`). Their `#[prompty::tool]` handlers (from the
//! `weather-tools` crate, imported in `src/lib.rs`) were checked against the declared parameters
//! when this crate compiled: a missing handler, or an argument of the wrong type, fails the build.
//!
//! ```text
//! cargo run -p prompty-examples --bin typed_tools -- "Weather in Oslo, and 100 EUR in USD?"
//! ```
//!
//! It prints the messages and the tools the model would see, calls the handlers the way a model's
//! tool calls would, then runs the agent loop (`weather_assistant::turn`): a real model with
//! `OPENAI_API_KEY` or `OPENAI_BASE_URL` set, else the embedded model `smollm2-135m` (it says
//! so), or with `PROMPTY_OFFLINE=1` as well a local scripted one.

use prompty::{ToolCall, ToolChoice, ToolContext, TurnOptions};
use prompty_examples::prompts::weather_assistant::{self, Inputs};
use prompty_examples::Answerer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let question = std::env::args().nth(1).unwrap_or_else(|| "Weather in Oslo, and 100 EUR in USD?".to_owned());
    let inputs = Inputs { question, preferred_unit: Some("fahrenheit".to_owned()) };
    for message in weather_assistant::prepare(&inputs)? {
        println!("[{}]\n{}\n", message.role, message.text());
    }
    let agent = weather_assistant::agent();
    for f in prompty::project_tools(agent)? {
        println!("the model sees {}: {}", f.name, f.parameters);
    }

    // The handlers, as `prompty::Tools` (naming them also links them into this binary).
    let tools = weather_assistant::tools();
    let json_inputs = serde_json::to_value(&inputs)?;
    let json_inputs = json_inputs.as_object().cloned().unwrap_or_default();
    for call in [
        // `unit` is bound to the input `preferredUnit`: the model does not send it.
        ToolCall::new("call_1", "get_weather", r#"{"city": "Oslo"}"#),
        ToolCall::new("call_2", "convert_currency", r#"{"amount": 100, "from": "EUR", "to": "USD"}"#),
    ] {
        let result = prompty::execute_tool(&call, ToolContext::new(agent, &json_inputs, &tools))?;
        println!("{}({}) = {result}", call.name, call.arguments);
    }

    // The agent loop: the model's tool calls reach these same handlers, checked at compile time.
    let answer: String = match Answerer::from_env() {
        Answerer::Server => weather_assistant::turn(&inputs, TurnOptions::new()).await?,
        Answerer::Embedded => {
            println!("\n{}", prompty_examples::EMBEDDED_NOTICE);
            let agent = prompty_examples::embedded_for_tools(agent);
            let messages = weather_assistant::prepare(&inputs)?;
            let options = TurnOptions::new().tools(tools).after_forced_tool(ToolChoice::None);
            let out = prompty::run_turn_async(&agent, messages, &serde_json::to_value(&inputs)?, options).await?;
            prompty::cast(&out.result)?
        }
        Answerer::Offline => {
            println!("\n(offline: a local scripted model answers; {})", prompty_examples::OFFLINE_HINT);
            prompty_examples::offline::LocalModel::install("openai");
            weather_assistant::turn(&inputs, TurnOptions::new()).await?
        }
    };
    println!("\n[model]\n{answer}");
    Ok(())
}
