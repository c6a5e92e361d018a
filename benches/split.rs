//! `cargo bench`: the standard suite's device-resident splits under criterion.
//!
//! The adapter comes from `WGPU_SPLIT_BACKEND` (default: auto). `wgpu-split bench` runs the
//! same cases with the copy baselines beside them.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wgpu_split::bench::{standard_suite, CaseBuffers};
use wgpu_split::{DeviceChoice, GpuSplitter};

fn splits(c: &mut Criterion) {
    let gpu = GpuSplitter::open(DeviceChoice::from_env().expect("a device choice"))
        .expect("an adapter for the benches");
    let mut group = c.benchmark_group("split");
    group.sample_size(10);
    for case in standard_suite() {
        let buffers = CaseBuffers::new(&gpu, &case).expect("benchmark buffers");
        group.throughput(Throughput::Bytes(case.bytes().expect("case size") as u64));
        group.bench_function(case.name, |b| {
            b.iter(|| buffers.split(&gpu, &case, 1).expect("split"))
        });
    }
    group.finish();
}

criterion_group!(benches, splits);
criterion_main!(benches);
