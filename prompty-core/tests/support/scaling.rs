//! Showing that a cost grows linearly without a wall-clock limit (which flakes on a loaded machine
//! and proves nothing about growth): the work is timed at a size n and at 4n, a few times each,
//! interleaved, and the least disturbed run of each size is kept; 4n may take at most
//! [`MAX_RATIO`] times as long as n. Linear cost gives about 4×, quadratic 16×. Included with
//! `#[path]` by the adversarial tests of `prompty-core` and `prompty`.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// Runs of each size; the minimum of each is compared.
pub const RUNS: usize = 5;
/// The largest ratio allowed between the times at 4n and at n: linear is 4, quadratic 16. Linear
/// work measured between 4.0× and 6.0× on a loaded 2-core machine (caches, allocator, other
/// processes); 10 leaves room for that and still fails a quadratic cost.
pub const MAX_RATIO: f64 = 10.0;
/// Times below this count as this: on runs under a few milliseconds, timer and scheduler noise
/// would decide the ratio. The sizes the tests choose take well above it at n.
pub const FLOOR: Duration = Duration::from_millis(5);

/// How long `f` took, and what it returned.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

/// Fails unless the fastest of `large` (runs at 4n) took at most [`MAX_RATIO`] times the fastest
/// of `small` (runs at n), both raised to [`FLOOR`].
pub fn assert_ratio(what: &str, small: &[Duration], large: &[Duration]) {
    let min = |runs: &[Duration]| runs.iter().min().copied().unwrap_or_default().max(FLOOR);
    let (n, four_n) = (min(small), min(large));
    let ratio = four_n.as_secs_f64() / n.as_secs_f64();
    println!("{what}: 4n took {ratio:.1}× as long as n ({four_n:?} against {n:?})");
    assert!(
        ratio <= MAX_RATIO,
        "{what}: 4× the input took {ratio:.1}× as long ({four_n:?} against {n:?}; at most {MAX_RATIO}× for a \
         linear cost): the cost grows faster than the input (runs at n: {small:?}, at 4n: {large:?})"
    );
}

/// Calls `run(n)` and `run(4 * n)` [`RUNS`] times each, interleaved; `run` returns how long the
/// measured part took (building the input left out). Fails as [`assert_ratio`].
pub fn assert_linear(what: &str, n: usize, mut run: impl FnMut(usize) -> Duration) {
    let (mut small, mut large) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        small.push(run(n));
        large.push(run(4 * n));
    }
    assert_ratio(what, &small, &large);
}
