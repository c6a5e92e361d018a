//! Adapters the GPU tests run on.
//!
//! `WGPU_SPLIT_TEST_BACKENDS` lists them (default `vulkan,gl`, the two this project's CI has).
//! Every listed backend must open: a missing adapter fails the test, it never skips it.
#![allow(dead_code)]

use std::sync::OnceLock;
use wgpu_split::{BackendChoice, GpuSplitter, HostTensor};

/// One splitter per listed backend, opened once per test binary.
pub fn splitters() -> &'static [(String, GpuSplitter)] {
    static SPLITTERS: OnceLock<Vec<(String, GpuSplitter)>> = OnceLock::new();
    SPLITTERS.get_or_init(|| {
        let list = std::env::var("WGPU_SPLIT_TEST_BACKENDS").unwrap_or_else(|_| "vulkan,gl".into());
        list.split(',')
            .filter(|s| !s.trim().is_empty())
            .map(|name| {
                let choice: BackendChoice = name.trim().parse().unwrap_or_else(|e| panic!("{e}"));
                let gpu = GpuSplitter::open(choice).unwrap_or_else(|e| {
                    panic!("backend {name} is listed in WGPU_SPLIT_TEST_BACKENDS but failed to open: {e}")
                });
                let info = gpu.adapter_info();
                (format!("{} ({:?})", info.name, info.backend), gpu)
            })
            .collect()
    })
}

/// Asserts that `got` equals `want` output by output: same shapes, same bytes.
pub fn assert_same_outputs(name: &str, got: &[HostTensor], want: &[HostTensor]) {
    assert_eq!(got.len(), want.len(), "{name}: number of outputs");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{name} output {i}");
        assert!(
            g.bytes() == w.bytes(),
            "{name}: output {i} differs from the CPU reference"
        );
    }
}
