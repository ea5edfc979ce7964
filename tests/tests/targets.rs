//! No target of the workspace is skipped silently by `cargo test --workspace`: every test, bench,
//! example or binary that declares `required-features` needs only features that the workspace
//! turns on (some member enables them on the package), so cargo builds it.
//!
//! Cargo skips a target whose `required-features` are off without a word: `cargo test -p prompty`
//! alone leaves out prompty's HTTP, MCP, OpenAPI and OpenTelemetry tests (its `feature_gated`
//! target lists them). Under `cargo test --workspace` they run only because prompty-cli and
//! prompty-examples depend on prompty with those features; this test fails, naming the target and
//! the feature, the day that stops being true.
//!
//! Run it alone with `cargo test -p prompty-tests --test targets`. It asks cargo itself: `cargo
//! metadata` gives each package's targets and the features the workspace's resolution turns on.

use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

/// The feature-gated targets the workspace had when this test was written (prompty: 11 tests, 2
/// benches): fewer means the test no longer reads what it should.
const AT_LEAST: usize = 13;

#[test]
fn every_feature_gated_target_is_built_by_cargo_test_workspace() {
    let meta = metadata();
    let members: BTreeSet<&str> =
        meta["workspace_members"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut gated = Vec::new();
    let mut skipped = Vec::new();
    for package in meta["packages"].as_array().expect("cargo metadata lists packages") {
        let id = package["id"].as_str().unwrap_or_default();
        if !members.contains(id) {
            continue;
        }
        let name = package["name"].as_str().unwrap_or_default();
        for target in package["targets"].as_array().into_iter().flatten() {
            let required: Vec<&str> =
                target["required-features"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if required.is_empty() {
                continue;
            }
            let kind = target["kind"][0].as_str().unwrap_or("target");
            let target_name = target["name"].as_str().unwrap_or_default();
            gated.push(format!("{name} {kind} {target_name}"));
            for feature in required {
                // `dep/feature` names a feature of a dependency; `feature` one of the package.
                let (owner, wanted) = match feature.split_once('/') {
                    Some((dep, f)) => (dependency_id(&meta, id, dep.trim_end_matches('?')), f),
                    None => (Some(id.to_owned()), feature),
                };
                let on = owner.as_deref().is_some_and(|owner| features(&meta, owner).contains(wanted));
                if !on {
                    skipped.push(format!(
                        "{name} {kind} `{target_name}` requires feature `{feature}`, which no workspace member turns \
                         on: cargo test --workspace skips it without a word. Enable it where the target's features \
                         are meant to come from (a member's dependency on {name}, e.g. prompty-examples), or drop \
                         it from the target's required-features"
                    ));
                }
            }
        }
    }
    assert!(
        gated.len() >= AT_LEAST,
        "only {} feature-gated targets found ({gated:?}), {AT_LEAST} expected: is cargo metadata's output still \
         read right?",
        gated.len()
    );
    assert!(skipped.is_empty(), "targets skipped by cargo test --workspace:\n{}", skipped.join("\n"));
}

/// `cargo metadata` of the workspace, for the host platform only (no download of other
/// platforms' dependencies).
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path", manifest, "--filter-platform", &host()])
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{cargo} metadata`: {e}"));
    assert!(
        output.status.success(),
        "`{cargo} metadata` failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// The host's target triple, from `rustc -vV`.
fn host() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = Command::new(&rustc).arg("-vV").output().unwrap_or_else(|e| panic!("cannot run `{rustc} -vV`: {e}"));
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("`{rustc} -vV` names no host: {text}"))
        .to_owned()
}

/// The features the workspace's resolution turns on for package `id`.
fn features<'a>(meta: &'a Value, id: &str) -> BTreeSet<&'a str> {
    node(meta, id)
        .map(|n| n["features"].as_array().into_iter().flatten().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The package id of the dependency `name` of package `id`.
fn dependency_id(meta: &Value, id: &str, name: &str) -> Option<String> {
    let wanted = name.replace('-', "_");
    node(meta, id)?["deps"]
        .as_array()?
        .iter()
        .find(|d| d["name"].as_str() == Some(wanted.as_str()))
        .and_then(|d| d["pkg"].as_str())
        .map(str::to_owned)
}

fn node<'a>(meta: &'a Value, id: &str) -> Option<&'a Value> {
    meta["resolve"]["nodes"].as_array()?.iter().find(|n| n["id"].as_str() == Some(id))
}
