//! One buffer per output, as an engine's allocator hands them out: `Outputs::Regions`
//! writes each output into its own buffer.
//!
//! ```sh
//! WGPU_BACKEND=vulkan cargo run --release --example separate_buffers
//! ```

use wgpu::util::DeviceExt;
use wgpu_split::{
    ops, wgpu, BufferRegion, DType, DeviceChoice, GpuSplitter, HostTensor, IntTensor, Outputs,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = GpuSplitter::open(DeviceChoice::from_env()?)?;
    let device = gpu.device();

    // qkv-style: [2, 5, 12] f32 split on the last axis into q, k and v of 4 each.
    let shape = [2, 5, 12];
    let data: Vec<f32> = (0..120).map(|i| i as f32).collect();
    let plan = ops::split(&shape, &IntTensor::scalar(-1), 3)?;
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("qkv"),
        contents: bytemuck::cast_slice(&data),
        usage: wgpu::BufferUsages::STORAGE,
    });
    // The engine's allocator: one buffer per output, rounded up to whole 16-byte units.
    let buffers: Vec<wgpu::Buffer> = (0..plan.num_parts())
        .map(|i| {
            let size = plan
                .part_bytes(i, DType::F32)
                .map(|b| b.next_multiple_of(16))?;
            Ok(device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(["q", "k", "v"][i]),
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }))
        })
        .collect::<Result<_, wgpu_split::SplitError>>()?;
    let regions: Vec<BufferRegion> = buffers.iter().map(BufferRegion::from).collect();

    let mut encoder = device.create_command_encoder(&Default::default());
    let input_region = BufferRegion::from(&input);
    let encoded = gpu.encode(
        &mut encoder,
        &plan,
        DType::F32,
        input_region,
        Outputs::Regions(&regions),
    )?;
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: 3 * 160,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    for (i, b) in buffers.iter().enumerate() {
        encoder.copy_buffer_to_buffer(b, 0, &readback, 160 * i as u64, 160);
    }
    gpu.queue().submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |_| {});
    device.poll(wgpu::PollType::wait_indefinitely())?;
    let got = readback.get_mapped_range(..)?.to_vec();

    let want = plan.reference(&HostTensor::from_slice(&shape, &data)?)?;
    for (i, w) in want.iter().enumerate() {
        if &got[160 * i..160 * (i + 1)] != w.bytes() {
            return Err(format!("output {i} differs from the CPU reference").into());
        }
    }
    println!(
        "separate_buffers: q, k and v written into three buffers of their own ({} dispatches) on {} ({:?})",
        encoded.dispatches,
        gpu.device().adapter_info().name,
        gpu.device().adapter_info().backend
    );
    Ok(())
}
