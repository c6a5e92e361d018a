//! [`CaseBuffers`]: one case's buffers on the device, and its split (or concat) encoded,
//! prepared and checked on them.

use super::attention::{Unfused, ViewBuffers};
use super::Layout;
use super::{Case, Recorded};
use crate::error::{Result, SplitError};
use crate::gpu::device::block_on;
use crate::gpu::device::scoped;
use crate::gpu::direction::Direction;
use crate::gpu::parts::{Job, Parts};
use crate::gpu::prepared::PreparedParts;
use crate::plan::SplitPlan;
use crate::reference;
use crate::tensor::HostTensor;
use crate::{BufferRegion, GpuSplitter};

/// Device buffers holding one case's input, and room for its outputs.
pub struct CaseBuffers {
    /// The input, filled with a byte pattern.
    pub input: wgpu::Buffer,
    /// The output region.
    pub output: wgpu::Buffer,
    /// The same input on the host.
    pub host: HostTensor,
    /// The case's plan, made once, as an engine plans a node once and splits it on every run.
    pub plan: SplitPlan,
    /// A concat case's inputs on the host (the split of `host`); empty for a split case.
    pub parts: Vec<HostTensor>,
    /// A view case's parts, in buffers of their own.
    pub views: Option<ViewBuffers>,
}

impl CaseBuffers {
    /// Allocates and fills the buffers of `case` on `gpu`'s device.
    pub fn new(gpu: &GpuSplitter, case: &Case) -> Result<Self> {
        let device = gpu.device();
        let plan = case.plan()?;
        let bytes = case.bytes()?;
        let layout = gpu.layout(&plan, case.dtype)?;
        let in_size = (bytes as u64).next_multiple_of(16).max(16);
        let data: Vec<u8> = (0..bytes)
            .map(|i| (i as u32).wrapping_mul(2654435761).to_le_bytes()[3])
            .collect();
        let (input, output) = scoped(device, "allocating benchmark buffers", || {
            let make = |label, size| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::COPY_SRC
                        | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            };
            (
                make("bench input", in_size),
                make("bench output", layout.total_bytes.max(in_size)),
            )
        })?;
        let fill = |k: usize, n: usize| (0..n).map(|i| (i * 131 + k * 7919 + 7) as u8).collect();
        let views = ViewBuffers::new(gpu, case.layout, &plan, case.dtype, fill)?;
        let host = match (&views, case.concat) {
            // A concat through views reads its inputs from their buffers: the whole tensor
            // is what the reference makes of them.
            (Some(v), true) => {
                let inputs: Vec<&[u8]> = v.initial.iter().map(Vec::as_slice).collect();
                reference::concat_from_views(&plan.inverse(), case.dtype, &v.views, &inputs)?
            }
            _ => HostTensor::new(case.dtype, case.shape.clone(), data)?,
        };
        let mut padded = host.bytes().to_vec();
        padded.resize(in_size as usize, 0);
        gpu.queue().write_buffer(&input, 0, &padded);
        // A concat reads its inputs from the output region, where the split would put them.
        let parts = match case.concat && views.is_none() {
            true => plan.reference(&host)?,
            false => Vec::new(),
        };
        for (part, range) in parts.iter().zip(&layout.ranges) {
            if range.size > 0 {
                let mut bytes = part.bytes().to_vec();
                bytes.resize(bytes.len().next_multiple_of(4), 0);
                gpu.queue().write_buffer(&output, range.offset, &bytes);
            }
        }
        Ok(Self {
            input,
            output,
            host,
            plan,
            parts,
            views,
        })
    }

    /// Device-resident splits as the suite times them: encode `count` splits (at least one)
    /// into one submission, submit, wait. Returns what one split recorded.
    pub fn split(&self, gpu: &GpuSplitter, case: &Case, count: usize) -> Result<Recorded> {
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let mut encoded = self.encode(gpu, case, &mut encoder)?;
        for _ in 1..count {
            encoded = self.encode(gpu, case, &mut encoder)?;
        }
        gpu.queue().submit([encoder.finish()]);
        wait(gpu)?;
        Ok(encoded)
    }

    /// Splits once more and compares the outputs in the output region, byte for byte, with
    /// the CPU reference: a split that comes out wrong fails the bench instead of giving a
    /// rate.
    pub fn check(&self, gpu: &GpuSplitter, case: &Case) -> Result<()> {
        let plan = &self.plan;
        let named = |e| match e {
            SplitError::Mismatch(m) => SplitError::Mismatch(format!("case {}, {m}", case.name)),
            other => other,
        };
        if case.concat {
            // The whole tensor, read back from the input buffer, where the concat wrote it.
            let size = self.host.bytes().len();
            let got = self.encode_and_read(gpu, case, &self.input, size as u64, |bytes| {
                HostTensor::new(case.dtype, case.shape.clone(), bytes[..size].to_vec())
            })?;
            let (got, want) = (std::slice::from_ref(&got), std::slice::from_ref(&self.host));
            return crate::verify::compare_outputs(got, want).map_err(named);
        }
        if let Some(v) = &self.views {
            // Each part's buffer, whole: its view's elements and the bytes around them.
            let mut want = v.initial.clone();
            reference::split_into_views(&self.host, plan, &v.views, &mut want)?;
            for (k, (buffer, want)) in v.buffers.iter().zip(&want).enumerate() {
                let n = want.len();
                let got =
                    self.encode_and_read(gpu, case, buffer, n as u64, |b| Ok(b[..n].to_vec()))?;
                if let Some(at) = got.iter().zip(want).position(|(g, w)| g != w) {
                    return Err(SplitError::Mismatch(format!(
                        "case {}, part {k}'s buffer differs at byte {at}",
                        case.name
                    )));
                }
            }
            return Ok(());
        }
        let layout = gpu.layout(plan, case.dtype)?;
        let got = self.encode_and_read(gpu, case, &self.output, layout.total_bytes, |bytes| {
            layout.parts_from(bytes, plan, case.dtype)
        })?;
        let want = plan.reference(&self.host)?;
        crate::verify::compare_outputs(&got, &want).map_err(named)
    }

    /// Encodes the case once more, then copies the first `size` bytes of `buffer` into a
    /// readback buffer, submits, and hands them to `read`.
    fn encode_and_read<T>(
        &self,
        gpu: &GpuSplitter,
        case: &Case,
        buffer: &wgpu::Buffer,
        size: u64,
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let device = gpu.device();
        let readback = scoped(device, "allocating the benchmark's readback buffer", || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("bench readback"),
                size: size.next_multiple_of(4).max(16),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        let mut encoder = device.create_command_encoder(&Default::default());
        self.encode(gpu, case, &mut encoder)?;
        scoped(device, "reading the benchmark's result back", || {
            encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, size.next_multiple_of(4));
            gpu.queue().submit([encoder.finish()]);
        })?;
        gpu.read_back(&readback, read)
    }

    /// The split (or concat) of `case` prepared once on these buffers, as
    /// [`GpuSplitter::prepare`] prepares it: the whole tensor in the input buffer, the parts
    /// in the output region at the device's storage offset alignment, or through their
    /// views in their buffers.
    pub fn prepare(&self, gpu: &GpuSplitter, case: &Case) -> Result<PreparedParts> {
        let direction = match case.concat {
            true => Direction::Concat,
            false => Direction::Split,
        };
        let (plan, dtype) = (&self.plan, case.dtype);
        match &self.views {
            Some(v) => v.with_job(direction, &self.input, |job: Job<'_>| {
                block_on("prepare", gpu.prepare_job(plan, dtype, job))
            }),
            None => {
                let job = Job {
                    direction,
                    whole: BufferRegion::from(&self.input),
                    parts: Parts::Region(BufferRegion::from(&self.output)),
                };
                block_on("prepare", gpu.prepare_job(plan, dtype, job))
            }
        }
    }

    /// The unfused way of a view case on these buffers (the plain split into the output
    /// region, then a transpose kernel per part and the copies into the caches); `None` for
    /// the others.
    pub fn unfused(&self, gpu: &GpuSplitter, case: &Case) -> Result<Option<Unfused>> {
        match (&self.views, case.layout) {
            (Some(v), layout @ (Layout::Qkv { .. } | Layout::MergeHeads(_))) => Unfused::new(
                gpu,
                layout,
                &self.plan,
                case.dtype,
                &self.input,
                &self.output,
                v,
            ),
            _ => Ok(None),
        }
    }

    /// The host part of a split alone: encode into `encoder` (the plan made once), no submit,
    /// as [`GpuSplitter::encode`] does.
    pub fn encode(
        &self,
        gpu: &GpuSplitter,
        case: &Case,
        encoder: &mut wgpu::CommandEncoder,
    ) -> Result<Recorded> {
        let prepared = self.prepare(gpu, case)?;
        let recorded = block_on("encode", prepared.encode_once(encoder))?;
        Ok(Recorded::from(&recorded))
    }
}

/// Blocks until the device has finished its submitted work.
pub(super) fn wait(gpu: &GpuSplitter) -> Result<()> {
    gpu.device()
        .poll(wgpu::PollType::wait_indefinitely())
        .map(|_| ())
        .map_err(|e| SplitError::Device(format!("waiting for the device: {e}")))
}
