//! Conformance harness of prompty: runs the Prompty specification's conformance vectors against
//! this runtime.
//!
//! ```text
//! cargo test -p prompty-tests --test conformance
//! ```
//!
//! Environment variables:
//! - `PROMPTY_VECTORS=/abs/vectors.json`: the vectors file (default: `tests/vectors/vectors.json`);
//! - `PROMPTY_FIXTURES=/abs/dir`: the fixtures that load vectors name (default: `tests/fixtures`).
//!
//! The file is `{"source", "version", "vectors": [{contract, operation, ..., "vector": {name, stage,
//! input, expected, ...}}]}`. Stage semantics are those of `spec/digest.md` §2; results are compared
//! by subset projection (only the keys present in `expected` count; an expected `null` means absent
//! or null). Before a case runs, its `input` goes through the single-key substitutions
//! `{"$env": "VAR"}` (the variable's value, or `null`), `{"$json": "<text>"}` (the parsed text) and
//! `{"$file": "<path>"}` (the text of a file, relative to the fixtures folder).
//!
//! Output: one `FAIL <stage> <name>: <expected> != <got>` line per failing case (compact JSON), then
//! `<stage>: <passed>/<total>` for every stage in the file (later milestones print `pending`,
//! informative stages say why they are not run), and last `conformance: N passed, M failed`, which
//! counts the measured stages only (load, parse, render, wire, process, processStream, discovery,
//! enrichment, agent). The exit code is 1 when a measured case failed. A panic inside a case fails that
//! case only.

mod agent;
mod compare;
mod discovery;
mod load;
mod parse;
mod process;
mod regex;
mod render;
mod stream;
mod wire;

use compare::{compact, Check};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::process::ExitCode;

/// What the cases share: where the fixtures are.
pub struct Ctx {
    /// The folder that `input.fixture` names are relative to.
    pub fixtures: PathBuf,
}

/// Stages in the order they are reported; stages not listed follow in the order first seen.
const STAGE_ORDER: &[&str] = &[
    "load",
    "parse",
    "render",
    "render_segments",
    "wire",
    "process",
    "processStream",
    "discovery",
    "enrichment",
    "agent",
    "turn",
    "replay",
];

/// How the harness treats a stage.
enum Treatment {
    /// Run, and counted in the verdict.
    Measured(fn(&Ctx, &Value) -> Check),
    /// Not run, and never failing: the reason is printed.
    Informative(&'static str),
    /// Not run yet: a later milestone (or a stage this harness does not know).
    Pending,
}

fn treatment(stage: &str) -> Treatment {
    match stage {
        "load" => Treatment::Measured(load::run),
        "parse" => Treatment::Measured(|_, v| parse::run(v)),
        "render" => Treatment::Measured(|_, v| render::run(v)),
        "wire" => Treatment::Measured(|_, v| wire::run(v)),
        "process" => Treatment::Measured(|_, v| process::run(v)),
        "processStream" => Treatment::Measured(|_, v| stream::run(v)),
        "discovery" => Treatment::Measured(|_, v| discovery::map(v)),
        "enrichment" => Treatment::Measured(|_, v| discovery::enrichment(v)),
        "agent" => Treatment::Measured(|_, v| agent::run(v)),
        "render_segments" => Treatment::Informative("no segments API yet"),
        "turn" => Treatment::Informative(
            "the contract of turn-engine.md's state machine, a different engine than prompty::turn",
        ),
        "replay" => {
            Treatment::Informative("the journal format of turn-engine.md's reference runner, a different engine")
        }
        _ => Treatment::Pending,
    }
}

/// Per-stage counts.
#[derive(Default)]
struct Tally {
    passed: usize,
    total: usize,
}

fn main() -> ExitCode {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let vectors_path = path_from_env("PROMPTY_VECTORS", manifest.join("vectors/vectors.json"));
    let ctx = Ctx { fixtures: path_from_env("PROMPTY_FIXTURES", manifest.join("fixtures")) };

    let doc = match read_vectors(&vectors_path) {
        Ok(doc) => doc,
        Err(e) => {
            eprintln!("conformance: {e}");
            return ExitCode::from(2);
        }
    };
    let vectors = doc["vectors"].as_array().map(Vec::as_slice).unwrap_or_default();

    // A panicking case is reported on its FAIL line; keep stderr to one line per panic.
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {l}")).unwrap_or_default();
        eprintln!("conformance: a case panicked{at}: {}", panic_message(info.payload()));
    }));

    let mut stages: Vec<(String, Tally)> = Vec::new();
    for entry in vectors {
        let vector = &entry["vector"];
        let stage = vector["stage"].as_str().unwrap_or("<no stage>");
        let tally = tally_for(&mut stages, stage);
        tally.total += 1;
        if let Treatment::Measured(adapter) = treatment(stage) {
            if run_case(&ctx, adapter, stage, vector) {
                tally.passed += 1;
            }
        }
    }

    stages.sort_by_key(|(stage, _)| STAGE_ORDER.iter().position(|s| s == stage).unwrap_or(STAGE_ORDER.len()));
    let (mut passed, mut failed) = (0, 0);
    for (stage, tally) in &stages {
        match treatment(stage) {
            Treatment::Measured(_) => {
                println!("{stage}: {}/{}", tally.passed, tally.total);
                passed += tally.passed;
                failed += tally.total - tally.passed;
            }
            Treatment::Informative(why) => {
                println!("{stage}: 0/{} (informative: {why})", tally.total)
            }
            Treatment::Pending => println!("{stage}: pending"),
        }
    }
    println!("conformance: {passed} passed, {failed} failed");
    if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// `$VAR` as a path, or `default`.
fn path_from_env(var: &str, default: PathBuf) -> PathBuf {
    std::env::var_os(var).filter(|v| !v.is_empty()).map(PathBuf::from).unwrap_or(default)
}

fn read_vectors(path: &PathBuf) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    if !doc["vectors"].is_array() {
        return Err(format!("{} has no \"vectors\" list", path.display()));
    }
    Ok(doc)
}

/// The tally of `stage`, added (in first-seen order) if new.
fn tally_for<'a>(stages: &'a mut Vec<(String, Tally)>, stage: &str) -> &'a mut Tally {
    let index = match stages.iter().position(|(s, _)| s == stage) {
        Some(i) => i,
        None => {
            stages.push((stage.to_owned(), Tally::default()));
            stages.len() - 1
        }
    };
    &mut stages[index].1
}

/// Runs one case, printing a FAIL line unless it passes. A panic fails the case, with the panic
/// message as what was got.
fn run_case(ctx: &Ctx, adapter: fn(&Ctx, &Value) -> Check, stage: &str, vector: &Value) -> bool {
    let name = vector["name"].as_str().unwrap_or("<unnamed>");
    let attempt = catch_unwind(AssertUnwindSafe(|| {
        let mut vector = vector.clone();
        if let Some(input) = vector.get_mut("input") {
            substitute(ctx, input);
        }
        adapter(ctx, &vector)
    }));
    let check = match attempt {
        Ok(check) => check,
        Err(payload) => Check {
            expected: vector["expected"].clone(),
            got: Value::String(format!("panic: {}", panic_message(payload.as_ref()))),
        },
    };
    let passed = check.passed();
    if !passed {
        println!("FAIL {stage} {name}: {} != {}", compact(&check.expected), compact(&check.got));
    }
    passed
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// Replaces, recursively, every single-key object `{"$env": "VAR"}`, `{"$json": "<text>"}` or
/// `{"$file": "<path>"}` by the value it names.
fn substitute(ctx: &Ctx, value: &mut Value) {
    let replacement = match value.as_object() {
        Some(map) if map.len() == 1 => {
            let (key, arg) = map.iter().next().expect("one entry");
            match (key.as_str(), arg.as_str()) {
                ("$env", Some(var)) => Some(std::env::var(var).map_or(Value::Null, Value::String)),
                ("$json", Some(text)) => {
                    Some(serde_json::from_str(text).unwrap_or_else(|e| panic!("$json {text:?}: {e}")))
                }
                ("$file", Some(path)) => Some(Value::String(
                    std::fs::read_to_string(ctx.fixtures.join(path)).unwrap_or_else(|e| panic!("$file {path:?}: {e}")),
                )),
                _ => None,
            }
        }
        _ => None,
    };
    match replacement {
        Some(new) => *value = new,
        None => match value {
            Value::Object(map) => map.values_mut().for_each(|v| substitute(ctx, v)),
            Value::Array(items) => items.iter_mut().for_each(|v| substitute(ctx, v)),
            _ => {}
        },
    }
}
