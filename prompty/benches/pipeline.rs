//! Benchmark of `load_str` and `prepare` on the shared fixtures and the large synthetic prompt.
//!
//! Run with `cargo bench -p prompty --bench pipeline`. Prints one line per case: the median of
//! several timed batches, in µs per operation. `load X` loads the same text again and again (its
//! parsed frontmatter is cached); `load X (uncached)` loads a different text each time. Pass
//! substrings to run only matching cases, and `--quick` for short batches.

#[path = "support/measure.rs"]
mod measure;
use measure::{measure, read};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let quick = std::env::args().any(|a| a == "--quick");
    let batch = if quick { Duration::from_millis(5) } else { Duration::from_millis(200) };
    // The fixtures read their key from the environment; give it a value for the benchmark.
    std::env::set_var("OPENAI_API_KEY", "sk-bench");

    let dir = data_dir();
    let inputs: serde_json::Value =
        serde_json::from_str(&read(&dir.join("bench/inputs.json"))).expect("bench/inputs.json is JSON");
    let large_inputs: serde_json::Value =
        serde_json::from_str(&read(&dir.join("bench/large_inputs.json"))).expect("bench/large_inputs.json is JSON");
    let cases = [
        ("basic", dir.join("fixtures/basic.prompty"), inputs["basic"].clone()),
        ("threaded", dir.join("fixtures/threaded.prompty"), inputs["threaded"].clone()),
        ("tools_function", dir.join("fixtures/tools_function.prompty"), inputs["tools_function"].clone()),
        ("large", dir.join("bench/large.prompty"), large_inputs),
    ];

    println!("{:<32} {:>12}", "case", "µs/op");
    for (name, path, inputs) in &cases {
        let text = read(path);
        let base = path.parent().expect("fixture has a folder");
        let label = format!("load {name}");
        if args.is_empty() || args.iter().any(|a| label.contains(a.as_str())) {
            let us = measure(batch, || {
                black_box(prompty::load_str(black_box(&text), base, "bench.prompty").expect("loads"));
            });
            println!("{label:<32} {us:>12.2}");
        }
        // Distinct texts (a comment added to the frontmatter), more than the parse cache holds, so
        // every load parses its YAML.
        let variants: Vec<String> =
            (0..1024).map(|i| text.replacen("\n---\n", &format!("\n# variant {i}\n---\n"), 1)).collect();
        let label = format!("load {name} (uncached)");
        if args.is_empty() || args.iter().any(|a| label.contains(a.as_str())) {
            let mut i = 0;
            let us = measure(batch, || {
                i = (i + 1) % variants.len();
                black_box(prompty::load_str(black_box(&variants[i]), base, "bench.prompty").expect("loads"));
            });
            println!("{label:<32} {us:>12.2}");
        }
        let agent = prompty::load_str(&text, base, "bench.prompty").expect("loads");
        let label = format!("prepare {name}");
        if args.is_empty() || args.iter().any(|a| label.contains(a.as_str())) {
            let us = measure(batch, || {
                black_box(prompty::prepare(black_box(&agent), black_box(inputs)).expect("prepares"));
            });
            println!("{label:<32} {us:>12.2}");
        }
    }
}
