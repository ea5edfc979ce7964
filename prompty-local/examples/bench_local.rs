//! The prompty-local side of `scripts/bench-local`: loads a GGUF file, warms up, then generates
//! greedily after the text of a prompt file and prints one JSON line of figures. Public API only.
//!
//! ```text
//! RAYON_NUM_THREADS=2 cargo run --release -p prompty-local --example bench_local -- MODEL.gguf PROMPT.txt [TOKENS]
//! ```
//!
//! The prompt file's text is tokenized as it is (no chat template), so both sides of the benchmark
//! read the same tokens. Figures: `load_s` (reading the file), `prompt_tokens`, `ttft_s` (from the
//! call to the first piece of text: the whole prompt evaluated and one token sampled),
//! `prompt_tps` (`prompt_tokens / ttft_s`), `generated` (tokens), `gen_tps` (tokens after the
//! first, per second after the first), `peak_rss_mb` (`VmHWM` of `/proc/self/status`: the most
//! resident memory the process ever had).

use prompty_local::{GenerateOptions, Model};
use std::ops::ControlFlow;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: bench_local MODEL.gguf PROMPT.txt [TOKENS]";
    let model_path = args.next().ok_or(usage)?;
    let prompt_path = args.next().ok_or(usage)?;
    let tokens: usize = args.next().map(|t| t.parse()).transpose()?.unwrap_or(128);
    let text = std::fs::read_to_string(&prompt_path)?;

    let started = Instant::now();
    let model = Model::load(model_path.as_ref())?;
    let load_s = started.elapsed().as_secs_f64();
    let prompt = model.tokenize(&text)?;

    // A warm-up: the first generation pays for allocations neither side repeats.
    let warm_up = GenerateOptions { max_tokens: 4, temperature: 0.0, ..GenerateOptions::default() };
    let warm = model.tokenize("Hello, my name is")?;
    model.generate(&warm, &warm_up, None, &mut |_| ControlFlow::Continue(()))?;

    let options = GenerateOptions { max_tokens: tokens, ..warm_up };
    let mut first: Option<Instant> = None;
    let started = Instant::now();
    let out = model.generate(&prompt, &options, None, &mut |_| {
        first.get_or_insert_with(Instant::now);
        ControlFlow::Continue(())
    })?;
    let ended = Instant::now();
    let first = first.ok_or("no text was generated")?;
    let ttft_s = (first - started).as_secs_f64();
    let after_first = (ended - first).as_secs_f64();
    let gen_tps = if out.completion_tokens > 1 && after_first > 0.0 {
        (out.completion_tokens - 1) as f64 / after_first
    } else {
        0.0
    };
    let figures = serde_json::json!({
        "side": "prompty-local",
        "threads": std::env::var("RAYON_NUM_THREADS").ok(),
        "load_s": load_s,
        "prompt_tokens": out.prompt_tokens,
        "ttft_s": ttft_s,
        "prompt_tps": out.prompt_tokens as f64 / ttft_s,
        "generated": out.completion_tokens,
        "gen_tps": gen_tps,
        "peak_rss_mb": peak_rss_mb(),
        "text": out.text,
    });
    println!("{figures}");
    Ok(())
}

/// The peak resident set of this process in MiB (`VmHWM`), on Linux; `null` elsewhere.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}
