//! Structured output into a struct: `prompts/extract_weather.prompty` declares `outputs:`, so its
//! typed module has an `Output` struct and `invoke` returns one.
//!
//! ```text
//! cargo run -p prompty-examples --bin structured_output -- "Paris: 22 degrees, sunny, wind 15 km/h from the west"
//! ```
//!
//! It prints the messages and the decoded `Output` of the model's answer: with `OPENAI_API_KEY`
//! set, or `OPENAI_BASE_URL` alone for a keyless local server, that server's model
//! (`PROMPTY_MODEL` names it); without either, the embedded model `smollm2-135m`, whose decoding
//! is held to the `outputs:` schema (it says so); with `PROMPTY_OFFLINE=1` as well, it decodes a
//! sample answer instead. The prompt asks for OpenAI's strict
//! `json_schema` output by default; a server that refuses it (llama-cpp-python's, which accepts only
//! `json_object`) gets the request once more as `json_object` with the schema, and the mode that
//! works is remembered for the endpoint. Choose the mode yourself with
//! `PROMPTY_STRUCTURED_OUTPUT=jsonObjectSchema`, or `structuredOutput:` in the prompt or its
//! connection (see `prompty::StructuredOutput`).

use prompty_examples::prompts::extract_weather::{self, Inputs, Output};
use prompty_examples::Answerer;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    prompty_examples::trace_from_env();
    let report = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Greetings from Lisbon! 24 degrees and sunny, with a light breeze of 10 km/h.".to_owned());
    let inputs = Inputs { report, unit: None };
    for message in extract_weather::prepare(&inputs)? {
        println!("[{}]\n{}\n", message.role, message.text());
    }

    let output: Output = match Answerer::from_env() {
        Answerer::Server => extract_weather::invoke(&inputs).await?,
        Answerer::Embedded => {
            println!("{}\n", prompty_examples::EMBEDDED_NOTICE);
            let agent = prompty_examples::embedded(extract_weather::agent());
            prompty::cast(&prompty::run_async(&agent, &extract_weather::prepare(&inputs)?).await?)?
        }
        Answerer::Offline => {
            println!("(offline: {}; decoding a sample answer instead)\n", prompty_examples::OFFLINE_HINT);
            let sample = r#"{"city": "Lisbon", "temperature": 24, "conditions": ["sunny"], "wind": {"speedKmh": 10}}"#;
            prompty::cast(&serde_json::Value::String(sample.to_owned()))?
        }
    };
    println!("city:        {}", output.city);
    println!("temperature: {}", output.temperature);
    println!("conditions:  {}", output.conditions.join(", "));
    if let Some(wind) = &output.wind {
        println!("wind:        {} km/h {}", wind.speed_kmh, wind.direction.as_deref().unwrap_or(""));
    }
    Ok(())
}
