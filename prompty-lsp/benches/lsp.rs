//! Benchmark of the language server (to be written).
fn main() {}
