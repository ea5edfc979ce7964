//! Registrations from another crate, used from a binary: the `#[prompty::tool]` functions and the
//! `shout` renderer of the `weather-tools` crate.
//!
//! ```text
//! cargo run -p prompty-examples --bin tools
//! ```

// Without this line nothing names `weather_tools`, the linker drops it, and its registrations vanish.
prompty::link!(weather_tools);

use prompty::{Agent, ToolCall, ToolContext, Tools};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    println!("registered tools: {}", prompty::registered_tools().join(", "));

    let definition = weather_tools::get_weather::definition();
    let convert = weather_tools::convert::definition();
    let agent = Agent::from_value(json!({
        "name": "weather",
        "tools": [serde_json::to_value(&definition)?, serde_json::to_value(&convert)?],
        "template": {"format": {"kind": "shout"}, "parser": {"kind": "prompty"}},
        "instructions": "user:\nWhat is the weather in {{ city }}?"
    }))?;
    for f in prompty::project_tools(&agent)? {
        println!("the model sees {}: {}", f.name, f.parameters);
    }
    let inputs = serde_json::Map::new();
    let tools = Tools::new();
    let call = ToolCall::new("call_1", "get_weather", r#"{"city": "Oslo", "unit": "fahrenheit"}"#);
    let result = prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools))?;
    println!("get_weather(Oslo) = {result}");

    let call = ToolCall::new("call_2", "convert_currency", r#"{"amount": 10, "from": "EUR", "to": "USD"}"#);
    println!("convert_currency(10 EUR) = {}", prompty::execute_tool(&call, ToolContext::new(&agent, &inputs, &tools))?);

    for m in prompty::prepare(&agent, &json!({"city": "Oslo"}))? {
        println!("[{}] {}", m.role, m.text());
    }
    Ok(())
}
