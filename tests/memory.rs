//! 10,000 repeated splits leave resident memory flat: no leaked buffers or bind groups.
//!
//! Alone in its test binary, so no other test's allocations move the figure; the adapters'
//! tests take turns (one lock), so neither moves the other's.

#[macro_use]
mod common;

use std::sync::Mutex;
use wgpu_split::{ops, DType, GpuSplitter, HostTensor, IntTensor};

/// Held by each adapter's test while it measures.
static MEASURING: Mutex<()> = Mutex::new(());

/// Resident set size of this process, in bytes.
fn rss_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn ten_thousand_splits_keep_memory_flat(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let _turn = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    if !std::path::Path::new("/proc/self/statm").exists() {
        panic!("this test reads /proc/self/statm (Linux)");
    }
    let shape = [64, 96];
    let input = HostTensor::new(
        DType::F16,
        shape.to_vec(),
        (0..64 * 96 * 2).map(|i| (i * 7) as u8).collect(),
    )
    .unwrap();
    let plan = ops::variadic_split(
        &shape,
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![5, 27, -1]),
    )
    .unwrap();
    for _ in 0..1000 {
        gpu.run(&plan, &input).unwrap();
    }
    let before = rss_bytes();
    for _ in 0..10_000 {
        gpu.run(&plan, &input).unwrap();
    }
    let after = rss_bytes();
    let growth = after.saturating_sub(before);
    eprintln!("{name}: resident memory {before} -> {after} bytes over 10,000 splits");
    assert!(
        growth < 16 << 20,
        "{name}: resident memory grew by {growth} bytes over 10,000 splits"
    );
}

per_backend!(ten_thousand_splits_keep_memory_flat,);
