//! `include_prompty!` inside a fn body finds a `#[prompty::tool]` handler defined at the top level
//! of the module around that fn (where handlers are looked up).

/// The weather in a city.
#[prompty::tool]
fn get_weather(city: String, days: Option<u8>, unit: Option<String>) -> String {
    format!("{city} {days:?} {unit:?}")
}

fn main() {
    prompty::include_prompty!("ui/prompts/weather_tool.prompty");

    assert_eq!(weather_tool::tools().names().collect::<Vec<_>>(), ["get_weather"]);
}
