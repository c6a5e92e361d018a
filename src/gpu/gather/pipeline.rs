//! The gather's pipelines: each build's module and bind group layout, and one pipeline per
//! entry point, made once per device when a dispatch first needs it; [`binding`] binds the
//! dispatches to the caller's buffers and records them.

use super::abi::{ProgramKey, UNIT_BYTES};
use super::binds::write_stand_in_bytes;
use super::builds::{
    single_output, Bodies, Build, GatherSource, InputBindings, OutputBindings, ScatterStores,
};
use crate::error::Result;
#[cfg(feature = "bench")]
use crate::gpu::device::scoped;
use crate::gpu::device::{limits_of, scoped_async};
use crate::gpu::direction::Direction;
use std::sync::{Arc, OnceLock};
#[cfg(feature = "bench")]
use wgsl_split::recording::Dispatched;

mod binding;
#[cfg(test)]
pub(crate) mod golden;

pub(crate) use binding::BufferOf;
pub use binding::{record_bound, BoundDispatch};

/// The gather shader compiled for one device, with its bind group layout; each program's
/// pipeline, and the module of its schedules (its channels' [`Bodies`] in its lane mapping),
/// is made the first time a dispatch needs it.
#[derive(Debug, Clone)]
pub struct GatherPipeline {
    /// The build's source, and its module with each [`Bodies`] in either lane mapping
    /// ([`module_index`]), made on first use (the one without channels in lanes at once, so
    /// that the build's errors come from its construction).
    source: Arc<GatherSource>,
    modules: Arc<[OnceLock<wgpu::ShaderModule>; 6]>,
    bind_group_layout: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
    /// One pipeline per program ([`ProgramKey::index`]), made on first use and shared by
    /// clones: a CPU adapter never runs the GPUs' schedules, nor a GPU most of the runs, and
    /// compiling every pipeline is most of the time a splitter takes to open.
    pipelines: Arc<[OnceLock<wgpu::ComputePipeline>; ProgramKey::COUNT]>,
    /// The trace build's record buffer, bound last (`Slot::Trace`):
    /// [`GatherPipeline::with_trace`] (`bench` feature).
    #[cfg(feature = "bench")]
    trace: Option<wgpu::Buffer>,
    /// What it binds: its inputs and outputs, the indexed rows' bindings, the side whose
    /// windows move (a node through views binds its parts' windows at dynamic offsets, which
    /// move without a new bind group).
    build: Build,
    /// Bound in place of empty views: a 16-byte buffer for an input's vec4s, and a slot per
    /// output binding's units or tail (one unit, read as none), no two sharing a range.
    stand_ins: [wgpu::Buffer; 2],
    /// The indexed build's status where the caller keeps none, and its scatter's destination
    /// where a dispatch scatters nothing.
    indexed_stand_ins: Option<Arc<[wgpu::Buffer; 2]>>,
    /// The pipeline cache its pipelines are made through, where the splitter has one
    /// ([`GatherPipeline::with_cache`]); the splitter's main build holds the splitter's, and
    /// the builds it compiles later take it from there.
    cache: Option<wgpu::PipelineCache>,
}

impl GatherPipeline {
    /// Compiles the shader on `device`: the words-only build ([`OutputBindings::WordsOnly`])
    /// where the device allows fewer storage buffers per shader stage than the other binds
    /// ([`Build::slots`]: the table, the input as words and as vec4s, the output's units and tail),
    /// else the one that binds the output window's units and tail
    /// ([`OutputBindings::Units`] of 1), in ranges that do not overlap, as WebGPU asks. A
    /// device error becomes [`SplitError::Device`](crate::SplitError::Device).
    pub async fn new(device: &wgpu::Device) -> Result<Self> {
        let outputs = single_output(&limits_of(&device.limits()));
        Self::with_bindings(device, InputBindings::ONE, outputs, None).await
    }

    /// Compiles the build with `inputs` and `outputs`: one whose dispatch writes into several
    /// buffers ([`OutputBindings::Units`]), or whose join reads from several
    /// ([`InputBindings`]); `moving`:
    /// the build of a node through views in that direction, whose parts' windows are bound at
    /// dynamic offsets ([`BoundDispatch::move_from`]).
    pub async fn with_bindings(
        device: &wgpu::Device,
        inputs: InputBindings,
        outputs: OutputBindings,
        moving: Option<Direction>,
    ) -> Result<Self> {
        let build = Build::plain(inputs, outputs, moving);
        let source = build.source()?;
        let what = format!(
            "compiling the split pipeline (input buffers: {}, outputs: {outputs:?})",
            inputs.count()
        );
        scoped_async(device, &what, || Self::compile(device, source, build)).await
    }

    /// Compiles the indexed build: one input and this device's single output, with the
    /// indices, the status and the scatter's destination (`Slot::Indices`, `Slot::Status`,
    /// `Slot::OutputScatter`) bound after them, for rows placed by indices
    /// (their recordings, `wgsl_split::rows` and `wgsl_split::paged`, bound by `bind_recorded`). A device whose shader
    /// stage holds fewer storage buffers is [`SplitError::Device`](crate::SplitError), naming
    /// both counts.
    pub async fn indexed(
        device: &wgpu::Device,
        stores: ScatterStores,
        convert: Option<super::builds::Convert>,
    ) -> Result<Self> {
        let limits = limits_of(&device.limits());
        let (inputs, outputs) = (InputBindings::ONE, single_output(&limits));
        let build = Build::indexed(stores, convert, &limits);
        if !super::builds::fits_stage(&limits, inputs, outputs, true) {
            return Err(crate::SplitError::Device(format!(
                "rows placed by indices bind {} storage buffers in a shader stage; this device \
                 allows {} (max_storage_buffers_per_shader_stage)",
                build.slots().len(),
                limits.max_storage_buffers_per_shader_stage
            )));
        }
        let source = build.source()?;
        scoped_async(device, "compiling the indexed rows' pipeline", || {
            Self::compile(device, source, build)
        })
        .await
    }

    /// The build a multi-input join takes with this pipeline's outputs:
    /// [`OutputBindings::Units`] of 1, or [`OutputBindings::WordsOnly`] where this one binds
    /// each output once.
    pub fn single_output(&self) -> OutputBindings {
        if self.words_only() {
            OutputBindings::WordsOnly
        } else {
            OutputBindings::Units(1)
        }
    }

    /// Compiles the trace build of the shader ([`Hook::Recording`](super::builds::Hook)): the same shader, whose
    /// every global access also writes a record into the buffer bound last that
    /// [`GatherPipeline::with_trace`] gives it. For the memory trace (`bench` feature).
    #[cfg(feature = "bench")]
    pub fn traced(device: &wgpu::Device) -> Result<Self> {
        let build = Build {
            hook: super::builds::Hook::Recording,
            ..Build::plain(InputBindings::ONE, OutputBindings::Units(1), None)
        };
        let source = build.source()?;
        scoped(device, "compiling the traced split pipeline", || {
            Self::compile(device, source, build)
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

    /// What it binds: the build its recordings name.
    pub fn build(&self) -> Build {
        self.build
    }

    /// Whether this pipeline binds each output once, as words (the words-only build).
    pub fn words_only(&self) -> bool {
        self.build.outputs == OutputBindings::WordsOnly
    }

    fn compile(device: &wgpu::Device, source: GatherSource, build: Build) -> Self {
        let (dst_bindings, _) = build.outputs.count_and_views();
        let modules: [OnceLock<wgpu::ShaderModule>; 6] = Default::default();
        let none = module_index(Bodies::None, false);
        let _ = modules[none].set(gather_module(device, &source.with(Bodies::None, false)));
        let entries: Vec<wgpu::BindGroupLayoutEntry> = (0..)
            .zip(build.layout())
            .map(|(binding, entry)| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Storage {
                        read_only: entry.read_only,
                    },
                    has_dynamic_offset: entry.dynamic,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
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
        let stand_in_slots = write_stand_in_bytes(dst_bindings, offset_align);
        Self {
            source: Arc::new(source),
            modules: Arc::new(modules),
            bind_group_layout,
            layout,
            pipelines: Arc::new(std::array::from_fn(|_| OnceLock::new())),
            #[cfg(feature = "bench")]
            trace: None,
            build,
            stand_ins: [stand_in(UNIT_BYTES), stand_in(stand_in_slots)],
            indexed_stand_ins: build
                .indexed
                .map(|_| Arc::new([stand_in(UNIT_BYTES), stand_in(UNIT_BYTES)])),
            cache: None,
        }
    }

    /// This build with its pipelines made through `cache` from now on (the splitter's
    /// [`GpuSplitter::with_pipeline_cache`](crate::GpuSplitter::with_pipeline_cache)).
    pub(crate) fn with_cache(self, cache: Option<wgpu::PipelineCache>) -> Self {
        Self { cache, ..self }
    }

    /// The pipeline cache its pipelines are made through, if any.
    pub(crate) fn cache(&self) -> Option<wgpu::PipelineCache> {
        self.cache.clone()
    }

    /// The pipeline of `key`, made now if no dispatch needed it before; call it inside an
    /// error scope.
    fn pipeline(&self, device: &wgpu::Device, key: ProgramKey) -> wgpu::ComputePipeline {
        let made = self.pipelines[key.index()].get_or_init(|| {
            let (bodies, runs) = (Bodies::of(key), key.lanes_in_runs);
            let module = self.modules[module_index(bodies, runs)]
                .get_or_init(|| gather_module(device, &self.source.with(bodies, runs)));
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(key.label()),
                layout: Some(&self.layout),
                module,
                entry_point: Some(key.entry.name()),
                // The shader has no workgroup memory to zero.
                compilation_options: wgpu::PipelineCompilationOptions {
                    constants: &key.constants(),
                    zero_initialize_workgroup_memory: false,
                },
                cache: self.cache.as_ref(),
            })
        });
        made.clone()
    }

    /// Records `recorded` (with its `table`) into one compute pass of `encoder`, each role's
    /// buffer `buffer(role)`'s ([`GatherPipeline::bind_recorded`], then [`record_bound`]).
    /// For the memory trace (`bench` feature).
    #[cfg(feature = "bench")]
    pub async fn record<'b>(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        recorded: &Dispatched,
        table: &wgpu::Buffer,
        buffer: &BufferOf<'_, 'b>,
    ) -> Result<()> {
        let bound =
            (self.bind_recorded(device, "traced dispatch", recorded, table, buffer)).await?;
        record_bound(device, encoder, "traced dispatch", &[bound]).await
    }
}

/// The place of the module with `bodies` in the lane mapping of runs (`runs`) or not.
fn module_index(bodies: Bodies, runs: bool) -> usize {
    2 * bodies as usize + usize::from(runs)
}

/// The gather's shader module. Natively it is trusted: compiled without loop bounding and
/// without guards on integer division (`create_shader_module_trusted`), which the H200 ran
/// a test kernel of unaligned rows at 0.95 TB/s with, against 0.63 with them. Buffer and
/// local-array accesses keep wgpu's checks. In a browser (WebGPU) it keeps every check.
fn gather_module(device: &wgpu::Device, source: &str) -> wgpu::ShaderModule {
    let desc = wgpu::ShaderModuleDescriptor {
        label: Some("split_gather.wgsl"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    };
    #[cfg(not(target_arch = "wasm32"))]
    {
        let checks = wgpu::ShaderRuntimeChecks {
            force_loop_bounding: false,
            int_div_checks: false,
            ..wgpu::ShaderRuntimeChecks::checked()
        };
        // SAFETY: every loop of the gather ends and every divisor is non-zero (unsigned
        // only, so no signed overflow), for every table that reaches a device and every
        // override constant a program key sets: docs/design.md, "Trusted modules", says why
        // loop by loop and divisor by divisor, and the gate (`gate::check`, in
        // `Dispatch::table_bytes`) refuses any table that breaks a precondition of them.
        unsafe { device.create_shader_module_trusted(desc, checks) }
    }
    #[cfg(target_arch = "wasm32")]
    device.create_shader_module(desc)
}
