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
    if let Err(e) = wgpu_split::gpu::compare_outputs(got, want) {
        panic!("{name}: {e}");
    }
}

/// Splits `input` through [`GpuSplitter::encode`] on buffers of the given extra usages (STORAGE
/// is always set), then reads the outputs back: the path an inference backend takes.
pub fn encode_and_read(
    gpu: &GpuSplitter,
    plan: &wgpu_split::SplitPlan,
    input: &HostTensor,
    extra_usage: wgpu::BufferUsages,
) -> (Vec<HostTensor>, wgpu_split::EncodedSplit) {
    encode_and_read_at(gpu, plan, input, extra_usage, (0, 0))
}

/// [`encode_and_read`] with the input and output regions at these byte offsets of their
/// buffers (multiples of the storage offset alignment); the bytes before them hold 0xA5.
pub fn encode_and_read_at(
    gpu: &GpuSplitter,
    plan: &wgpu_split::SplitPlan,
    input: &HostTensor,
    extra_usage: wgpu::BufferUsages,
    (in_offset, out_offset): (u64, u64),
) -> (Vec<HostTensor>, wgpu_split::EncodedSplit) {
    use wgpu::util::DeviceExt;
    let device = gpu.device();
    let mut bytes = vec![0xA5; in_offset as usize];
    bytes.extend_from_slice(input.bytes());
    bytes.resize(bytes.len().next_multiple_of(16).max(16), 0);
    let in_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &bytes,
        usage: wgpu::BufferUsages::STORAGE | extra_usage,
    });
    let layout = gpu.output_layout(plan, input.dtype()).unwrap();
    let out_size = out_offset + layout.total_bytes;
    let out_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &vec![0xA5; out_size as usize],
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | extra_usage,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: out_size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let encoded = gpu
        .encode(
            &mut encoder,
            plan,
            input.dtype(),
            wgpu_split::BufferRegion {
                buffer: &in_buf,
                offset: in_offset,
            },
            wgpu_split::BufferRegion {
                buffer: &out_buf,
                offset: out_offset,
            },
        )
        .unwrap();
    encoder.copy_buffer_to_buffer(&out_buf, 0, &readback, 0, out_size);
    gpu.queue().submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let data = readback.get_mapped_range(..).unwrap().to_vec();
    assert!(
        data[..out_offset as usize].iter().all(|&b| b == 0xA5),
        "bytes before the output region changed"
    );
    let outputs = encoded
        .layout
        .outputs_from(&data[out_offset as usize..], plan, input.dtype())
        .unwrap();
    (outputs, encoded)
}
