use std::fmt::Display;

struct Weather;

impl Weather {
    #[prompty::tool]
    fn of(&self, city: String) -> String {
        city
    }
}

#[prompty::tool]
fn generic<T: Display>(value: String, (a, b): (i32, i32), _: u8, shown: impl Display) -> String {
    format!("{value}{a}{b}{shown}")
}

fn main() {}
