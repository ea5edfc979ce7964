//! A crate that only holds prompty registrations: two `#[prompty::tool]` functions and a renderer.
//! Nothing in a binary calls into it, so the binary must name it with `prompty::link!(weather_tools)`
//! or the linker drops it, registrations and all.
//!
//! ```
//! prompty::link!(weather_tools);
//! let tool = weather_tools::get_weather::definition();
//! assert_eq!(tool.description.as_deref(), Some("Get the current weather for a city."));
//! assert!(prompty::get_tool("get_weather").is_some());
//! assert!(prompty::get_renderer("shout").is_ok());
//! ```

use serde::Deserialize;

/// Temperature units.
#[derive(Debug, Clone, Copy, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// Get the current weather for a city.
#[prompty::tool]
pub async fn get_weather(
    /// The city, e.g. "Paris"
    city: String,
    /// The unit of the temperature (celsius when not given)
    unit: Option<Unit>,
) -> Result<String, String> {
    if city.trim().is_empty() {
        return Err("no city given".to_owned());
    }
    let (t, u) = match unit.unwrap_or(Unit::Celsius) {
        Unit::Celsius => (21, "°C"),
        Unit::Fahrenheit => (70, "°F"),
    };
    Ok(format!("{t}{u} and sunny in {city}"))
}

/// Convert an amount between two currencies at a fixed example rate.
#[prompty::tool(name = "convert_currency")]
pub fn convert(
    /// The amount to convert
    amount: f64,
    /// ISO code of the source currency
    from: String,
    /// ISO code of the target currency
    to: String,
) -> f64 {
    let rate = if from == to { 1.0 } else { 0.9 };
    (amount * rate * 100.0).round() / 100.0
}

/// A renderer that renders the template with jinja2 and shouts the result.
#[derive(Default)]
#[prompty::renderer("shout")]
pub struct ShoutRenderer;

impl prompty::Renderer for ShoutRenderer {
    fn render(
        &self,
        agent: &prompty::Agent,
        inputs: &serde_json::Map<String, serde_json::Value>,
        ctx: &prompty::RenderContext,
    ) -> prompty::Result<String> {
        let text = prompty::builtins::Jinja2Renderer.render(agent, inputs, ctx)?;
        Ok(text.to_uppercase())
    }
}
