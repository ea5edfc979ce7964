use prompty::{Agent, Result};
use serde_json::Value;

/// Registered as a renderer, but it implements `Processor`.
#[prompty::renderer("upper")]
#[derive(Default)]
struct Upper;

impl prompty::Processor for Upper {
    fn process(&self, _agent: &Agent, response: Value) -> Result<Value> {
        Ok(response)
    }
}

/// Implements the trait but has no `Default`.
#[prompty::processor("field")]
struct Field(String);

impl prompty::Processor for Field {
    fn process(&self, _agent: &Agent, response: Value) -> Result<Value> {
        Ok(response[&self.0].clone())
    }
}

fn main() {}
