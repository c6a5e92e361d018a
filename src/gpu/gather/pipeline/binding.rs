//! Binding the gather's dispatches to the caller's buffers and recording them: one bind group
//! per dispatch, made once; a build that moves one side's windows (a node prepared through
//! views) binds that side at dynamic offsets, which a decode step sets again without a new
//! bind group ([`BoundDispatch::moved_offsets`]).

use super::GatherPipeline;
use crate::error::{Result, SplitError};
use crate::gpu::device::limits_of;
use crate::gpu::device::scoped_async;
use crate::gpu::gather::abi::ProgramKey;
use crate::gpu::gather::binds::{binds, Binds, IndexSides, Role, Sides, StandIn};
use crate::gpu::gather::blocks::grid;
use crate::gpu::gather::dispatches::Dispatch;
use crate::gpu::placement::BufferRegion;
use std::num::NonZeroU64;

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

    /// The buffer of window `k`.
    fn buffer(&self, k: u32) -> &'a wgpu::Buffer {
        match *self {
            Windows::Region(region) => region.buffer,
            Windows::PerBinding(windows) => windows[k as usize].0.buffer,
        }
    }

    /// Their offsets and sizes, as the core binds them.
    fn sides(&self) -> (u64, Vec<(u64, u64)>) {
        match *self {
            Windows::Region(region) => (region.offset, Vec::new()),
            Windows::PerBinding(windows) => {
                let list = windows.iter().map(|(r, size)| (r.offset, *size)).collect();
                (0, list)
            }
        }
    }
}

/// `windows`' sides from [`Windows::sides`].
fn sides<'a>(windows: &Windows<'_>, (region, list): &'a (u64, Vec<(u64, u64)>)) -> Sides<'a> {
    match windows {
        Windows::Region(_) => Sides::Region(*region),
        Windows::PerBinding(_) => Sides::PerBinding(list),
    }
}

/// The indexed build's own windows: its indices (buffer, offset, bytes); where the caller
/// keeps one, its status (buffer, offset; 8 bytes); where the dispatch scatters, the
/// destination (buffer, offset, bytes).
#[derive(Debug, Clone, Copy)]
pub struct IndexWindows<'a> {
    pub indices: (&'a wgpu::Buffer, u64, u64),
    pub status: Option<(&'a wgpu::Buffer, u64)>,
    pub scatter: Option<(&'a wgpu::Buffer, u64, u64)>,
}

/// One gather dispatch bound to its buffers ([`GatherPipeline::bind`]): recorded by
/// [`record_bound`], as often as wanted.
#[derive(Debug, Clone)]
pub struct BoundDispatch {
    /// What it runs (the bench reports it).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) program: ProgramKey,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    grid: (u32, u32),
    /// The dynamic offsets of the moving side's bindings, in binding order, as bound (none
    /// where the build moves nothing), and the window each follows (`None`: a stand-in).
    offsets: Vec<u32>,
    follows: Vec<Option<usize>>,
    /// What reaches the device, as the golden test (`bench::golden_tests`) records it.
    #[cfg(test)]
    pub(crate) golden: super::golden::Bound,
}

impl BoundDispatch {
    /// Its dynamic offsets, as bound.
    pub(crate) fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// Its dynamic offsets with window `k` of the moving side moved by `shifts[k]` bytes;
    /// `None` where one would leave what a dynamic offset reaches from its binding's base
    /// (`gather::binds::dynamic_base`).
    pub(crate) fn moved_offsets(&self, shifts: &[i64]) -> Option<Vec<u32>> {
        self.offsets
            .iter()
            .zip(&self.follows)
            .map(|(&offset, window)| match window {
                None => Some(offset),
                Some(k) => u32::try_from(i64::from(offset).checked_add(shifts[*k])?).ok(),
            })
            .collect()
    }
}

/// Records `bound` into one compute pass of `encoder`; a device error (a buffer destroyed
/// since it was bound, for one) becomes [`SplitError::Device`].
pub async fn record_bound(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    bound: &[BoundDispatch],
) -> Result<()> {
    scoped_async(device, "encoding the split", || {
        record_unscoped(encoder, bound.iter().map(|b| (b, b.offsets.as_slice())))
    })
    .await
}

/// [`record_bound`] in the caller's error scopes, each dispatch at the dynamic offsets given
/// with it.
pub(crate) fn record_unscoped<'b>(
    encoder: &mut wgpu::CommandEncoder,
    bound: impl IntoIterator<Item = (&'b BoundDispatch, &'b [u32])>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("split_gather"),
        timestamp_writes: None,
    });
    for (b, offsets) in bound {
        pass.set_pipeline(&b.pipeline);
        pass.set_bind_group(0, &b.bind_group, offsets);
        pass.dispatch_workgroups(b.grid.0, b.grid.1, 1);
    }
}

impl GatherPipeline {
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
        self.bind_with(device, dispatches, tables, inputs, outputs, None)
            .await
    }

    /// [`GatherPipeline::bind`] of the indexed build's dispatches, with its indices and
    /// status (`index`).
    pub async fn bind_indexed(
        &self,
        device: &wgpu::Device,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        inputs: Windows<'_>,
        outputs: Windows<'_>,
        index: IndexWindows<'_>,
    ) -> Result<Vec<BoundDispatch>> {
        self.bind_with(device, dispatches, tables, inputs, outputs, Some(index))
            .await
    }

    async fn bind_with(
        &self,
        device: &wgpu::Device,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        inputs: Windows<'_>,
        outputs: Windows<'_>,
        index: Option<IndexWindows<'_>>,
    ) -> Result<Vec<BoundDispatch>> {
        if index.is_some() != self.indexed_stand_ins.is_some() {
            return Err(SplitError::Device(format!(
                "indices given: {}, to a build that binds them: {}",
                index.is_some(),
                self.indexed_stand_ins.is_some()
            )));
        }
        let (reads, writes) = (inputs.count(), outputs.count());
        let bindings = (
            self.build.inputs.count(),
            self.build.outputs.count_and_views().0,
        );
        if (reads, writes) != bindings {
            return Err(SplitError::Device(format!(
                "{reads} input and {writes} output windows for a build with {} input and {} \
                 output bindings",
                bindings.0, bindings.1
            )));
        }
        let limits = limits_of(&device.limits());
        let bind = |(dispatch, table): (&Dispatch, _)| {
            let (bind_group, binds, _resources) =
                self.bind_group(device, dispatch, table, inputs, outputs, index);
            let grid = grid(&limits, dispatch.params.num_blocks as u64)?;
            Ok(BoundDispatch {
                program: dispatch.program,
                pipeline: self.pipeline(device, dispatch.program),
                bind_group,
                grid,
                #[cfg(test)]
                golden: self.golden(dispatch, table, &_resources, grid)?,
                offsets: binds.offsets,
                follows: binds.follows,
            })
        };
        scoped_async(device, "binding the split", || {
            dispatches.iter().zip(tables).map(bind).collect()
        })
        .await?
    }

    /// The bind group of one dispatch: its table, its windows of the caller's buffers, and
    /// the trace build's record buffer, each where the core's [`binds`] puts it; with the
    /// dynamic offsets of the side its build moves, and the resources bound.
    fn bind_group<'b>(
        &'b self,
        device: &wgpu::Device,
        dispatch: &Dispatch,
        table: &'b wgpu::Buffer,
        inputs: Windows<'b>,
        outputs: Windows<'b>,
        index: Option<IndexWindows<'b>>,
    ) -> (wgpu::BindGroup, Binds, Vec<wgpu::BindingResource<'b>>) {
        let (reads, writes) = (inputs.sides(), outputs.sides());
        let index_sides = index.map(|i| IndexSides {
            indices: (i.indices.1, i.indices.2),
            status: i.status.map(|s| s.1),
            scatter: i.scatter.map(|s| (s.1, s.2)),
        });
        let both = (sides(&inputs, &reads), sides(&outputs, &writes));
        let (slots, moving) = (&self.slots, self.build.moving);
        let binds = binds(
            slots,
            dispatch,
            both,
            index_sides,
            moving,
            self.offset_align,
        );
        let [read_stand_in, write_stand_in] = &self.stand_ins;
        let indexed = self.indexed_stand_ins.as_deref();
        let buffer = |role: Role| -> Option<&'b wgpu::Buffer> {
            Some(match role {
                Role::Table => table,
                Role::Input(k) => inputs.buffer(k),
                Role::Output(k) => outputs.buffer(k),
                Role::Indices => index?.indices.0,
                Role::Status => index?.status?.0,
                Role::Scatter => index?.scatter?.0,
                Role::StandIn(StandIn::Read) => read_stand_in,
                Role::StandIn(StandIn::Write) => write_stand_in,
                Role::StandIn(StandIn::Status) => &indexed?[0],
                Role::StandIn(StandIn::Scatter) => &indexed?[1],
                #[cfg(feature = "bench")]
                Role::Trace => self.trace.as_ref()?,
                #[cfg(not(feature = "bench"))]
                Role::Trace => return None,
            })
        };
        let resources: Vec<wgpu::BindingResource> = binds
            .list
            .iter()
            .filter_map(|b| Some(window(buffer(b.role)?, b.offset, b.size)))
            .collect();
        let entries: Vec<wgpu::BindGroupEntry> = (0u32..)
            .zip(&resources)
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding,
                resource: resource.clone(),
            })
            .collect();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("split_gather"),
            layout: &self.bind_group_layout,
            entries: &entries,
        });
        (bind_group, binds, resources)
    }
}

/// A storage binding of `size` bytes of `buffer` from `offset` (`None`: to its end).
fn window(buffer: &wgpu::Buffer, offset: u64, size: Option<u64>) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: size.and_then(NonZeroU64::new),
    })
}
