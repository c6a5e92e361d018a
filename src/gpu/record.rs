//! Recording a split into the caller's encoder: check the buffers, choose the route, record
//! it.

use crate::error::{Result, SplitError};
use crate::gpu::gather::abi::{binding_bytes, window_limit};
use crate::gpu::output_layout::OutputLayout;
use crate::gpu::region::{BufferRegion, Outputs};
use crate::gpu::route::{self, DeviceCaps, Regions, Route, RouteChoice};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::tensor::byte_count;
use crate::DType;

/// What [`GpuSplitter::encode`] recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedSplit {
    /// Where each output lies in the output region.
    pub layout: OutputLayout,
    /// Compute dispatches of the gather shader (0 when copies moved the outputs).
    pub dispatches: u32,
    /// `copy_buffer_to_buffer` commands.
    pub buffer_copies: u32,
    /// Buffer-to-texture plus texture-to-buffer copy commands (two per band of rows).
    pub texture_copies: u32,
}

/// Bytes the input buffer must hold from its offset for a split of `plan`: the input's bytes
/// rounded up to 4 (what WebGPU asks of a storage binding), at least 4.
pub fn input_binding_size(plan: &SplitPlan, dtype: DType) -> Result<u64> {
    Ok(binding_bytes(byte_count(plan.input_shape(), dtype)? as u64))
}

impl GpuSplitter {
    /// Records the split into `encoder` without submitting it, writing the outputs where
    /// `outputs` says ([`Outputs`]), and returns where each output went.
    ///
    /// Misuse comes back as a [`SplitError`] before anything is recorded: a region with the
    /// wrong usage, size or offset alignment, input and output in one buffer, a destroyed
    /// buffer or a buffer of another device of the same instance (wgpu validation errors,
    /// captured: [`SplitError::Device`]), a lost device ([`SplitError::Device`]). wgpu gives
    /// `encode` no way to see which device or instance an encoder belongs to, nor which
    /// instance a buffer does, so these misuses are the caller's to avoid: an `encoder` of
    /// another device of the same instance (wgpu reports it at `finish` or `submit`, through
    /// that device's error handler, which panics by default); an `encoder` of another
    /// `wgpu::Instance` (wgpu-core panics inside `encode`); and a buffer of another instance,
    /// which wgpu looks up by its index in this instance's registry (a panic inside `encode`
    /// where no buffer has that index, otherwise, silently, another buffer of this device).
    /// `tests/errors.rs` checks each symptom.
    ///
    /// The input and the outputs may not share a buffer, even in ranges that do not overlap:
    /// wgpu binds a buffer either read-only or writable within one dispatch. An engine whose
    /// arena allocator keeps every tensor in one buffer gives the split's input its own
    /// buffer (or a second arena), or copies it out first.
    ///
    /// `input` holds the C-order input bytes (at least [`input_binding_size`] bytes from its
    /// offset, usage STORAGE: the input's size rounded up to 4).
    ///
    /// Normally this is one compute dispatch for all outputs. When the buffers allow copies
    /// (COPY_SRC on the input, COPY_DST on the outputs), copy commands replace it where they
    /// are cheaper (`route`): `copy_buffer_to_buffer` where the outputs are a few long,
    /// word-aligned contiguous runs of the input (whole outputs, or output rows), and on CPU
    /// adapters a buffer-to-texture-to-buffer round trip per band of rows where rows and stride
    /// are multiples of 256 bytes. Tensors larger than one storage binding are dispatched in
    /// parts. Nothing is recorded when every output is empty.
    ///
    /// This is [`GpuSplitter::prepare`] and [`PreparedSplit::encode`](crate::PreparedSplit::encode)
    /// in one call: a caller that records the same split on the same buffers again and again
    /// prepares it once and saves the planning and the bind groups each time.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        outputs: Outputs<'_>,
    ) -> Result<EncodedSplit> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        pollster::block_on(self.encode_async(encoder, plan, dtype, input, outputs))
    }

    /// [`GpuSplitter::encode`] for async callers: wgpu's error scopes are awaited, never
    /// blocked on, so it runs under any executor and on WebGPU.
    pub async fn encode_async(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        outputs: Outputs<'_>,
    ) -> Result<EncodedSplit> {
        self.prepare_async(plan, dtype, input, outputs)
            .await?
            .encode_once(encoder)
            .await
    }

    /// Checks both regions of a split of `plan` placed by `layout`: usage, alignment and size
    /// of each, and two different buffers.
    pub(crate) fn check_regions(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
        layout: &OutputLayout,
    ) -> Result<()> {
        self.check_input(input, plan, dtype)?;
        let align = self.limits.min_storage_buffer_offset_alignment as u64;
        output.check(
            "output",
            layout.total_bytes,
            "its last output's end in the layout, rounded up to 4",
            wgpu::BufferUsages::STORAGE,
            align,
        )?;
        if input.buffer == output.buffer {
            // wgpu refuses both at `finish`, through the encoder's device's default handler
            // (a panic): a buffer bound as read-only and as writable storage in one dispatch,
            // and a copy from a buffer into itself.
            return Err(SplitError::BadBuffer(
                "the input and output regions are in one buffer; a split reads one buffer and \
                 writes another (wgpu binds a buffer read-only or writable in one dispatch, \
                 and copies between two buffers)"
                    .into(),
            ));
        }
        Ok(())
    }

    /// Checks the input region of a split of `plan`: usage STORAGE, the storage offset
    /// alignment, and [`input_binding_size`] bytes.
    pub(crate) fn check_input(
        &self,
        input: &BufferRegion<'_>,
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<()> {
        let align = self.limits.min_storage_buffer_offset_alignment as u64;
        let needed = input_binding_size(plan, dtype)?;
        let rule = format!(
            "its {} bytes rounded up to 4",
            byte_count(plan.input_shape(), dtype)?
        );
        input.check("input", needed, &rule, wgpu::BufferUsages::STORAGE, align)
    }

    /// The route for the outputs of `bytes`, placed by `layout` in `output`, with the scratch
    /// texture the texture route needs.
    pub(crate) async fn choose_route(
        &self,
        bytes: &ByteRows,
        layout: &OutputLayout,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> Result<(Route, Option<wgpu::Texture>)> {
        let regions = self.regions(input, output);
        let caps = self.caps();
        let route = route::choose(bytes, layout, &caps, &regions)?;
        match self.scratch_for(&route).await {
            Ok(scratch) => Ok((route, scratch)),
            // A scratch texture the device cannot give (out of memory) leaves the others.
            Err(_) => Ok((
                route::choose(bytes, layout, &caps.without_textures(), &regions)?,
                None,
            )),
        }
    }

    /// The scratch texture `route` needs, none for the other routes; an error where the device
    /// cannot give it.
    pub(crate) async fn scratch_for(&self, route: &Route) -> Result<Option<wgpu::Texture>> {
        match route {
            Route::Texture(t) => {
                let (width, height) = t.scratch;
                Ok(Some(self.scratch.get(&self.device, width, height).await?))
            }
            _ => Ok(None),
        }
    }

    /// What `input` and `output` allow the route.
    pub(crate) fn regions(&self, input: &BufferRegion<'_>, output: &BufferRegion<'_>) -> Regions {
        Regions {
            input_offset: input.offset,
            output_offset: output.offset,
            copies_allowed: input.allows(wgpu::BufferUsages::COPY_SRC)
                && output.allows(wgpu::BufferUsages::COPY_DST),
        }
    }

    /// What this device and these settings offer the route.
    pub(crate) fn caps(&self) -> DeviceCaps {
        // Copy commands are memcpy on CPU adapters, far faster than a shader there.
        let cpu = self.info.device_type == wgpu::DeviceType::Cpu;
        DeviceCaps {
            window_limit: window_limit(&self.limits),
            offset_align: self.limits.min_storage_buffer_offset_alignment as u64,
            max_texture_dimension: self.limits.max_texture_dimension_2d,
            buffer_copies: match self.route {
                RouteChoice::Auto => cpu,
                RouteChoice::Gather => false,
                RouteChoice::Copies => true,
            },
            texture_copies: match self.route {
                RouteChoice::Auto => self.texture_copies.unwrap_or(cpu),
                RouteChoice::Gather => false,
                RouteChoice::Copies => self.texture_copies.unwrap_or(true),
            },
            texture_command_cost: route::texture_command_cost(self.info.backend),
            gather: self.gather_tuning,
        }
    }
}
