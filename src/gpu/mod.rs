//! The GPU path: one device, one cached pipeline, one gather dispatch per split (copy
//! commands instead where they are faster: long contiguous runs everywhere, strided rows
//! through a texture on CPU adapters; pieces past one binding).
//!
//! [`GpuSplitter`] owns (a handle to) a device and its compiled pipeline. Use
//! [`GpuSplitter::run`] to go from host bytes to host bytes, or [`GpuSplitter::encode`] to
//! record a split on your own buffers into your own command encoder.

pub mod adapter;
pub mod layout;
pub mod strided;
mod tables;

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::reference;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;
use adapter::BackendChoice;
use layout::{OutputLayout, OutputRange};
use std::num::NonZeroU64;
use std::sync::Arc;
use strided::{Scratch, TexturePlan};
use tables::TableCache;

/// The gather shader, `shaders/split_gather.wgsl`.
pub const SHADER_SOURCE: &str = include_str!("../../shaders/split_gather.wgsl");

/// Invocations per workgroup; must match `WORKGROUP_SIZE` in the shader.
const WORKGROUP_SIZE: u64 = 64;

/// Most 16-byte units one invocation writes, by device type.
/// On CPU adapters (lavapipe, llvmpipe) every invocation carries a fixed cost, so long runs
/// win: 128 units reached the vec4 copy kernel's rate there, 8 reached 60 to 70% of it. GPUs want
/// short runs, so neighbouring invocations touch neighbouring memory.
fn max_units_per_invocation(device_type: wgpu::DeviceType) -> u32 {
    match device_type {
        wgpu::DeviceType::Cpu => 128,
        _ => 4,
    }
}

/// A buffer and a byte offset into it, for [`GpuSplitter::encode`].
#[derive(Debug, Clone, Copy)]
pub struct BufferRegion<'a> {
    /// The buffer.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset; a multiple of the device's `min_storage_buffer_offset_alignment`.
    pub offset: u64,
}

/// What [`GpuSplitter::encode`] recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EncodedSplit {
    /// Where each output lies in the output region.
    pub layout: OutputLayout,
    /// Compute dispatches recorded.
    pub dispatches: u32,
    /// Buffer-to-buffer copy commands recorded.
    pub copies: u32,
}

/// How copy commands move a split's outputs (see [`GpuSplitter::encode`]).
enum CopyRoute {
    /// `(source offset, destination offset, size)` buffer-to-buffer copies.
    Buffer(Vec<(u64, u64, u64)>),
    /// Bands of rows through the scratch texture.
    Texture(TexturePlan, wgpu::Texture),
}

/// A device, its queue and the split pipeline compiled for it (once, at construction).
#[derive(Debug, Clone)]
pub struct GpuSplitter {
    device: wgpu::Device,
    queue: wgpu::Queue,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    max_units_per_invocation: u32,
    texture_copies: bool,
    bind_group_layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
    /// Dispatch tables already on the device; shared by clones.
    tables: Arc<TableCache>,
    /// The textures strided copies go through; shared by clones.
    scratch: Arc<Scratch>,
}

/// Runs `f` inside validation, out-of-memory and internal error scopes and turns whatever
/// they catch into [`SplitError::Device`]; wgpu's default handler would panic instead.
pub(crate) fn scoped<T>(device: &wgpu::Device, what: &str, f: impl FnOnce() -> T) -> Result<T> {
    let internal = device.push_error_scope(wgpu::ErrorFilter::Internal);
    let oom = device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
    let validation = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let out = f();
    // Scopes pop in reverse order of their pushes.
    let errors = [
        pollster::block_on(validation.pop()),
        pollster::block_on(oom.pop()),
        pollster::block_on(internal.pop()),
    ];
    match errors.into_iter().flatten().next() {
        Some(e) => Err(SplitError::Device(format!("{what}: {e}"))),
        None => Ok(out),
    }
}

impl GpuSplitter {
    /// Uses a device the caller already has and compiles the pipeline on it.
    ///
    /// `info` names the adapter in reports; pass `adapter.get_info()`.
    pub fn new(device: wgpu::Device, queue: wgpu::Queue, info: wgpu::AdapterInfo) -> Result<Self> {
        let limits = device.limits();
        let max_units_per_invocation = max_units_per_invocation(info.device_type);
        // Copy commands are memcpy on CPU adapters, far faster than a shader there; on GPUs a
        // texture round trip moves every byte twice.
        let texture_copies = info.device_type == wgpu::DeviceType::Cpu;
        let (bind_group_layout, pipeline) =
            scoped(&device, "compiling the split pipeline", || {
                Self::build_pipeline(&device)
            })?;
        Ok(Self {
            device,
            queue,
            info,
            limits,
            max_units_per_invocation,
            texture_copies,
            bind_group_layout,
            pipeline,
            tables: Arc::default(),
            scratch: Arc::default(),
        })
    }

    /// Opens the best adapter of `choice` with its full limits and compiles the pipeline.
    pub fn open(choice: BackendChoice) -> Result<Self> {
        let (adapter, device, queue) = adapter::open_device(choice)?;
        // Errors are captured by scopes around every call; a stray one is reported, not panicked on.
        device.on_uncaptured_error(std::sync::Arc::new(|e: wgpu::Error| {
            eprintln!("wgpu-split: uncaptured wgpu error: {e}")
        }));
        Self::new(device, queue, adapter.get_info())
    }

    /// [`GpuSplitter::open`] with the backend from the `WGPU_SPLIT_BACKEND` variable.
    pub fn open_from_env() -> Result<Self> {
        Self::open(BackendChoice::from_env()?)
    }

    fn build_pipeline(device: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::ComputePipeline) {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("split_gather.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
        });
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty,
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let storage = |read_only| wgpu::BufferBindingType::Storage { read_only };
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("split_gather"),
            entries: &[
                entry(0, storage(true)),
                entry(1, storage(true)),
                entry(2, storage(true)),
                entry(3, storage(false)),
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("split_gather"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("split_gather"),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        (bind_group_layout, pipeline)
    }

    /// Sets the most 16-byte units one invocation writes (at least 1). The default suits the
    /// device type; benchmark harnesses may tune it. Takes effect at the next split.
    pub fn with_max_units_per_invocation(mut self, units: u32) -> Self {
        self.max_units_per_invocation = units.max(1);
        self
    }

    /// Whether strided outputs whose rows are multiples of 256 bytes may move with copy
    /// commands through a scratch texture ([`strided`]) instead of the gather dispatch. On by
    /// default on CPU adapters, where it is 3 to 5x faster; off on GPUs.
    pub fn with_texture_copies(mut self, enabled: bool) -> Self {
        self.texture_copies = enabled;
        self
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// The adapter's name, backend, device type and driver.
    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The device's limits.
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Places the outputs of `plan` at the device's storage offset alignment, so each output
    /// can be bound on its own by a following kernel.
    pub fn output_layout(&self, plan: &SplitPlan, dtype: DType) -> Result<OutputLayout> {
        OutputLayout::new(
            plan,
            dtype,
            self.limits.min_storage_buffer_offset_alignment as u64,
        )
    }

    /// The layout [`GpuSplitter::run`] reads back: outputs packed at 16 bytes (memory in
    /// proportion to the data, even for 100,000 tiny outputs) where one dispatch covers the
    /// split, bindable offsets where it must be cut into pieces. Fails before any allocation
    /// if the input or the outputs exceed the device's `max_buffer_size`.
    pub fn host_layout(&self, plan: &SplitPlan, dtype: DType) -> Result<OutputLayout> {
        let in_size = Self::input_binding_size(plan, dtype)?;
        let packed = OutputLayout::new(plan, dtype, layout::UNIT_BYTES)?;
        let window = self
            .limits
            .max_storage_buffer_binding_size
            .min(layout::MAX_WINDOW);
        let layout = if in_size <= window && packed.total_bytes <= window {
            packed
        } else {
            self.output_layout(plan, dtype)?
        };
        for (what, bytes) in [("input", in_size), ("output region", layout.total_bytes)] {
            if bytes > self.limits.max_buffer_size {
                return Err(SplitError::TooLarge(format!(
                    "{what} of {bytes} bytes exceeds the device's max_buffer_size of {} bytes",
                    self.limits.max_buffer_size
                )));
            }
        }
        Ok(layout)
    }

    /// Bytes the input buffer must hold from its offset: the input rounded up to a word.
    pub fn input_binding_size(plan: &SplitPlan, dtype: DType) -> Result<u64> {
        Ok((byte_count(plan.input_shape(), dtype)? as u64).next_multiple_of(4))
    }

    fn check_region(
        &self,
        name: &str,
        region: &BufferRegion<'_>,
        needed: u64,
        usage: wgpu::BufferUsages,
    ) -> Result<()> {
        let align = self.limits.min_storage_buffer_offset_alignment as u64;
        if !region.buffer.usage().contains(usage) {
            return Err(SplitError::BadBuffer(format!(
                "{name} buffer has usage {:?}; it needs {usage:?}",
                region.buffer.usage()
            )));
        }
        if !region.offset.is_multiple_of(align) {
            return Err(SplitError::BadBuffer(format!(
                "{name} offset {} is not a multiple of the device's storage offset alignment {align}",
                region.offset
            )));
        }
        let end = region.offset.checked_add(needed);
        if end.is_none_or(|end| end > region.buffer.size()) {
            return Err(SplitError::BadBuffer(format!(
                "{name} buffer holds {} bytes; the split needs {needed} bytes from offset {}",
                region.buffer.size(),
                region.offset
            )));
        }
        Ok(())
    }

    /// Records the split into `encoder` without submitting it.
    ///
    /// `input` holds the C-order input bytes (at least [`GpuSplitter::input_binding_size`]
    /// bytes from its offset, usage STORAGE). `output` receives every output at the offsets of
    /// the returned layout, relative to `output.offset` (at least `layout.total_bytes` bytes,
    /// usage STORAGE). Bytes between outputs are padding and may be overwritten.
    ///
    /// Normally this is one compute dispatch for all outputs. When the buffers allow copies
    /// (COPY_SRC on the input, COPY_DST on the output), copy commands replace it where they are
    /// cheaper: `copy_buffer_to_buffer` where the outputs are a few long, word-aligned
    /// contiguous runs of the input (whole outputs, or output rows), and on CPU adapters a
    /// buffer-to-texture-to-buffer round trip per band of rows where rows and stride are
    /// multiples of 256 bytes ([`strided`]). Tensors larger than one storage binding are
    /// dispatched in pieces. Nothing is recorded when every output is empty.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        output: BufferRegion<'_>,
    ) -> Result<EncodedSplit> {
        let layout = self.output_layout(plan, dtype)?;
        self.encode_into(encoder, plan, dtype, input, output, layout)
    }

    /// [`GpuSplitter::encode`] with the outputs placed by `layout`.
    fn encode_into(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &SplitPlan,
        dtype: DType,
        input: BufferRegion<'_>,
        output: BufferRegion<'_>,
        layout: OutputLayout,
    ) -> Result<EncodedSplit> {
        let in_size = Self::input_binding_size(plan, dtype)?;
        self.check_region("input", &input, in_size, wgpu::BufferUsages::STORAGE)?;
        self.check_region(
            "output",
            &output,
            layout.total_bytes,
            wgpu::BufferUsages::STORAGE,
        )?;
        if let Some(route) = self.copy_route(plan, dtype, &layout, &input, &output)? {
            let copies = scoped(&self.device, "encoding the split copies", || match &route {
                CopyRoute::Buffer(copies) => {
                    for &(src, dst, size) in copies {
                        encoder.copy_buffer_to_buffer(
                            input.buffer,
                            input.offset + src,
                            output.buffer,
                            output.offset + dst,
                            size,
                        );
                    }
                    copies.len() as u64
                }
                CopyRoute::Texture(t, scratch) => {
                    strided::encode(encoder, t, scratch, input.buffer, output.buffer);
                    t.commands()
                }
            })?;
            return Ok(EncodedSplit {
                layout,
                dispatches: 0,
                copies: copies as u32,
            });
        }
        let window_limit = self
            .limits
            .max_storage_buffer_binding_size
            .min(layout::MAX_WINDOW);
        let offset_align = self.limits.min_storage_buffer_offset_alignment as u64;
        let max_units = self.max_units_per_invocation as u64;
        let pieces =
            layout::gather_pieces(plan, dtype, &layout, max_units, window_limit, offset_align)?;
        if pieces.is_empty() {
            // Every output is empty: nothing to record.
            return Ok(EncodedSplit {
                layout,
                dispatches: 0,
                copies: 0,
            });
        }
        let grids = pieces
            .iter()
            .map(|p| self.grid(p.params.num_invocations as u64, WORKGROUP_SIZE))
            .collect::<Result<Vec<_>>>()?;
        let table_bytes: Vec<Vec<u8>> = pieces.iter().map(layout::Piece::table_bytes).collect();
        let tables = self.tables.buffers(&self.device, &table_bytes)?;
        scoped(&self.device, "encoding the split", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("split_gather"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            for ((piece, table), &(x, y)) in pieces.iter().zip(&tables).zip(&grids) {
                let bind_group = self.bind_piece(piece, table, &input, &output);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(x, y, 1);
            }
        })?;
        Ok(EncodedSplit {
            layout,
            dispatches: pieces.len() as u32,
            copies: 0,
        })
    }

    /// The bind group of one dispatch: its table, and its windows of the caller's buffers.
    fn bind_piece(
        &self,
        piece: &layout::Piece,
        table: &wgpu::Buffer,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> wgpu::BindGroup {
        let window = |buffer, offset, size| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset,
                size: NonZeroU64::new(size),
            })
        };
        // The vec4 view of the source covers its whole 16-byte words. A window under 16 bytes
        // has no vec4 entries, but the binding must still be valid: the table (at least 48
        // bytes) stands in.
        let vec4_size = piece.src_size / 16 * 16;
        let src4 = if vec4_size > 0 {
            window(input.buffer, input.offset + piece.src_offset, vec4_size)
        } else {
            table.as_entire_binding()
        };
        self.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("split_gather"),
            layout: &self.bind_group_layout,
            entries: &[
                wgpu::BindGroupEntry {
                    binding: 0,
                    resource: table.as_entire_binding(),
                },
                wgpu::BindGroupEntry {
                    binding: 1,
                    resource: window(
                        input.buffer,
                        input.offset + piece.src_offset,
                        piece.src_size,
                    ),
                },
                wgpu::BindGroupEntry {
                    binding: 2,
                    resource: src4,
                },
                wgpu::BindGroupEntry {
                    binding: 3,
                    resource: window(
                        output.buffer,
                        output.offset + piece.dst_offset,
                        piece.dst_size,
                    ),
                },
            ],
        })
    }

    /// The copy commands that replace the dispatch, if any route applies. Each command has a
    /// fixed cost, a texture copy's two to four times a buffer copy's
    /// ([`strided::texture_command_cost`]), so the cheaper plan wins (whole-output copies, at
    /// most one per output, always do).
    fn copy_route(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        layout: &OutputLayout,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> Result<Option<CopyRoute>> {
        let copies = self.copy_plan(plan, dtype, layout, input, output)?;
        let through_texture = if self.texture_copies && Self::copies_allowed(input, output) {
            strided::texture_plan(
                plan,
                dtype,
                layout,
                input.offset,
                output.offset,
                self.limits.max_texture_dimension_2d,
            )?
        } else {
            None
        };
        let through_texture = through_texture.filter(|t| {
            let cost = strided::texture_command_cost(self.info.backend);
            copies
                .as_ref()
                .is_none_or(|c| t.commands() * cost < c.len() as u64)
        });
        if let Some(t) = through_texture {
            // A scratch texture the device cannot give (out of memory) leaves the other routes.
            let (width, height) = t.scratch;
            if let Ok(scratch) = self.scratch.get(&self.device, width, height) {
                return Ok(Some(CopyRoute::Texture(t, scratch)));
            }
        }
        Ok(copies.map(CopyRoute::Buffer))
    }

    /// `(source offset, destination offset, size)` copies that move every output, when the
    /// outputs are a few long, word-aligned contiguous runs of the input and the buffers allow
    /// copies. A run is a whole output where its rows lie back to back in the input (a split of
    /// the outermost axis; neighbouring outputs with no padding between them share one run),
    /// else one output row. `None` when a dispatch is the better choice.
    fn copy_plan(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        layout: &OutputLayout,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> Result<Option<Vec<(u64, u64, u64)>>> {
        /// Each command has a fixed cost: past this many, one dispatch wins.
        const MAX_COPIES: u64 = 64;
        /// Below this average run, one dispatch wins.
        const MIN_AVERAGE_COPY: u64 = 1 << 10;
        let usable = Self::copies_allowed(input, output)
            && input.offset.is_multiple_of(4)
            && output.offset.is_multiple_of(4);
        if !usable {
            return Ok(None);
        }
        let (inner_bytes, stride) = plan.row_bytes(dtype.size())?;
        let nonempty = || {
            plan.chunks()
                .iter()
                .zip(&layout.ranges)
                .filter(|(_, r)| r.size > 0)
        };
        let copies: Vec<(u64, u64, u64)> = match self.contiguous_ranges(plan, dtype)? {
            // Rounding up to a word reads at most 3 bytes past an output, which exist (the input
            // region is rounded up too), and writes them into the output's padding. Outputs that
            // follow each other in both buffers (no padding between them: a sequence of
            // aligned slices) merge into one copy.
            Some(views) => {
                let mut merged: Vec<(u64, u64, u64)> = Vec::new();
                for (v, r) in views.iter().zip(&layout.ranges).filter(|(_, r)| r.size > 0) {
                    let size = r.size.next_multiple_of(4);
                    match merged.last_mut() {
                        Some((src, dst, len))
                            if *src + *len == v.offset && *dst + *len == r.offset =>
                        {
                            *len += size
                        }
                        _ => merged.push((v.offset, r.offset, size)),
                    }
                }
                merged
            }
            // Otherwise one run per output row; count before building.
            None => {
                if nonempty().count() as u64 * plan.outer() as u64 > MAX_COPIES {
                    return Ok(None);
                }
                nonempty()
                    .flat_map(|(c, r)| {
                        let (start, row) =
                            (c.start as u64 * inner_bytes, c.len as u64 * inner_bytes);
                        (0..plan.outer() as u64)
                            .map(move |i| (i * stride + start, r.offset + i * row, row))
                    })
                    .collect()
            }
        };
        let count = copies.len() as u64;
        let total: u64 = nonempty().map(|(_, r)| r.size).sum();
        if count == 0 || count > MAX_COPIES || total / count < MIN_AVERAGE_COPY {
            return Ok(None);
        }
        let aligned = copies
            .iter()
            .all(|&(src, _, size)| src.is_multiple_of(4) && size.is_multiple_of(4));
        Ok(aligned.then_some(copies))
    }

    /// Whether the caller's buffers allow copy commands (COPY_SRC in, COPY_DST out).
    fn copies_allowed(input: &BufferRegion<'_>, output: &BufferRegion<'_>) -> bool {
        input.buffer.usage().contains(wgpu::BufferUsages::COPY_SRC)
            && output.buffer.usage().contains(wgpu::BufferUsages::COPY_DST)
    }

    /// Each output's byte range in the input, when every output is one contiguous range.
    fn contiguous_ranges(
        &self,
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<Option<Vec<OutputRange>>> {
        let (inner_bytes, _) = plan.row_bytes(dtype.size())?;
        let contiguous =
            plan.outer() <= 1 || plan.chunks().iter().filter(|c| c.len > 0).count() <= 1;
        if !contiguous {
            return Ok(None);
        }
        plan.chunks()
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let offset = if c.len == 0 {
                    0
                } else {
                    c.start as u64 * inner_bytes
                };
                Ok(OutputRange {
                    offset,
                    size: plan.output_bytes(i, dtype.size())?,
                })
            })
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Where each output lies inside the input, when every output is one contiguous range of
    /// it starting at the device's storage offset alignment: the caller can then bind the
    /// outputs as views of the input and move no bytes at all. `None` otherwise.
    pub fn output_views(&self, plan: &SplitPlan, dtype: DType) -> Result<Option<Vec<OutputRange>>> {
        let align = self.limits.min_storage_buffer_offset_alignment as u64;
        Ok(self
            .contiguous_ranges(plan, dtype)?
            .filter(|views| views.iter().all(|v| v.offset.is_multiple_of(align))))
    }

    /// Workgroup grid for `invocations` in workgroups of `workgroup_size`: as wide as the
    /// device allows, then folded into rows.
    pub(crate) fn grid(&self, invocations: u64, workgroup_size: u64) -> Result<(u32, u32)> {
        let groups = invocations.div_ceil(workgroup_size);
        let max = self.limits.max_compute_workgroups_per_dimension as u64;
        let x = groups.min(max);
        let y = groups.div_ceil(x);
        if y > max {
            return Err(SplitError::TooLarge(format!(
                "{groups} workgroups exceed {max} x {max}, the device's dispatch grid"
            )));
        }
        Ok((x as u32, y as u32))
    }

    /// Uploads `input`, splits it as `plan` says and reads every output back.
    pub fn run(&self, plan: &SplitPlan, input: &HostTensor) -> Result<Vec<HostTensor>> {
        Ok(self.run_detailed(plan, input)?.0)
    }

    /// [`GpuSplitter::run`], also returning what was recorded (layout, dispatches, copies).
    pub fn run_detailed(
        &self,
        plan: &SplitPlan,
        input: &HostTensor,
    ) -> Result<(Vec<HostTensor>, EncodedSplit)> {
        let dtype = input.dtype();
        plan.check_input_shape(input.shape())?;
        let layout = self.host_layout(plan, dtype)?;
        let in_size = Self::input_binding_size(plan, dtype)?.max(4);
        let (in_buf, out_buf, readback) = scoped(&self.device, "allocating buffers", || {
            let in_buf = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("split input"),
                size: in_size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            });
            let out_buf = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("split outputs"),
                size: layout.total_bytes,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let readback = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("split readback"),
                size: layout.total_bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (in_buf, out_buf, readback)
        })?;
        {
            let mut view = in_buf
                .get_mapped_range_mut(..)
                .map_err(|e| SplitError::Device(format!("mapping the input buffer: {e}")))?;
            view.slice(..input.bytes().len())
                .copy_from_slice(input.bytes());
        }
        in_buf.unmap();

        let mut encoder = self.device.create_command_encoder(&Default::default());
        let input_region = BufferRegion {
            buffer: &in_buf,
            offset: 0,
        };
        let output_region = BufferRegion {
            buffer: &out_buf,
            offset: 0,
        };
        let encoded = self.encode_into(
            &mut encoder,
            plan,
            dtype,
            input_region,
            output_region,
            layout,
        )?;
        let total = encoded.layout.total_bytes;
        scoped(&self.device, "submitting the split", || {
            encoder.copy_buffer_to_buffer(&out_buf, 0, &readback, 0, total);
            self.queue.submit([encoder.finish()]);
        })?;
        let outputs = self.read_back(&readback, |bytes| {
            encoded.layout.outputs_from(bytes, plan, dtype)
        })?;
        Ok((outputs, encoded))
    }

    /// Maps a MAP_READ buffer after the queue's work and hands its bytes to `read`, which copies
    /// out what it needs (the mapped bytes are not copied as a whole first).
    fn read_back<T>(
        &self,
        buffer: &wgpu::Buffer,
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| SplitError::Device(format!("waiting for the split: {e}")))?;
        rx.recv()
            .map_err(|_| SplitError::Device("the device dropped the readback".into()))?
            .map_err(|e| SplitError::Device(format!("mapping the readback buffer: {e}")))?;
        let result = {
            let view = buffer
                .get_mapped_range(..)
                .map_err(|e| SplitError::Device(format!("reading the readback buffer: {e}")))?;
            read(&view)
        };
        buffer.unmap();
        result
    }

    /// [`GpuSplitter::run`], then checks every output byte for byte against the CPU reference.
    pub fn run_verified(&self, plan: &SplitPlan, input: &HostTensor) -> Result<Vec<HostTensor>> {
        let gpu = self.run(plan, input)?;
        let cpu = reference::split_tensor(input, plan)?;
        compare_outputs(&gpu, &cpu)?;
        Ok(gpu)
    }
}

/// Byte-for-byte comparison of two output lists; the error names the first difference.
pub fn compare_outputs(got: &[HostTensor], want: &[HostTensor]) -> Result<()> {
    if got.len() != want.len() {
        return Err(SplitError::Mismatch(format!(
            "{} outputs, expected {}",
            got.len(),
            want.len()
        )));
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g.shape() != w.shape() {
            return Err(SplitError::Mismatch(format!(
                "output {i} has shape {:?}, expected {:?}",
                g.shape(),
                w.shape()
            )));
        }
        if let Some(b) = g.bytes().iter().zip(w.bytes()).position(|(a, b)| a != b) {
            return Err(SplitError::Mismatch(format!(
                "output {i} differs at byte {b}: {:#04x}, expected {:#04x}",
                g.bytes()[b],
                w.bytes()[b]
            )));
        }
    }
    Ok(())
}
