use prompty::{Agent, Result};
use serde_json::Value;

/// Registered as a renderer, but it implements `Processor`.
#[prompty::renderer("upper")]
#[derive(Default)]
struct Upper;

impl prompty::Processor for Upper {
    fn process(&self, _agent: &Agent, response: Value) -> Result<prompty::Processed> {
        Ok(response.into())
    }
}

/// Implements the trait but has no `Default`.
#[prompty::processor("field")]
struct Field(String);

impl prompty::Processor for Field {
    fn process(&self, _agent: &Agent, response: Value) -> Result<prompty::Processed> {
        Ok(response[&self.0].clone().into())
    }
}

fn main() {}
