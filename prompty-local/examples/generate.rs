//! Loads a GGUF model, generates greedily and prints the speed.
//!
//! ```text
//! cargo run --release -p prompty-local --example generate -- MODEL.gguf "PROMPT" [MAX_TOKENS] [THREADS]
//! ```
//!
//! - `MODEL.gguf`: the model file.
//! - `PROMPT`: a user message, rendered with the model's chat template.
//! - `MAX_TOKENS`: tokens to generate (default 128). Generation stops early at the end of the
//!   model's turn; the count printed is what was generated.
//! - `THREADS`: threads for the matrix products (default: `CANDLE_NUM_THREADS`, else
//!   `RAYON_NUM_THREADS`, else the number of physical cores).
//!
//! Prints the answer on stdout as it is generated, then one line on stderr:
//! `load_s=… prompt_tokens=… prompt_tok_s=… ttft_ms=… gen_tokens=… gen_tok_s=… cpu_gen_tok_s=… peak_rss_mib=… finish=… threads=…`
//! where the prompt rate is prompt tokens over the time to the first token, and the generation
//! rate counts the tokens after the first over the time after it; `cpu_gen_tok_s` is the same
//! count over the CPU time the process used meanwhile (Linux; with one thread, the figure least
//! disturbed by other processes on a busy machine).

use prompty_local::{ChatMessage, GenerateOptions, Model};
use std::io::Write;
use std::ops::ControlFlow;
use std::time::Instant;

/// CPU seconds this process has used (user + system), where `/proc` tells (Linux); else `None`.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// The peak resident memory of this process in MiB, where `/proc` tells (Linux).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: generate MODEL.gguf PROMPT [MAX_TOKENS] [THREADS]");
        std::process::exit(2);
    }
    let max_tokens: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(128);
    if let Some(threads) = args.get(3) {
        let threads: usize = threads.parse()?;
        // candle sizes its matrix-product pool from this variable, once, at first use.
        std::env::set_var("CANDLE_NUM_THREADS", threads.to_string());
        rayon::ThreadPoolBuilder::new().num_threads(threads).build_global()?;
    }
    let t0 = Instant::now();
    let model = Model::load(args[0].as_ref())?;
    let load_s = t0.elapsed().as_secs_f64();
    let prompt = model.render_chat(&[ChatMessage::new("user", args[1].as_str())], true)?;
    let tokens = model.tokenize(&prompt)?;
    let options = GenerateOptions { max_tokens, temperature: 0.0, ..GenerateOptions::default() };
    let start = Instant::now();
    let mut first: Option<(f64, Option<f64>)> = None;
    let mut stdout = std::io::stdout();
    let out = model.generate(&tokens, &options, None, &mut |piece| {
        first.get_or_insert_with(|| (start.elapsed().as_secs_f64(), cpu_seconds()));
        let _ = stdout.write_all(piece.as_bytes());
        let _ = stdout.flush();
        ControlFlow::Continue(())
    })?;
    let total = start.elapsed().as_secs_f64();
    let cpu_end = cpu_seconds();
    println!();
    let (ttft, cpu_first) = first.unwrap_or((total, None));
    let after = out.completion_tokens.saturating_sub(1) as f64;
    eprintln!(
        "load_s={load_s:.3} prompt_tokens={} prompt_tok_s={:.1} ttft_ms={:.1} gen_tokens={} gen_tok_s={:.1} cpu_gen_tok_s={:.1} peak_rss_mib={:.0} finish={:?} threads={}",
        out.prompt_tokens,
        out.prompt_tokens as f64 / ttft,
        ttft * 1000.0,
        out.completion_tokens,
        if total > ttft { after / (total - ttft) } else { 0.0 },
        match (cpu_first, cpu_end) {
            (Some(a), Some(b)) if b > a => after / (b - a),
            _ => 0.0,
        },
        peak_rss_mib().unwrap_or(0.0),
        out.finish,
        rayon::current_num_threads(),
    );
    Ok(())
}
