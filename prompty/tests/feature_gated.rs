//! Says which test targets of this crate the current build leaves out.
//!
//! A `[[test]]` of `prompty/Cargo.toml` with `required-features` is built only when those features
//! are on, and cargo skips it without a word otherwise: `cargo test -p prompty` (default features)
//! runs none of the HTTP, MCP, OpenAPI and OpenTelemetry tests. This target, built with every
//! feature set, prints the ones left out and the features each needs, so the output of `cargo test
//! -p prompty` says what it did not run. `cargo test -p prompty --all-features` runs them all, and
//! so does `cargo test --workspace` (prompty-cli and prompty-examples turn the features on;
//! `cargo test -p prompty-tests --test targets` checks that).
//!
//! It fails only when it cannot tell: a `required-features` entry it cannot read, or a feature of
//! `[features]` missing from [`FEATURES`].

use std::process::ExitCode;

/// Every feature of the crate, and whether this build has it.
const FEATURES: &[(&str, bool)] = &[
    ("default", cfg!(feature = "default")),
    ("macros", cfg!(feature = "macros")),
    ("openai", cfg!(feature = "openai")),
    ("anthropic", cfg!(feature = "anthropic")),
    ("mcp", cfg!(feature = "mcp")),
    ("mcp-http", cfg!(feature = "mcp-http")),
    ("openapi", cfg!(feature = "openapi")),
    ("otel", cfg!(feature = "otel")),
    ("local", cfg!(feature = "local")),
    ("sqlite", cfg!(feature = "sqlite")),
    ("postgres", cfg!(feature = "postgres")),
    ("eval", cfg!(feature = "eval")),
    ("tls-ring", cfg!(feature = "tls-ring")),
    ("tls-aws-lc", cfg!(feature = "tls-aws-lc")),
    ("http", cfg!(feature = "http")),
];

/// A `[[test]]` section: its name and required features.
struct Target {
    name: String,
    required: Vec<String>,
}

fn main() -> ExitCode {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let manifest = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("feature_gated: cannot read {path}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (targets, errors) = read(&manifest);
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("feature_gated: {path}: {e}");
        }
        return ExitCode::FAILURE;
    }
    let on: Vec<&str> = FEATURES.iter().filter(|(_, on)| *on).map(|(f, _)| *f).collect();
    let left_out: Vec<(&Target, Vec<&str>)> = targets
        .iter()
        .map(|t| (t, t.required.iter().map(String::as_str).filter(|f| !on.contains(f)).collect::<Vec<_>>()))
        .filter(|(_, missing)| !missing.is_empty())
        .collect();
    println!("features of this build: {}", on.join(", "));
    if left_out.is_empty() {
        println!("all {} feature-gated test targets of prompty are built and run by this command", targets.len());
        return ExitCode::SUCCESS;
    }
    println!(
        "{} of the {} feature-gated test targets of prompty are NOT built by this command (cargo skips them without \
         a word):",
        left_out.len(),
        targets.len()
    );
    for (target, missing) in &left_out {
        println!("  {:<20} needs {}", target.name, missing.join(", "));
    }
    println!("run them with `cargo test -p prompty --all-features` (or `cargo test --workspace`)");
    ExitCode::SUCCESS
}

/// The `[[test]]` sections that have `required-features`, and what could not be read (a feature
/// of `[features]` unknown to [`FEATURES`], a `required-features` value that is not a one-line
/// list of strings, a required feature that does not exist).
fn read(manifest: &str) -> (Vec<Target>, Vec<String>) {
    let mut targets = Vec::new();
    let mut errors = Vec::new();
    let known = |f: &str| FEATURES.iter().any(|(k, _)| *k == f);
    let mut section = "";
    let mut name: Option<String> = None;
    for (n, line) in manifest.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line;
            name = None;
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let (key, value) = (key.trim(), value.trim());
        if section == "[features]" && !key.starts_with('#') && !known(key) {
            errors.push(format!(
                "line {}: feature `{key}` is not in FEATURES of prompty/tests/feature_gated.rs: add it",
                n + 1
            ));
        }
        if section != "[[test]]" {
            continue;
        }
        if key == "name" {
            name = Some(value.trim_matches('"').to_owned());
        } else if key == "required-features" {
            let list = value.strip_prefix('[').and_then(|v| v.strip_suffix(']'));
            let Some(list) = list else {
                errors.push(format!("line {}: required-features is not a one-line list: {value}", n + 1));
                continue;
            };
            let required: Vec<String> =
                list.split(',').map(|f| f.trim().trim_matches('"').to_owned()).filter(|f| !f.is_empty()).collect();
            for f in required.iter().filter(|f| !known(f)) {
                errors.push(format!("line {}: required feature `{f}` is not a feature of prompty", n + 1));
            }
            match name.take() {
                Some(name) => targets.push(Target { name, required }),
                None => errors.push(format!("line {}: required-features before the target's name", n + 1)),
            }
        }
    }
    if targets.is_empty() {
        errors.push("no [[test]] with required-features found: is the manifest still read right?".to_owned());
    }
    (targets, errors)
}
