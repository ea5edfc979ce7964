#[prompty::tool]
struct GetWeather {
    city: String,
}

fn main() {}
