//! A concat on the GPU: the split's plan read the other way ([`crate::ops::concat()`]). The
//! parts (the concat's inputs) lie where the engine has them, in one region or one region
//! each ([`Inputs`]); the output is one region. Each buffer of parts moves by the route
//! [`choose_concat`](crate::gpu::planner::choose_concat) picks: the split's copy routes turned
//! around (buffer copies, or bands through the scratch texture on CPU adapters), else one
//! gather dispatch that reads every part in the buffer and writes the output; buffers of
//! their own share dispatches of the multi-input build (`GpuSplitter::prepare_regions`, as
//! the split's outputs do). Inputs in one region keep their route between concats, as a split
//! does.

use crate::error::{Result, SplitError};
use crate::gpu::device;
use crate::gpu::placement::{BufferRegion, OutputLayout, Placement};
use crate::gpu::planner::Direction;
use crate::gpu::prepared::{EncodedSplit, PreparedSplit};
use crate::gpu::round_trip::{map_read, read_mapped};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;

/// Where a concat's inputs are, for [`GpuSplitter::encode_concat`]: the mirror of
/// [`Outputs`](crate::Outputs). Every region needs usage STORAGE (and COPY_SRC where copy
/// commands may read it) and an offset at the device's storage offset alignment; no input may
/// share a buffer with the output.
#[derive(Debug, Clone, Copy)]
pub enum Inputs<'a> {
    /// Every input in one region, each at the device's storage offset alignment
    /// ([`GpuSplitter::output_layout`] of the concat's plan), so each one's producer can
    /// bind it on its own.
    Region(BufferRegion<'a>),
    /// Every input in one region, placed by the layout: for example
    /// [`OutputLayout::packed`] (16 bytes). A layout built by hand is checked first.
    Placed(BufferRegion<'a>, &'a OutputLayout),
    /// One region per input, in input order, each in any buffer, holding its input's bytes
    /// rounded up to 4. Inputs are only read, so regions may repeat or overlap: the concat of
    /// `x` with itself passes `x`'s region twice. The regions of empty inputs are not read.
    ///
    /// **The device's limits set the number of dispatches**, as for
    /// [`Outputs::Regions`](crate::Outputs::Regions): inputs that share a buffer move together
    /// (one dispatch, or copies), and the gather reads `b` buffers per dispatch, `b` the
    /// device's `max_storage_buffers_per_shader_stage` less those the table and the output
    /// take (three, or two on a device of 4), halved, at most 32: 14 on lavapipe and 6 on
    /// llvmpipe GL opened with their adapters' limits, 1 with
    /// `wgpu::Limits::downlevel_defaults()` and 2 with `wgpu::Limits::default()` (on CPU
    /// adapters only buffers of up to 4 KiB of inputs share dispatches). 64 inputs of 1 KiB
    /// in 64 buffers take 5, 11, 64 and 32 dispatches (`tests/separate_buffers.rs`): request
    /// the adapter's limits when you open the device.
    Regions(&'a [BufferRegion<'a>]),
}

impl GpuSplitter {
    /// Records the concat of `plan` ([`crate::ops::concat()`] and its siblings) into
    /// `encoder`: the inputs where `inputs` says, the output into `output` (at least the
    /// concat's bytes rounded up to 4, usage STORAGE). Returns where each input was read
    /// from, and the commands recorded. Misuse comes back as a [`SplitError`] before anything
    /// is recorded, as from [`GpuSplitter::encode`]. Inputs in one buffer (`Inputs::Region`,
    /// `Inputs::Placed`) take one dispatch, however many they are.
    pub fn encode_concat(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &SplitPlan,
        dtype: DType,
        inputs: Inputs<'_>,
        output: BufferRegion<'_>,
    ) -> Result<EncodedSplit> {
        device::block_on(
            "GpuSplitter::encode_concat",
            self.encode_concat_async(encoder, plan, dtype, inputs, output),
        )
    }

    /// [`GpuSplitter::encode_concat`] for async callers and WebGPU.
    pub async fn encode_concat_async(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &SplitPlan,
        dtype: DType,
        inputs: Inputs<'_>,
        output: BufferRegion<'_>,
    ) -> Result<EncodedSplit> {
        self.prepare_concat_async(plan, dtype, inputs, output)
            .await?
            .encode_once(encoder)
            .await
    }

    /// Prepares the concat of [`GpuSplitter::encode_concat`] once, to record it as often as
    /// wanted with [`PreparedSplit::encode`].
    pub fn prepare_concat(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        inputs: Inputs<'_>,
        output: BufferRegion<'_>,
    ) -> Result<PreparedSplit> {
        device::block_on(
            "GpuSplitter::prepare_concat",
            self.prepare_concat_async(plan, dtype, inputs, output),
        )
    }

    /// [`GpuSplitter::prepare_concat`] for async callers and WebGPU.
    pub async fn prepare_concat_async(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        inputs: Inputs<'_>,
        output: BufferRegion<'_>,
    ) -> Result<PreparedSplit> {
        // Inputs in one region take the split's way: the route kept between concats.
        let (region, placement) = match inputs {
            Inputs::Region(region) => (region, Placement::Bindable),
            Inputs::Placed(region, layout) => {
                layout.check(plan, dtype)?;
                (region, Placement::Given(layout))
            }
            Inputs::Regions(regions) => {
                return self
                    .prepare_regions(Direction::Concat, plan, dtype, output, regions)
                    .await
            }
        };
        self.prepare_placed(Direction::Concat, plan, dtype, region, output, placement)
            .await
    }
}

// The host round trip.

impl GpuSplitter {
    /// Uploads `inputs` (packed at 16 bytes in one buffer), concatenates them as `plan` says
    /// and reads the output back.
    pub fn run_concat(&self, plan: &SplitPlan, inputs: &[HostTensor]) -> Result<HostTensor> {
        let (readback, dtype) =
            device::block_on("GpuSplitter::run_concat", self.submit_concat(plan, inputs))?;
        self.read_back(&readback, |b| concat_output(b, plan, dtype))
    }

    /// [`GpuSplitter::run_concat`] for async callers and WebGPU, as
    /// [`GpuSplitter::run_async`].
    pub async fn run_concat_async(
        &self,
        plan: &SplitPlan,
        inputs: &[HostTensor],
    ) -> Result<HostTensor> {
        let (readback, dtype) = self.submit_concat(plan, inputs).await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |b| concat_output(b, plan, dtype))
    }

    /// [`GpuSplitter::run_concat`], then checks the output byte for byte against the CPU
    /// reference.
    pub fn run_concat_verified(
        &self,
        plan: &SplitPlan,
        inputs: &[HostTensor],
    ) -> Result<HostTensor> {
        let gpu = self.run_concat(plan, inputs)?;
        let cpu = crate::reference::concat_tensors(inputs, plan)?;
        crate::verify::compare_outputs(std::slice::from_ref(&gpu), &[cpu])?;
        Ok(gpu)
    }

    /// Uploads the inputs, records the concat and the copy into a readback buffer, and
    /// submits; returns the readback buffer and the dtype.
    async fn submit_concat(
        &self,
        plan: &SplitPlan,
        inputs: &[HostTensor],
    ) -> Result<(wgpu::Buffer, DType)> {
        let dtype = crate::ops::concat::check_inputs(plan, inputs)?;
        let layout = OutputLayout::packed(plan, dtype)?;
        self.check_buffer_sizes(Direction::Concat, plan, dtype, &layout)?;
        let (readback, _) = self
            .submit_placed(Direction::Concat, plan, dtype, &layout, |view| {
                // An empty input may lie past the region's end: it takes no room.
                for (t, r) in inputs
                    .iter()
                    .zip(&layout.ranges)
                    .filter(|(_, r)| r.size > 0)
                {
                    let at = r.offset as usize;
                    view.slice(at..at + t.bytes().len())
                        .copy_from_slice(t.bytes());
                }
            })
            .await?;
        Ok((readback, dtype))
    }
}

/// The concat's output from the read-back bytes (at least its size).
fn concat_output(bytes: &[u8], plan: &SplitPlan, dtype: DType) -> Result<HostTensor> {
    let size = byte_count(plan.input_shape(), dtype)?;
    let bytes = bytes.get(..size).ok_or_else(|| {
        SplitError::DataMismatch(format!(
            "{} bytes read back for a concat output of {size}",
            bytes.len()
        ))
    })?;
    HostTensor::new(dtype, plan.input_shape().to_vec(), bytes.to_vec())
}
