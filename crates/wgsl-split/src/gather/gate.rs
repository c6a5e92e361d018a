//! The gate every table passes before it reaches a device: each precondition the gather's
//! trusted module relies on (compiled natively without loop bounding or division guards,
//! `pipeline::gather_module`), checked per dispatch against its program. The planner builds
//! tables that keep them; the gate makes that a checked fact rather than a property of the
//! planner's code, so a planner bug is an error, never a dispatch (docs/design.md, "Trusted
//! modules", lists them with the shader code that relies on each). Pure.

use super::abi::{
    Channels, Entry, EntryPoint, IndexRows, JoinTable, Mode, Params, ProgramKey, Table,
    MAX_DST_BINDINGS, MAX_WINDOW, UNIT_BYTES, WINDOW_UNITS,
};
use super::runs::MAX_LANE_STEPS;
use crate::plan::MAX_GATHER_AXIS;
use std::fmt;

/// A precondition of the trusted module: what a table must keep for its program to run to
/// its end and move the bytes it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// The table is of its program's kind: a split's entries for `main_rows` and
    /// `main_rows` (with `VEC4_ONLY` or not), a join's header and segments for `main_join`.
    ProgramKind,
    /// `Params::num_entries` counts the table's records, which the shader reads by index.
    RecordCount,
    /// Steps per lane from 1 to `MAX_LANE_STEPS`: the lanes' loops stay within llvmpipe's
    /// loop limit, and a lane's steps count in u32.
    StepBound,
    /// A lane's first step, `(block * workgroup + lane) * steps` within an entry (the rows)
    /// or the dispatch (the channels, a join), counts in u32 without wrapping.
    LaneSpan,
    /// A split's entries sorted by `block_start`, from 0 (`find_entry`'s binary search).
    EntryOrder,
    /// Every divisor read from the table is non-zero: an entry's `row_bytes` and
    /// `dst_stride` (at least `row_bytes`), the entry count where entries take lanes in turn
    /// (`interleaved`, then 1 and every entry alike), a join's `row_bytes`, `repeat_blocks`
    /// and `band_units`' width, each segment's `row_bytes` and `count`.
    Divisors,
    /// A record writes inside an output binding the build may have (`MAX_DST_BINDINGS`), an
    /// entry at least a byte, its units below a window's 2^27 (2 GiB), so every unit index
    /// and byte address stays in u32.
    UnitRange,
    /// An entry that starts inside a unit skips fewer than 16 bytes and fewer than it writes
    /// (`store_first_unit`'s byte loop counts `min(16, out_bytes) - skip`).
    Skip,
    /// An entry's mode is one the shader knows and its quantities keep it: `MODE_VEC4`'s
    /// rows, strides, offsets and first byte multiples of 16, no skip; `MODE_WORD`'s of 4;
    /// `main_rows vec4` takes `MODE_VEC4` entries only.
    Mode,
    /// The shifted lanes (`main_rows` in lanes, no channels) take unaligned rows of at least
    /// a unit: a unit then spans at most two rows.
    ShiftedRows,
    /// The channels' count of parts lies in its build's band (2 to 4, or 5 to 8 wide), each
    /// part of its width side by side in rows of `width * count` bytes from a whole vec4
    /// (a repeated join's every join).
    Channels,
    /// A join's rows and output lie within a window, its segments in column order inside
    /// the row (`join_segment`'s binary search; the row loops' sums stay in u32).
    JoinLayout,
    /// Rows placed by indices: a record per entry, no entries in turn; each index of 1 or 2
    /// words (their words counted in u32), a known rule for negatives, a capacity below
    /// 2^31 - 1 (`NO_ROW` and `PADDING` are no rows); a gather's rows whole and back to back
    /// in the output, and a scatter's heads and block size at least 1, its chunks counted in
    /// u32; every address of any index in range, source and destination, within a window
    /// (`gather_unit`, `scatter_unit`).
    IndexedRows,
}

impl Precondition {
    /// Every precondition, in the order the gate checks them.
    #[cfg(test)]
    pub const ALL: [Precondition; 13] = [
        Precondition::ProgramKind,
        Precondition::RecordCount,
        Precondition::StepBound,
        Precondition::LaneSpan,
        Precondition::EntryOrder,
        Precondition::Divisors,
        Precondition::UnitRange,
        Precondition::Skip,
        Precondition::Mode,
        Precondition::ShiftedRows,
        Precondition::Channels,
        Precondition::JoinLayout,
        Precondition::IndexedRows,
    ];

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Precondition::ProgramKind => "the program's kind of table",
            Precondition::RecordCount => "the count of records",
            Precondition::StepBound => "steps per lane from 1 to MAX_LANE_STEPS",
            Precondition::LaneSpan => "a lane's steps counted in u32",
            Precondition::EntryOrder => "entries sorted by block_start from 0",
            Precondition::Divisors => "no divisor zero",
            Precondition::UnitRange => "a record's units inside its binding",
            Precondition::Skip => "a skip shorter than a unit and the entry",
            Precondition::Mode => "an entry's mode kept by its quantities",
            Precondition::ShiftedRows => "the shifted lanes' rows of a unit at least",
            Precondition::Channels => "the channels' parts in their band, side by side",
            Precondition::JoinLayout => "a join's rows and segments in a window, in order",
            Precondition::IndexedRows => "indexed rows' indices and addresses in range",
        }
    }
}

/// A table the gate refused: the precondition it breaks, and the record that breaks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub rule: Precondition,
    pub record: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:?}): {}", self.rule.name(), self.rule, self.record)
    }
}

/// What the gate checks of a dispatch besides its header: its program and its records.
struct Gated<'a> {
    program: ProgramKey,
    table: &'a Table,
}

/// `Err` naming the first record of `what` that breaks `rule`.
fn first<T: fmt::Debug>(
    rule: Precondition,
    what: &str,
    records: &[T],
    breaks: impl Fn(usize, &T) -> bool,
) -> Result<(), Refusal> {
    match records.iter().enumerate().find(|(i, r)| breaks(*i, r)) {
        None => Ok(()),
        Some((i, r)) => Err(Refusal {
            rule,
            record: format!("{what} {i}: {r:?}"),
        }),
    }
}

/// `Err` for `rule` where `broken`, naming the header.
fn header(rule: Precondition, broken: bool, what: impl fmt::Debug) -> Result<(), Refusal> {
    match broken {
        false => Ok(()),
        true => Err(Refusal {
            rule,
            record: format!("{what:?}"),
        }),
    }
}

/// Checks `d` against every precondition of its program, in the order of
/// [`Precondition`]'s variants. A dispatch of no blocks (its grid's size) runs no lane, and keeps
/// them all.
pub fn check(program: ProgramKey, p: Params, table: &Table) -> Result<(), Refusal> {
    let d = &Gated { program, table };
    if p.num_blocks == 0 {
        return Ok(());
    }
    let join = d.program.entry == EntryPoint::Join;
    let records = match &d.table {
        Table::Split(e) => e.len(),
        Table::Join(j) => j.segments.len(),
        Table::Indexed(e, _) => e.len(),
    };
    let indexed = matches!(d.table, Table::Indexed(..));
    let rows = d.program.entry == EntryPoint::Rows && d.program.channels.is_none();
    header(
        Precondition::ProgramKind,
        join != matches!(d.table, Table::Join(_)) || (indexed && !rows),
        (d.program, &d.table),
    )?;
    header(
        Precondition::RecordCount,
        p.num_entries as usize != records,
        p,
    )?;
    header(
        Precondition::StepBound,
        !(1..=MAX_LANE_STEPS).contains(&(p.steps_per_lane as u64)),
        p,
    )?;
    let lanes = d.program.workgroup_size();
    // The most steps one block's lanes number, and the blocks numbered from one place.
    let block_steps = lanes * p.steps_per_lane as u64;
    match &d.table {
        Table::Split(entries) => split(d, p, entries, block_steps),
        Table::Join(j) => joined(d, p, j, block_steps),
        Table::Indexed(entries, index) => {
            split(d, p, entries, block_steps)?;
            header(
                Precondition::IndexedRows,
                index.len() != entries.len() || p.interleaved != 0,
                (p, index.len()),
            )?;
            entries
                .iter()
                .zip(index)
                .try_for_each(|(e, x)| indexed_rows(e, x))
        }
    }
}

/// [`check`] of an entry's record in a table of rows placed by indices, past what [`split`]
/// checks of the entry.
fn indexed_rows(e: &Entry, x: &IndexRows) -> Result<(), Refusal> {
    let gather = e.mode == Mode::Indexed as u32;
    let scatter = e.mode == Mode::Scatter as u32;
    if !gather && !scatter {
        return Ok(());
    }
    header(
        Precondition::Divisors,
        x.count == 0 || x.heads == 0 || (scatter && x.block_size == 0),
        x,
    )?;
    let rule = !(1..=2).contains(&x.index_words)
        || x.negative > 2
        || x.counts > 1
        || x.capacity as usize > MAX_GATHER_AXIS
        || x.count as u64 * x.index_words as u64 > u32::MAX as u64;
    let w = |v: u32| v as u64;
    let broken = if gather {
        let rows = w(x.count) * w(e.row_bytes);
        let outer = w(e.out_bytes) / rows;
        let reach = w(e.src_offset) + outer * w(x.capacity) * w(e.src_stride);
        (e.first_byte, e.skip, e.dst_stride, x.heads) != (0, 0, e.row_bytes, 1)
            || e.src_stride < e.row_bytes
            || !w(e.out_bytes).is_multiple_of(rows)
            || reach > MAX_WINDOW
    } else {
        let chunks = w(e.row_bytes).div_ceil(UNIT_BYTES);
        let last = w(x.capacity).max(1) - 1;
        let src = w(e.src_offset)
            + (w(x.count) - 1) * w(e.src_stride)
            + (w(x.heads) - 1) * w(x.src_head_step)
            + w(e.row_bytes);
        let dst = w(x.dst_offset)
            + last / w(x.block_size) * w(x.dst_block_stride)
            + last.min(w(x.block_size) - 1) * w(x.dst_slot_stride)
            + (w(x.heads) - 1) * w(x.dst_head_stride)
            + w(e.row_bytes);
        w(x.count) * w(x.heads) * chunks * UNIT_BYTES > MAX_WINDOW
            || src > MAX_WINDOW
            || dst > MAX_WINDOW
    };
    header(Precondition::IndexedRows, rule || broken, (e, x))
}

/// [`check`] of a split's entries.
fn split(d: &Gated, p: Params, entries: &[Entry], block_steps: u64) -> Result<(), Refusal> {
    let runs = d.program.lanes_in_runs;
    // The rows number an entry's lanes (runs) or blocks from its `block_start`; the channels
    // number the dispatch's blocks from 0.
    let numbered = |i: usize| -> u64 {
        let end = entries
            .get(i + 1)
            .map_or(if runs { p.num_lanes } else { p.num_blocks }, |n| {
                n.block_start
            });
        (end as u64).saturating_sub(entries[i].block_start as u64)
    };
    let span = |i: usize| match (d.program.channels, runs) {
        (Some(_), _) => p.num_blocks as u64 * block_steps,
        (None, true) if p.interleaved == 1 => p.num_lanes as u64 * p.steps_per_lane as u64,
        (None, true) => numbered(i) * p.steps_per_lane as u64,
        (None, false) => numbered(i) * block_steps,
    };
    first(Precondition::LaneSpan, "entry", entries, |i, _| {
        span(i) > u32::MAX as u64
    })?;
    let ordered = d.program.channels.is_some() || p.interleaved == 1;
    first(Precondition::EntryOrder, "entry", entries, |i, e| {
        !ordered
            && match i {
                0 => e.block_start != 0,
                _ => e.block_start < entries[i - 1].block_start,
            }
    })?;
    header(
        Precondition::Divisors,
        p.interleaved > 1 || (p.interleaved == 1 && entries.is_empty()),
        p,
    )?;
    first(Precondition::Divisors, "entry", entries, |_, e| {
        let alike = |o: &Entry| (o.out_bytes, o.row_bytes) == (e.out_bytes, e.row_bytes);
        e.row_bytes == 0
            || e.dst_stride < e.row_bytes
            || (p.interleaved == 1 && !alike(&entries[0]))
    })?;
    first(Precondition::UnitRange, "entry", entries, |_, e| {
        let units = (e.out_bytes as u64).div_ceil(UNIT_BYTES);
        e.out_bytes == 0
            || e.dst_unit as u64 + units > WINDOW_UNITS
            || e.binding >= MAX_DST_BINDINGS
    })?;
    first(Precondition::Skip, "entry", entries, |_, e| {
        e.skip > 0 && (e.skip as u64 >= UNIT_BYTES || e.skip >= e.out_bytes)
    })?;
    let vec4_only = d.program.entry == EntryPoint::RowsVec4;
    let indexed = matches!(d.table, Table::Indexed(..));
    first(Precondition::Mode, "entry", entries, |_, e| {
        let of = |all: u32, by: u32| all.is_multiple_of(by);
        let all = e.row_bytes | e.src_stride | e.src_offset | e.first_byte;
        match e.mode {
            m if m == Mode::Vec4 as u32 => !of(all | e.dst_stride, 16) || e.skip != 0,
            m if m == Mode::Word as u32 => vec4_only || !of(all | e.skip, 4),
            m if m == Mode::Indexed as u32 || m == Mode::Scatter as u32 => vec4_only || !indexed,
            m => vec4_only || m != Mode::Byte as u32,
        }
    })?;
    let shifted = !d.program.lanes_in_runs && d.program.channels.is_none();
    first(Precondition::ShiftedRows, "entry", entries, |_, e| {
        shifted
            && e.mode < Mode::Indexed as u32
            && !e.is_vec4()
            && (e.row_bytes as u64) < UNIT_BYTES
    })?;
    if let Some(c) = d.program.channels {
        let count = entries.len() as u64;
        header(Precondition::Channels, !in_band(c, count), (c, count))?;
        let e0 = entries[0];
        let stride = c.width as u64 * count;
        first(Precondition::Channels, "entry", entries, |k, e| {
            e.row_bytes != c.width as u32
                || e.src_stride as u64 != stride
                || e.src_offset as u64 != e0.src_offset as u64 + k as u64 * c.width as u64
                || e.out_bytes != e0.out_bytes
                || (e.first_byte, e.skip, e.dst_stride) != (0, 0, e.row_bytes)
                || !(e0.src_offset as u64).is_multiple_of(UNIT_BYTES)
        })?;
    }
    Ok(())
}

/// Whether `count` parts lie in the band of channels `c`'s build.
fn in_band(c: Channels, count: u64) -> bool {
    match c.wide {
        true => Channels::WIDE.contains(&count),
        false => Channels::NARROW.contains(&count),
    }
}

/// [`check`] of a concat's join.
fn joined(d: &Gated, p: Params, j: &JoinTable, block_steps: u64) -> Result<(), Refusal> {
    let h = j.header;
    // A join's blocks are numbered within its repeat; the channels' step is a unit a part.
    let step_units = match (d.program.channels, j.segments.first()) {
        (Some(_), Some(s)) => s.count as u64,
        _ => 1,
    };
    let blocks = (p.num_blocks.min(h.repeat_blocks.max(1))) as u64;
    header(
        Precondition::LaneSpan,
        blocks * block_steps * step_units > u32::MAX as u64,
        (p, h),
    )?;
    header(
        Precondition::Divisors,
        h.row_bytes == 0 || h.repeat_blocks == 0 || (h.band_units != 0 && h.band_width == 0),
        h,
    )?;
    first(Precondition::Divisors, "segment", &j.segments, |_, s| {
        s.row_bytes == 0 || s.count == 0
    })?;
    if let Some(c) = d.program.channels {
        let fits = match &j.segments[..] {
            [s] => {
                in_band(c, s.count as u64)
                    && s.row_bytes == c.width as u32
                    && h.row_bytes as u64 == c.width as u64 * s.count as u64
                    && (s.first_byte, s.binding) == (0, 0)
                    && ((s.src_offset | s.part_step | h.repeat_src) as u64)
                        .is_multiple_of(UNIT_BYTES)
            }
            _ => false,
        };
        header(Precondition::Channels, !fits, (c, &j.segments))?;
    }
    let joins = (p.num_blocks as u64).div_ceil(h.repeat_blocks as u64);
    let last = |first: u32, step: u32| first as u64 + (joins - 1) * step as u64;
    header(
        Precondition::UnitRange,
        last(h.binding, h.repeat_binding) >= MAX_DST_BINDINGS as u64
            || last(h.first_unit, h.repeat_units) + h.units as u64 > WINDOW_UNITS,
        h,
    )?;
    let window = |x: u32| x as u64 > MAX_WINDOW;
    header(
        Precondition::JoinLayout,
        window(h.row_bytes) || window(h.end_byte) || h.units as u64 > WINDOW_UNITS,
        h,
    )?;
    first(Precondition::JoinLayout, "segment", &j.segments, |k, s| {
        let end = s.first_byte as u64 + s.count as u64 * s.row_bytes as u64;
        let before = k.checked_sub(1).map(|k| &j.segments[k]);
        let after_last = before.is_none_or(|b| {
            b.first_byte as u64 + b.count as u64 * b.row_bytes as u64 <= s.first_byte as u64
        });
        end > h.row_bytes as u64 || !after_last
    })
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
