//! [`GpuSplitter`]: a device, its compiled pipeline and the caches its clones share.

use crate::error::{Result, SplitError};
use crate::gpu::device::{self, DeviceChoice};
use crate::gpu::gather::abi::MAX_SRC_BINDINGS;
use crate::gpu::gather::builds::{fits_stage, single_output, InputBindings, OutputBindings};
use crate::gpu::gather::GatherPipeline;
use crate::gpu::gather::MAX_DST_BINDINGS;
use crate::gpu::gather::{fits_one_dispatch, window_limit};
use crate::gpu::gather::{GatherMode, GatherTuning};
use crate::gpu::kept::Kept;
use crate::gpu::placement::{PartLayout, PartRange};
use crate::gpu::planner::Direction;
use crate::gpu::planner::RouteChoice;
use crate::gpu::plans::Plan;
use crate::plan::bytes::{ByteRows, RowKind};
use crate::plan::SplitPlan;
use crate::DType;
use std::sync::Arc;
use wgsl_split::placement::Geometry;

/// How the gather maps lanes to units, by device type: the one parameter a device kind sets
/// ([`GatherTuning::of`]: each lane a run on CPU adapters, consecutive lanes on GPUs).
pub(crate) fn gather_defaults(device_type: wgpu::DeviceType) -> GatherTuning {
    GatherTuning::of(match device_type {
        wgpu::DeviceType::Cpu => GatherMode::Cpu,
        _ => GatherMode::Gpu,
    })
}

/// The largest buffer's worth of parts that [`Outputs::Regions`](crate::Outputs) and
/// [`Inputs::Regions`](crate::Inputs) bind together with other buffers in one dispatch of the
/// multi-output or multi-input build, by device type. Those builds pick each store's or load's
/// binding with a switch, which a GPU takes uniformly per workgroup and a CPU adapter runs
/// case by case under a lane mask: there, past a few KiB per buffer, the dispatch a buffer
/// saves costs less than the switch. (Measured on lavapipe and GL: a concat of three 2 MiB
/// inputs in buffers of their own took 9.5 to 9.9 ms in one dispatch, 7.3 to 10.2 in three; a
/// split into three such buffers about the same either way, and 7% more in one dispatch at
/// four of 8 MiB.)
pub(crate) fn multi_binding_group_limit(device_type: wgpu::DeviceType) -> u64 {
    match device_type {
        wgpu::DeviceType::Cpu => 4096,
        _ => u64::MAX,
    }
}

/// How many buffers of parts one gather dispatch binds: the parts of
/// [`Outputs::Regions`](crate::Outputs) and [`Inputs::Regions`](crate::Inputs) in more buffers
/// than these take more dispatches, a dispatch per so many buffers (their parts in one buffer
/// always share one), for the benchmark and the tests (feature `bench`): an engine reads the
/// dispatches a node takes in [`Prepared::recorded`](crate::Prepared::recorded).
/// [`RegionsPerDispatch::for_limits`] gives them for a device's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionsPerDispatch {
    /// Output buffers one dispatch of a split writes.
    pub outputs: u32,
    /// Input buffers one dispatch of a concat reads.
    pub inputs: u32,
}

impl RegionsPerDispatch {
    /// The rule for a device of `limits`, from its storage buffers per shader stage `n`:
    /// outputs `(n - 3) / 2` (the table and the input's two views take three, each output
    /// buffer two: its units and its tail), inputs `(n - 3) / 2` likewise (the output's two
    /// views and the table, each input buffer two); each at least 1 and at most 32. Where
    /// `n` is under 5 the gather binds its single output once, as words only: then outputs
    /// are 1 and inputs `(n - 2) / 2`, at least 1.
    #[cfg(feature = "bench")]
    pub fn for_limits(limits: &wgpu::Limits) -> Self {
        Self::of(&device::limits_of(limits))
    }

    /// [`RegionsPerDispatch::for_limits`] of the core's limits.
    pub(crate) fn of(limits: &wgsl_split::Limits) -> Self {
        // The most buffers whose build's bindings the stage holds.
        let fits = |inputs, outputs| fits_stage(limits, inputs, outputs, false);
        let most = |max: u32, build: &dyn Fn(u32) -> bool| (2..=max).rev().find(|&n| build(n));
        let single = single_output(limits);
        let outputs = match single {
            OutputBindings::Units(_) => most(MAX_DST_BINDINGS, &|m| {
                fits(InputBindings::ONE, OutputBindings::Units(m))
            }),
            OutputBindings::WordsOnly => None,
        };
        let inputs = most(MAX_SRC_BINDINGS, &|n| fits(InputBindings(n), single));
        Self {
            outputs: outputs.unwrap_or(1),
            inputs: inputs.unwrap_or(1),
        }
    }
}

#[cfg(feature = "bench")]
/// How a [`GpuSplitter`] moves data. Every `None` takes the device's default;
/// [`GpuSplitter::options`] shows the settings in force. Benchmark harnesses and tests set these;
/// an engine needs none of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SplitOptions {
    /// The routes a split may take ([`RouteChoice`]); `Auto` by default. `Gather` measures
    /// the kernel on its own.
    pub route: RouteChoice,
    /// How the gather maps lanes to units ([`GatherMode`]): runs per lane on CPU adapters,
    /// coalesced lanes on GPUs. Each gives the same bytes on any device; tests and the memory
    /// trace use it to run the GPU kernel on a CPU adapter.
    pub gather_mode: Option<GatherMode>,
    /// The most steps one gather lane takes in its workgroup, 1 to 468 (the shader's bound;
    /// a value past it takes the bound): in each, it writes one 16-byte unit of an output
    /// (or, in the channels, one group of rows: a unit of each part). By default 4 on GPUs
    /// and 468 on CPU adapters.
    pub max_steps_per_lane: Option<u32>,
    /// The most output buffers one gather dispatch of [`Outputs::Regions`](crate::Outputs)
    /// writes, within what the device allows (its storage buffers per shader stage, less the
    /// three the table and the input take, halved, as each output buffer is bound as units
    /// and as words; at most 32). 1 gives every buffer a dispatch of its own.
    pub output_bindings: Option<u32>,
    /// The most input buffers one gather dispatch of a concat's
    /// [`Inputs::Regions`](crate::Inputs) reads, within what the device allows (its storage
    /// buffers per shader stage, less those the table and the output take, halved, as each
    /// input buffer is bound as words and as vec4s; at most 32). 1 gives every buffer a
    /// dispatch of its own.
    pub input_bindings: Option<u32>,
}

/// A device, its queue and the split pipeline compiled for it (once, at construction).
#[derive(Debug, Clone)]
pub struct GpuSplitter {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) limits: wgsl_split::Limits,
    pub(crate) gather_tuning: GatherTuning,
    pub(crate) route: RouteChoice,
    pub(crate) gather: GatherPipeline,
    /// Routes chosen before, tables on the device and builds compiled; shared by clones.
    pub(crate) kept: Arc<Kept>,
    /// Most output buffers one gather dispatch of [`Outputs::Regions`](crate::Outputs) writes.
    pub(crate) output_bindings: u32,
    /// Most input buffers one gather dispatch of [`Inputs::Regions`](crate::Inputs) reads.
    pub(crate) input_bindings: u32,
    /// Tells whether the device is lost; shared by clones and prepared splits.
    pub(crate) probe: Arc<device::LossProbe>,
    /// The indexed builds (rows placed by indices), by their scatter's stores and their
    /// input's conversion (`GpuSplitter::indexed_pipeline` keys them), compiled on first use;
    /// shared by clones.
    pub(crate) indexed: Arc<[std::sync::OnceLock<GatherPipeline>; 15]>,
}

impl GpuSplitter {
    /// Uses a device the caller already has and compiles the pipeline on it. The adapter's
    /// info (its device type picks the defaults) comes from the device.
    /// A lost device is [`crate::SplitError::Device`]. Blocks until the device reports on the
    /// compilation, which native wgpu does at once; on WebGPU, use [`GpuSplitter::new_async`].
    pub fn new(device: wgpu::Device, queue: wgpu::Queue) -> Result<Self> {
        device::block_on("GpuSplitter::new", Self::new_async(device, queue))
    }

    /// [`GpuSplitter::new`] for async callers, and the one for WebGPU, where the browser
    /// reports on the compilation later.
    pub async fn new_async(device: wgpu::Device, queue: wgpu::Queue) -> Result<Self> {
        let probe = Arc::new(device::LossProbe::new(&device)?);
        let info = device.adapter_info();
        let limits = device::limits_of(&device.limits());
        let gather_tuning = gather_defaults(info.device_type);
        let gather = GatherPipeline::new(&device).await?;
        // The gather compiled its single-output build by the rule `for_limits` follows
        // (`builds::single_output`).
        let allowed = RegionsPerDispatch::of(&limits);
        Ok(Self {
            device,
            queue,
            info,
            limits,
            gather_tuning,
            route: RouteChoice::Auto,
            gather,
            kept: Arc::default(),
            output_bindings: allowed.outputs,
            input_bindings: allowed.inputs,
            probe,
            indexed: Arc::default(),
        })
    }

    /// Makes this splitter's pipelines through `cache`, a pipeline cache of its device
    /// (`wgpu::Device::create_pipeline_cache`, on a device with
    /// `wgpu::Features::PIPELINE_CACHE`: Vulkan), so that a process that saved the cache's
    /// data (`wgpu::PipelineCache::get_data`) and passes it back compiles nothing it compiled
    /// before. Every pipeline is made on its first use; call this before the first split, as
    /// builds already compiled keep making theirs without the cache. A cache of another
    /// device of the same `wgpu::Instance` is [`SplitError::Device`] at the first dispatch
    /// that makes a pipeline (one of another instance wgpu looks up by its id, as it does a
    /// buffer: see [`GpuSplitter::encode`]).
    ///
    /// `wgpu-split`'s command keeps its cache in the user's cache directory
    /// (`docs/design.md`, "Cold start").
    pub fn with_pipeline_cache(mut self, cache: wgpu::PipelineCache) -> Self {
        self.gather = self.gather.with_cache(Some(cache));
        self
    }

    /// Opens the adapter `choice` picks (a [`BackendChoice`](crate::BackendChoice), or a
    /// [`DeviceChoice`]: backend, adapter index or name, power preference;
    /// [`DeviceChoice::from_env`] reads wgpu's own variables) with its full limits and
    /// compiles the pipeline.
    pub fn open(choice: impl Into<DeviceChoice>) -> Result<Self> {
        let (adapter, device, queue) = device::open_chosen(&choice.into())?;
        // Errors are captured by scopes around every call; a stray one is reported, not panicked on.
        device.on_uncaptured_error(Arc::new(|e: wgpu::Error| {
            eprintln!("wgpu-split: uncaptured wgpu error: {e}")
        }));
        drop(adapter);
        Self::new(device, queue)
    }

    #[cfg(feature = "bench")]
    /// Sets the routes and the gather's tuning ([`SplitOptions`]; `None` fields take the
    /// device's defaults). Takes effect at the next split; prepared splits keep what they
    /// were prepared with.
    pub fn with_options(mut self, options: SplitOptions) -> Self {
        let mut tuning = gather_defaults(self.info.device_type);
        if let Some(mode) = options.gather_mode {
            tuning.mode = mode;
        }
        if let Some(units) = options.max_steps_per_lane {
            tuning.max_steps_per_lane = (units as u64).clamp(1, crate::gpu::gather::MAX_LANE_STEPS);
        }
        let allowed = RegionsPerDispatch::of(&self.limits);
        self.gather_tuning = tuning;
        self.route = options.route;
        let (outputs, inputs) = (allowed.outputs, allowed.inputs);
        self.output_bindings = options.output_bindings.unwrap_or(outputs).clamp(1, outputs);
        self.input_bindings = options.input_bindings.unwrap_or(inputs).clamp(1, inputs);
        self
    }

    #[cfg(feature = "bench")]
    /// The settings in force, [`SplitOptions`] as this device runs them: every default filled
    /// in.
    pub fn options(&self) -> SplitOptions {
        SplitOptions {
            route: self.route,
            gather_mode: Some(self.gather_tuning.mode),
            max_steps_per_lane: Some(self.gather_tuning.max_steps_per_lane as u32),
            output_bindings: Some(self.output_bindings),
            input_bindings: Some(self.input_bindings),
        }
    }

    /// The multi-output build with `bindings` output bindings, compiled on first use.
    pub(super) async fn multi_output_pipeline(&self, bindings: u32) -> Result<GatherPipeline> {
        self.build_with(InputBindings::ONE, OutputBindings::Units(bindings), None)
            .await
    }

    /// The multi-input build with `bindings` input bindings and this device's single
    /// output, compiled on first use.
    pub(super) async fn multi_input_pipeline(&self, bindings: u32) -> Result<GatherPipeline> {
        let outputs = self.gather.single_output();
        self.build_with(InputBindings(bindings), outputs, None)
            .await
    }

    /// The build with `inputs` and `outputs`, its parts' windows at dynamic offsets where
    /// `moving` names a node through views ([`GatherPipeline::with_bindings`]), compiled on
    /// first use.
    pub(super) async fn build_with(
        &self,
        inputs: InputBindings,
        outputs: OutputBindings,
        moving: Option<Direction>,
    ) -> Result<GatherPipeline> {
        let key = (inputs, outputs, moving);
        if let Some(pipeline) = self.kept.build(&key) {
            return Ok(pipeline);
        }
        let pipeline = GatherPipeline::with_bindings(&self.device, inputs, outputs, moving)
            .await?
            .with_cache(self.gather.cache());
        self.kept.keep_build(key, pipeline.clone());
        Ok(pipeline)
    }

    /// The device.
    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    /// The queue.
    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    /// Places the parts of `plan` (a split's outputs, a concat's inputs) in one region, each at
    /// the device's storage offset alignment, so a neighbouring kernel can bind each on its
    /// own: the placement of `Outputs::Region` and `Inputs::Region`. Fails if the whole tensor
    /// or the parts' region exceeds the device's `max_buffer_size`.
    ///
    /// ```no_run
    /// # use wgpu_split::{ops, DType, GpuSplitter, IntTensor};
    /// # fn f(gpu: &GpuSplitter) -> wgpu_split::Result<()> {
    /// let plan = ops::split(&[4, 300], &IntTensor::scalar(1), 3)?;
    /// let layout = gpu.layout(&plan, DType::U8)?;
    /// // 400 bytes each, at 256-byte offsets on most devices: 0, 512, 1024.
    /// assert_eq!(layout.ranges[1].offset % 256, 0);
    /// # Ok(()) }
    /// ```
    pub fn layout<P: Plan + Geometry>(&self, plan: &P, dtype: DType) -> Result<PartLayout> {
        self.bindable_layout(P::DIRECTION, plan.geometry(), dtype)
    }

    /// [`GpuSplitter::layout`] over the split geometry of a split or a concat.
    pub(crate) fn bindable_layout(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<PartLayout> {
        let layout = PartLayout::place(plan, dtype, self.offset_align())?;
        self.check_buffer_sizes(direction, plan, dtype, &layout)?;
        Ok(layout)
    }

    /// Checks that the whole tensor and the parts' region of the split (or concat) of `plan`
    /// placed by `layout` fit in one buffer of this device each.
    pub(crate) fn check_buffer_sizes(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        layout: &PartLayout,
    ) -> Result<()> {
        let (part, whole) = direction.names();
        let checks = [
            (whole.to_string(), plan.whole_binding_size(dtype)?),
            (format!("{part} region"), layout.total_bytes),
        ];
        for (what, bytes) in checks {
            if bytes > self.limits.max_buffer_size {
                return Err(SplitError::TooLarge(format!(
                    "{what} of {bytes} bytes exceeds the device's max_buffer_size of {} bytes",
                    self.limits.max_buffer_size
                )));
            }
        }
        Ok(())
    }

    /// Where each part lies inside the whole tensor, when every part is one contiguous range
    /// of it starting at the device's storage offset alignment; `None` otherwise. The caller
    /// then moves no bytes at all: a split's consumers bind its outputs as views of the
    /// input, a concat's producers write its inputs straight into the output.
    ///
    /// An empty part is `PartRange { offset: 0, size: 0 }`: it has no bytes, and WebGPU
    /// refuses a binding of size 0, so an engine binds nothing for it (or any buffer of at
    /// least 4 bytes to a kernel that reads none of it). A view of a part whose size is not
    /// a multiple of 4 is bound with its size rounded up to 4, as any storage binding.
    ///
    /// ```no_run
    /// # use wgpu_split::{ops, DType, GpuSplitter, IntTensor};
    /// # fn f(gpu: &GpuSplitter) -> wgpu_split::Result<()> {
    /// // Split on the first axis: each output is 256 rows of 4 KiB of the input.
    /// let plan = ops::split(&[1024, 1024], &IntTensor::scalar(0), 4)?;
    /// let views = gpu.views(&plan, DType::F32)?.expect("contiguous outputs");
    /// assert_eq!(views[1].offset, 1 << 20);
    /// # Ok(()) }
    /// ```
    pub fn views<P: Plan + Geometry>(
        &self,
        plan: &P,
        dtype: DType,
    ) -> Result<Option<Vec<PartRange>>> {
        let plan = plan.geometry();
        let bytes = ByteRows::new(plan, dtype.size())?;
        if bytes.kind != RowKind::Contiguous {
            return Ok(None);
        }
        let mut views = vec![PartRange { offset: 0, size: 0 }; plan.num_parts()];
        for o in &bytes.outputs {
            views[o.output] = PartRange {
                offset: o.offset,
                size: bytes.size(o),
            };
        }
        let align = self.offset_align();
        Ok(views
            .iter()
            .all(|v| v.offset.is_multiple_of(align))
            .then_some(views))
    }

    /// Whether the split or concat of `plan`, its parts' region taking `parts_bytes`, runs in
    /// pieces (the whole tensor or the parts past one storage binding), each piece binding
    /// its parts at their offsets; otherwise one dispatch binds both regions whole.
    pub(crate) fn runs_in_pieces(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        parts_bytes: u64,
    ) -> Result<bool> {
        let whole = plan.whole_binding_size(dtype)?;
        Ok(!fits_one_dispatch(
            whole,
            parts_bytes,
            window_limit(&self.limits),
        ))
    }

    /// `min_storage_buffer_offset_alignment`.
    pub(crate) fn offset_align(&self) -> u64 {
        self.limits.min_storage_buffer_offset_alignment as u64
    }
}
