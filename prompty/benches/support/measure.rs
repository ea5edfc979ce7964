//! Timing helpers shared by the benchmark binaries (`prompty/benches/pipeline.rs`,
//! `examples/benches/typed.rs`), included with `#[path]`.

use std::path::Path;
use std::time::{Duration, Instant};

/// Reads a benchmark data file, or stops the benchmark naming it.
pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Times `f`: sizes a batch to take about `batch`, runs seven batches, and returns the median
/// µs per call.
pub fn measure(batch: Duration, mut f: impl FnMut()) -> f64 {
    let mut n: u64 = 1;
    loop {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        let el = t.elapsed();
        if el >= batch / 4 {
            let per = el.as_secs_f64() / n as f64;
            n = ((batch.as_secs_f64() / per) as u64).max(1);
            break;
        }
        n *= 2;
    }
    let mut samples: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / n as f64
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}
