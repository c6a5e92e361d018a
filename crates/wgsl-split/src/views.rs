//! Parts through views ([`PartView`]) as recordings ([`record_views`]): each part's view
//! checked against its region, lowered to runs (`plan::views`) and cut into the split
//! table's entries, or a split's part written channels-last into a dispatch of its own
//! (`gather::lower_view`); a split's outputs in one dispatch for as many buffers as the
//! multi-output build binds, a concat's inputs in one dispatch per buffer; each part
//! buffer's window bound at a dynamic offset, which a host moves to record the node again
//! at new views (a decode step's K and V one position further into their caches).

use crate::direction::Direction;
use crate::error::{Result, SplitError};
use crate::gather::binds::Sides;
use crate::gather::builds::{single_output, Build, InputBindings, OutputBindings};
use crate::gather::{
    binding_bytes, lower_view, repeat_joins, table_room, view_dispatches, window_limit, Dispatch,
    GatherTuning, Lowered, UNIT_BYTES,
};
use crate::placement::{PartLayout, PartRange};
use crate::plan::views::{check_disjoint, check_view, part_runs, Access, Runs, Written};
use crate::plan::{PartView, SplitPlan};
use crate::recording::{Command, Dispatched, Recording};
use crate::{DType, Limits};
use std::collections::BTreeMap;

/// A region of one of the host's buffers: the buffer, by any key the host tells its buffers
/// apart by; the region's byte offset; and the buffer's size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRegion<B> {
    pub buffer: B,
    pub offset: u64,
    pub buffer_size: u64,
}

/// The window of one buffer that binds its parts (positions in the plan): from `offset`, a
/// multiple of the storage offset alignment, `size` bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewWindow<B> {
    pub buffer: B,
    pub offset: u64,
    pub size: u64,
    pub parts: Vec<usize>,
}

/// The dispatches of one build that bind the same windows: window `k` is the parts' side's
/// `Role::Output(k)` of a split (`Role::Input(k)` of a concat), the whole tensor the other
/// side's role 0.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewBatch<B> {
    pub build: Build,
    pub recording: Recording,
    pub windows: Vec<ViewWindow<B>>,
}

/// A split's or a concat's parts through views, recorded: its batches; where each part's
/// view reaches in its buffer (`layout`); and per part the elements of its region its view
/// reaches (0 for an empty part) and the elements its region holds, which a moved view is
/// checked against.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewsRecording<B> {
    pub batches: Vec<ViewBatch<B>>,
    pub layout: PartLayout,
    pub reach: Vec<u64>,
    pub room: Vec<u64>,
}

/// A non-empty part through its view: its position, name, region and runs, and the bytes of
/// its buffer its view reaches (`start .. end`).
struct Viewed<B> {
    k: usize,
    name: String,
    region: HostRegion<B>,
    runs: Runs,
    start: u64,
    end: u64,
    reach: u64,
    room: u64,
}

/// The recording of the split of `plan` (or, `direction`, its concat) between the whole
/// tensor in `whole` and part `k` through `views[k]` in `regions[k]`, elements of `dtype`, on
/// a device of `limits` whose lanes map as `tuning` says; a split binds at most
/// `most_outputs` buffers a dispatch. Each region is checked: at the storage offset
/// alignment, holding its view, outside the whole tensor's buffer, and a split's parts
/// sharing no byte. The host checks that each window's buffer is a storage buffer.
#[allow(clippy::too_many_arguments)]
pub fn record_views<B: Copy + Ord>(
    direction: Direction,
    plan: &SplitPlan,
    dtype: DType,
    whole: HostRegion<B>,
    regions: &[HostRegion<B>],
    views: &[PartView],
    limits: &Limits,
    (tuning, most_outputs): (GatherTuning, u32),
) -> Result<ViewsRecording<B>> {
    let whole_name = direction.names().1;
    let whole_bytes = plan.whole_binding_size(dtype)?;
    let limit = window_limit(limits);
    if whole_bytes > limit {
        return Err(SplitError::TooLarge(format!(
            "the {whole_name} of {whole_bytes} bytes is past one storage binding of {limit} \
             bytes, which a {} through views takes whole",
            direction.op()
        )));
    }
    let align = limits.min_storage_buffer_offset_alignment as u64;
    let viewed = viewed(direction, plan, dtype, whole.buffer, regions, views, align)?;
    let mut ranges = vec![PartRange { offset: 0, size: 0 }; plan.num_parts()];
    let (mut reach, mut room) = (vec![0; views.len()], vec![0; views.len()]);
    for v in &viewed {
        ranges[v.k] = PartRange {
            offset: v.start,
            size: v.end - v.start,
        };
        (reach[v.k], room[v.k]) = (v.reach, v.room);
    }
    let layout = PartLayout {
        total_bytes: ranges.iter().map(|r| r.offset + r.size).max().unwrap_or(0),
        ranges,
        alignment: UNIT_BYTES,
    };
    let windows = buffer_windows(&viewed, align, limit)?;
    let mut batches = Vec::new();
    let batch = views_batch(direction, limits, most_outputs)?;
    for group in windows.chunks(batch) {
        let dispatches = view_batch(direction, group, &viewed, whole_bytes, limits, tuning)?;
        let outputs = match group.len() {
            1 => single_output(limits),
            n => OutputBindings::Units(n as u32),
        };
        let build = Build::plain(InputBindings::ONE, outputs, Some(direction));
        let bound: Vec<(u64, u64)> = group.iter().map(|w| (w.offset, w.size)).collect();
        let recording =
            record_windows(build, direction, &dispatches, whole.offset, &bound, limits)?;
        let windows = group.iter().map(|w| ViewWindow {
            buffer: w.buffer,
            offset: w.offset,
            size: w.size,
            parts: w.parts.iter().map(|&i| viewed[i].k).collect(),
        });
        batches.push(ViewBatch {
            build,
            recording,
            windows: windows.collect(),
        });
    }
    Ok(ViewsRecording {
        batches,
        layout,
        reach,
        room,
    })
}

/// The recording of `dispatches` of `build` between the whole tensor's region at
/// `whole_offset` of its buffer and `windows`, a window (offset, bytes) per binding of the
/// parts' side, as `direction` moves the bytes.
pub fn record_windows(
    build: Build,
    direction: Direction,
    dispatches: &[Dispatch],
    whole_offset: u64,
    windows: &[(u64, u64)],
    limits: &Limits,
) -> Result<Recording> {
    let sides = direction.in_order(Sides::Region(whole_offset), Sides::PerBinding(windows));
    let commands = dispatches
        .iter()
        .map(|d| Dispatched::new(build, d, sides, None, limits).map(Command::Dispatch));
    Ok(Recording {
        commands: commands.collect::<Result<_>>()?,
    })
}

/// Each non-empty part through its view, checked: one region and one view per part, each
/// region at a multiple of `align` and outside the whole tensor's buffer (`whole`), each view
/// inside its region and by its rules, and written parts sharing no byte.
fn viewed<B: Copy + Ord>(
    direction: Direction,
    plan: &SplitPlan,
    dtype: DType,
    whole: B,
    regions: &[HostRegion<B>],
    views: &[PartView],
    align: u64,
) -> Result<Vec<Viewed<B>>> {
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
        let room = region.buffer_size.saturating_sub(region.offset) / es;
        let reach = check_view(&name, &plan.part_shape(k), view, room, access)?;
        let Some(runs) = part_runs(plan, k, view, es, access) else {
            continue;
        };
        let end = reach * es;
        check_region(&name, region, binding_bytes(end), align)?;
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
        let written: Vec<Written<'_, B>> = viewed
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

/// Checks that `region` starts at a multiple of `align` and holds `needed` bytes (its view's
/// last element's end, rounded up to 4); `name` names it in the error.
fn check_region<B>(name: &str, region: &HostRegion<B>, needed: u64, align: u64) -> Result<()> {
    if !region.offset.is_multiple_of(align) {
        return Err(SplitError::BadBuffer(format!(
            "{name} offset {} is not a multiple of the device's storage offset alignment {align}",
            region.offset
        )));
    }
    let size = region.buffer_size;
    if region
        .offset
        .checked_add(needed)
        .is_none_or(|end| end > size)
    {
        return Err(SplitError::BadBuffer(format!(
            "{name} needs {needed} bytes (its view's last element's end, rounded up to 4); its \
             region has {} (a buffer of {size} bytes, from offset {})",
            size.saturating_sub(region.offset),
            region.offset
        )));
    }
    Ok(())
}

/// How many of the parts' buffers one dispatch binds: each takes 2 dynamic storage bindings
/// (a split's output as units and tail, or 1 in the words-only build; a concat's input as
/// words and vec4s), so that a host moves them; a split binds as many buffers as the device
/// allows and `most_outputs` says, a concat one.
fn views_batch(direction: Direction, limits: &Limits, most_outputs: u32) -> Result<usize> {
    let dynamic = limits.max_dynamic_storage_buffers_per_pipeline_layout;
    let (part, _) = direction.names();
    let each = match direction {
        Direction::Split => single_output(limits).count_and_views().1,
        Direction::Concat => 2,
    };
    if dynamic < each {
        return Err(SplitError::Device(format!(
            "a {} through views binds each {part}'s buffer at {each} dynamic offsets; the \
             device allows {dynamic} dynamic storage buffers per pipeline layout \
             (Limits::max_dynamic_storage_buffers_per_pipeline_layout; WebGPU gives at least 4)",
            direction.op()
        )));
    }
    Ok(match direction {
        Direction::Split => most_outputs.min(dynamic / each) as usize,
        Direction::Concat => 1,
    })
}

/// The parts of one buffer (positions in the viewed parts), and the window that binds them
/// all.
struct BufferWindow<B> {
    buffer: B,
    parts: Vec<usize>,
    offset: u64,
    size: u64,
}

/// The parts of each buffer and the window that binds them, the buffers in the order of
/// their first parts (so equal parts in buffers of their own lie a binding apart in turn,
/// and their joins take one dispatch: `repeat_joins`); each window at a multiple of `align`
/// and within one binding of `limit` bytes.
fn buffer_windows<B: Copy + Ord>(
    viewed: &[Viewed<B>],
    align: u64,
    limit: u64,
) -> Result<Vec<BufferWindow<B>>> {
    let mut index: BTreeMap<B, usize> = BTreeMap::new();
    let mut groups: Vec<(B, Vec<usize>)> = Vec::new();
    for (i, v) in viewed.iter().enumerate() {
        let next = groups.len();
        let g = *index.entry(v.region.buffer).or_insert(next);
        if g == next {
            groups.push((v.region.buffer, Vec::new()));
        }
        groups[g].1.push(i);
    }
    groups
        .into_iter()
        .map(|(buffer, parts)| {
            let start = parts.iter().map(|&i| viewed[i].start).min().unwrap_or(0);
            let start = start / align * align;
            let end = parts.iter().map(|&i| viewed[i].end).max().unwrap_or(0);
            let size = binding_bytes(end - start);
            if size > limit {
                let names: Vec<&str> = parts.iter().map(|&i| viewed[i].name.as_str()).collect();
                return Err(SplitError::TooLarge(format!(
                    "{} reach bytes {start} to {end} of one buffer, past one storage binding \
                     of {limit} bytes",
                    names.join(", ")
                )));
            }
            Ok(BufferWindow {
                buffer,
                parts,
                offset: start,
                size,
            })
        })
        .collect()
}

/// The dispatches of one batch: a split writing every part of `group`'s buffers (buffer `j`
/// through output binding `j`), or a concat reading the parts of its one buffer; the whole
/// tensor of `whole_bytes` is bound whole.
fn view_batch<B>(
    direction: Direction,
    group: &[BufferWindow<B>],
    viewed: &[Viewed<B>],
    whole_bytes: u64,
    limits: &Limits,
    tuning: GatherTuning,
) -> Result<Vec<Dispatch>> {
    let (src, dst) = match direction {
        Direction::Split => (whole_bytes, 0),
        Direction::Concat => (group[0].size, whole_bytes),
    };
    let mut entries = Vec::new();
    let mut channels = Vec::new();
    let room = table_room(limits);
    let split = direction == Direction::Split;
    for (j, window) in group.iter().enumerate() {
        for v in window.parts.iter().map(|&i| &viewed[i]) {
            let local = v.region.offset - window.offset;
            let bases = match direction {
                Direction::Split => (0, local, j as u32),
                Direction::Concat => (local, 0, 0),
            };
            // The batch's parts share its tables: each takes what the ones before left.
            let left = room.saturating_sub(entries.len() as u64);
            match lower_view(&v.name, &v.runs, split, bases, (src, dst), left, tuning)? {
                Lowered::Dispatch(d) => channels.push(d),
                Lowered::Entries(e) => entries.extend(e),
            }
        }
    }
    let mut dispatches = view_dispatches(entries, src, dst, tuning);
    dispatches.extend(repeat_joins(channels));
    Ok(dispatches)
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
