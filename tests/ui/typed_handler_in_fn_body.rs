// A `#[prompty::tool]` handler defined inside the fn body that includes the prompt: the generated
// module looks handlers up in the module around that fn (a module cannot see the items of a fn
// body), so the error says where handlers are looked up and how to fix it.
fn main() {
    /// The weather in a city.
    #[prompty::tool]
    fn get_weather(city: String, days: Option<u8>, unit: Option<String>) -> String {
        format!("{city} {days:?} {unit:?}")
    }

    prompty::include_prompty!("ui/prompts/weather_tool.prompty");

    let _ = weather_tool::tools();
}
