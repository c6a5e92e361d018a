//! The concat's gather dispatch (`main_join`): the split's byte rows read the other
//! way. Pure arithmetic, tested without a device.
//!
//! The destination is the concat's output, `rows` rows of `stride` bytes (the plan's
//! [`ByteRows`], whose "input" is the concat's output); each part (a concat input) is a
//! column band of those rows, a segment, and its rows lie back to back in the source. The
//! table ([`JoinTable`]) holds the dispatch's [`JoinHeader`], its [`Segment`]s in column
//! order, then (the GPU walk, lanes in turn) one [`BlockRecord`] per block (workgroup): the
//! segments its columns touch, which its lanes keep at hand in workgroup memory, so a block
//! reads each once. The CPU walk (lanes in runs) has no records: its lanes search the table.
//!
//! A dispatch whose parts are a narrow band of the output's columns ([`Band`]) numbers only
//! that band's units, row by row, not every unit from its first part's first byte on.

use super::abi::{
    binding_bytes, BlockRecord, Entry, EntryPoint, JoinHeader, JoinTable, Mode, Params, ProgramKey,
    Segment, Table, MAX_STAGED_PARTS, RUNS_WORKGROUP_SIZE, STAGE_WORDS, UNIT_BYTES, WORKGROUP_SIZE,
};
use super::blocks::{split_table, GatherTuning};
use super::channels::{channel_runs, join_channels_of};
use super::dispatches::Dispatch;
use super::modes::GatherMode;
use super::runs::{max_steps, run_units};
use crate::error::{Result, SplitError};
use crate::gpu::placement::PartLayout;
use crate::plan::bytes::ByteRows;

/// Segments a block keeps at hand, at most: one per lane, so one step loads them, six words
/// each in the shader's `stage` (`SEGMENT_WORDS`). A block whose columns touch more searches
/// the table.
const MAX_KEPT_SEGMENTS: u64 = WORKGROUP_SIZE;
const _: () = assert!(6 * MAX_KEPT_SEGMENTS <= STAGE_WORDS);

// A staged join's `stage`: its segments, their first part numbers and the parts' offsets,
// then a step's source bytes, at most one vec4 per unit and two more per part.
const _: () = assert!(
    (6 + 2) * MAX_STAGED_PARTS + 4 * (WORKGROUP_SIZE + 2 * MAX_STAGED_PARTS) <= STAGE_WORDS
);

/// Parts narrower than this (or unaligned ones) take the staged join on GPUs: a lane's unit
/// then takes bytes of several parts, or shifts them, and two loads of its own for each would
/// touch more lines than a copy.
const STAGED_BELOW: u64 = 64;

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
    if let Some(d) = aligned_rows(bytes, parts, windows, tuning) {
        return Ok(d);
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
    let in_turn = tuning.mode == GatherMode::Gpu;
    let staged = in_turn && band.is_none() && stages(bytes, parts);
    // CPU adapters: 64-lane workgroups without a barrier (`join_runs_block`), each lane a run
    // of units, spread as a split's runs are. GPUs: 256 lanes that take units in turn and
    // share the block's segments.
    let turns = unit_turns(bytes, parts, tuning.mode, staged);
    let longest = max_steps(tuning.max_steps_per_lane, turns);
    let segments = segments(bytes, parts, in_turn || bytes.stride <= UNIT_BYTES);
    // CPU adapters: equal short parts over the whole output from one binding are channels,
    // whose lanes take groups of rows (`channel_runs`).
    let whole = !in_turn && band.is_none() && first_unit == 0 && windows.len() == 1;
    let channels = join_channels_of(bytes.stride, &segments).filter(|_| whole);
    // A lane's steps (units, or the channels' groups of rows), and the lanes that take them.
    let unit_runs = |steps: u64| (steps, units.div_ceil(steps));
    let (steps, runs) = match channels {
        Some(_) => channel_runs(bytes.rows, tuning.max_steps_per_lane),
        None if in_turn => unit_runs(units.div_ceil(WORKGROUP_SIZE).clamp(1, longest)),
        None => unit_runs(run_units(units, longest)),
    };
    let lanes = if in_turn {
        WORKGROUP_SIZE
    } else {
        RUNS_WORKGROUP_SIZE
    };
    let num_blocks = runs.div_ceil(lanes);
    let header = JoinHeader {
        first_unit: first_unit as u32,
        units: units as u32,
        row_bytes: bytes.stride as u32,
        end_byte: output as u32,
        band_units: band.map_or(0, |b| b.units_per_row) as u32,
        band_first: band.map_or(0, |b| b.first) as u32,
        band_width: band.map_or(0, |b| b.width) as u32,
        staged: staged.into(),
    };
    let columns: Vec<u64> = segments.iter().map(|e| e.first_byte as u64).collect();
    // Only the GPU walk keeps segments at hand: its blocks' records.
    let blocks = (0..if in_turn { num_blocks } else { 0 })
        .map(|block| {
            // The block's bytes of the output, `from .. to`: its first unit's first byte to its
            // last unit's end (in a band, within their rows' bands).
            let v0 = block * steps * lanes;
            let v1 = ((block + 1) * steps * lanes).min(units);
            let (from, to) = match band {
                None => (
                    (first_unit + v0) * UNIT_BYTES,
                    ((first_unit + v1) * UNIT_BYTES).min(output),
                ),
                Some(b) => (b.from(bytes.stride, v0), b.to(bytes.stride, v1 - 1)),
            };
            let (first, count) = kept_segments(&columns, bytes.stride, from, to);
            BlockRecord {
                first: first as u32,
                count: count as u32,
            }
        })
        .collect();
    Ok(Dispatch {
        program: ProgramKey {
            entry: EntryPoint::Join,
            lanes_in_runs: !in_turn,
            channels,
        },
        src_offset: 0,
        src_size: binding_bytes(windows.first().copied().unwrap_or(0)),
        dst_offset: 0,
        dst_size: binding_bytes(output),
        params: Params {
            num_blocks: num_blocks as u32,
            num_entries: segments.len() as u32,
            steps_per_lane: steps as u32,
            rows: 0,
            num_lanes: 0,
            interleaved: 0,
        },
        table: Table::Join(JoinTable {
            header,
            segments,
            blocks,
        }),
    })
}

/// The dispatch of `parts` on CPU adapters where every one is aligned to 16 bytes (its rows,
/// columns and source offset) and read through one binding: the split's runs of aligned rows
/// (`main_rows_vec4`), one entry per part (or run of one-row parts back to back in both
/// buffers) whose rows lie back to back in the source and `bytes.stride` apart in the output,
/// so each unit is one vec4 copied, as a split's aligned rows are (`concat_heads64` at about
/// the copy kernel's rate, where the join's runs, which look up each part's segment, reached
/// 0.7). None for other parts, and on GPUs, which take the join: there a block of the join
/// reads the segments of 16 KiB of output rows once, where a block of the split's lanes reads
/// the table for each part's 4 KiB (small parts, such as heads of short sequences).
fn aligned_rows(
    bytes: &ByteRows,
    parts: &[JoinPart],
    windows: &[u64],
    tuning: GatherTuning,
) -> Option<Dispatch> {
    let aligned = |p: &JoinPart| p.binding == 0 && part_mode(bytes, p) == Mode::Vec4;
    let runs = tuning.mode == GatherMode::Cpu;
    if !runs || windows.len() != 1 || parts.is_empty() || !parts.iter().all(aligned) {
        return None;
    }
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
    Some(Dispatch {
        program,
        src_offset: 0,
        src_size: binding_bytes(windows[0]),
        dst_offset: 0,
        dst_size: binding_bytes(bytes.input_bytes()),
        params,
        table: Table::Split(entries),
    })
}

/// Whether the GPU walk stages the source bytes of `parts` (`stage_step`): at most
/// [`MAX_STAGED_PARTS`] of them, one narrower than [`STAGED_BELOW`] or not aligned to 16 bytes.
fn stages(bytes: &ByteRows, parts: &[JoinPart]) -> bool {
    parts.len() as u64 <= MAX_STAGED_PARTS
        && parts.iter().any(|p| {
            bytes.outputs[p.position].row_bytes < STAGED_BELOW || part_mode(bytes, p) != Mode::Vec4
        })
}

/// How part `p`'s bytes align: its columns, rows and source offset, in rows of `bytes`.
fn part_mode(bytes: &ByteRows, p: &JoinPart) -> Mode {
    let o = &bytes.outputs[p.position];
    Mode::of(o.offset | o.row_bytes | p.src | bytes.stride)
}

/// Loop turns one unit of a concat of `parts` may take in `mode`, on average over a lane's
/// steps (see `blocks::max_steps`). A unit assembled part by part (`join_unit`) visits up to
/// 16 / w + 4 parts of at least w bytes, moves at most 16 runs of bytes, searches for its
/// first part twice (up to log2(segments) + 2 turns each), then stores its words. Lanes in
/// turn assemble every unit so, after staging the step's bytes where `staged` (up to three
/// turns a part); lanes in runs only those that cross a part's end, at most one in w / 32,
/// and move the others in one turn each.
fn unit_turns(bytes: &ByteRows, parts: &[JoinPart], mode: GatherMode, staged: bool) -> u64 {
    let narrowest = parts
        .iter()
        .map(|p| bytes.outputs[p.position].row_bytes)
        .min()
        .unwrap_or(UNIT_BYTES)
        .max(1);
    let search = 2 + u64::from(usize::BITS - parts.len().leading_zeros());
    let visits = (UNIT_BYTES / narrowest + 4).min(parts.len() as u64 + 2);
    let assembled = visits + UNIT_BYTES + 2 * search + 6;
    let staging = if staged {
        3 * parts.len() as u64 + 4
    } else {
        0
    };
    match mode {
        GatherMode::Cpu => 2 + assembled * 2 * UNIT_BYTES / narrowest.max(2 * UNIT_BYTES),
        GatherMode::Gpu => 1 + assembled + staging,
    }
}

/// The segments of `parts` (in column order), one per run of parts that lie side by side in
/// the output's rows, with equal rows, in one binding, each the same number of bytes after
/// the one before in the source (equal inputs packed in one buffer, such as attention heads):
/// the shader finds a column's part in its segment by division, so such a concat reads one
/// segment per block, however many parts it has. Only where lanes take units in turn
/// (`merge`, GPUs), or where output rows are at most a unit long, whose every unit walks its
/// segments' parts in turn with no division: elsewhere on CPU adapters the division cost more
/// than the table reads it saves (`docs/performance.md`), and their pipelines fold it away.
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
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn unit(&self, stride: u64, v: u64) -> Option<u64> {
        let (u, _, end) = self.place(stride, v);
        (u * UNIT_BYTES < end).then_some(u)
    }

    /// The first output byte at or after the dispatch's unit `v` within the band.
    fn from(&self, stride: u64, v: u64) -> u64 {
        let (u, start, _) = self.place(stride, v);
        (u * UNIT_BYTES).max(start)
    }

    /// The end of the dispatch's unit `v` within the band.
    fn to(&self, stride: u64, v: u64) -> u64 {
        let (u, _, end) = self.place(stride, v);
        ((u + 1) * UNIT_BYTES).min(end)
    }
}

/// The segments a block writing output bytes `from .. to` keeps at hand, as (first, count) in
/// table entries (segment `i` of `columns`, its first columns, is entry `i + 1`): the segments
/// from the one at or before its first column to the one at or before its last, or all of
/// them where its bytes cross a row's end. Every column the block writes then lies in a kept
/// segment, after the last one, or before the first one where that is segment 1: its lanes
/// need look at no other. (0, 0) where that is more than [`MAX_KEPT_SEGMENTS`] or nothing.
fn kept_segments(columns: &[u64], stride: u64, from: u64, to: u64) -> (u64, u64) {
    if columns.is_empty() || to <= from {
        return (0, 0);
    }
    let (first, count) = if from / stride == (to - 1) / stride {
        // Entry of the last segment at or before column `c`, at least 1.
        let at = |c: u64| (columns.partition_point(|&s| s <= c) as u64).max(1);
        let first = at(from % stride);
        (first, at((to - 1) % stride) - first + 1)
    } else {
        (1, columns.len() as u64)
    };
    if count > MAX_KEPT_SEGMENTS {
        return (0, 0);
    }
    (first, count)
}

#[cfg(test)]
mod joins_tests;
