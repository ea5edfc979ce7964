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
//! Every stage of the file is run by an adapter (`tests/conformance/<stage>.rs`). The run fails
//! when a case fails or when a stage has no adapter (a new stage can never be skipped silently).
//!
//! Where an adapter changes an observation or an expectation before comparing (the agent stage:
//! see `agent.rs`), it says so: one `ADJUSTED <stage> <name> [<rule>]: <what>` line per
//! adjustment, then one `adjustment <stage> [<rule>], <n> cases: <why>` line per rule; the case
//! counts as adjusted, not as passed as is.
//!
//! Output: one `FAIL <stage> <name>: <expected> != <got>` line per failing case (compact JSON),
//! the `ADJUSTED` lines, a table per stage (vectors, run, passed, of which adjusted, failed), the
//! harness's own errors, and last `conformance: ...` with the totals. The exit
//! code is 1 when a case or a harness check failed. A panic inside a case fails that case only.

mod agent;
mod compare;
mod discovery;
mod load;
mod parse;
mod process;
mod regex;
mod render;
mod replay;
mod stream;
mod turn;
mod wire;

use compare::{compact, Check, Rule};
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

/// How a stage's vectors are run.
type Adapter = fn(&Ctx, &Value) -> Check;

/// The adapter of each stage this harness runs.
fn adapter(stage: &str) -> Option<Adapter> {
    Some(match stage {
        "load" => load::run,
        "parse" => |_, v| parse::run(v),
        "render" => |_, v| render::run(v),
        "render_segments" => |_, v| render::run_segments(v),
        "wire" => |_, v| wire::run(v),
        "process" => |_, v| process::run(v),
        "processStream" => |_, v| stream::run(v),
        "discovery" => |_, v| discovery::map(v),
        "enrichment" => |_, v| discovery::enrichment(v),
        "agent" => |_, v| agent::run(v),
        "turn" => |_, v| turn::run(v),
        "replay" => |_, v| replay::run(v),
        _ => return None,
    })
}

/// Per-stage counts.
#[derive(Default, Clone)]
struct Tally {
    /// Vectors of the stage.
    total: usize,
    /// Vectors run by an adapter.
    run: usize,
    /// Run and passed (adjusted or not).
    passed: usize,
    /// Passed only after an adjustment (counted in `passed` too).
    adjusted: usize,
    /// The names of the vectors that were not run.
    unrun: Vec<String>,
}

fn main() -> ExitCode {
    if let Err(e) = self_check() {
        eprintln!("conformance: the harness's own check failed: {e}");
        return ExitCode::from(2);
    }
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
    // Per stage and rule of adjustment: the cases it was applied to.
    let mut rules: Vec<(String, &'static Rule, usize)> = Vec::new();
    for entry in vectors {
        let vector = &entry["vector"];
        let stage = vector["stage"].as_str().unwrap_or("<no stage>");
        let name = vector["name"].as_str().unwrap_or("<unnamed>");
        let tally = tally_for(&mut stages, stage);
        tally.total += 1;
        let Some(adapter) = adapter(stage) else {
            tally.unrun.push(name.to_owned());
            continue;
        };
        let outcome = run_case(&ctx, adapter, stage, vector);
        tally.run += 1;
        if outcome.passed {
            tally.passed += 1;
            tally.adjusted += usize::from(!outcome.rules.is_empty());
        }
        for rule in outcome.rules {
            match rules.iter_mut().find(|(s, r, _)| s == stage && r.name == rule.name) {
                Some((_, _, cases)) => *cases += 1,
                None => rules.push((stage.to_owned(), rule, 1)),
            }
        }
    }
    stages.sort_by_key(|(stage, _)| STAGE_ORDER.iter().position(|s| s == stage).unwrap_or(STAGE_ORDER.len()));

    let problems = problems(&stages, |s| adapter(s).is_some());
    for (stage, rule, cases) in &rules {
        println!("adjustment {stage} [{}], {cases} cases: {}", rule.name, rule.why);
    }
    let failed = print_table(&stages);
    for problem in &problems {
        println!("HARNESS {problem}");
    }
    let passed: usize = stages.iter().map(|(_, t)| t.passed).sum();
    let adjusted: usize = stages.iter().map(|(_, t)| t.adjusted).sum();
    let unrun: usize = stages.iter().map(|(_, t)| t.unrun.len()).sum();
    println!(
        "conformance: {} vectors; {passed} passed ({} as is, {adjusted} after an adjustment), {failed} failed, \
         {unrun} without an adapter; {} harness errors",
        vectors.len(),
        passed - adjusted,
        problems.len(),
    );
    if failed > 0 || !problems.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Prints the table of stages; returns how many cases failed.
fn print_table(stages: &[(String, Tally)]) -> usize {
    println!("{:<16} {:>7} {:>5} {:>6} {:>8} {:>6}", "stage", "vectors", "run", "passed", "adjusted", "failed");
    let mut failed = 0;
    for (stage, t) in stages {
        let stage_failed = t.run - t.passed;
        failed += stage_failed;
        let note = if t.unrun.is_empty() { "" } else { "  (no adapter)" };
        println!("{stage:<16} {:>7} {:>5} {:>6} {:>8} {stage_failed:>6}{note}", t.total, t.run, t.passed, t.adjusted);
    }
    failed
}

/// What is wrong with how the harness covers the file: a stage that no adapter runs.
fn problems(stages: &[(String, Tally)], has_adapter: impl Fn(&str) -> bool) -> Vec<String> {
    stages
        .iter()
        .filter(|(stage, _)| !has_adapter(stage))
        .map(|(stage, t)| {
            format!(
                "stage `{stage}` ({} vectors: {}) has no adapter: write its adapter in tests/conformance/ and \
                 name it in `adapter`",
                t.total,
                t.unrun.join(", ")
            )
        })
        .collect()
}

/// Checks that [`problems`] catches what it must, on made-up stages.
fn self_check() -> Result<(), String> {
    let tally = |total, run, passed, unrun: &[&str]| Tally {
        total,
        run,
        passed,
        adjusted: 0,
        unrun: unrun.iter().map(|s| s.to_string()).collect(),
    };
    let stages = vec![("known".to_owned(), tally(2, 2, 1, &[])), ("new_stage".to_owned(), tally(1, 0, 0, &["x"]))];
    let found = problems(&stages, |s| s == "known");
    if found.len() != 1 || !found[0].contains("`new_stage` (1 vectors: x) has no adapter") {
        return Err(format!("expected one problem naming `new_stage`; found {found:?}"));
    }
    Ok(())
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

/// What one case gave.
struct Outcome {
    passed: bool,
    /// The rules of the adjustments made to compare it, each once.
    rules: Vec<&'static Rule>,
}

/// Runs one case, printing a FAIL line unless it passes and an ADJUSTED line per
/// adjustment. A panic fails the case, with the panic message as what was got.
fn run_case(ctx: &Ctx, adapter: Adapter, stage: &str, vector: &Value) -> Outcome {
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
        Err(payload) => {
            Check::new(vector["expected"].clone(), Value::String(format!("panic: {}", panic_message(payload.as_ref()))))
        }
    };
    let passed = check.passed();
    if !passed {
        println!("FAIL {stage} {name}: {} != {}", compact(&check.expected), compact(&check.got));
    }
    let mut rules: Vec<&'static Rule> = Vec::new();
    for a in &check.adjustments {
        println!("ADJUSTED {stage} {name} [{}]: {}", a.rule.name, a.what);
        if !rules.iter().any(|r| r.name == a.rule.name) {
            rules.push(a.rule);
        }
    }
    Outcome { passed, rules }
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
