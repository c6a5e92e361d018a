//! Checking the caller's regions, and preparing parts in regions of their own: a split's
//! outputs or a concat's inputs wherever the engine's allocator put them
//! ([`Outputs::Regions`](crate::Outputs::Regions), [`Inputs::Regions`](crate::Inputs::Regions)).

use crate::error::{Result, SplitError};
use crate::gpu::gather::{
    binding_bytes, join_dispatch, multi_output_dispatch, window_limit, BoundDispatch, Dispatch,
    GatherPipeline, JoinPart, UNIT_BYTES,
};
use crate::gpu::kept::RouteKey;
use crate::gpu::placement::{BufferRegion, PartLayout, PartRange};
use crate::gpu::planner::{self, Direction, Route};
use crate::gpu::prepared::{Commands, PreparedParts};
use crate::gpu::splitter::{multi_binding_group_limit, GpuSplitter};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::tensor::byte_count;
use crate::DType;
use std::collections::BTreeMap;
use std::sync::Arc;
use wgsl_split::gather::binds::Role;
use wgsl_split::recording::Recording;
use wgsl_split::views::record_windows;

/// Each buffer of a split's outputs or a concat's inputs, with its non-empty parts (positions
/// in the plan's [`ByteRows`]) in offset order.
pub(crate) type PartsByBuffer<'a> = Vec<(&'a wgpu::Buffer, Vec<usize>)>;

impl GpuSplitter {
    /// Checks both regions of the split or concat of `key` placed by `layout` (`input` is
    /// where the bytes are read): usage, alignment and size of each, and two different
    /// buffers.
    pub(crate) fn check_regions(
        &self,
        key: &RouteKey<'_>,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
        layout: &PartLayout,
    ) -> Result<()> {
        // The whole tensor's region, then the region the layout places the parts in.
        let (part, whole_name) = key.direction.names();
        let (whole, parts) = key.direction.in_order(input, output);
        self.check_whole(whole_name, whole, key.plan, key.dtype)?;
        let align = self.offset_align();
        parts.check(
            part,
            layout.total_bytes,
            &format!("its last {part}'s end in the layout, rounded up to 4"),
            wgpu::BufferUsages::STORAGE,
            align,
        )?;
        if input.buffer == output.buffer {
            // wgpu refuses both at `finish`, through the encoder's device's default handler
            // (a panic): a buffer bound as read-only and as writable storage in one dispatch,
            // and a copy from a buffer into itself.
            return Err(SplitError::BadBuffer(format!(
                "the input and output regions are in one buffer; a {} reads one buffer and \
                 writes another (wgpu binds a buffer read-only or writable in one dispatch, \
                 and copies between two buffers)",
                key.direction.op()
            )));
        }
        Ok(())
    }

    /// Refuses parts placed by the caller below the device's storage offset alignment where
    /// the split or concat of `plan` is cut into pieces (past one storage binding): each piece
    /// binds its parts at their offsets. One dispatch binds the region whole, at any
    /// placement.
    pub(crate) fn check_pieces_bind(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        layout: &PartLayout,
    ) -> Result<()> {
        let align = self.offset_align();
        if layout.alignment >= align || !self.runs_in_pieces(plan, dtype, layout.total_bytes)? {
            return Ok(());
        }
        let (part, _) = direction.names();
        Err(SplitError::BadBuffer(format!(
            "{part} layout: its alignment {} is below the device's storage offset alignment \
             {align}, and a {} of {} bytes and a {part} region of {} bytes past one storage \
             binding ({} bytes) run in pieces that bind the {part}s at their offsets: place \
             them at the device's alignment (GpuSplitter::layout)",
            layout.alignment,
            direction.op(),
            plan.whole_binding_size(dtype)?,
            layout.total_bytes,
            window_limit(&self.limits)
        )))
    }

    /// Checks the region of the whole tensor of `plan` (a split's input, a concat's output;
    /// `name` says which): usage STORAGE, the storage offset alignment, and
    /// [`SplitPlan::whole_binding_size`] bytes.
    pub(crate) fn check_whole(
        &self,
        name: &str,
        region: &BufferRegion<'_>,
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<()> {
        let align = self.offset_align();
        let needed = plan.whole_binding_size(dtype)?;
        let rule = format!(
            "its {} bytes rounded up to 4",
            byte_count(plan.whole_shape(), dtype)?
        );
        region.check(name, needed, &rule, wgpu::BufferUsages::STORAGE, align)
    }

    /// Checks the regions of the parts of `plan` (a split's outputs or a concat's inputs, as
    /// `direction` says), one per part in plan order: usage STORAGE, the storage offset
    /// alignment, room for each non-empty part's bytes rounded up to 4, none in `whole` (the
    /// whole tensor's buffer), no two overlapping in one buffer. Returns the layout that
    /// reports them, and each buffer with its non-empty parts (positions in `bytes.outputs`)
    /// in offset order.
    pub(crate) fn place_parts<'a>(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        bytes: &ByteRows,
        regions: &[BufferRegion<'a>],
        whole: &wgpu::Buffer,
    ) -> Result<(PartLayout, PartsByBuffer<'a>)> {
        let (part, whole_name) = direction.names();
        if regions.len() != plan.num_parts() {
            let parts = match direction {
                Direction::Split => "",
                Direction::Concat => "a concat of ",
            };
            return Err(SplitError::BadBuffer(format!(
                "{} {part} regions for {parts}{} {part}s",
                regions.len(),
                plan.num_parts()
            )));
        }
        let align = self.offset_align();
        let mut ranges = vec![PartRange { offset: 0, size: 0 }; plan.num_parts()];
        // The non-empty parts of each buffer. A buffer compares by wgpu's resource id, which
        // never changes, so its interior mutability cannot move it within the map.
        #[allow(clippy::mutable_key_type)]
        let mut groups: BTreeMap<&wgpu::Buffer, Vec<usize>> = BTreeMap::new();
        for (k, o) in bytes.outputs.iter().enumerate() {
            let (region, size) = (&regions[o.output], bytes.size(o));
            let name = format!("{part} {}", o.output);
            let rule = format!("its {size} bytes rounded up to 4");
            let storage = wgpu::BufferUsages::STORAGE;
            region.check(&name, binding_bytes(size), &rule, storage, align)?;
            if region.buffer == whole {
                let how = match direction {
                    Direction::Split => "a split reads one buffer and writes others",
                    Direction::Concat => "a concat reads other buffers and writes one",
                };
                return Err(SplitError::BadBuffer(format!(
                    "{name} is in the {whole_name}'s buffer; {how}"
                )));
            }
            ranges[o.output] = PartRange {
                offset: region.offset,
                size,
            };
            groups.entry(region.buffer).or_default().push(k);
        }
        let mut placed = Vec::with_capacity(groups.len());
        for (buffer, mut members) in groups {
            members.sort_by_key(|&k| ranges[bytes.outputs[k].output].offset);
            // A split's outputs are written: one would take another's bytes as its own. A
            // concat's inputs are only read, so they may repeat or overlap.
            let written = direction == Direction::Split;
            for w in members.windows(2).filter(|_| written) {
                let (i, j) = (bytes.outputs[w[0]].output, bytes.outputs[w[1]].output);
                let end = ranges[i].offset + binding_bytes(ranges[i].size);
                if ranges[j].offset < end {
                    return Err(SplitError::BadBuffer(format!(
                        "{part} {j} at offset {} overlaps {part} {i} in the same buffer, which \
                         ends at byte {end} (its size rounded up to 4)",
                        ranges[j].offset
                    )));
                }
            }
            placed.push((buffer, members));
        }
        let layout = PartLayout {
            total_bytes: ranges.iter().map(|r| r.offset + r.size).max().unwrap_or(0),
            ranges,
            alignment: align.max(UNIT_BYTES),
        };
        Ok((layout, placed))
    }
}

// Parts where the engine's allocator put them: one region per output of a split, or per input
// of a concat, in any buffers.

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] of a split with one region per output
    /// ([`Outputs::Regions`](crate::Outputs::Regions)), or of a concat with one region per input
    /// ([`Inputs::Regions`](crate::Inputs)), as `direction` says; `whole` is the whole
    /// tensor's region (the split's input, the concat's output). Planned at every call: each
    /// window of parts takes its own route, and the windows that take one gather dispatch
    /// each are bound together, as many per dispatch as the multi-output or multi-input build
    /// binds.
    pub(crate) async fn prepare_regions(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        whole: BufferRegion<'_>,
        parts: &[BufferRegion<'_>],
    ) -> Result<PreparedParts> {
        self.probe
            .check(format_args!("preparing the {}", direction.op()))?;
        self.check_whole(direction.names().1, &whole, plan, dtype)?;
        let bytes = ByteRows::new(plan, dtype.size())?;
        let (placed, groups) = self.place_parts(direction, plan, &bytes, parts, whole.buffer)?;
        let placed = Arc::new(placed);
        let mut prepared = self.prepare_nothing(direction.op(), placed.clone());
        let bindings = match direction {
            Direction::Split => self.output_bindings,
            Direction::Concat => self.input_bindings,
        };
        // A batch's dispatch binds the whole tensor at once.
        let whole_fits = binding_bytes(bytes.input_bytes()) <= window_limit(&self.limits);
        let mut gathered: Vec<Group<'_>> = Vec::new();
        for (buffer, members) in windows(direction, &bytes, &placed, groups) {
            // The window's parts on their own, numbered in `members` order, and their places.
            let (base, layout) = placed.window(&bytes, &members);
            let group = bytes.subset(members.iter().copied());
            let region = BufferRegion {
                buffer,
                offset: base,
            };
            let (from, to) = direction.in_order(whole, region);
            let regions = self.regions(&from, &to);
            let route = planner::choose_for(direction, &group, &layout, &self.caps(), &regions)?;
            let small = layout.total_bytes <= multi_binding_group_limit(self.info.device_type);
            if bindings > 1
                && small
                && whole_fits
                && matches!(&route, Route::Gather(d) if d.len() == 1)
            {
                gathered.push(Group {
                    members,
                    layout,
                    region,
                });
                continue;
            }
            let at = (from.offset, to.offset);
            let recording = route.recording(self.gather.build(), at, &self.limits)?;
            let tables = self.upload_tables(&recording).await?;
            let part = self
                .prepare_chosen(direction, &recording, &tables, placed.clone(), from, to)
                .await?;
            prepared.append(part);
        }
        for batch in gathered.chunks(bindings as usize) {
            let bound = self.bind_batch(direction, &bytes, batch, whole).await?;
            prepared.recorded.dispatches += 1;
            prepared.commands.push(Commands::Gather(bound));
        }
        Ok(prepared)
    }
}

/// The windows of each buffer's parts (`groups`, in offset order): a split's outputs in one
/// window from the first offset while their offsets stay whole units apart (the gather
/// addresses outputs by unit), a new window where not; a concat's inputs in one window per
/// buffer, in column order (the join's segments), at any offsets.
fn windows<'a>(
    direction: Direction,
    bytes: &ByteRows,
    placed: &PartLayout,
    groups: PartsByBuffer<'a>,
) -> PartsByBuffer<'a> {
    if direction == Direction::Concat {
        let column_order = |(buffer, mut members): (&'a wgpu::Buffer, Vec<usize>)| {
            members.sort_unstable();
            (buffer, members)
        };
        return groups.into_iter().map(column_order).collect();
    }
    let mut windows: PartsByBuffer<'a> = Vec::new();
    for (buffer, members) in groups {
        let mut base: Option<u64> = None;
        for k in members {
            let offset = placed.ranges[bytes.outputs[k].output].offset;
            match (base, windows.last_mut()) {
                (Some(b), Some(w)) if (offset - b).is_multiple_of(UNIT_BYTES) => w.1.push(k),
                _ => {
                    base = Some(offset);
                    windows.push((buffer, vec![k]));
                }
            }
        }
    }
    windows
}

/// The parts of one buffer (a split's outputs or a concat's inputs) that one binding of the
/// multi-output or multi-input build reaches: their positions in the [`ByteRows`], their
/// places in the buffer's window (`layout.ranges`, in the same order), and the window.
struct Group<'a> {
    members: Vec<usize>,
    layout: PartLayout,
    region: BufferRegion<'a>,
}

impl GpuSplitter {
    /// The dispatch of the multi-output build writing the outputs of every group in `batch`,
    /// group `j` through output binding `j`.
    fn multi_output_batch(&self, bytes: &ByteRows, batch: &[Group<'_>]) -> Result<Dispatch> {
        // The batch's outputs on their own, group after group, as `subset` numbers them.
        let keep = batch.iter().flat_map(|g| g.members.iter().copied());
        let layout = PartLayout {
            ranges: batch
                .iter()
                .flat_map(|g| g.layout.ranges.iter().copied())
                .collect(),
            total_bytes: 0,
            alignment: UNIT_BYTES,
        };
        let bindings: Vec<u32> = (0..batch.len() as u32)
            .flat_map(|j| std::iter::repeat_n(j, batch[j as usize].members.len()))
            .collect();
        multi_output_dispatch(
            &bytes.subset(keep),
            &layout,
            &bindings,
            self.gather_tuning,
            window_limit(&self.limits),
        )
    }

    /// The dispatch of the multi-input build reading the inputs of every group in `batch`,
    /// group `j` through input binding `j`.
    fn multi_input_batch(&self, bytes: &ByteRows, batch: &[Group<'_>]) -> Result<Dispatch> {
        // The batch's inputs in column order, each with its binding and its place in its
        // buffer's window; `subset` numbers them in that order.
        let mut places: Vec<(usize, u32, u64)> = (0u32..)
            .zip(batch)
            .flat_map(|(j, g)| {
                let ranges = g.members.iter().zip(&g.layout.ranges);
                ranges.map(move |(&k, r)| (k, j, r.offset))
            })
            .collect();
        places.sort_unstable();
        let sub = bytes.subset(places.iter().map(|p| p.0));
        let parts: Vec<JoinPart> = places
            .iter()
            .enumerate()
            .map(|(position, &(_, binding, src))| JoinPart {
                position,
                binding,
                src,
            })
            .collect();
        let sizes: Vec<u64> = batch.iter().map(|g| g.layout.total_bytes).collect();
        let limit = window_limit(&self.limits);
        join_dispatch(&sub, &parts, &sizes, self.gather_tuning, limit)
    }

    /// The one dispatch of the build with a binding per group of `batch` (the multi-output
    /// build for a split, the multi-input one for a concat) over `bytes`, bound to the groups'
    /// windows and `whole`, the whole tensor's region, its table uploaded.
    async fn bind_batch(
        &self,
        direction: Direction,
        bytes: &ByteRows,
        batch: &[Group<'_>],
        whole: BufferRegion<'_>,
    ) -> Result<Vec<BoundDispatch>> {
        let n = batch.len() as u32;
        let (dispatch, pipeline) = match direction {
            Direction::Split => (
                self.multi_output_batch(bytes, batch)?,
                self.multi_output_pipeline(n).await?,
            ),
            Direction::Concat => (
                self.multi_input_batch(bytes, batch)?,
                self.multi_input_pipeline(n).await?,
            ),
        };
        let windows: Vec<(u64, u64)> = batch
            .iter()
            .map(|g| (g.region.offset, g.layout.total_bytes))
            .collect();
        let dispatches = std::slice::from_ref(&dispatch);
        let (build, limits) = (pipeline.build(), &self.limits);
        let recording =
            record_windows(build, direction, dispatches, whole.offset, &windows, limits)?;
        let buffers: Vec<&wgpu::Buffer> = batch.iter().map(|g| g.region.buffer).collect();
        self.bind_windows(&pipeline, direction, &recording, whole.buffer, &buffers)
            .await
    }
}

impl GpuSplitter {
    /// Binds `recording`, dispatches of `pipeline`'s build between `whole`, the whole
    /// tensor's buffer, and `windows`, a buffer per binding of the parts' side, as
    /// `direction` moves the bytes (`wgsl_split::views::record_windows`), its tables
    /// uploaded.
    pub(crate) async fn bind_windows(
        &self,
        pipeline: &GatherPipeline,
        direction: Direction,
        recording: &Recording,
        whole: &wgpu::Buffer,
        windows: &[&wgpu::Buffer],
    ) -> Result<Vec<BoundDispatch>> {
        let tables = self.upload_tables(recording).await?;
        let buffer = |role| match (direction, role) {
            (Direction::Split, Role::Input(0)) | (Direction::Concat, Role::Output(0)) => {
                Some(whole)
            }
            (Direction::Split, Role::Output(k)) | (Direction::Concat, Role::Input(k)) => {
                windows.get(k as usize).copied()
            }
            _ => None,
        };
        let mut bound = Vec::with_capacity(tables.len());
        for (d, table) in recording.dispatches().zip(&tables) {
            bound.push(
                pipeline
                    .bind_recorded(&self.device, direction.op(), d, table, &buffer)
                    .await?,
            );
        }
        Ok(bound)
    }
}
