//! Typed `prepare` against `load` + `prepare` of the same file, on the fixtures `basic`,
//! `threaded`, `tools_function` and the large synthetic prompt, with the benchmark inputs of
//! `tests/bench`.
//!
//! Run with `cargo bench -p prompty-examples --bench typed` (`--quick` for short batches; pass
//! substrings to run only matching cases). Prints the median of several timed batches, in µs per
//! operation:
//!
//! - `typed prepare X`: the typed module's `prepare(&Inputs)`: the agent was compiled into the
//!   binary and its template is cached in it, so a call serializes the inputs, renders and parses;
//! - `load+prepare X`: `prompty::load_str` of the same text again (its parsed frontmatter is
//!   cached) then `prepare` with JSON inputs: the template is compiled again for each new agent;
//! - `load+prepare X (uncached)`: the same with a different text each time, so every load parses
//!   its YAML (what a program that loads its prompt per request pays);
//! - `prepare X (loaded once)`: `prepare` on an agent loaded once, with JSON inputs.

#[path = "../../prompty/benches/support/measure.rs"]
mod measure;
use measure::{measure, read};
use serde::de::DeserializeOwned;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

prompty::include_prompty!("../tests/fixtures/basic.prompty");
prompty::include_prompty!("../tests/fixtures/threaded.prompty");
prompty::include_prompty!("../tests/fixtures/tools_function.prompty");
prompty::include_prompty!("../tests/bench/large.prompty");

/// The handler `tools_function.prompty` declares.
#[prompty::tool]
fn get_weather(location: String, unit: String) -> String {
    format!("{location} {unit}")
}

fn data(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests").join(path)
}

struct Case {
    name: &'static str,
    file: PathBuf,
    inputs: serde_json::Value,
    typed: Box<dyn FnMut()>,
}

fn typed_case<I: DeserializeOwned + 'static>(
    name: &'static str,
    file: &str,
    inputs: serde_json::Value,
    prepare: fn(&I) -> prompty::Result<Vec<prompty::Message>>,
) -> Case {
    let typed_inputs: I = serde_json::from_value(inputs.clone()).expect("the bench inputs fit the typed inputs");
    Case {
        name,
        file: data(file),
        inputs,
        typed: Box::new(move || {
            black_box(prepare(black_box(&typed_inputs)).expect("prepares"));
        }),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let quick = std::env::args().any(|a| a == "--quick");
    let batch = if quick { Duration::from_millis(5) } else { Duration::from_millis(200) };
    // The fixtures read their key from the environment when loaded at run time.
    std::env::set_var("OPENAI_API_KEY", "sk-bench");
    let selected = |label: &str| args.is_empty() || args.iter().any(|a| label.contains(a.as_str()));

    let inputs: serde_json::Value = serde_json::from_str(&read(&data("bench/inputs.json"))).expect("JSON");
    let large_inputs: serde_json::Value = serde_json::from_str(&read(&data("bench/large_inputs.json"))).expect("JSON");
    let mut cases = vec![
        typed_case("basic", "fixtures/basic.prompty", inputs["basic"].clone(), basic::prepare),
        typed_case("threaded", "fixtures/threaded.prompty", inputs["threaded"].clone(), threaded::prepare),
        typed_case(
            "tools_function",
            "fixtures/tools_function.prompty",
            inputs["tools_function"].clone(),
            tools_function::prepare,
        ),
        typed_case("large", "bench/large.prompty", large_inputs, large::prepare),
    ];

    println!("{:<40} {:>10} {:>10}", "case", "µs/op", "x typed");
    for case in &mut cases {
        let text = read(&case.file);
        let base = case.file.parent().expect("a folder").to_path_buf();
        let label = format!("typed prepare {}", case.name);
        let typed = measure(batch, &mut case.typed);
        if selected(&label) {
            println!("{label:<40} {typed:>10.2} {:>10}", "1.0");
        }
        let inputs = &case.inputs;
        let label = format!("load+prepare {}", case.name);
        if selected(&label) {
            let us = measure(batch, || {
                let agent = prompty::load_str(black_box(&text), &base, "bench.prompty").expect("loads");
                black_box(prompty::prepare(&agent, black_box(inputs)).expect("prepares"));
            });
            println!("{label:<40} {us:>10.2} {:>10.1}", us / typed);
        }
        let variants: Vec<String> =
            (0..1024).map(|i| text.replacen("\n---\n", &format!("\n# variant {i}\n---\n"), 1)).collect();
        let label = format!("load+prepare {} (uncached)", case.name);
        if selected(&label) {
            let mut i = 0;
            let us = measure(batch, || {
                i = (i + 1) % variants.len();
                let agent = prompty::load_str(black_box(&variants[i]), &base, "bench.prompty").expect("loads");
                black_box(prompty::prepare(&agent, black_box(inputs)).expect("prepares"));
            });
            println!("{label:<40} {us:>10.2} {:>10.1}", us / typed);
        }
        let label = format!("prepare {} (loaded once)", case.name);
        if selected(&label) {
            let agent = prompty::load_str(&text, &base, "bench.prompty").expect("loads");
            let us = measure(batch, || {
                black_box(prompty::prepare(black_box(&agent), black_box(inputs)).expect("prepares"));
            });
            println!("{label:<40} {us:>10.2} {:>10.1}", us / typed);
        }
    }
}
