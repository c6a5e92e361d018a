//! A concat whose inputs are each in a buffer of their own (`Inputs::Regions`), as an engine's
//! allocator leaves them: the buffers have no COPY usage, so the gather reads them, several
//! per dispatch (the multi-input build, as many buffers as WebGPU binds).

use crate::signal::read_back;
use wgpu::util::DeviceExt;
use wgpu_split::{wgpu, BufferRegion, ConcatPlan, GpuSplitter, HostTensor, Inputs};

/// What a concat from buffers of their own gave: whether its bytes are `want`'s, and the
/// buffers and dispatches it took.
pub(crate) struct FromBuffers {
    pub same: bool,
    pub buffers: usize,
    pub dispatches: u32,
}

/// Concatenates `parts`, each uploaded into a buffer of its own, as `plan` says, reads the
/// output back and compares it with `want`.
pub(crate) async fn concat_from_buffers(
    gpu: &GpuSplitter,
    plan: &ConcatPlan,
    parts: &[HostTensor],
    want: &HostTensor,
) -> Result<FromBuffers, String> {
    let device = gpu.device();
    let buffers: Vec<wgpu::Buffer> = parts
        .iter()
        .map(|t| {
            let mut bytes = t.bytes().to_vec();
            bytes.resize(bytes.len().next_multiple_of(16).max(16), 0);
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("concat input"),
                contents: &bytes,
                usage: wgpu::BufferUsages::STORAGE,
            })
        })
        .collect();
    let regions: Vec<BufferRegion> = buffers.iter().map(BufferRegion::from).collect();
    let size = (want.bytes().len() as u64).next_multiple_of(16).max(16);
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("concat output"),
        size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let region = BufferRegion::from(&output);
    let encoded = gpu
        .encode_async(
            &mut encoder,
            plan,
            want.dtype(),
            Inputs::Regions(&regions),
            region,
        )
        .await
        .map_err(|e| format!("the concat from buffers of their own: {e}"))?;
    gpu.queue().submit([encoder.finish()]);
    let got = read_back(gpu, &output, size, "the concat's output").await?;
    let same = got[..want.bytes().len()] == *want.bytes();
    Ok(FromBuffers {
        same,
        buffers: buffers.len(),
        dispatches: encoded.dispatches,
    })
}
