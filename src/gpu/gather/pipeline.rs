//! Recording the gather: the pipelines (one per entry point, made once per device when a
//! dispatch first needs it), one bind group per dispatch, and the dispatches themselves.

use super::abi::{ProgramKey, UNIT_BYTES};
use super::builds::{gather_source, tail_start, Hook, InputBindings, OutputBindings};
use super::dispatches::Dispatch;
use crate::error::{Result, SplitError};
#[cfg(feature = "bench")]
use crate::gpu::device::scoped;
use crate::gpu::device::scoped_async;
use crate::gpu::placement::BufferRegion;
use std::num::NonZeroU64;
use std::sync::{Arc, OnceLock};

/// The gather shader compiled for one device, with its bind group layout; each entry point's
/// pipeline is made the first time a dispatch needs it.
#[derive(Debug, Clone)]
pub struct GatherPipeline {
    module: wgpu::ShaderModule,
    bind_group_layout: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
    /// One pipeline per program ([`ProgramKey::index`]), made on first use and shared by
    /// clones: a CPU adapter never runs the GPUs' schedules, nor a GPU most of the runs, and
    /// compiling every pipeline is most of the time a splitter takes to open.
    pipelines: Arc<[OnceLock<wgpu::ComputePipeline>; ProgramKey::COUNT]>,
    /// The trace build's record buffer, bound after the output bindings (binding 5):
    /// [`GatherPipeline::with_trace`] (`bench` feature).
    #[cfg(feature = "bench")]
    trace: Option<wgpu::Buffer>,
    /// Input bindings: 1, or more in the multi-input build.
    src_bindings: u32,
    /// Output bindings: 1, or more in the multi-output build.
    dst_bindings: u32,
    /// Bindings of each output buffer: 2 (units and tail), or 1 in the words-only build.
    dst_views: u32,
    /// The device's storage offset alignment, which places an output window's tail.
    offset_align: u64,
    /// Bound in place of empty views: a 16-byte buffer for an input's vec4s, and a slot per
    /// output binding's units or tail (one unit, read as none), no two sharing a range.
    stand_ins: [wgpu::Buffer; 2],
}

/// Storage buffers the shader binds per stage: the table, the input as words and as vec4s,
/// the output's units and tail. A device that allows fewer runs the words-only build.
pub const STORAGE_BINDINGS: u32 = 5;

/// The buffers a gather's dispatches read (their inputs) or write (their outputs).
#[derive(Debug, Clone, Copy)]
pub enum Windows<'a> {
    /// One region; each dispatch binds its own window of it.
    Region(&'a BufferRegion<'a>),
    /// One window (region and size) per binding of the multi-input or multi-output build,
    /// the same for every dispatch.
    PerBinding(&'a [(BufferRegion<'a>, u64)]),
}

impl<'a> Windows<'a> {
    /// Bindings they take.
    fn count(&self) -> u32 {
        match self {
            Windows::Region(_) => 1,
            Windows::PerBinding(w) => w.len() as u32,
        }
    }

    /// Buffer, offset and size of each binding; a dispatch's own window is `offset .. offset
    /// + size` of the region.
    fn bound(&self, offset: u64, size: u64) -> Vec<(&'a wgpu::Buffer, u64, u64)> {
        match *self {
            Windows::Region(region) => vec![(region.buffer, region.offset + offset, size)],
            Windows::PerBinding(windows) => windows
                .iter()
                .map(|(region, size)| (region.buffer, region.offset, *size))
                .collect(),
        }
    }
}

/// One gather dispatch bound to its buffers ([`GatherPipeline::bind`]): recorded by
/// [`record_bound`], as often as wanted.
#[derive(Debug, Clone)]
pub struct BoundDispatch {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    grid: (u32, u32),
}

/// Records `bound` into one compute pass of `encoder`; a device error (a buffer destroyed
/// since it was bound, for one) becomes [`SplitError::Device`].
pub async fn record_bound(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    bound: &[BoundDispatch],
) -> Result<()> {
    scoped_async(device, "encoding the split", || {
        record_unscoped(encoder, bound)
    })
    .await
}

/// [`record_bound`] in the caller's error scopes.
pub(crate) fn record_unscoped(encoder: &mut wgpu::CommandEncoder, bound: &[BoundDispatch]) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("split_gather"),
        timestamp_writes: None,
    });
    for b in bound {
        pass.set_pipeline(&b.pipeline);
        pass.set_bind_group(0, &b.bind_group, &[]);
        pass.dispatch_workgroups(b.grid.0, b.grid.1, 1);
    }
}

impl GatherPipeline {
    /// Compiles the shader on `device`: the words-only build ([`OutputBindings::WordsOnly`])
    /// where the device allows fewer than [`STORAGE_BINDINGS`] storage buffers per shader
    /// stage, else the one that binds each output window's units and tail
    /// ([`OutputBindings::UnitsAndTail`]), in ranges that do not overlap, as WebGPU asks. A
    /// device error becomes [`SplitError::Device`].
    pub async fn new(device: &wgpu::Device) -> Result<Self> {
        let words_only = device.limits().max_storage_buffers_per_shader_stage < STORAGE_BINDINGS;
        let (source, outputs) = if words_only {
            let outputs = OutputBindings::WordsOnly;
            let words = gather_source(InputBindings::One, outputs, Hook::Silent)?;
            (std::borrow::Cow::Owned(words), outputs)
        } else {
            (
                std::borrow::Cow::Borrowed(super::builds::shader_source()),
                OutputBindings::UnitsAndTail,
            )
        };
        scoped_async(device, "compiling the split pipeline", || {
            Self::build(device, &source, false, InputBindings::One, outputs)
        })
        .await
    }

    /// Compiles the build with `inputs` and `outputs`: the multi-output build
    /// ([`OutputBindings::Multi`]), whose dispatch writes into several buffers, or the
    /// multi-input one ([`InputBindings::Multi`]), whose join reads from several.
    pub async fn with_bindings(
        device: &wgpu::Device,
        inputs: InputBindings,
        outputs: OutputBindings,
    ) -> Result<Self> {
        let source = gather_source(inputs, outputs, Hook::Silent)?;
        let what =
            format!("compiling the split pipeline with {inputs:?} inputs and {outputs:?} outputs");
        scoped_async(device, &what, || {
            Self::build(device, &source, false, inputs, outputs)
        })
        .await
    }

    /// The build a multi-input join takes with this pipeline's outputs:
    /// [`OutputBindings::UnitsAndTail`], or [`OutputBindings::WordsOnly`] where this one binds
    /// each output once.
    pub fn single_output(&self) -> OutputBindings {
        if self.words_only() {
            OutputBindings::WordsOnly
        } else {
            OutputBindings::UnitsAndTail
        }
    }

    /// Compiles the trace build of the shader ([`Hook::Recording`]): the same shader, whose
    /// every global access also writes a record into the buffer at binding 5 that
    /// [`GatherPipeline::with_trace`] gives it. For the memory trace (`bench` feature).
    #[cfg(feature = "bench")]
    pub fn traced(device: &wgpu::Device) -> Result<Self> {
        let (inputs, outputs) = (InputBindings::One, OutputBindings::UnitsAndTail);
        let source = gather_source(inputs, outputs, Hook::Recording(5))?;
        scoped(device, "compiling the traced split pipeline", || {
            Self::build(device, &source, true, inputs, outputs)
        })
    }

    /// The trace build writing its records into `trace` (`bench` feature).
    #[cfg(feature = "bench")]
    pub fn with_trace(&self, trace: &wgpu::Buffer) -> Self {
        Self {
            trace: Some(trace.clone()),
            ..self.clone()
        }
    }

    /// Whether this pipeline binds each output once, as words (the words-only build).
    pub fn words_only(&self) -> bool {
        self.dst_views == 1
    }

    fn build(
        device: &wgpu::Device,
        source: &str,
        traced: bool,
        inputs: InputBindings,
        outputs: OutputBindings,
    ) -> Self {
        let src_bindings = inputs.count();
        let (dst_bindings, dst_views) = outputs.count_and_views();
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("split_gather.wgsl"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let entry = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        // The table, the inputs as words and as vec4s (read-only); the outputs as units and
        // as words; the trace build's records (`builds` gives the order).
        let read = 1 + 2 * src_bindings;
        let dst = dst_views * dst_bindings;
        let mut entries: Vec<_> = (0..read).map(|j| entry(j, true)).collect();
        entries.extend((0..dst).map(|j| entry(read + j, false)));
        if traced {
            entries.push(entry(read + dst, false));
        }
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("split_gather"),
            entries: &entries,
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("split_gather"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        let offset_align = device.limits().min_storage_buffer_offset_alignment as u64;
        let stand_in = |size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("split_gather stand-in"),
                size,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        let slots = 2 * dst_bindings as u64 * offset_align.max(UNIT_BYTES);
        Self {
            module,
            bind_group_layout,
            layout,
            pipelines: Arc::new(std::array::from_fn(|_| OnceLock::new())),
            #[cfg(feature = "bench")]
            trace: None,
            src_bindings,
            dst_bindings,
            dst_views,
            offset_align,
            stand_ins: [stand_in(UNIT_BYTES), stand_in(slots)],
        }
    }

    /// The pipeline of `key`, made now if no dispatch needed it before; call it inside an
    /// error scope.
    fn pipeline(&self, device: &wgpu::Device, key: ProgramKey) -> wgpu::ComputePipeline {
        let made = self.pipelines[key.index()].get_or_init(|| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(key.label()),
                layout: Some(&self.layout),
                module: &self.module,
                entry_point: Some(key.entry.name()),
                // The shader writes every word of workgroup memory before it reads it, so
                // zeroing it first (16 KiB per workgroup) would be pure cost.
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &key.constants(),
                    zero_initialize_workgroup_memory: false,
                },
                cache: None,
            })
        });
        made.clone()
    }

    /// Records `dispatches` (with their `tables`, one buffer each) into one compute pass of
    /// `encoder`, reading `inputs` and writing `outputs` ([`GatherPipeline::bind`], then
    /// [`record_bound`]). For the memory trace (`bench` feature).
    #[cfg(feature = "bench")]
    pub async fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        inputs: Windows<'_>,
        outputs: Windows<'_>,
    ) -> Result<()> {
        let bound = self
            .bind(device, dispatches, tables, inputs, outputs)
            .await?;
        record_bound(device, encoder, &bound).await
    }

    /// Binds `dispatches` (with their `tables`, one buffer each) to `inputs` and `outputs`:
    /// each one's pipeline, bind group and grid, ready to record as often as wanted. Fails,
    /// with nothing made, if a grid exceeds the device's limits, if `inputs` or `outputs`
    /// does not match the build's bindings, or if wgpu refuses a bind group.
    pub async fn bind(
        &self,
        device: &wgpu::Device,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        inputs: Windows<'_>,
        outputs: Windows<'_>,
    ) -> Result<Vec<BoundDispatch>> {
        let (reads, writes) = (inputs.count(), outputs.count());
        if (reads, writes) != (self.src_bindings, self.dst_bindings) {
            return Err(SplitError::Device(format!(
                "{reads} input and {writes} output windows for a build with {} input and {} \
                 output bindings",
                self.src_bindings, self.dst_bindings
            )));
        }
        let limits = device.limits();
        scoped_async(device, "binding the split", || {
            self.bind_unscoped(device, &limits, dispatches, tables, inputs, outputs)
        })
        .await?
    }

    /// [`GatherPipeline::bind`] with the device's `limits`, in the caller's error scopes
    /// (a prepared split moving its views binds and records in one).
    pub(crate) fn bind_unscoped(
        &self,
        device: &wgpu::Device,
        limits: &wgpu::Limits,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        inputs: Windows<'_>,
        outputs: Windows<'_>,
    ) -> Result<Vec<BoundDispatch>> {
        dispatches
            .iter()
            .zip(tables)
            .map(|(dispatch, table)| {
                Ok(BoundDispatch {
                    pipeline: self.pipeline(device, dispatch.program),
                    bind_group: self.bind_group(device, dispatch, table, inputs, outputs),
                    grid: super::blocks::grid(limits, dispatch.params.num_blocks as u64)?,
                })
            })
            .collect()
    }

    /// The bind group of one dispatch: its table, its windows of the caller's buffers, and
    /// the trace build's record buffer.
    fn bind_group(
        &self,
        device: &wgpu::Device,
        dispatch: &Dispatch,
        table: &wgpu::Buffer,
        inputs: Windows<'_>,
        outputs: Windows<'_>,
    ) -> wgpu::BindGroup {
        // Each input binding's words and vec4s view the same window (`abi::binding_bytes`);
        // each output window is bound as units, then as its tail (read-only views may share
        // a range, writable ones may not).
        let [read_stand_in, write_stand_in] = &self.stand_ins;
        let src = inputs.bound(dispatch.src_offset, dispatch.src_size);
        let mut resources = vec![table.as_entire_binding()];
        resources.extend(src.iter().map(|&(b, offset, size)| window(b, offset, size)));
        resources.extend(
            src.iter()
                .map(|&(b, offset, size)| vec4_window(b, offset, size, read_stand_in)),
        );
        let dst = outputs.bound(dispatch.dst_offset, dispatch.dst_size);
        if self.dst_views == 2 {
            // Each window's units, then each window's tail; an empty one binds its own slot
            // of the writable stand-in.
            let align = self.offset_align.max(UNIT_BYTES);
            let slot = |k: usize| window(write_stand_in, k as u64 * align, UNIT_BYTES);
            let mut tails = Vec::with_capacity(dst.len());
            for (k, &(b, at, size)) in dst.iter().enumerate() {
                let units = tail_start(size, self.offset_align);
                resources.push(match units {
                    0 => slot(k),
                    _ => window(b, at, units),
                });
                tails.push(match size - units {
                    0 => slot(dst.len() + k),
                    tail => window(b, at + units, tail),
                });
            }
            resources.extend(tails);
        } else {
            resources.extend(dst.iter().map(|&(b, offset, size)| window(b, offset, size)));
        }
        #[cfg(feature = "bench")]
        resources.extend(self.trace.as_ref().map(|t| t.as_entire_binding()));
        let entries: Vec<wgpu::BindGroupEntry> = resources
            .into_iter()
            .enumerate()
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource,
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("split_gather"),
            layout: &self.bind_group_layout,
            entries: &entries,
        })
    }
}

/// A storage binding of `size` bytes of `buffer` from `offset`.
fn window(buffer: &wgpu::Buffer, offset: u64, size: u64) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: NonZeroU64::new(size),
    })
}

/// [`window`] for a vec4 view: `stand_in` where the window holds less than one vec4 (WebGPU
/// binds no array of vec4s shorter than one). The shader never reads or writes such a view:
/// a tensor under 16 bytes holds no whole vec4.
fn vec4_window<'b>(
    buffer: &'b wgpu::Buffer,
    offset: u64,
    size: u64,
    stand_in: &'b wgpu::Buffer,
) -> wgpu::BindingResource<'b> {
    if size < UNIT_BYTES {
        stand_in.as_entire_binding()
    } else {
        window(buffer, offset, size)
    }
}
