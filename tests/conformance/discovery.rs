//! The `discovery` and `enrichment` stages (digest §2.11, §2.12): map a raw model-listing entry to
//! `ModelInfo`, or enrich a `ModelInfo` from the capabilities table, and compare the JSON exactly.

use crate::compare::Check;
use prompty::providers::discovery::{enrich, map_model, ModelInfo};
use serde_json::{json, Value};

/// Runs one discovery vector: `map_model(input, provider)`.
pub fn map(vector: &Value) -> Check {
    let info = map_model(&vector["input"], provider(vector));
    Check::new(vector["expected"].clone(), to_json(&info))
}

/// Runs one enrichment vector: `enrich(input, provider)`.
pub fn enrichment(vector: &Value) -> Check {
    let got = match serde_json::from_value::<ModelInfo>(vector["input"].clone()) {
        Ok(info) => to_json(&enrich(info, provider(vector))),
        Err(e) => json!({ "error": format!("input is not a ModelInfo: {e}") }),
    };
    Check::new(vector["expected"].clone(), got)
}

fn provider(vector: &Value) -> &str {
    vector["provider"].as_str().or_else(|| vector["input"]["provider"].as_str()).unwrap_or("openai")
}

fn to_json(info: &ModelInfo) -> Value {
    serde_json::to_value(info).unwrap_or_else(|e| json!({ "error": e.to_string() }))
}
