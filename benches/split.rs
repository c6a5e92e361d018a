//! Criterion benches (filled in with the benchmark suite).
fn main() {}
