#[prompty::tool(rename = "weather", description = "Current weather")]
fn get_weather(city: String) -> String {
    city
}

fn main() {}
