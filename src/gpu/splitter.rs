//! [`GpuSplitter`]: a device, its compiled pipeline and the caches its clones share.

use crate::error::Result;
use crate::gpu::device::{self, BackendChoice, DeviceChoice};
use crate::gpu::gather::abi::MAX_DST_BINDINGS;
use crate::gpu::gather::plan::{
    GatherMode, GatherTuning, SPREAD_ONE_WORKGROUP, SPREAD_TWO_WORKGROUPS,
};
use crate::gpu::gather::record::GatherPipeline;
use crate::gpu::gather::tables::TableCache;
use crate::gpu::output_layout::{OutputLayout, OutputRange};
use crate::gpu::route::RouteChoice;
use crate::gpu::route_cache::RouteCache;
use crate::gpu::texture::record::Scratch;
use crate::plan::bytes::{ByteRows, RowKind};
use crate::plan::SplitPlan;
use crate::DType;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// How the gather spreads a split over its lanes, by device type and backend.
///
/// On CPU adapters (lavapipe, llvmpipe) every invocation carries a fixed cost, so each lane
/// writes a long run: against the vec4 copy kernel on lavapipe, runs of 128, 512 and 2,048
/// units took word_odd from 0.74 to 0.81 and 0.90, bytes_odd from 0.75 to 0.79 and 0.83
/// (8,192 cost qkv a fifth). Small splits spread over two workgroups on Vulkan
/// ([`SPREAD_TWO_WORKGROUPS`]) and stay in one through GL ([`SPREAD_ONE_WORKGROUP`]), as
/// measured on Mesa's two drivers. On GPUs consecutive lanes write consecutive units, 4 steps
/// per lane, so a block of 16 KiB pays for one table lookup; unaligned rows are staged and
/// short word rows scattered ([`GatherMode::Coalesced`]), the layouts whose traced memory
/// figures are a copy's.
pub fn gather_defaults(device_type: wgpu::DeviceType, backend: wgpu::Backend) -> GatherTuning {
    match (device_type, backend) {
        (wgpu::DeviceType::Cpu, backend) => GatherTuning {
            mode: GatherMode::Runs,
            max_units_per_lane: 2048,
            spread_lanes: match backend {
                wgpu::Backend::Gl => SPREAD_ONE_WORKGROUP,
                _ => SPREAD_TWO_WORKGROUPS,
            },
        },
        _ => GatherTuning {
            mode: GatherMode::Coalesced,
            max_units_per_lane: 4,
            spread_lanes: SPREAD_TWO_WORKGROUPS,
        },
    }
}

/// The largest buffer's worth of outputs `encode_to_regions` binds together with other
/// buffers in one dispatch of the multi-output build, by device type. That build picks each
/// store's binding with a switch, which a GPU takes uniformly per workgroup; a CPU adapter runs
/// every case under a lane mask. On lavapipe, 64 buffers of 15 bytes took 0.64 to 0.74 ms in 3
/// dispatches against 8.6 to 11.5 ms in 64, but 64 buffers of 64 KiB took 34 ms against 25,
/// and of 1 MiB 179 to 217 ms against 151 to 161: past a few KiB the dispatch a buffer saves
/// costs less than the switch.
pub fn multi_output_group_limit(device_type: wgpu::DeviceType) -> u64 {
    match device_type {
        wgpu::DeviceType::Cpu => 4096,
        _ => u64::MAX,
    }
}

/// The most output buffers one dispatch of the multi-output build may bind on a device of
/// `limits`: the table and the input's two views take three of the stage's storage buffers,
/// and each output buffer two (its units and its words); at least 1, at most
/// [`MAX_DST_BINDINGS`].
fn allowed_output_bindings(limits: &wgpu::Limits) -> u32 {
    (limits
        .max_storage_buffers_per_shader_stage
        .saturating_sub(3)
        / 2)
    .clamp(1, MAX_DST_BINDINGS)
}

/// A device, its queue and the split pipeline compiled for it (once, at construction).
#[derive(Debug, Clone)]
pub struct GpuSplitter {
    pub(super) device: wgpu::Device,
    pub(super) queue: wgpu::Queue,
    pub(super) info: wgpu::AdapterInfo,
    pub(super) limits: wgpu::Limits,
    pub(super) gather_tuning: GatherTuning,
    /// Whether the texture route may be used; `None`: as the route choice says.
    pub(super) texture_copies: Option<bool>,
    pub(super) route: RouteChoice,
    pub(super) gather: GatherPipeline,
    /// Dispatch tables already on the device; shared by clones.
    pub(super) tables: Arc<TableCache>,
    /// Routes chosen before, by plan and regions; shared by clones.
    pub(super) routes: Arc<RouteCache>,
    /// The textures of the texture route; shared by clones.
    pub(super) scratch: Arc<Scratch>,
    /// Most output buffers one gather dispatch of `encode_to_regions` writes.
    pub(super) output_bindings: u32,
    /// The multi-output builds compiled so far, by their number of output bindings; shared
    /// by clones.
    pub(super) multi_output: Arc<Mutex<HashMap<u32, GatherPipeline>>>,
    /// Tells whether the device is lost; shared by clones and prepared splits.
    pub(super) probe: Arc<device::LossProbe>,
}

impl GpuSplitter {
    /// Uses a device the caller already has and compiles the pipeline on it. The adapter's
    /// info (its device type picks the defaults) comes from the device.
    /// A lost device is [`crate::SplitError::Device`].
    pub fn new(device: wgpu::Device, queue: wgpu::Queue) -> Result<Self> {
        let probe = Arc::new(device::LossProbe::new(&device)?);
        let info = device.adapter_info();
        let limits = device.limits();
        let gather_tuning = gather_defaults(info.device_type, info.backend);
        let gather = GatherPipeline::new(&device)?;
        Ok(Self {
            device,
            queue,
            info,
            limits: limits.clone(),
            gather_tuning,
            texture_copies: None,
            route: RouteChoice::Auto,
            gather,
            tables: Arc::default(),
            routes: Arc::default(),
            scratch: Arc::default(),
            output_bindings: allowed_output_bindings(&limits),
            multi_output: Arc::default(),
            probe,
        })
    }

    /// Opens the best adapter of `choice` with its full limits and compiles the pipeline.
    pub fn open(choice: BackendChoice) -> Result<Self> {
        Self::open_chosen(&DeviceChoice::backend(choice))
    }

    /// Opens the adapter `choice` picks (backend, adapter index or name, power preference)
    /// with its full limits and compiles the pipeline.
    pub fn open_chosen(choice: &DeviceChoice) -> Result<Self> {
        let (adapter, device, queue) = device::open_chosen(choice)?;
        // Errors are captured by scopes around every call; a stray one is reported, not panicked on.
        device.on_uncaptured_error(Arc::new(|e: wgpu::Error| {
            eprintln!("wgpu-split: uncaptured wgpu error: {e}")
        }));
        drop(adapter);
        Self::new(device, queue)
    }

    /// [`GpuSplitter::open_chosen`] as the environment says, with wgpu's own variables
    /// ([`DeviceChoice::from_env`]): `WGPU_SPLIT_BACKEND` or `WGPU_BACKEND`,
    /// `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`.
    pub fn open_from_env() -> Result<Self> {
        Self::open_chosen(&DeviceChoice::from_env()?)
    }

    /// Sets the most 16-byte units one gather lane writes (at least 1). The default suits the
    /// device type; benchmark harnesses may tune it. Takes effect at the next split.
    pub fn with_max_units_per_lane(mut self, units: u32) -> Self {
        self.gather_tuning.max_units_per_lane = units.max(1) as u64;
        self
    }

    /// Sets the lanes a small split is spread over when each lane writes a run of units (the
    /// default on CPU adapters, [`GatherTuning::spread_lanes`]), at least 1. The default suits
    /// the adapter as measured on a two-core machine; benchmark harnesses may tune it.
    pub fn with_spread_lanes(mut self, lanes: u32) -> Self {
        self.gather_tuning.spread_lanes = lanes.max(1) as u64;
        self
    }

    /// Sets how the gather maps lanes to units ([`GatherMode`]): runs per lane (the default
    /// on CPU adapters), coalesced lanes (the default on GPUs), or coalesced lanes with one of
    /// the layouts to compare with (`Shifted`, `Tiles`). Each gives the same bytes on any device;
    /// tests and the memory trace use it to run the GPU kernel on a CPU adapter.
    pub fn with_gather_mode(mut self, mode: GatherMode) -> Self {
        self.gather_tuning.mode = mode;
        self
    }

    /// Whether strided outputs whose rows are multiples of 256 bytes may move with copy
    /// commands through a scratch texture ([`crate::gpu::texture`]) instead of the gather
    /// dispatch. By default: on CPU adapters, where it is 3 to 5x faster, off on GPUs (a
    /// texture round trip moves every byte twice), and on under [`RouteChoice::Copies`].
    /// Never under [`RouteChoice::Gather`].
    pub fn with_texture_copies(mut self, enabled: bool) -> Self {
        self.texture_copies = Some(enabled);
        self
    }

    /// Sets the most output buffers one gather dispatch of
    /// [`GpuSplitter::encode_to_regions`] writes, within what the device allows (its storage
    /// buffers per shader stage, less the three the table and the input take, halved, as each
    /// output buffer is bound as units and as words; at most 32). 1 gives every buffer a
    /// dispatch of its own.
    pub fn with_output_bindings(mut self, bindings: u32) -> Self {
        self.output_bindings = bindings.min(allowed_output_bindings(&self.limits)).max(1);
        self
    }

    /// The most output buffers one gather dispatch of [`GpuSplitter::encode_to_regions`]
    /// writes.
    pub fn output_bindings(&self) -> u32 {
        self.output_bindings
    }

    /// The multi-output build with `bindings` output bindings, compiled on first use.
    pub(super) async fn multi_output_pipeline(&self, bindings: u32) -> Result<GatherPipeline> {
        let built = || self.multi_output.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = built().get(&bindings) {
            return Ok(p.clone());
        }
        let pipeline = GatherPipeline::multi_output(&self.device, bindings).await?;
        built().insert(bindings, pipeline.clone());
        Ok(pipeline)
    }

    /// Restricts the routes a split may take ([`RouteChoice`]); `Auto` by default. Benchmark
    /// harnesses use `Gather` to measure the kernel on its own.
    pub fn with_route(mut self, route: RouteChoice) -> Self {
        self.route = route;
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

    /// How the gather maps lanes to units ([`GpuSplitter::with_gather_mode`]).
    pub fn gather_mode(&self) -> GatherMode {
        self.gather_tuning.mode
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
        OutputLayout::new(plan, dtype, self.offset_align())
    }

    /// Where each output lies inside the input, when every output is one contiguous range of
    /// it starting at the device's storage offset alignment: the caller can then bind the
    /// outputs as views of the input and move no bytes at all. `None` otherwise.
    ///
    /// An empty output is `OutputRange { offset: 0, size: 0 }`: it has no bytes, and WebGPU
    /// refuses a binding of size 0, so an engine binds nothing for it (or any buffer of at
    /// least 4 bytes to a kernel that reads none of it). A view of an output whose size is not
    /// a multiple of 4 is bound with its size rounded up to 4, as any storage binding.
    pub fn output_views(&self, plan: &SplitPlan, dtype: DType) -> Result<Option<Vec<OutputRange>>> {
        let bytes = ByteRows::new(plan, dtype.size())?;
        if bytes.kind != RowKind::Contiguous {
            return Ok(None);
        }
        let mut views = vec![OutputRange { offset: 0, size: 0 }; plan.num_outputs()];
        for o in &bytes.outputs {
            views[o.output] = OutputRange {
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

    /// `min_storage_buffer_offset_alignment`.
    fn offset_align(&self) -> u64 {
        self.limits.min_storage_buffer_offset_alignment as u64
    }
}
