// The prompt declares a `kind: function` tool `get_weather`, and no `#[prompty::tool]` handler of
// that name is in scope where it is included. (A plain fn of that name is not a handler.)
fn get_weather(city: String) -> String {
    city
}

prompty::include_prompty!("ui/prompts/weather_tool.prompty");

fn main() {
    let _ = get_weather(String::new());
}
