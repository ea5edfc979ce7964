//! What a lookup by id costs: `PromptRegistry::prepare` beside the typed `prepare` and the plain
//! `prepare` of the same file (`tests/fixtures/basic.prompty`), and the lookup alone
//! (`PromptRegistry::get`) along each path of the lookup order, in a registry of 1,000 ids.
//!
//! Run with `cargo bench -p prompty-examples --bench registry` (`--quick` for short batches).
//! Prints the median of seven timed batches, in µs per operation (ns for the lookups).

#[path = "../../prompty/benches/support/measure.rs"]
mod measure;
use measure::{measure, read};
use prompty::PromptRegistry;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

prompty::include_prompty!("../tests/fixtures/basic.prompty");

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let batch = if quick { Duration::from_millis(5) } else { Duration::from_millis(200) };
    std::env::set_var("OPENAI_API_KEY", "sk-bench");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let file = fixtures.join("fixtures/basic.prompty");
    let inputs: serde_json::Value = serde_json::from_str(&read(&fixtures.join("bench/inputs.json"))).expect("JSON");
    let inputs = inputs["basic"].clone();
    let typed_inputs: basic::Inputs = serde_json::from_value(inputs.clone()).expect("fits");

    let agent = prompty::load(&file).expect("loads");
    let registry = PromptRegistry::new();
    for i in 0..1_000 {
        registry.register(&format!("app.prompt_{i:04}"), agent.clone()).expect("registers");
    }
    registry.register("basic", agent.clone()).expect("registers");
    for tag in ["fr", "pt-BR", "de", "es", "ja", "zh-Hant"] {
        registry.register_locale("basic", tag, agent.clone()).expect("registers");
    }

    println!("{:<44} {:>10}", "case", "µs/op");
    let row = |label: &str, us: f64| println!("{label:<44} {us:>10.3}");
    let typed = measure(batch, || {
        black_box(basic::prepare(black_box(&typed_inputs)).expect("prepares"));
    });
    row("typed prepare basic", typed);
    let plain = measure(batch, || {
        black_box(prompty::prepare(black_box(&agent), black_box(&inputs)).expect("prepares"));
    });
    row("prepare basic (agent loaded once)", plain);
    let by_id = measure(batch, || {
        black_box(registry.prepare(black_box("basic"), black_box(&inputs), None).expect("prepares"));
    });
    row("registry prepare basic (default)", by_id);
    let by_id_locale = measure(batch, || {
        black_box(registry.prepare(black_box("basic"), black_box(&inputs), Some("pt-BR")).expect("prepares"));
    });
    row("registry prepare basic (pt-BR)", by_id_locale);

    println!("{:<44} {:>10}", "lookup alone (PromptRegistry::get)", "ns/op");
    for (label, locale) in [
        ("default (no locale)", None),
        ("exact tag pt-BR", Some("pt-BR")),
        ("shorter tag: pt_br-x-a → pt-BR", Some("pt_br-x-a")),
        ("fallback: it-CH → it → en → default", Some("it-CH")),
    ] {
        let ns = measure(batch, || {
            black_box(registry.get(black_box("basic"), black_box(locale)).expect("found"));
        }) * 1000.0;
        println!("{label:<44} {ns:>10.1}");
    }
}
