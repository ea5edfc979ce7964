use prompty::{Agent, Result};
use serde_json::Value;

#[prompty::processor("generic")]
#[derive(Default)]
struct Generic<T>(T);

#[prompty::processor("fn")]
fn process(response: Value) -> Value {
    response
}

#[derive(Default)]
struct Mismatch;

#[prompty::processor("mismatch")]
impl prompty::Parser for Mismatch {
    fn parse(&self, _agent: &Agent, _rendered: prompty::RenderedText<'_>) -> Result<Vec<prompty::Message>> {
        Ok(Vec::new())
    }
}

fn main() {
    let _ = process(Value::Null);
    let _ = Generic(1u8);
}
