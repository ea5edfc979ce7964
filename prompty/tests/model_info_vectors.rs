//! The `ModelInfo` case of the Prompty specification's `Record<unknown>` nullability vectors
//! (`prompty-core/tests/data/record_unknown_nullability_vectors.json`, a verbatim copy of
//! `spec/vectors/model/record_unknown_nullability_vectors.json`): `additionalProperties` keeps its
//! `null` values, at every depth, through load, save and reload.

use prompty::providers::discovery::{enrich, ModelInfo};
use serde_json::Value;
use std::path::Path;

fn vector(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../prompty-core/tests/data/record_unknown_nullability_vectors.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("read the vectors")).expect("JSON");
    doc["vectors"].as_array().expect("vectors").iter().find(|v| v["name"] == name).cloned().expect("the vector")
}

#[test]
fn model_info_additional_properties_keep_null_values() {
    let v = vector("model_info_additional_properties_preserve_null_values");
    assert_eq!((v["model"].as_str(), v["fieldPath"].as_str()), (Some("ModelInfo"), Some("additionalProperties")));
    let loaded: ModelInfo = serde_json::from_value(v["input"].clone()).unwrap();
    let saved = serde_json::to_value(&loaded).unwrap();
    let reloaded: ModelInfo = serde_json::from_value(saved.clone()).unwrap();
    assert_eq!(reloaded, loaded);
    assert_eq!(saved["additionalProperties"], v["expected"]);
    // Enrichment (no table entry for this id) leaves the record alone.
    let enriched = serde_json::to_value(enrich(reloaded, "openai")).unwrap();
    assert_eq!(enriched["additionalProperties"], v["expected"]);
}
