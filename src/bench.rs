//! The benchmark suite: each case's split timed against the device's own copies, in one run.
//!
//! Used by `wgpu-split bench` and by the criterion benches. Every figure is a median over at
//! least five timed runs after a warm-up (more for short cases: timing goes on for at least
//! half a second), in wall time (recording, submit, wait) and, where the device has timestamps, in
//! device time (between two timestamps around the figure's commands). A case's split, its
//! prepared split, an empty round trip, the copies ([`CopyKind`]) and the unfused way of an
//! attention case are timed in turn in one loop, so their ratios compare the same stretch of
//! time on a shared machine. Ratios take the device time where there is one, and compare
//! with the fastest of the copies ([`CaseResult::best_copy`]).

mod attention;
mod buffers;
#[cfg(test)]
mod golden_tests;
mod memory;
mod rows;
mod rows_buffers;
mod timing;

use buffers::wait;
pub use buffers::CaseBuffers;
pub use memory::{memory_report, MemoryReport, WARPS};
pub use rows::RowsResult;
pub use timing::{gbps, median, Time};
pub use wgsl_split::suite::{rows_suite, standard_suite, Case, Layout, RowsCase, RowsCaseKind};

/// The pieces the command builds on besides the engine's API: every adapter of a backend, the
/// windows a streamed split or concat takes, the CPU reference streamed, and a tensor's bytes.
pub use crate::gpu::list_adapters;
pub use crate::plan::windows::{windows, Window};
pub use crate::stream::run_reference_stream;
pub use crate::tensor::byte_count;
use timing::{time_interleaved, time_ms, DeviceClock};

use crate::error::Result;
use crate::gpu::device::block_on;
use crate::reference;
use crate::GpuSplitter;

/// The device's copies of a case's bytes that its split is measured against, each timed in
/// the same loop as the split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyKind {
    /// `copy_buffer_to_buffer`: the driver's copy command.
    BufferCopy,
    /// The copy kernel, one `vec4<u32>` per invocation.
    Kernel,
    /// The copy kernel, four `vec4<u32>` per invocation: more loads in flight on a GPU.
    Kernel4,
}

impl CopyKind {
    /// Every copy, in the order of [`CaseResult::copies`].
    pub const ALL: [CopyKind; 3] = [CopyKind::BufferCopy, CopyKind::Kernel, CopyKind::Kernel4];

    /// Its name in the table and the JSON report.
    pub fn name(self) -> &'static str {
        match self {
            CopyKind::BufferCopy => "copy_buffer_to_buffer",
            CopyKind::Kernel => "copy_kernel",
            CopyKind::Kernel4 => "copy_kernel_x4",
        }
    }

    /// `vec4<u32>` per invocation of the copy kernel; `None` for the copy command.
    fn units(self) -> Option<u32> {
        match self {
            CopyKind::BufferCopy => None,
            CopyKind::Kernel => Some(1),
            CopyKind::Kernel4 => Some(4),
        }
    }
}

/// Measurements of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case.
    pub case: Case,
    /// Number of outputs.
    pub outputs: usize,
    /// Input bytes.
    pub bytes: usize,
    /// The device-resident split (encode, submit, wait); with a batch
    /// ([`Bencher::with_batch`]), a submission's time over its splits.
    pub split: Time,
    /// The same split prepared once ([`crate::Prepared`]): encode, submit, wait. What a
    /// runtime that prepares its split nodes pays per run.
    pub prepared: Time,
    /// Median empty submit and wait, ms: the device's fixed cost per submission.
    pub roundtrip_ms: f64,
    /// Median host part of the split alone (encode, no submit; the plan made once), ms.
    pub host_ms: f64,
    /// The copies of the same bytes, in the order of [`CopyKind::ALL`].
    pub copies: [Time; 3],
    /// Median CPU reference split, ms.
    pub cpu_reference_ms: f64,
    /// The unfused way of an attention case (the split, a transpose kernel per part, the
    /// copies into the caches); `None` for the others.
    pub unfused: Option<Time>,
    /// Median host time of the prepared split recorded with its K and V views one position
    /// on ([`crate::Prepared::set_views`] and its encode, alternating between two positions), ms;
    /// `None` but for an attention case whose caches have a position to move to.
    pub moved_host_ms: Option<f64>,
    /// What the split recorded: gather dispatches and buffer copies.
    pub recorded: Recorded,
    /// The program of each gather dispatch of the prepared split, in order
    /// (`main_rows vec4 lanes`, `main_join runs`, `main_rows runs channels w1` for channels).
    pub programs: Vec<String>,
    /// Whether every output can be a view of the input (no bytes moved).
    pub zero_copy: bool,
}

impl CaseResult {
    /// The time of one copy.
    pub fn copy(&self, kind: CopyKind) -> Time {
        self.copies[CopyKind::ALL.iter().position(|&k| k == kind).unwrap_or(0)]
    }

    /// The fastest copy of this case (by [`Time::ms`]): the rate every ratio compares with.
    pub fn best_copy(&self) -> (CopyKind, Time) {
        CopyKind::ALL
            .into_iter()
            .zip(self.copies)
            .min_by(|a, b| a.1.ms().total_cmp(&b.1.ms()))
            .unwrap_or((CopyKind::Kernel, self.copy(CopyKind::Kernel)))
    }

    /// The rate of `t` over the fastest copy's: 1.0 moves the bytes as fast as the device's
    /// best copy.
    pub fn over_best_copy(&self, t: Time) -> f64 {
        self.best_copy().1.ms() / t.ms()
    }
}

/// The commands one split or concat recorded, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Gather dispatches.
    pub dispatches: u32,
    /// `copy_buffer_to_buffer` commands.
    pub buffer_copies: u32,
}

impl From<&crate::gpu::plans::Recorded> for Recorded {
    fn from(e: &crate::gpu::plans::Recorded) -> Self {
        Self {
            dispatches: e.dispatches,
            buffer_copies: e.buffer_copies,
        }
    }
}

/// Runs cases on one device.
pub struct Bencher<'a> {
    gpu: &'a GpuSplitter,
    runs: usize,
    batch: usize,
    /// The copy kernel at 1 and at 4 `vec4<u32>` per invocation.
    copy_kernels: [(u32, wgpu::ComputePipeline); 2],
    /// The device's clock; `None` where it has no timestamps inside encoders.
    clock: Option<DeviceClock>,
}

impl<'a> Bencher<'a> {
    /// Prepares the baseline copy kernels and the clock on `gpu`'s device; `runs` >= 5 timed
    /// runs per figure.
    pub fn new(gpu: &'a GpuSplitter, runs: usize) -> Result<Self> {
        let kernel = |units| -> Result<(u32, wgpu::ComputePipeline)> {
            let hook = crate::gpu::gather::builds::Hook::Silent;
            Ok((units, crate::trace::copy_kernel(gpu.device(), hook, units)?))
        };
        Ok(Self {
            gpu,
            runs: runs.max(5),
            batch: 1,
            copy_kernels: [kernel(1)?, kernel(4)?],
            clock: DeviceClock::new(gpu)?,
        })
    }

    /// Whether figures carry the device's own time (its timestamps inside encoders).
    pub fn device_time(&self) -> bool {
        self.clock.is_some()
    }

    /// Records `batch` splits (and `batch` of each yardstick) into each timed submission and
    /// reports the time per split (1 by default). A submission's fixed cost, tens of
    /// microseconds on a GPU, then weighs 1/`batch` in each wall time, which approaches the
    /// device's own time; the round trip stays one empty submission.
    pub fn with_batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Records with `record` between the clock's two timestamps, submits, and waits for the
    /// device.
    fn submit(&self, record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>) -> Result<()> {
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        if let Some(clock) = &self.clock {
            clock.start(&mut encoder);
        }
        record(&mut encoder)?;
        if let Some(clock) = &self.clock {
            clock.stop(&mut encoder);
        }
        self.gpu.queue().submit([encoder.finish()]);
        wait(self.gpu)
    }

    /// An empty submission, waited for: the device's fixed cost, untimed on the device.
    fn round_trip(&self) -> Result<()> {
        let encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        self.gpu.queue().submit([encoder.finish()]);
        wait(self.gpu)
    }

    /// Measures one case.
    pub fn run_case(&self, case: &Case) -> Result<CaseResult> {
        let device = self.gpu.device();
        let bytes = case.bytes()?;
        let buffers = CaseBuffers::new(self.gpu, case)?;
        let plan = &buffers.plan;
        // The yardsticks move the same bytes the same way: a concat's from its inputs' region.
        let (input, output) = match case.concat {
            false => (&buffers.input, &buffers.output),
            true => (&buffers.output, &buffers.input),
        };
        let yardsticks = self.yardsticks(input, output, buffers.input.size())?;
        let copy = |kind: CopyKind| {
            let yardsticks = &yardsticks;
            move || {
                self.submit(|encoder| {
                    (0..self.batch).try_for_each(|_| yardsticks.record(kind, encoder))
                })
            }
        };
        let [mut buffer_copy, mut kernel, mut kernel4] = CopyKind::ALL.map(copy);

        // The split, the prepared split, the round trip, the copies and the unfused way,
        // timed in turn so every ratio of two of them compares the same stretch of time.
        let mut recorded = Recorded::default();
        let prepared = buffers.prepare(self.gpu, case)?;
        let programs = prepared.programs();
        let unfused = buffers.unfused(self.gpu, case)?;
        let batch = self.batch;
        let [split, prepared_time, roundtrip, c0, c1, c2, unfused_time] = time_interleaved(
            self.runs,
            self.clock.as_ref(),
            [
                &mut || {
                    self.submit(|encoder| {
                        for _ in 0..batch {
                            recorded = buffers.encode(self.gpu, case, encoder)?;
                        }
                        Ok(())
                    })
                },
                &mut || {
                    self.submit(|encoder| {
                        (0..batch).try_for_each(|_| {
                            block_on("encode", prepared.encode(encoder)).map(|_| ())
                        })
                    })
                },
                &mut || self.round_trip(),
                &mut buffer_copy,
                &mut kernel,
                &mut kernel4,
                &mut || match &unfused {
                    Some(u) => {
                        self.submit(|encoder| (0..batch).try_for_each(|_| u.record(encoder)))
                    }
                    None => Ok(()),
                },
            ],
        )?;
        // Per split; the round trip is one empty submission whatever the batch.
        let [split, prepared_time, c0, c1, c2, unfused_time] =
            [split, prepared_time, c0, c1, c2, unfused_time].map(|t| t.per(batch));

        // The timed split's bytes, once the copies above have overwritten its outputs.
        buffers.check(self.gpu, case)?;

        let host_ms = time_ms(self.runs, || {
            let mut encoder = device.create_command_encoder(&Default::default());
            buffers.encode(self.gpu, case, &mut encoder).map(|_| ())
        })?;

        let moved_host_ms = attention::moved_host_ms(self.runs, self.gpu, &prepared, case.layout)?;

        let concat = plan.inverse();
        let cpu_reference_ms = time_ms(self.runs, || match (&buffers.views, case.concat) {
            (Some(v), true) => {
                let inputs: Vec<&[u8]> = v.initial.iter().map(Vec::as_slice).collect();
                reference::concat_from_views(&concat, case.dtype, &v.views, &inputs).map(|_| ())
            }
            (Some(v), false) => {
                let mut parts = v.initial.clone();
                reference::split_into_views(&buffers.host, plan, &v.views, &mut parts)
            }
            (None, true) => concat.reference(&buffers.parts).map(|_| ()),
            (None, false) => plan.reference(&buffers.host).map(|_| ()),
        })?;

        Ok(CaseResult {
            case: case.clone(),
            outputs: plan.num_parts(),
            bytes,
            split,
            prepared: prepared_time,
            roundtrip_ms: roundtrip.wall_ms,
            host_ms,
            copies: [c0, c1, c2],
            cpu_reference_ms,
            unfused: unfused.map(|_| unfused_time),
            moved_host_ms,
            recorded,
            programs,
            zero_copy: case.layout == Layout::Packed && self.gpu.views(plan, case.dtype)?.is_some(),
        })
    }
}
