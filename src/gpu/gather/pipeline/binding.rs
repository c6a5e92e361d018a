//! Binding the gather's dispatches to the caller's buffers and recording them: one bind group
//! per dispatch, made once; a build that moves one side's windows (a node prepared through
//! views) binds that side at dynamic offsets, which a decode step sets again without a new
//! bind group ([`BoundDispatch::moved_offsets`]).

use super::GatherPipeline;
use crate::error::{Result, SplitError};
use crate::gpu::device::limits_of;
use crate::gpu::device::scoped_async;
use crate::gpu::gather::abi::{ProgramKey, UNIT_BYTES};
use crate::gpu::gather::blocks::grid;
use crate::gpu::gather::builds::{tail_start, Slot};
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
    /// ([`dynamic_base`]).
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

/// The base a binding of a moving window at `offset` is bound from: at most 2 GiB below it,
/// at a multiple of `align`, so that the dynamic offset (`offset - base`, a `u32`) moves the
/// window 2 GiB either way.
fn dynamic_base(offset: u64, align: u64) -> u64 {
    offset.saturating_sub(1 << 31) / align * align
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

/// A bind group's resources in binding order, and the dynamic offsets of its moving side.
#[derive(Default)]
struct Resources<'b> {
    list: Vec<wgpu::BindingResource<'b>>,
    offsets: Vec<u32>,
    follows: Vec<Option<usize>>,
}

impl<'b> Resources<'b> {
    /// `size` bytes of `buffer` from `offset`: window `moving` of the moving side, bound from
    /// its base at a dynamic offset, or a window that stays (`None`).
    fn window(
        &mut self,
        buffer: &'b wgpu::Buffer,
        offset: u64,
        size: u64,
        moving: Option<(usize, u64)>,
    ) {
        let base = match moving {
            Some((k, align)) => {
                let base = dynamic_base(offset, align);
                self.offsets.push((offset - base) as u32);
                self.follows.push(Some(k));
                base
            }
            None => offset,
        };
        self.list.push(window(buffer, base, size));
    }

    /// A stand-in, at dynamic offset 0 on the moving side (`moving`).
    fn stand_in(&mut self, resource: wgpu::BindingResource<'b>, moving: bool) {
        if moving {
            self.offsets.push(0);
            self.follows.push(None);
        }
        self.list.push(resource);
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
        let bindings = (self.inputs.count(), self.outputs.count_and_views().0);
        if (reads, writes) != bindings {
            return Err(SplitError::Device(format!(
                "{reads} input and {writes} output windows for a build with {} input and {} \
                 output bindings",
                bindings.0, bindings.1
            )));
        }
        let limits = limits_of(&device.limits());
        let bind = |(dispatch, table): (&Dispatch, _)| {
            let (bind_group, resources) =
                self.bind_group(device, dispatch, table, inputs, outputs, index);
            let grid = grid(&limits, dispatch.params.num_blocks as u64)?;
            Ok(BoundDispatch {
                program: dispatch.program,
                pipeline: self.pipeline(device, dispatch.program),
                bind_group,
                grid,
                #[cfg(test)]
                golden: self.golden(dispatch, table, &resources.list, grid)?,
                offsets: resources.offsets,
                follows: resources.follows,
            })
        };
        scoped_async(device, "binding the split", || {
            dispatches.iter().zip(tables).map(bind).collect()
        })
        .await?
    }

    /// The bind group of one dispatch: its table, its windows of the caller's buffers, and
    /// the trace build's record buffer, each where the build's [`Slot`]s say; with the
    /// dynamic offsets of the side its build moves.
    fn bind_group<'b>(
        &'b self,
        device: &wgpu::Device,
        dispatch: &Dispatch,
        table: &'b wgpu::Buffer,
        inputs: Windows<'b>,
        outputs: Windows<'b>,
        index: Option<IndexWindows<'b>>,
    ) -> (wgpu::BindGroup, Resources<'b>) {
        let [read_stand_in, write_stand_in] = &self.stand_ins;
        let align = self.offset_align;
        let src = inputs.bound(dispatch.src_offset, dispatch.src_size);
        let dst = outputs.bound(dispatch.dst_offset, dispatch.dst_size);
        // An empty units or tail binding takes its own slot of the writable stand-in, so no
        // two writable bindings share a range.
        let step = align.max(UNIT_BYTES);
        let slot = |k: usize| window(write_stand_in, k as u64 * step, UNIT_BYTES);
        let mut resources = Resources::default();
        for &s in &self.slots {
            // The windows of the side the build moves take dynamic offsets, window `k`'s.
            let moves = super::moves(self.moving, s);
            let moving = |k: u32| moves.then_some((k as usize, align));
            match s {
                Slot::Table => resources.list.push(table.as_entire_binding()),
                // Each input binding's words and vec4s view the same window
                // (`abi::binding_bytes`; read-only views may share a range).
                Slot::InputWords(k) => {
                    let (b, offset, size) = src[k as usize];
                    resources.window(b, offset, size, moving(k));
                }
                // A vec4 view of less than one vec4 binds the stand-in (WebGPU binds no array
                // of vec4s shorter than one); the shader never reads it: such a window holds
                // no whole vec4.
                Slot::InputVec4s(k) => match src[k as usize] {
                    (_, _, size) if size < UNIT_BYTES => {
                        resources.stand_in(read_stand_in.as_entire_binding(), moves)
                    }
                    (b, offset, size) => resources.window(b, offset, size, moving(k)),
                },
                // Each output window as its units, then as its tail (writable views may not
                // share a range).
                Slot::OutputUnits(k) => {
                    let (b, at, size) = dst[k as usize];
                    match tail_start(size, align) {
                        0 => resources.stand_in(slot(k as usize), moves),
                        units => resources.window(b, at, units, moving(k)),
                    }
                }
                Slot::OutputTail(k) => {
                    let (b, at, size) = dst[k as usize];
                    let units = tail_start(size, align);
                    match size - units {
                        0 => resources.stand_in(slot(dst.len() + k as usize), moves),
                        tail => resources.window(b, at + units, tail, moving(k)),
                    }
                }
                Slot::OutputWords => {
                    let (b, offset, size) = dst[0];
                    resources.window(b, offset, size, moving(0));
                }
                Slot::Indices => {
                    if let Some(i) = index {
                        let (b, offset, size) = i.indices;
                        resources.window(b, offset, size, None);
                    }
                }
                Slot::Status => match (
                    index.and_then(|i| i.status),
                    self.indexed_stand_ins.as_deref(),
                ) {
                    (Some((b, offset)), _) => resources.window(b, offset, 8, None),
                    (None, Some([s, _])) => resources.list.push(s.as_entire_binding()),
                    (None, None) => {}
                },
                Slot::OutputScatter(_) => {
                    match (
                        index.and_then(|i| i.scatter),
                        self.indexed_stand_ins.as_deref(),
                    ) {
                        (Some((b, offset, size)), _) => resources.window(b, offset, size, None),
                        (None, Some([_, s])) => resources.list.push(s.as_entire_binding()),
                        (None, None) => {}
                    }
                }
                #[cfg(feature = "bench")]
                Slot::Trace => resources
                    .list
                    .extend(self.trace.as_ref().map(|t| t.as_entire_binding())),
                #[cfg(not(feature = "bench"))]
                Slot::Trace => {}
            }
        }
        let entries: Vec<wgpu::BindGroupEntry> = (0u32..)
            .zip(&resources.list)
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
        (bind_group, resources)
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

#[cfg(test)]
mod tests {
    use super::dynamic_base;

    #[test]
    fn a_dynamic_base_reaches_two_gib_either_way() {
        assert_eq!(dynamic_base(4096, 256), 0);
        assert_eq!(dynamic_base(1 << 31, 256), 0);
        let far = (5u64 << 30) + 300;
        let base = dynamic_base(far, 256);
        assert_eq!(base % 256, 0);
        assert!(far - base >= 1 << 31 && far - base < (1 << 31) + 256);
    }
}
