//! A concat whose inputs are each in a buffer of their own (`Inputs::Regions`), as an engine's
//! allocator leaves them: the buffers have no COPY usage, so the gather reads them, several
//! per dispatch (the multi-input build, as many buffers as WebGPU binds).

use crate::signal::Signal;
use std::sync::{Arc, Mutex};
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
    let buffer = |usage| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("concat output"),
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let output = buffer(wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC);
    let readback = buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
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
    encoder.copy_buffer_to_buffer(&output, 0, &readback, 0, size);
    gpu.queue().submit([encoder.finish()]);
    let mapped = Signal::default();
    let result = Arc::new(Mutex::new(None));
    let (signal, slot) = (mapped.clone(), result.clone());
    readback.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        signal.fire();
    });
    mapped.await;
    let outcome = result.lock().unwrap_or_else(|e| e.into_inner()).take();
    match outcome {
        Some(Ok(())) => {}
        Some(Err(e)) => return Err(format!("mapping the concat's output: {e}")),
        None => return Err("mapping the concat's output: no answer".into()),
    }
    let same = {
        let view = readback
            .slice(..)
            .get_mapped_range()
            .map_err(|e| format!("reading the concat's output: {e}"))?;
        view[..want.bytes().len()] == *want.bytes()
    };
    readback.unmap();
    Ok(FromBuffers {
        same,
        buffers: buffers.len(),
        dispatches: encoded.dispatches,
    })
}
