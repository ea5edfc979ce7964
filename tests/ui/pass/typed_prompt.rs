//! A typed prompt whose function tool has a matching `#[prompty::tool]` handler compiles, and
//! prepares the same messages as loading the file.

/// The weather in a city.
#[prompty::tool]
fn get_weather(city: String, days: Option<u8>, unit: Option<String>) -> String {
    format!("sunny in {city} in {} days ({})", days.unwrap_or(0), unit.unwrap_or_default())
}

prompty::include_prompty!("ui/prompts/weather_tool.prompty" as weather);
prompty::include_prompty!("ui/prompts/inputs.prompty");

fn main() {
    let messages = weather::prepare(&weather::Inputs { question: "Rain in Oslo?".into(), unit: None }).unwrap();
    assert_eq!(messages[0].text(), "Rain in Oslo?");
    assert_eq!(weather::tools().names().collect::<Vec<_>>(), ["get_weather"]);

    let inputs = inputs::Inputs { question: "Why?".into(), max_words: 10, tone: None };
    let messages = inputs::prepare(&inputs).unwrap();
    assert_eq!(messages[0].text(), "Answer in a friendly tone, in at most 10 words.");
}
