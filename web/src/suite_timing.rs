//! The page's benchmark: the suite's cases that fit the browser's device, each split or concat
//! (the attention cases' parts through views, in buffers of their own) timed against the plain
//! copy kernel and `copyBufferToBuffer` of the same bytes, in the same run.
//! The browser drives the GPU: each figure is the median of three submissions of `repeats`
//! commands, from submit to the queue's report that the work is done.

use crate::signal::Signal;
use serde_json::{json, Value};
use wgpu_split::bench::{gbps, median, standard_suite};
use wgpu_split::trace::copy_kernel_pipeline;
use wgpu_split::{ops, wgpu, BufferRegion, GpuSplitter, Inputs, Outputs};

/// Cases whose input is larger than this are left out, to keep the page's run short on a
/// software adapter.
const MOST_BYTES: usize = 64 << 20;

/// The yardsticks of `size` bytes of `input`: the copy kernel into a buffer of its own, and
/// `copyBufferToBuffer` into it.
pub(crate) struct Yardstick<'a> {
    input: &'a wgpu::Buffer,
    copy: wgpu::Buffer,
    bind: wgpu::BindGroup,
    size: u64,
}

impl<'a> Yardstick<'a> {
    /// `input` holds at least `size` bytes (a multiple of 16), usage STORAGE and COPY_SRC.
    pub(crate) fn new(
        gpu: &GpuSplitter,
        kernel: &wgpu::ComputePipeline,
        input: &'a wgpu::Buffer,
        size: u64,
    ) -> Self {
        let device = gpu.device();
        let copy = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench copy"),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let bind = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("bench copy kernel"),
            layout: &kernel.get_bind_group_layout(0),
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: input.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: copy.as_entire_binding(),
                },
            ],
        });
        Self {
            input,
            copy,
            bind,
            size,
        }
    }

    /// One round: `repeats` copy kernels in one submission, then `repeats` copies in one;
    /// the milliseconds of each.
    pub(crate) async fn time(
        &self,
        gpu: &GpuSplitter,
        kernel: &wgpu::ComputePipeline,
        repeats: u32,
    ) -> (f64, f64) {
        let device = gpu.device();
        let groups = (self.size / 16).div_ceil(256) as u32;
        let (gx, gy) = (groups.min(65_535), groups.div_ceil(65_535));
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(kernel);
            pass.set_bind_group(0, &self.bind, &[]);
            for _ in 0..repeats {
                pass.dispatch_workgroups(gx, gy, 1);
            }
        }
        let kernel_ms = submit_and_time(gpu, encoder).await;
        let mut encoder = device.create_command_encoder(&Default::default());
        for _ in 0..repeats {
            encoder.copy_buffer_to_buffer(self.input, 0, &self.copy, 0, self.size);
        }
        (kernel_ms, submit_and_time(gpu, encoder).await)
    }
}

/// Submits `encoder` and waits for the GPU; returns the milliseconds from submit to done.
pub(crate) async fn submit_and_time(gpu: &GpuSplitter, encoder: wgpu::CommandEncoder) -> f64 {
    let done = Signal::default();
    let signal = done.clone();
    let start = now();
    gpu.queue().submit([encoder.finish()]);
    gpu.queue().on_submitted_work_done(move || signal.fire());
    done.await;
    now() - start
}

fn now() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

/// Times every case of the suite of at most [`MOST_BYTES`]: split, copy kernel and
/// `copyBufferToBuffer`, `repeats` of each per submission.
pub async fn run(gpu: &GpuSplitter, repeats: u32) -> Result<Value, String> {
    let device = gpu.device();
    let copy_kernel = copy_kernel_pipeline(device);
    let mut cases = Vec::new();
    for case in standard_suite() {
        let bytes = case.bytes().map_err(|e| e.to_string())?;
        if bytes > MOST_BYTES || bytes == 0 {
            continue;
        }
        let plan = case.plan().map_err(|e| e.to_string())?;
        // A concat case joins the split's outputs back: its inputs lie where the split would
        // put them, and it writes the whole tensor.
        let joined = match case.concat {
            true => Some(
                ops::concat(&plan.part_shapes(), plan.axis() as i64).map_err(|e| e.to_string())?,
            ),
            false => None,
        };
        let layout = gpu.layout(&plan, case.dtype).map_err(|e| e.to_string())?;
        let size = (bytes as u64).next_multiple_of(16);
        let buffer = |label, size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let input = buffer("bench input", size);
        // The parts in one region, or through their views in a buffer each.
        let viewed = case
            .layout
            .views(&plan, case.dtype.size())
            .map_err(|e| e.to_string())?;
        let parts: Vec<wgpu::Buffer> = match &viewed {
            Some((_, sizes)) => sizes
                .iter()
                .map(|&n| buffer("bench part", (n as u64).next_multiple_of(16)))
                .collect(),
            None => vec![buffer("bench output", layout.total_bytes.max(size))],
        };
        let regions: Vec<BufferRegion<'_>> = parts.iter().map(Into::into).collect();
        let yardstick = Yardstick::new(gpu, &copy_kernel, &input, size);
        let (mut split, mut kernel, mut copies) = (Vec::new(), Vec::new(), Vec::new());
        let mut dispatches = 0;
        for _ in 0..3 {
            let mut encoder = device.create_command_encoder(&Default::default());
            for _ in 0..repeats {
                let whole = BufferRegion::from(&input);
                let (from, to) = match &viewed {
                    Some((views, _)) => (
                        Inputs::Views(&regions, views),
                        Outputs::Views(&regions, views),
                    ),
                    None => (Inputs::Region(regions[0]), Outputs::Region(regions[0])),
                };
                dispatches = match &joined {
                    Some(join) => gpu
                        .encode_async(&mut encoder, join, case.dtype, from, whole)
                        .await
                        .map(|e| e.dispatches),
                    None => gpu
                        .encode_async(&mut encoder, &plan, case.dtype, whole, to)
                        .await
                        .map(|e| e.dispatches),
                }
                .map_err(|e| format!("{}: {e}", case.name))?;
            }
            split.push(submit_and_time(gpu, encoder).await);
            let (k, c) = yardstick.time(gpu, &copy_kernel, repeats).await;
            kernel.push(k);
            copies.push(c);
        }
        let (split, kernel, copies) = (median(split), median(kernel), median(copies));
        let moved = bytes * repeats as usize;
        cases.push(json!({
            "name": case.name,
            "op": case.op_name(),
            "dtype": case.dtype.name(),
            "shape": case.shape,
            "outputs": plan.part_shapes().len(),
            "bytes": bytes,
            "dispatches": dispatches,
            "split_gbps": gbps(moved, split.max(1e-3)),
            "copy_kernel_gbps": gbps(moved, kernel.max(1e-3)),
            "copy_gbps": gbps(moved, copies.max(1e-3)),
            "split_vs_kernel": kernel / split.max(1e-9),
        }));
    }
    Ok(Value::Array(cases))
}
