//! A part through a view as entries of the split's table: its runs
//! ([`crate::plan::views::Runs`]) cut into entries of rows, which the rows' programs move as
//! they move a split's outputs. Pure.
//!
//! An entry moves rows of one run each. Its rows lie back to back in the destination (any
//! alignment), or apart there with every run, step and offset a multiple of 16 (one vec4 a
//! unit, as a concat's aligned parts on CPU adapters). Every entry starts on a unit of the
//! destination: lanes own whole units, so an entry that started inside one would share it
//! with the bytes before it, and two lanes could write one word.

use super::abi::{Entry, Mode, Table, UNIT_BYTES};
use super::blocks::{split_table, GatherTuning};
use super::dispatches::Dispatch;
use crate::plan::views::{Level, Runs};

/// Entries one part's view may lower to at most (36 bytes of table each).
pub const MAX_VIEW_ENTRIES: u64 = 1 << 16;

/// Why a part's runs do not fit the table's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit {
    /// An entry's first byte would lie at this byte of the destination window, inside a unit.
    Unaligned(u64),
    /// It would take this many entries, past [`MAX_VIEW_ENTRIES`].
    TooMany(u64),
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
/// every destination unit (the multi-output build's binding bits).
pub fn view_entries(
    runs: &Runs,
    src_base: u64,
    dst_base: u64,
    unit_base: u64,
) -> Result<Vec<Entry>, Unfit> {
    let run = runs.run_bytes;
    let (src, dst) = (runs.src + src_base, runs.dst + dst_base);
    let aligned = |x: u64| x.is_multiple_of(UNIT_BYTES);
    let (rows, outer) = match runs.levels.split_last() {
        Some((&rows, outer)) => (rows, outer),
        None => (
            Level {
                extent: 1,
                src_step: run,
                dst_step: run,
            },
            &[][..],
        ),
    };
    let all_aligned = |levels: &[Level]| levels.iter().all(|l| aligned(l.src_step | l.dst_step));
    let how = if rows.dst_step == run {
        Rows::BackToBack
    } else if aligned(run | src | dst) && all_aligned(&runs.levels) {
        Rows::Apart
    } else {
        Rows::One
    };
    let blocks = match how {
        Rows::One => &runs.levels[..],
        _ => outer,
    };
    let count: u64 = blocks.iter().map(|l| l.extent).product();
    if count > MAX_VIEW_ENTRIES {
        return Err(Unfit::TooMany(count));
    }
    let starts = Runs {
        run_bytes: run,
        levels: blocks.to_vec(),
        src,
        dst,
    };
    starts
        .starts()
        .map(|(s, d)| {
            if !aligned(d) {
                return Err(Unfit::Unaligned(d));
            }
            let (rows, src_stride, dst_stride, mode) = match how {
                Rows::BackToBack => (
                    rows.extent,
                    rows.src_step,
                    run,
                    Mode::of(run | rows.src_step | s),
                ),
                Rows::Apart => (rows.extent, rows.src_step, rows.dst_step, Mode::Vec4),
                Rows::One => (1, run, run, Mode::of(run | s)),
            };
            Ok(Entry {
                // Numbered with the dispatch's other entries.
                block_start: 0,
                dst_unit: (unit_base + d / UNIT_BYTES) as u32,
                first_byte: 0,
                out_bytes: (rows * run) as u32,
                row_bytes: run as u32,
                src_stride: src_stride as u32,
                src_offset: s as u32,
                mode: mode as u32,
                dst_stride: dst_stride as u32,
            })
        })
        .collect()
}

/// The one dispatch of views' `entries` in `tuning`'s mapping: the rows' program for them,
/// numbered, over input and output windows of `src_size` and `dst_size` bytes from the
/// offsets their regions bind (0 for windows bound per binding).
pub fn view_dispatch(
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

    /// The entries of output `i` of a split of [1, 4, 48, D] f16 on axis 2 into 32, 8 and 8
    /// heads (Q, K, V), written through `view`.
    fn heads(d: usize, i: usize, view: &PartView) -> Result<Vec<Entry>, Unfit> {
        let lengths = IntTensor::vector(vec![32, 8, 8]);
        let plan = ops::variadic_split(&[1, 4, 48, d], &IntTensor::scalar(2), &lengths).unwrap();
        view_entries(
            &part_runs(&plan, i, view, 2, Access::Write).unwrap(),
            0,
            0,
            0,
        )
    }

    #[test]
    fn heads_of_aligned_rows_take_an_entry_each() {
        // Q [1, 4, 32, 128] as [1, 32, 4, 128]: a head's 4 rows lie back to back.
        let q =
            PartView::within(&[1, 4, 32, 128], &[1, 32, 4, 128], &[0, 2, 1, 3], &[0; 4]).unwrap();
        let entries = heads(128, 0, &q).unwrap();
        assert_eq!(entries.len(), 32);
        let e = entries[3];
        assert_eq!(
            (e.dst_unit, e.out_bytes, e.row_bytes),
            (3 * 4 * 256 / 16, 4 * 256, 256)
        );
        assert_eq!(
            (e.src_offset, e.src_stride, e.dst_stride),
            (3 * 256, 48 * 256, 256)
        );
        assert!(entries.iter().all(Entry::is_vec4));
        // Heads of 127 elements: head 1's 4 rows of 254 bytes start at byte 1,016, inside a
        // unit.
        let q =
            PartView::within(&[1, 4, 32, 127], &[1, 32, 4, 127], &[0, 2, 1, 3], &[0; 4]).unwrap();
        assert_eq!(heads(127, 0, &q), Err(Unfit::Unaligned(1016)));
    }

    #[test]
    fn rows_apart_take_vec4s_and_unaligned_ones_an_entry_each() {
        // K [1, 4, 8, 8] f16 into [1, 4, 8, 16]: rows of 16 bytes, 32 apart: vec4s.
        let k = PartView::within(&[1, 4, 8, 8], &[1, 4, 8, 16], &[0, 1, 2, 3], &[0; 4]).unwrap();
        let lengths = IntTensor::vector(vec![32, 8, 8]);
        let plan = ops::variadic_split(&[1, 4, 48, 8], &IntTensor::scalar(2), &lengths).unwrap();
        let entries =
            view_entries(&part_runs(&plan, 1, &k, 2, Access::Write).unwrap(), 0, 0, 0).unwrap();
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
        assert_eq!(view_entries(&runs, 0, 0, 0), Err(Unfit::Unaligned(8)));
        // Moved 8 bytes on, every run starts on a unit: rows apart again, unless the source
        // is not in units either.
        assert_eq!(view_entries(&runs, 0, 8, 0).unwrap().len(), 4);
        let entries = view_entries(&runs, 4, 8, 1 << 27).unwrap();
        assert_eq!(entries.len(), 32);
        assert_eq!(entries[1].dst_unit, (1 << 27) + 3);
        assert_eq!(
            (entries[1].out_bytes, entries[1].mode),
            (16, Mode::Word as u32)
        );
    }
}
