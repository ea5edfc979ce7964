// A handler found under the tool's name but registered under another name would never be
// called by the model.
#[prompty::tool(name = "weather")]
fn get_weather(city: String, days: Option<u8>, unit: Option<String>) -> String {
    format!("{city} {days:?} {unit:?}")
}

prompty::include_prompty!("ui/prompts/weather_tool.prompty");

fn main() {}
