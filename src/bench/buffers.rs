//! [`CaseBuffers`]: one case's buffers on the device, and its split (or concat) encoded,
//! prepared and checked on them.

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
        let mut padded = data.clone();
        padded.resize(in_size as usize, 0);
        gpu.queue().write_buffer(&input, 0, &padded);
        let host = HostTensor::new(case.dtype, case.shape.clone(), data)?;
        // A concat reads its inputs from the output region, where the split would put them.
        let parts = match case.concat {
            true => reference::split_tensor(&host, &plan)?,
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
        let layout = gpu.layout(plan, case.dtype)?;
        let got = self.encode_and_read(gpu, case, &self.output, layout.total_bytes, |bytes| {
            layout.outputs_from(bytes, plan, case.dtype)
        })?;
        let want = reference::split_tensor(&self.host, plan)?;
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

    /// What the case's split or concat reads and writes: the whole tensor in the input
    /// buffer, the parts in the output region, at the device's storage offset alignment.
    fn job(&self, case: &Case) -> Job<'_> {
        Job {
            direction: match case.concat {
                true => Direction::Concat,
                false => Direction::Split,
            },
            whole: BufferRegion::from(&self.input),
            parts: Parts::Region(BufferRegion::from(&self.output)),
        }
    }

    /// The split (or concat) of `case` prepared once on these buffers, as
    /// [`GpuSplitter::prepare`] prepares it.
    pub fn prepare(&self, gpu: &GpuSplitter, case: &Case) -> Result<PreparedParts> {
        let job = self.job(case);
        block_on("prepare", gpu.prepare_job(&self.plan, case.dtype, job))
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
