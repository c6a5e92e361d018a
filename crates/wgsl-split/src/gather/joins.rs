//! The concat's gather dispatch (`main_join`): the split's byte rows read the other
//! way. Pure arithmetic, tested without a device.
//!
//! The destination is the concat's output, `rows` rows of `stride` bytes (the plan's
//! [`ByteRows`], whose "input" is the concat's output); each part (a concat input) is a
//! column band of those rows, a segment, and its rows lie back to back in the source. The
//! table ([`JoinTable`]) holds the dispatch's [`JoinHeader`] and its [`Segment`]s in column
//! order; each lane takes output units (a run of them on CPU adapters, in turn with its
//! neighbours on GPUs) and searches the table for their segments. Parts aligned to 16 bytes
//! in one binding take the split's rows instead ([`aligned_rows`]): a direct map from a block
//! to its part.
//!
//! A dispatch whose parts are a narrow band of the output's columns ([`Band`]) numbers only
//! that band's units, row by row, not every unit from its first part's first byte on.

use super::abi::{
    binding_bytes, Entry, JoinHeader, JoinTable, Mode, Params, Segment, Table, UNIT_BYTES,
};
use super::blocks::split_table;
use super::channels::channel_lanes;
use super::dispatches::Dispatch;
use super::modes::GatherTuning;
use super::picker::{join_program, join_takes_split_rows, join_walks, lanes_in_runs};
use super::runs::{lane_steps, max_steps};
use crate::error::{Result, SplitError};
use crate::placement::PartLayout;
use crate::plan::bytes::ByteRows;

/// One part a dispatch writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinPart {
    /// Its position in the byte rows' non-empty outputs (`ByteRows::outputs`).
    pub position: usize,
    /// The input binding it is read through (0 but in the multi-input build).
    pub binding: u32,
    /// Source byte offset of its first row, in the binding's window.
    pub src: u64,
}

/// Every non-empty part of `bytes`, in one source window where `layout` places them (as
/// `Inputs::Region` and `Inputs::Placed` do).
pub fn join_parts(bytes: &ByteRows, layout: &PartLayout) -> Vec<JoinPart> {
    bytes
        .outputs
        .iter()
        .enumerate()
        .map(|(position, o)| JoinPart {
            position,
            binding: 0,
            src: layout.ranges[o.output].offset,
        })
        .collect()
}

/// The dispatch that writes `parts` (in column order) into the output of `bytes`, reading
/// source windows of `windows` bytes (one per input binding: one, but in the multi-input
/// build; the dispatch's own window is the first). Errors where the output or a window
/// exceeds one binding (`window_limit`), a byte count the shader's u32 arithmetic cannot hold,
/// or a part names a binding past `windows`.
pub fn join_dispatch(
    bytes: &ByteRows,
    parts: &[JoinPart],
    windows: &[u64],
    tuning: GatherTuning,
    window_limit: u64,
) -> Result<Dispatch> {
    let output = bytes.input_bytes();
    if let Some(p) = parts.iter().find(|p| p.binding as usize >= windows.len()) {
        return Err(SplitError::Device(format!(
            "a concat's part at position {} reads input binding {} of {}",
            p.position,
            p.binding,
            windows.len()
        )));
    }
    let sizes = windows.iter().map(|&w| ("source window", w));
    for (what, size) in std::iter::once(("output", output)).chain(sizes) {
        if binding_bytes(size) > window_limit {
            return Err(SplitError::TooLarge(format!(
                "a concat's {what} of {size} bytes exceeds one storage binding of \
                 {window_limit} bytes (the device's max_storage_buffer_binding_size, at most \
                 2 GiB)"
            )));
        }
    }
    let modes = parts.iter().map(|p| (p.binding, part_mode(bytes, p)));
    if join_takes_split_rows(windows.len(), modes) {
        return Ok(aligned_rows(bytes, parts, windows[0], tuning));
    }
    // The units from the one holding the first segment's row-0 byte to the one holding the
    // last segment's last byte, or those of the band the segments cover.
    let (first, end) = match (parts.first(), parts.last()) {
        (Some(a), Some(z)) => {
            let last = &bytes.outputs[z.position];
            (
                bytes.outputs[a.position].offset,
                (bytes.rows - 1) * bytes.stride + last.offset + last.row_bytes,
            )
        }
        _ => (0, 0),
    };
    let first_unit = first / UNIT_BYTES;
    let flat_units = end.div_ceil(UNIT_BYTES) - first_unit;
    let band = Band::of(bytes, first, end - (bytes.rows - 1) * bytes.stride)
        .filter(|b| b.units(bytes) < flat_units);
    let units = band.map_or(flat_units, |b| b.units(bytes));
    let whole = band.is_none() && first_unit == 0 && windows.len() == 1;
    // Parts side by side make one segment in short rows, and in longer ones where they take
    // the channels or are walked ([`join_walks`]); the join's units take one part a segment
    // there.
    let mut segments = self::segments(bytes, parts, bytes.stride <= UNIT_BYTES);
    let mut program = join_program(bytes.stride, &segments, whole, tuning.mode);
    // (The channels take only a whole output from one binding.)
    if whole && program.channels.is_none() && bytes.stride > UNIT_BYTES {
        let merged = self::segments(bytes, parts, true);
        let merged_program = join_program(bytes.stride, &merged, whole, tuning.mode);
        if merged_program.channels.is_some() || join_walks(bytes.stride, &merged) {
            (segments, program) = (merged, merged_program);
        }
    }
    // A lane's steps (units, or the channels' groups of rows), and the blocks that take
    // them.
    let (steps, blocks) = match program.channels {
        Some(c) => {
            let p = channel_lanes(c, bytes.rows, tuning);
            (p.steps_per_lane as u64, p.num_blocks as u64)
        }
        // Workgroups without a barrier (`join_runs_block`): on CPU adapters each lane a run
        // of units, spread as a split's runs are; on GPUs consecutive lanes take consecutive
        // units, a unit a step.
        None => unit_steps(units, tuning),
    };
    let header = JoinHeader {
        first_unit: first_unit as u32,
        units: units as u32,
        row_bytes: bytes.stride as u32,
        end_byte: output as u32,
        band_units: band.map_or(0, |b| b.units_per_row) as u32,
        band_first: band.map_or(0, |b| b.first) as u32,
        band_width: band.map_or(0, |b| b.width) as u32,
        repeat_blocks: blocks.max(1) as u32,
        repeat_src: 0,
        repeat_units: 0,
        binding: 0,
        repeat_binding: 0,
    };
    Ok(Dispatch {
        program,
        src_offset: 0,
        src_size: binding_bytes(windows.first().copied().unwrap_or(0)),
        dst_offset: 0,
        dst_size: binding_bytes(output),
        params: Params {
            num_blocks: blocks as u32,
            num_entries: segments.len() as u32,
            steps_per_lane: steps as u32,
            num_lanes: 0,
            interleaved: 0,
        },
        table: Table::Join(JoinTable { header, segments }),
    })
}

/// The dispatch of `parts` that take a split's table ([`join_takes_split_rows`]), from an
/// input window of `window` bytes: the split's aligned rows (`main_rows vec4`: the lanes on
/// GPUs, the runs on CPU adapters), one entry per part (or run of one-row parts back to back
/// in both buffers) whose rows lie back to back in the source and `bytes.stride` apart in the
/// output (`concat_heads64` on CPU adapters at about the copy kernel's rate, where the join's
/// runs reached 0.7).
fn aligned_rows(
    bytes: &ByteRows,
    parts: &[JoinPart],
    window: u64,
    tuning: GatherTuning,
) -> Dispatch {
    let mut entries: Vec<Entry> = Vec::with_capacity(parts.len());
    for p in parts {
        let o = &bytes.outputs[p.position];
        let e = Entry {
            block_start: 0,
            dst_unit: (o.offset / UNIT_BYTES) as u32,
            first_byte: 0,
            out_bytes: (bytes.rows * o.row_bytes) as u32,
            row_bytes: o.row_bytes as u32,
            src_stride: o.row_bytes as u32,
            src_offset: p.src as u32,
            mode: Mode::Vec4 as u32,
            dst_stride: bytes.stride as u32,
            skip: 0,
            binding: 0,
        };
        // Parts of one row each that lie back to back in both buffers (a sequence's rows
        // packed in order) take one entry, as a split's outputs do, so that its blocks need
        // no table search.
        match entries.last_mut() {
            Some(last)
                if bytes.rows == 1
                    && last.src_offset + last.out_bytes == e.src_offset
                    && 16 * last.dst_unit + last.out_bytes == 16 * e.dst_unit =>
            {
                last.out_bytes += e.out_bytes;
                last.row_bytes += e.row_bytes;
                last.src_stride = last.row_bytes;
            }
            _ => entries.push(e),
        }
    }
    let (program, params, entries) = split_table(None, entries, tuning);
    Dispatch {
        program,
        src_offset: 0,
        src_size: binding_bytes(window),
        dst_offset: 0,
        dst_size: binding_bytes(bytes.input_bytes()),
        params,
        table: Table::Split(entries),
    }
}

/// How part `p`'s bytes align: its columns, rows and source offset, in rows of `bytes`.
fn part_mode(bytes: &ByteRows, p: &JoinPart) -> Mode {
    let o = &bytes.outputs[p.position];
    Mode::of(o.offset | o.row_bytes | p.src | bytes.stride)
}

/// A lane's steps and the blocks that take `units` of a concat in `tuning`'s mapping
/// ([`lane_steps`]): a run of units a lane on CPU adapters, spread as a split's runs are;
/// consecutive lanes on consecutive units on GPUs.
pub(super) fn unit_steps(units: u64, tuning: GatherTuning) -> (u64, u64) {
    let runs = lanes_in_runs(tuning.mode);
    lane_steps(units, max_steps(tuning.max_steps_per_lane), runs)
}

/// The segments of `parts` (in column order): one per part, but with `merge` (where output
/// rows are at most a unit long, or the parts take the channels or are walked:
/// `join_dispatch`), one per run of parts that lie side by side in the output's rows, with
/// equal rows, in one binding, each the same number of bytes after the one before in the
/// source (equal inputs packed in one buffer, such as RGB planes), whose every unit visits
/// its segments' parts in turn with no division (`join_unit`, `join_walk`). Elsewhere finding
/// a column's part by division cost the runs more than the table reads it saves
/// (`docs/performance.md`).
fn segments(bytes: &ByteRows, parts: &[JoinPart], merge: bool) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::with_capacity(parts.len());
    let mut last: Option<&JoinPart> = None;
    for p in parts {
        let o = &bytes.outputs[p.position];
        if let (Some(s), Some(prev)) = (segments.last_mut(), last) {
            let step = p.src.wrapping_sub(prev.src);
            let side_by_side = merge
                && s.first_byte as u64 + s.count as u64 * s.row_bytes as u64 == o.offset
                && s.row_bytes as u64 == o.row_bytes
                && s.binding == p.binding
                && p.src > prev.src
                && step <= u32::MAX as u64
                && (s.count == 1 || s.part_step as u64 == step);
            if side_by_side {
                s.part_step = step as u32;
                s.count += 1;
                last = Some(p);
                continue;
            }
        }
        segments.push(Segment {
            first_byte: o.offset as u32,
            row_bytes: o.row_bytes as u32,
            src_offset: p.src as u32,
            binding: p.binding,
            count: 1,
            part_step: 0,
        });
        last = Some(p);
    }
    segments
}

/// The columns a dispatch's parts cover, `first .. first + width` of every row, where that
/// band leaves at least a unit between rows (no unit holds two rows' bands) and the output
/// has rows to skip: the dispatch then numbers `units_per_row` units per row, from the unit
/// holding the band's first byte in that row (the shader's `join_unit_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    /// First column.
    pub first: u64,
    /// Bytes per row.
    pub width: u64,
    /// Units numbered per row: the most any row's band touches.
    pub units_per_row: u64,
}

impl Band {
    /// The band of columns `first .. end` of the rows of `bytes`, if it leaves at least
    /// [`UNIT_BYTES`] between rows.
    pub fn of(bytes: &ByteRows, first: u64, end: u64) -> Option<Band> {
        let width = end.checked_sub(first)?;
        if bytes.rows < 2 || width == 0 || bytes.stride < width + UNIT_BYTES {
            return None;
        }
        // Where every row's band starts at the same byte of a unit, its units are known;
        // else at most those of a band starting at a unit's last byte.
        let lead = if bytes.stride.is_multiple_of(UNIT_BYTES) {
            first % UNIT_BYTES
        } else {
            UNIT_BYTES - 1
        };
        Some(Band {
            first,
            width,
            units_per_row: (lead + width).div_ceil(UNIT_BYTES),
        })
    }

    /// Units the dispatch numbers: `units_per_row` per row.
    pub fn units(&self, bytes: &ByteRows) -> u64 {
        bytes.rows * self.units_per_row
    }

    /// The output unit of the dispatch's unit `v`, whether or not it lies in the band, and
    /// the band's first and end byte in its row.
    fn place(&self, stride: u64, v: u64) -> (u64, u64, u64) {
        let start = (v / self.units_per_row) * stride + self.first;
        let u = start / UNIT_BYTES + v % self.units_per_row;
        (u, start, start + self.width)
    }

    /// The output unit of the dispatch's unit `v`, None where that lies past its row's band:
    /// the shader's `join_unit_at`, for the planner's checks.
    pub fn unit(&self, stride: u64, v: u64) -> Option<u64> {
        let (u, _, end) = self.place(stride, v);
        (u * UNIT_BYTES < end).then_some(u)
    }
}

#[cfg(test)]
mod joins_tests;
