//! `cargo bench --bench separate`: `Outputs::Regions` into 64 buffers and a concat's
//! `Inputs::Regions` from 64, as many per gather dispatch as the device binds against one
//! buffer per dispatch.
//!
//! The adapter comes from `WGPU_BACKEND` (default: auto). No buffer has a COPY usage, so every
//! buffer is written or read by the gather.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wgpu_split::{
    ops, wgpu, BufferRegion, DType, DeviceChoice, GpuSplitter, Inputs, IntTensor, Outputs,
    SplitOptions, SplitPlan,
};

/// The buffers of one case: the input and one buffer per output.
struct Buffers {
    input: wgpu::Buffer,
    outputs: Vec<wgpu::Buffer>,
}

impl Buffers {
    fn new(gpu: &GpuSplitter, plan: &SplitPlan, dtype: DType) -> Self {
        let device = gpu.device();
        let buffer = |size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size: size.next_multiple_of(256).max(256),
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let input = buffer(plan.whole_binding_size(dtype).unwrap());
        let outputs = (0..plan.num_parts())
            .map(|i| buffer(plan.part_bytes(i, dtype).unwrap()))
            .collect();
        Self { input, outputs }
    }

    /// Records the split into the 64 buffers, or with `concat` the concat from them back
    /// into the input, submits it and waits for it; returns its dispatches.
    fn run(&self, gpu: &GpuSplitter, plan: &SplitPlan, dtype: DType, concat: bool) -> u32 {
        let region = |buffer| BufferRegion { buffer, offset: 0 };
        let regions: Vec<BufferRegion> = self.outputs.iter().map(region).collect();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let (encoder_ref, input) = (&mut encoder, region(&self.input));
        let dispatches = if concat {
            let inputs = Inputs::Regions(&regions);
            let concat = plan.inverse();
            gpu.encode(encoder_ref, &concat, dtype, inputs, input)
                .map(|e| e.dispatches)
        } else {
            gpu.encode(encoder_ref, plan, dtype, input, Outputs::Regions(&regions))
                .map(|e| e.dispatches)
        }
        .expect("encode with 64 buffers");
        gpu.queue().submit([encoder.finish()]);
        gpu.device()
            .poll(wgpu::PollType::wait_indefinitely())
            .expect("the work finishes");
        dispatches
    }
}

fn separate_buffers(c: &mut Criterion) {
    let gpu = GpuSplitter::open(DeviceChoice::from_env().expect("a device choice"))
        .expect("an adapter for the benches");
    let mut group = c.benchmark_group("separate_buffers");
    group.sample_size(20);
    // 64 outputs of 15 bytes (the cost is per dispatch), of 64 KiB and of 1 MiB in rows of
    // 1,028 bytes (the cost is per byte).
    let cases = [
        ("tiny_64", [3usize, 64 * 5], DType::U8),
        ("64k_64", [64, 64 * 257], DType::F32),
        ("1m_64", [1024, 64 * 257], DType::F32),
    ];
    for (name, shape, dtype) in cases {
        let plan = ops::split(&shape, &IntTensor::scalar(1), 64).unwrap();
        let buffers = Buffers::new(&gpu, &plan, dtype);
        let bytes = shape.iter().product::<usize>() * dtype.size();
        group.throughput(Throughput::Bytes(bytes as u64));
        for concat in [false, true] {
            let allowed = match concat {
                false => gpu.options().output_bindings,
                true => gpu.options().input_bindings,
            };
            for bindings in [allowed.unwrap_or(1), 1] {
                let gpu = gpu.clone().with_options(SplitOptions {
                    output_bindings: Some(bindings),
                    input_bindings: Some(bindings),
                    ..gpu.options()
                });
                let dispatches = buffers.run(&gpu, &plan, dtype, concat);
                let op = if concat { "concat_" } else { "" };
                let id = format!("{op}{name}/{bindings}_per_dispatch_{dispatches}_dispatches");
                group.bench_function(id, |b| b.iter(|| buffers.run(&gpu, &plan, dtype, concat)));
            }
        }
    }
    group.finish();
}

criterion_group!(benches, separate_buffers);
criterion_main!(benches);
