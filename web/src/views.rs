//! A split into random views (`Outputs::Views`): each output permuted inside a padded
//! container at a random place, in a buffer of its own filled with a pattern, read back whole
//! and compared byte for byte with the CPU reference's views, so a byte written outside a
//! view fails too.

use crate::signal::Signal;
use std::sync::{Arc, Mutex};
use wgpu::util::DeviceExt;
use wgpu_split::{
    reference, wgpu, BufferRegion, GpuSplitter, HostTensor, Outputs, PartView, SplitPlan,
};

/// What a split into views gave: whether every buffer came out as the reference's, and the
/// dispatches it took.
pub(crate) struct IntoViews {
    pub same: bool,
    pub dispatches: u32,
}

/// A random view of each output of `plan`, from `below` (a number in `0..n`), and the bytes
/// of the region each one needs.
fn random_views(
    plan: &SplitPlan,
    es: usize,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<(PartView, usize)> {
    plan.output_shapes()
        .iter()
        .map(|part| {
            let rank = part.len();
            let mut perm: Vec<usize> = (0..rank).collect();
            for k in (1..rank).rev() {
                perm.swap(k, below(k + 1));
            }
            let at: Vec<usize> = (0..rank).map(|_| below(2)).collect();
            let container: Vec<usize> = (0..rank)
                .map(|j| part[perm[j]] + at[j] + below(2))
                .collect();
            // A permutation inside a container that holds it: always a valid view.
            let mut view = PartView::within(part, &container, &perm, &at)
                .unwrap_or_else(|_| PartView::contiguous(part));
            view.offset += below(5) as u64;
            let bytes = (view.offset as usize + container.iter().product::<usize>()) * es;
            (view, bytes)
        })
        .collect()
}

/// Splits `input` as `plan` says into random views, reads every buffer back and compares it
/// with the reference.
pub(crate) async fn split_into_views(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    input: &HostTensor,
    below: &mut dyn FnMut(usize) -> usize,
) -> Result<IntoViews, String> {
    let device = gpu.device();
    let es = input.dtype().size();
    let (views, sizes): (Vec<PartView>, Vec<usize>) =
        random_views(plan, es, below).into_iter().unzip();
    let initial: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            (0..n.next_multiple_of(16).max(16))
                .map(|i| (i * 131 + k * 7 + 3) as u8)
                .collect()
        })
        .collect();
    let upload = |bytes: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("views"),
            contents: bytes,
            usage,
        })
    };
    let mut padded = input.bytes().to_vec();
    padded.resize(padded.len().next_multiple_of(16).max(16), 0);
    let whole = upload(&padded, wgpu::BufferUsages::STORAGE);
    let usage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC;
    let parts: Vec<wgpu::Buffer> = initial.iter().map(|b| upload(b, usage)).collect();
    let regions: Vec<BufferRegion> = parts.iter().map(BufferRegion::from).collect();
    let total: u64 = initial.iter().map(|b| b.len() as u64).sum();
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("views readback"),
        size: total,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let encoded = gpu
        .encode_async(
            &mut encoder,
            plan,
            input.dtype(),
            (&whole).into(),
            Outputs::Views(&regions, &views),
        )
        .await
        .map_err(|e| format!("the split into views {views:?}: {e}"))?;
    let mut at = 0;
    for part in &parts {
        encoder.copy_buffer_to_buffer(part, 0, &readback, at, part.size());
        at += part.size();
    }
    gpu.queue().submit([encoder.finish()]);
    let got = read(&readback).await?;
    let mut want = initial.clone();
    reference::split_into_views(input, plan, &views, &mut want).map_err(|e| e.to_string())?;
    Ok(IntoViews {
        same: got == want.concat(),
        dispatches: encoded.dispatches,
    })
}

/// The bytes of a MAP_READ buffer once the queue's work is done.
pub(crate) async fn read(buffer: &wgpu::Buffer) -> Result<Vec<u8>, String> {
    let mapped = Signal::default();
    let result = Arc::new(Mutex::new(None));
    let (signal, slot) = (mapped.clone(), result.clone());
    buffer.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        signal.fire();
    });
    mapped.await;
    let outcome = result.lock().unwrap_or_else(|e| e.into_inner()).take();
    match outcome {
        Some(Ok(())) => {}
        Some(Err(e)) => return Err(format!("mapping a readback buffer: {e}")),
        None => return Err("mapping a readback buffer: no answer".into()),
    }
    let bytes = buffer
        .slice(..)
        .get_mapped_range()
        .map_err(|e| format!("reading a readback buffer: {e}"))?
        .to_vec();
    buffer.unmap();
    Ok(bytes)
}
