// The handler's arguments do not match the declared parameters: `city` is declared a string,
// `days` is missing, and `verbose` is required but not declared.
mod tools {
    #[prompty::tool]
    pub fn get_weather(city: i64, unit: Option<String>, verbose: bool) -> String {
        format!("{city} {unit:?} {verbose}")
    }
}

use tools::get_weather;

prompty::include_prompty!("ui/prompts/weather_tool.prompty");

fn main() {}
