//! A part through a view as entries of the split's table: its runs
//! ([`crate::plan::views::Runs`]) cut into entries of rows, which the rows' programs move as
//! they move a split's outputs; and the dispatches they take. Pure.
//!
//! An entry moves rows of one run each. Its rows lie back to back in the destination (any
//! alignment), or apart there with every run, step and offset a multiple of 16 (one vec4 a
//! unit, as a concat's aligned parts on CPU adapters). Lanes own whole destination units: an
//! entry that starts inside a unit writes only its own bytes of it (`skip`), and one that
//! ends inside a unit merges its last bytes into it; entries that share such a unit go to
//! different dispatches, recorded one after the other ([`dispatch_of`]), so no two lanes of
//! a dispatch write one word.

use super::abi::{Entry, Mode, Table, HEADER_BYTES, UNIT_BYTES};
use super::blocks::split_table;
use super::dispatches::Dispatch;
use super::modes::GatherTuning;
use crate::error::{Result, SplitError};
use crate::plan::views::{Level, Runs};
use std::collections::HashMap;

/// Entries a dispatch's table holds within one storage binding of `limits` (its header
/// first, then 40 bytes an entry): how many blocks of runs the views of one dispatch may
/// lower to.
pub fn table_room(limits: &wgpu::Limits) -> u64 {
    let entry = std::mem::size_of::<Entry>() as u64;
    limits
        .max_storage_buffer_binding_size
        .saturating_sub(HEADER_BYTES)
        / entry
}

/// How each entry of a part moves its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    /// The innermost level's rows, back to back in the destination.
    BackToBack,
    /// The innermost level's rows, apart in the destination, everything a multiple of 16.
    Apart,
    /// One run an entry.
    One,
}

/// The entries that move `runs`, its source bytes from byte `src_base` of the input window
/// and its destination bytes from byte `dst_base` of the output window, `unit_base` added to
/// every destination unit (the multi-output build's binding bits); a
/// [`SplitError::TooLarge`] naming `part` past `room` entries (what its dispatch's table has
/// left, [`table_room`]).
pub fn view_entries(
    part: &str,
    runs: &Runs,
    src_base: u64,
    dst_base: u64,
    unit_base: u64,
    room: u64,
) -> Result<Vec<Entry>> {
    let run = runs.run_bytes;
    let (src, dst) = (runs.src + src_base, runs.dst + dst_base);
    let aligned = |x: u64| x.is_multiple_of(UNIT_BYTES);
    let in_units =
        aligned(run | src | dst) && runs.levels.iter().all(|l| aligned(l.src_step | l.dst_step));
    // The level an entry's rows take: where every byte lies in units, any level's rows may
    // lie apart, so the level of most runs, whose entries are fewest (the innermost on a
    // tie); else the innermost, whose rows may lie back to back.
    let rows_at = match in_units {
        true => (0..runs.levels.len()).max_by_key(|&i| runs.levels[i].extent),
        false => runs.levels.len().checked_sub(1),
    };
    let (rows, mut blocks) = match rows_at {
        Some(i) => (runs.levels[i], runs.levels.clone()),
        None => (
            Level {
                extent: 1,
                src_step: run,
                dst_step: run,
            },
            Vec::new(),
        ),
    };
    let how = if rows.dst_step == run {
        Rows::BackToBack
    } else if in_units {
        Rows::Apart
    } else {
        Rows::One
    };
    if let (Some(i), false) = (rows_at, how == Rows::One) {
        blocks.remove(i);
    }
    let count: u64 = blocks.iter().map(|l| l.extent).product();
    if count > room {
        return Err(SplitError::TooLarge(format!(
            "{part}: its view lowers to {count} blocks of runs, past the {room} its dispatch's \
             table has room for in one storage binding (the device's \
             max_storage_buffer_binding_size; {} bytes a block)",
            std::mem::size_of::<Entry>()
        )));
    }
    let starts = Runs {
        run_bytes: run,
        levels: blocks,
        src,
        dst,
    };
    let entries = starts.starts().map(|(s, d)| {
        let (rows, src_stride, dst_stride) = match how {
            Rows::BackToBack => (rows.extent, rows.src_step, run),
            Rows::Apart => (rows.extent, rows.src_step, rows.dst_step),
            Rows::One => (1, run, run),
        };
        // Unit 0 starts `skip` bytes before the entry's first byte: `back` rows back in its
        // rows, at column `first_byte` (the source offset wraps, as the shader's sums do).
        let skip = d % UNIT_BYTES;
        let back = skip.div_ceil(run);
        let mode = match how {
            Rows::Apart => Mode::Vec4,
            _ => Mode::of(run | src_stride | s | skip),
        };
        Entry {
            // Numbered with the dispatch's other entries.
            block_start: 0,
            dst_unit: (unit_base + d / UNIT_BYTES) as u32,
            first_byte: (back * run - skip) as u32,
            out_bytes: (skip + rows * run) as u32,
            row_bytes: run as u32,
            src_stride: src_stride as u32,
            src_offset: s.wrapping_sub(back * src_stride) as u32,
            mode: mode as u32,
            dst_stride: dst_stride as u32,
            skip: skip as u32,
        }
    });
    Ok(entries.collect())
}

/// The dispatch of each of `entries`, numbered from 0: entries that write one unit (one
/// starting inside a unit where another ends) take different dispatches; the others the
/// first. At most 16 entries can share a unit, so at most 16 dispatches.
fn dispatch_of(entries: &[Entry]) -> Vec<usize> {
    let mut taken: HashMap<u32, Vec<usize>> = HashMap::new();
    entries
        .iter()
        .map(|e| {
            let units = (e.out_bytes as u64).div_ceil(UNIT_BYTES) as u32;
            let first = (e.skip > 0).then_some(e.dst_unit);
            let partial = !(e.out_bytes as u64).is_multiple_of(UNIT_BYTES);
            let last = partial.then_some(e.dst_unit + units - 1);
            let edges: Vec<u32> = first.into_iter().chain(last).collect();
            let busy = |d: usize| {
                edges
                    .iter()
                    .any(|u| taken.get(u).is_some_and(|t| t.contains(&d)))
            };
            let dispatch = (0..).find(|&d| !busy(d)).unwrap_or(0);
            for u in edges {
                taken.entry(u).or_default().push(dispatch);
            }
            dispatch
        })
        .collect()
}

/// The dispatches of views' `entries` in `tuning`'s mapping, over input and output windows
/// of `src_size` and `dst_size` bytes from the offsets their regions bind (0 for windows bound
/// per binding): entries that share a unit take dispatches of their own, recorded one after
/// the other ([`dispatch_of`]).
pub fn view_dispatches(
    entries: Vec<Entry>,
    src_size: u64,
    dst_size: u64,
    tuning: GatherTuning,
) -> Vec<Dispatch> {
    let of = dispatch_of(&entries);
    let count = of.iter().max().map_or(0, |&d| d + 1);
    let mut split: Vec<Vec<_>> = vec![Vec::new(); count];
    for (entry, d) in entries.into_iter().zip(of) {
        split[d].push(entry);
    }
    split
        .into_iter()
        .map(|entries| view_dispatch(entries, src_size, dst_size, tuning))
        .collect()
}

/// The one dispatch of `entries` that share no unit: the rows' program for them, numbered.
fn view_dispatch(
    entries: Vec<Entry>,
    src_size: u64,
    dst_size: u64,
    tuning: GatherTuning,
) -> Dispatch {
    let (program, params, entries) = split_table(None, entries, tuning);
    Dispatch {
        program,
        src_offset: 0,
        src_size,
        dst_offset: 0,
        dst_size,
        params,
        table: Table::Split(entries),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::views::{part_runs, Access};
    use crate::{ops, IntTensor, PartView};

    /// The room of WebGPU's default binding.
    const ROOM: u64 = 3_355_442;

    /// The entries of output `i` of a split of [1, 4, 48, D] f16 on axis 2 into 32, 8 and 8
    /// heads (Q, K, V), written through `view`.
    fn heads(d: usize, i: usize, view: &PartView) -> Result<Vec<Entry>> {
        let lengths = IntTensor::vector(vec![32, 8, 8]);
        let plan = ops::variadic_split(&[1, 4, 48, d], &IntTensor::scalar(2), &lengths).unwrap();
        view_entries(
            "output",
            &part_runs(&plan, i, view, 2, Access::Write).unwrap(),
            0,
            0,
            0,
            ROOM,
        )
    }

    #[test]
    fn a_view_past_its_tables_room_is_refused_by_name() {
        // [41, 41, 41, 41] f16 written with its axes reversed: the destination's rows are
        // the first axis, one element a run, in 41^3 = 68,921 blocks. WebGPU's default
        // binding holds them; a table with room for one block fewer refuses them.
        let plan = ops::split(&[41; 4], &IntTensor::scalar(0), 1).unwrap();
        let transposed = PartView {
            offset: 0,
            strides: vec![1, 41, 41 * 41, 41 * 41 * 41],
        };
        let runs = part_runs(&plan, 0, &transposed, 2, Access::Write).unwrap();
        assert_eq!(
            view_entries("output 0", &runs, 0, 0, 0, ROOM)
                .unwrap()
                .len(),
            68_921
        );
        let m = view_entries("output 0", &runs, 0, 0, 0, 68_920)
            .unwrap_err()
            .to_string();
        assert!(
            m.contains(
                "output 0: its view lowers to 68921 blocks of runs, past the 68920 its \
                 dispatch's table has room for in one storage binding (the device's \
                 max_storage_buffer_binding_size; 40 bytes a block)"
            ),
            "{m}"
        );
    }

    #[test]
    fn a_table_takes_its_header_then_40_bytes_a_block() {
        // 128 MiB, WebGPU's default binding.
        assert_eq!(ROOM, ((128 << 20) - HEADER_BYTES) / 40);
        let tiny = wgpu::Limits {
            max_storage_buffer_binding_size: HEADER_BYTES - 1,
            ..wgpu::Limits::default()
        };
        assert_eq!(table_room(&tiny), 0);
    }

    #[test]
    fn aligned_rows_take_the_level_of_most_runs() {
        // Q [1, 4, 32, 128] as [1, 32, 4, 128]: a head's 4 rows lie back to back, but the
        // 32 heads of a position are the level of most runs: an entry a position, its 32
        // rows a head apart in the destination and back to back in the source.
        let q =
            PartView::within(&[1, 4, 32, 128], &[1, 32, 4, 128], &[0, 2, 1, 3], &[0; 4]).unwrap();
        let entries = heads(128, 0, &q).unwrap();
        assert_eq!(entries.len(), 4);
        let e = entries[3];
        assert_eq!(
            (e.dst_unit, e.out_bytes, e.row_bytes),
            (3 * 256 / 16, 32 * 256, 256)
        );
        assert_eq!(
            (e.src_offset, e.src_stride, e.dst_stride),
            (3 * 48 * 256, 256, 4 * 256)
        );
        assert!(entries.iter().all(Entry::is_vec4));
        assert_eq!(dispatch_of(&entries), [0; 4]);
        // Heads of 127 elements, not in units: an entry a head, whose rows lie back to back.
        // Head 1's 4 rows of 254 bytes start at byte 1,016, 8 bytes into unit 63, where head
        // 0 ends; its unit 0 starts a row back, at column 246.
        let q =
            PartView::within(&[1, 4, 32, 127], &[1, 32, 4, 127], &[0, 2, 1, 3], &[0; 4]).unwrap();
        let entries = heads(127, 0, &q).unwrap();
        let e = entries[1];
        assert_eq!(
            (e.dst_unit, e.skip, e.first_byte, e.out_bytes),
            (63, 8, 246, 8 + 1016)
        );
        assert_eq!(e.src_offset, (254u32).wrapping_sub(48 * 254));
        assert_eq!((entries[0].skip, entries[2].skip), (0, 0));
        // Head 0 ends inside unit 63, head 1 starts there: the odd heads take a second
        // dispatch (head 2 starts on a unit; head 3 inside the unit where head 2 ends).
        let of = dispatch_of(&entries);
        assert_eq!(of[..4], [0, 1, 0, 1]);
        assert_eq!(*of.iter().max().unwrap(), 1);
    }

    #[test]
    fn rows_apart_take_vec4s_and_unaligned_ones_an_entry_each() {
        // K [1, 4, 8, 8] f16 into [1, 4, 8, 16]: rows of 16 bytes, 32 apart: vec4s.
        let k = PartView::within(&[1, 4, 8, 8], &[1, 4, 8, 16], &[0, 1, 2, 3], &[0; 4]).unwrap();
        let lengths = IntTensor::vector(vec![32, 8, 8]);
        let plan = ops::variadic_split(&[1, 4, 48, 8], &IntTensor::scalar(2), &lengths).unwrap();
        let entries = view_entries(
            "k",
            &part_runs(&plan, 1, &k, 2, Access::Write).unwrap(),
            0,
            0,
            0,
            ROOM,
        )
        .unwrap();
        assert_eq!(entries.len(), 4);
        let e = entries[1];
        assert_eq!(
            (e.out_bytes, e.row_bytes, e.dst_stride, e.src_stride),
            (8 * 16, 16, 32, 16)
        );
        assert_eq!((e.dst_unit, e.src_offset), (256 / 16, 768 + 32 * 16));
        assert!(entries.iter().all(Entry::is_vec4));
        // At element 4 of each row (byte 8): the rows start inside units.
        let k =
            PartView::within(&[1, 4, 8, 8], &[1, 4, 8, 16], &[0, 1, 2, 3], &[0, 0, 0, 4]).unwrap();
        let runs = part_runs(&plan, 1, &k, 2, Access::Write).unwrap();
        let entries = view_entries("k", &runs, 0, 0, 0, ROOM).unwrap();
        assert_eq!(entries.len(), 32);
        assert!(entries
            .iter()
            .all(|e| (e.skip, e.first_byte, e.out_bytes) == (8, 8, 24)));
        // Each row owns the unit it starts in and the one it ends in: one dispatch.
        assert_eq!(dispatch_of(&entries), [0; 32]);
        // Moved 8 bytes on, every run starts on a unit: rows apart again, unless the source
        // is not in units either.
        assert_eq!(view_entries("k", &runs, 0, 8, 0, ROOM).unwrap().len(), 4);
        let entries = view_entries("k", &runs, 4, 8, 1 << 27, ROOM).unwrap();
        assert_eq!(entries.len(), 32);
        assert_eq!(entries[1].dst_unit, (1 << 27) + 3);
        assert_eq!(
            (entries[1].out_bytes, entries[1].mode),
            (16, Mode::Word as u32)
        );
    }
}
