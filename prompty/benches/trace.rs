//! What tracing costs: `prepare` of `tests/fixtures/basic.prompty` with the benchmark inputs of
//! `tests/bench/inputs.json`,
//!
//! - with no `tracing` subscriber and no trace backend (the spans are never built);
//! - with the `.tracy` backend (every `prepare` is a root span: one file written per call);
//! - with a backend that keeps nothing (the spans built, redacted and handed over);
//! - with a `tracing_subscriber::fmt` subscriber writing to a sink (inputs and results recorded
//!   as span fields).
//!
//! Run with `cargo bench -p prompty --bench trace` (`--quick` for short batches). Prints the
//! median of seven timed batches in µs per call, and the overhead over the first row.

#[path = "support/measure.rs"]
mod measure;
use measure::{measure, read};
use prompty::trace::{FinishedSpan, TraceBackend, TracyBackend};
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

struct Discard;

impl TraceBackend for Discard {
    fn span_ended(&self, span: &FinishedSpan) {
        black_box(span);
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let batch = if quick { Duration::from_millis(5) } else { Duration::from_millis(200) };
    std::env::set_var("OPENAI_API_KEY", "sk-bench");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests");
    let file = data.join("fixtures/basic.prompty");
    let agent = prompty::load_str(&read(&file), file.parent().expect("a folder"), "basic.prompty").expect("loads");
    let inputs: serde_json::Value = serde_json::from_str(&read(&data.join("bench/inputs.json"))).expect("JSON");
    let inputs = inputs["basic"].clone();
    let prepare = || {
        black_box(prompty::prepare(black_box(&agent), black_box(&inputs)).expect("prepares"));
    };

    println!("{:<44} {:>10} {:>10}", "prepare basic", "µs/op", "overhead");
    let base = measure(batch, prepare);
    println!("{:<44} {base:>10.2} {:>10}", "no subscriber, no backend", "-");

    let dir = std::env::temp_dir().join(format!("prompty-bench-traces-{}", std::process::id()));
    prompty::trace::add("bench-tracy", Arc::new(TracyBackend::new(&dir)));
    let us = measure(batch, prepare);
    prompty::trace::remove("bench-tracy");
    let _ = std::fs::remove_dir_all(&dir);
    println!("{:<44} {us:>10.2} {:>9.2}x", ".tracy backend (a file per call)", us / base);

    prompty::trace::add("bench-discard", Arc::new(Discard));
    let us = measure(batch, prepare);
    prompty::trace::remove("bench-discard");
    println!("{:<44} {us:>10.2} {:>9.2}x", "a backend that keeps nothing", us / base);

    let subscriber = tracing_subscriber::fmt().with_writer(std::io::sink).finish();
    let us = tracing::subscriber::with_default(subscriber, || measure(batch, prepare));
    println!("{:<44} {us:>10.2} {:>9.2}x", "tracing fmt subscriber (to a sink)", us / base);
}
