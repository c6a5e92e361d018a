//! Parts through views on the GPU ([`Outputs::Views`](crate::Outputs::Views),
//! [`Inputs::Views`](crate::Inputs::Views)): each part's view checked against its region,
//! lowered to runs ([`crate::plan::views`]) and cut into the split table's entries, or a
//! split's part written channels-last into a dispatch of its own ([`lower_view`]); a split's
//! outputs in one dispatch for as many buffers as the multi-output build binds, a concat's
//! inputs in one dispatch per buffer; each part buffer's window bound at a dynamic offset,
//! which a prepared node moves ([`Prepared::encode_with_views`]).

use crate::error::{Result, SplitError};
use crate::gpu::device;
use crate::gpu::direction::Direction;
use crate::gpu::gather::builds::{InputBindings, OutputBindings};
use crate::gpu::gather::{
    binding_bytes, lower_view, repeat_joins, table_room, view_dispatches, window_limit, Dispatch,
    Lowered, UNIT_BYTES,
};
use crate::gpu::moving::{Movable, MovableBatch};
use crate::gpu::placement::{BufferRegion, PartLayout, PartRange};
use crate::gpu::plans::{Encoded, Plan, Recorded};
use crate::gpu::prepared::{Commands, Prepared, PreparedParts};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::views::{check_disjoint, check_view, part_runs, Access, Runs, Written};
use crate::plan::{PartView, SplitPlan};
use crate::DType;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A non-empty part through its view: its position, name, region and runs, and the bytes of
/// its buffer its view reaches (`start .. end`).
struct Viewed<'a> {
    k: usize,
    name: String,
    region: BufferRegion<'a>,
    runs: Runs,
    start: u64,
    end: u64,
    /// Elements of the region the view reaches, and the region holds.
    reach: u64,
    room: u64,
}

/// The parts of one buffer, and the window of it that binds them all: from `offset`, a
/// multiple of the storage offset alignment, `size` bytes.
struct BufferWindow<'a, 'p> {
    parts: Vec<&'p Viewed<'a>>,
    region: BufferRegion<'a>,
    size: u64,
}

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] of a split whose output `k` is written through `views[k]`
    /// into `regions[k]`, or of a concat whose input `k` is read so, as `direction` says;
    /// `whole` is the whole tensor's region.
    pub(crate) async fn prepare_views(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        whole: BufferRegion<'_>,
        regions: &[BufferRegion<'_>],
        views: &[PartView],
    ) -> Result<PreparedParts> {
        self.probe
            .check(format_args!("preparing the {}", direction.op()))?;
        let whole_name = direction.names().1;
        self.check_whole(whole_name, &whole, plan, dtype)?;
        let whole_bytes = plan.whole_binding_size(dtype)?;
        let limit = window_limit(&self.limits);
        if whole_bytes > limit {
            return Err(SplitError::TooLarge(format!(
                "the {whole_name} of {whole_bytes} bytes is past one storage binding of {limit} \
                 bytes, which a {} through views takes whole",
                direction.op()
            )));
        }
        let viewed = self.viewed(direction, plan, dtype, whole.buffer, regions, views)?;
        let mut ranges = vec![PartRange { offset: 0, size: 0 }; plan.num_parts()];
        for v in &viewed {
            ranges[v.k] = PartRange {
                offset: v.start,
                size: v.end - v.start,
            };
        }
        let layout = PartLayout {
            total_bytes: ranges.iter().map(|r| r.offset + r.size).max().unwrap_or(0),
            ranges,
            alignment: UNIT_BYTES,
        };
        let layout = Arc::new(layout);
        let mut prepared = self.prepare_nothing(direction, layout.clone());
        let windows = self.buffer_windows(&viewed)?;
        let mut batches = Vec::new();
        for group in windows.chunks(self.views_batch(direction)?) {
            let dispatches = self.view_batch(direction, group, whole_bytes)?;
            let bound_windows: Vec<(BufferRegion<'_>, u64)> =
                group.iter().map(|w| (w.region, w.size)).collect();
            let outputs = match group.len() {
                1 => self.gather.single_output(),
                n => OutputBindings::Units(n as u32),
            };
            let pipeline = self
                .build_with(InputBindings::ONE, outputs, Some(direction))
                .await?;
            let bound = self
                .bind_windows(&pipeline, direction, &dispatches, whole, &bound_windows)
                .await?;
            prepared.recorded.dispatches += bound.len() as u32;
            prepared.commands.push(Commands::Gather(bound.clone()));
            let windows = group.iter().map(|w| {
                let parts = w.parts.iter().map(|v| v.k).collect();
                (w.region.buffer.clone(), w.region.offset, w.size, parts)
            });
            batches.push(MovableBatch {
                bound,
                windows: windows.collect(),
            });
        }
        let (mut reach, mut room) = (vec![0; views.len()], vec![0; views.len()]);
        for v in &viewed {
            (reach[v.k], room[v.k]) = (v.reach, v.room);
        }
        prepared.movable = Some(Arc::new(Movable {
            direction,
            es: dtype.size() as u64,
            align: self.offset_align(),
            views: views.to_vec(),
            reach,
            room,
            batches,
            layout,
        }));
        Ok(prepared)
    }

    /// Each non-empty part through its view, checked: one region and one view per part, each
    /// region STORAGE at the storage offset alignment and outside `whole`, each view inside
    /// its region and by its rules, and written parts sharing no byte.
    fn viewed<'a>(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        whole: &wgpu::Buffer,
        regions: &[BufferRegion<'a>],
        views: &[PartView],
    ) -> Result<Vec<Viewed<'a>>> {
        let (part, whole_name) = direction.names();
        let n = plan.num_parts();
        if regions.len() != n || views.len() != n {
            return Err(SplitError::BadView(format!(
                "{} regions and {} views for {n} {part}s: one each",
                regions.len(),
                views.len()
            )));
        }
        let access = match direction {
            Direction::Split => Access::Write,
            Direction::Concat => Access::Read,
        };
        let es = dtype.size() as u64;
        let mut viewed = Vec::new();
        for (k, (region, view)) in regions.iter().zip(views).enumerate() {
            let name = format!("{part} {k}");
            let room = region.buffer.size().saturating_sub(region.offset) / es;
            let reach = check_view(&name, &plan.part_shape(k), view, room, access)?;
            let Some(runs) = part_runs(plan, k, view, es, access) else {
                continue;
            };
            let end = reach * es;
            let rule = "its view's last element's end, rounded up to 4";
            let align = self.offset_align();
            region.check(
                &name,
                binding_bytes(end),
                rule,
                wgpu::BufferUsages::STORAGE,
                align,
            )?;
            if region.buffer == whole {
                return Err(SplitError::BadBuffer(format!(
                    "{name} is in the {whole_name}'s buffer; a {} reads one buffer and writes \
                     others",
                    direction.op()
                )));
            }
            viewed.push(Viewed {
                k,
                name,
                region: *region,
                start: region.offset + view.offset * es,
                end: region.offset + end,
                runs,
                reach,
                room,
            });
        }
        if access == Access::Write {
            let written: Vec<Written<'_, &wgpu::Buffer>> = viewed
                .iter()
                .map(|v| Written {
                    name: v.name.clone(),
                    buffer: v.region.buffer,
                    at: v.region.offset,
                    runs: &v.runs,
                })
                .collect();
            check_disjoint(&written)?;
        }
        Ok(viewed)
    }

    /// How many of the parts' buffers one dispatch binds: each takes 2 dynamic storage
    /// bindings (a split's output as units and tail, or 1 in the words-only build; a
    /// concat's input as words and vec4s), so that a prepared node moves them
    /// ([`Prepared::encode_with_views`]); a split binds as many buffers as the device allows,
    /// a concat one.
    fn views_batch(&self, direction: Direction) -> Result<usize> {
        let dynamic = self.limits.max_dynamic_storage_buffers_per_pipeline_layout;
        let (part, _) = direction.names();
        let each = match direction {
            Direction::Split => self.gather.single_output().count_and_views().1,
            Direction::Concat => 2,
        };
        if dynamic < each {
            return Err(SplitError::Device(format!(
                "a {} through views binds each {part}'s buffer at {each} dynamic offsets; the \
                 device allows {dynamic} dynamic storage buffers per pipeline layout \
                 (Limits::max_dynamic_storage_buffers_per_pipeline_layout; WebGPU gives at \
                 least 4)",
                direction.op()
            )));
        }
        Ok(match direction {
            Direction::Split => self.output_bindings.min(dynamic / each) as usize,
            Direction::Concat => 1,
        })
    }

    /// The parts of each buffer and the window that binds them, the buffers in the order of
    /// their first parts (so equal parts in buffers of their own lie a binding apart in
    /// turn, and their joins take one dispatch: `repeat_joins`).
    fn buffer_windows<'a, 'p>(
        &self,
        viewed: &'p [Viewed<'a>],
    ) -> Result<Vec<BufferWindow<'a, 'p>>> {
        // A buffer compares by wgpu's resource id, which never changes.
        #[allow(clippy::mutable_key_type)]
        let mut index: BTreeMap<&wgpu::Buffer, usize> = BTreeMap::new();
        let mut groups: Vec<Vec<&'p Viewed<'a>>> = Vec::new();
        for v in viewed {
            let next = groups.len();
            let g = *index.entry(v.region.buffer).or_insert(next);
            if g == next {
                groups.push(Vec::new());
            }
            groups[g].push(v);
        }
        let (align, limit) = (self.offset_align(), window_limit(&self.limits));
        groups
            .into_iter()
            .map(|parts| {
                let start = parts.iter().map(|v| v.start).min().unwrap_or(0) / align * align;
                let end = parts.iter().map(|v| v.end).max().unwrap_or(0);
                let size = binding_bytes(end - start);
                if size > limit {
                    let names: Vec<&str> = parts.iter().map(|v| v.name.as_str()).collect();
                    return Err(SplitError::TooLarge(format!(
                        "{} reach bytes {start} to {end} of one buffer, past one storage binding \
                         of {limit} bytes",
                        names.join(", ")
                    )));
                }
                let region = BufferRegion {
                    buffer: parts[0].region.buffer,
                    offset: start,
                };
                Ok(BufferWindow {
                    parts,
                    region,
                    size,
                })
            })
            .collect()
    }

    /// The dispatch of one batch: a split writing every part of `group`'s buffers (buffer
    /// `j` through output binding `j`), or a concat reading the parts of its one buffer; the
    /// whole tensor of `whole_bytes` is bound whole.
    fn view_batch(
        &self,
        direction: Direction,
        group: &[BufferWindow<'_, '_>],
        whole_bytes: u64,
    ) -> Result<Vec<Dispatch>> {
        let (src, dst) = match direction {
            Direction::Split => (whole_bytes, 0),
            Direction::Concat => (group[0].size, whole_bytes),
        };
        let mut entries = Vec::new();
        let mut channels = Vec::new();
        let room = table_room(&self.limits);
        for (j, window) in group.iter().enumerate() {
            for v in &window.parts {
                let local = v.region.offset - window.region.offset;
                let (src_base, dst_base, unit_base) = match direction {
                    Direction::Split => (0, local, j as u32),
                    Direction::Concat => (local, 0, 0),
                };
                // The batch's parts share its tables: each takes what the ones before left.
                let left = room.saturating_sub(entries.len() as u64);
                let split = direction == Direction::Split;
                let bases = (src_base, dst_base, unit_base);
                let tuning = self.gather_tuning;
                match lower_view(&v.name, &v.runs, split, bases, (src, dst), left, tuning)? {
                    Lowered::Dispatch(d) => channels.push(d),
                    Lowered::Entries(e) => entries.extend(e),
                }
            }
        }
        let mut dispatches = view_dispatches(entries, src, dst, self.gather_tuning);
        dispatches.extend(repeat_joins(channels));
        Ok(dispatches)
    }
}

impl<P: Plan> Prepared<P> {
    /// Records the split or concat, prepared through views
    /// ([`Outputs::Views`](crate::Outputs::Views), [`Inputs::Views`](crate::Inputs::Views)),
    /// with `views` in place of the prepared ones: the same strides, other offsets (a decode
    /// step's K and V one position further into their caches). Each moved view is checked
    /// inside its region; each buffer's parts move by one shift, which keeps its window at a
    /// multiple of the storage offset alignment (K and V of heads of 128 f16 or 64 f32 at
    /// any position) and within 2 GiB of where it was prepared; the table and the bind groups
    /// stay, each window takes a new dynamic offset, nothing is made. Anything else is a
    /// [`SplitError::BadView`] that says what to prepare again.
    ///
    /// ```no_run
    /// # use wgpu_split::{ops::Attention, wgpu, DType, GpuSplitter, Outputs};
    /// # fn decode(gpu: &GpuSplitter, qkv: &wgpu::Buffer, q: &wgpu::Buffer, k: &wgpu::Buffer,
    /// #           v: &wgpu::Buffer) -> wgpu_split::Result<()> {
    /// let layer = Attention { batch: 1, seq: 1, q_heads: 32, kv_heads: 8, head_dim: 128 };
    /// let (plan, views) = layer.split_qkv(4096, 0)?;
    /// let regions = [q.into(), k.into(), v.into()];
    /// let node = gpu.prepare(&plan, DType::F16, qkv.into(), Outputs::Views(&regions, &views))?;
    /// for p in 0..4096 {
    ///     let mut encoder = gpu.device().create_command_encoder(&Default::default());
    ///     node.encode_with_views(&mut encoder, &layer.split_qkv(4096, p)?.1)?;
    ///     gpu.queue().submit([encoder.finish()]);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn encode_with_views(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        views: &[PartView],
    ) -> Result<Encoded> {
        // The error scopes of native wgpu are ready at once: this does not wait.
        device::block_on(
            "Prepared::encode_with_views",
            self.encode_with_views_async(encoder, views),
        )
    }

    /// [`Prepared::encode_with_views`] for async callers, as [`Prepared::encode_async`].
    pub async fn encode_with_views_async(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        views: &[PartView],
    ) -> Result<Encoded> {
        self.parts.encode_moved(encoder, views).await
    }
}

impl PreparedParts {
    /// [`Prepared::encode_with_views`].
    pub(crate) async fn encode_moved(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        views: &[PartView],
    ) -> Result<Recorded> {
        let Some(movable) = &self.movable else {
            return Err(SplitError::BadView(
                "this node was prepared without views: encode_with_views moves the views of a \
                 node prepared with Outputs::Views or Inputs::Views"
                    .into(),
            ));
        };
        self.probe.check(format_args!(
            "encoding the prepared {} at new views",
            self.direction.op()
        ))?;
        movable.encode(&self.device, encoder, views).await
    }
}
