/// Not `Serialize`: the tool's result cannot be encoded as JSON.
pub struct Forecast {
    pub summary: String,
}

/// Forecasts the weather.
#[prompty::tool]
fn forecast(city: String) -> Forecast {
    Forecast { summary: city }
}

fn main() {}
