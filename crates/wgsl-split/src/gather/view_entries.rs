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
//!
//! A part written channels-last (`[1, C, H, W]` into `[1, H, W, C]`, one element a run) is
//! rather its planes joined into rows of `C` elements: one dispatch of the join's channels,
//! or of the join's units walked ([`view_channels`]), not an entry per pixel; a batch's
//! images, and equal parts as far each from the one before ([`repeat_joins`]), are that join
//! repeated in one dispatch.

use super::abi::{
    Entry, JoinHeader, JoinTable, Mode, Params, Segment, Table, HEADER_BYTES, UNIT_BYTES,
};
use super::blocks::split_table;
use super::channels::channel_lanes;
use super::dispatches::Dispatch;
use super::joins::unit_steps;
use super::modes::GatherTuning;
use super::picker::{join_program, join_walks};
use crate::error::{Result, SplitError};
use crate::plan::views::{Level, Runs};
use std::collections::HashMap;

/// Entries a dispatch's table holds within one storage binding of `limits` (its header
/// first, then 44 bytes an entry): how many blocks of runs the views of one dispatch may
/// lower to.
pub fn table_room(limits: &crate::Limits) -> u64 {
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
/// and its destination bytes from byte `dst_base` of output binding `binding`'s window; a
/// [`SplitError::TooLarge`] naming `part` past `room` entries (what its dispatch's table has
/// left, [`table_room`]).
fn view_entries(
    part: &str,
    runs: &Runs,
    src_base: u64,
    dst_base: u64,
    binding: u32,
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
            dst_unit: (d / UNIT_BYTES) as u32,
            first_byte: (back * run - skip) as u32,
            out_bytes: (skip + rows * run) as u32,
            row_bytes: run as u32,
            src_stride: src_stride as u32,
            src_offset: s.wrapping_sub(back * src_stride) as u32,
            mode: mode as u32,
            dst_stride: dst_stride as u32,
            skip: skip as u32,
            binding,
        }
    });
    Ok(entries.collect())
}

/// What a part through a view lowers to.
pub enum Lowered {
    /// A dispatch of its own: a split's part written channels-last ([`view_channels`]).
    Dispatch(Dispatch),
    /// Entries of its batch's table ([`view_entries`]), which [`view_dispatches`] cuts into
    /// dispatches with the other parts'.
    Entries(Vec<Entry>),
}

/// Part `part` (its name in messages) through a view, as its `runs`, in a `split` or a
/// concat: its source bytes from byte `bases.0` of the input window, its destination bytes
/// from byte `bases.1` of the window of output binding `bases.2`, over windows of `sizes`
/// bytes; entries within the `room` its batch's table has left.
pub fn lower_view(
    part: &str,
    runs: &Runs,
    split: bool,
    bases: (u64, u64, u32),
    sizes: (u64, u64),
    room: u64,
    tuning: GatherTuning,
) -> Result<Lowered> {
    if let Some(d) = split
        .then(|| view_channels(runs, bases, sizes, tuning))
        .flatten()
    {
        return Ok(Lowered::Dispatch(d));
    }
    let (src_base, dst_base, binding) = bases;
    view_entries(part, runs, src_base, dst_base, binding, room).map(Lowered::Entries)
}

/// The dispatch of a split's part whose view writes its planes' elements side by side
/// (`runs` of one element from `C` planes, their elements back to back in the source, each
/// pixel's `C` back to back in the destination: `[1, C, H, W]` written as `[1, H, W, C]`):
/// the planes joined into rows as a concat's channels are (one segment of `C` parts, read
/// from input byte `src_base` on, written from byte `dst_base` on of output binding
/// `binding`), over windows of `src_size` and `dst_size` bytes: the channels where
/// they are ([`Channels`](super::abi::Channels)), else walked (`join_walks`: more than 8
/// planes, or planes off a unit). A batch's images (`[N, C, H, W]` as `[N, H, W, C]`) are
/// the join repeated, an image a join (the header's `repeat_*`). `None` where the pixels are
/// not side by side or the destination (each image's) does not start on a unit.
fn view_channels(
    runs: &Runs,
    (src_base, dst_base, binding): (u64, u64, u32),
    (src_size, dst_size): (u64, u64),
    tuning: GatherTuning,
) -> Option<Dispatch> {
    let levels: Vec<Level> = runs
        .levels
        .iter()
        .copied()
        .filter(|l| l.extent > 1)
        .collect();
    // Images of a batch ([N, C, H, W]) joined each as its own, one dispatch's joins.
    let (images, pixels, planes) = match levels[..] {
        [pixels, planes] => (None, pixels, planes),
        [images, pixels, planes] => (Some(images), pixels, planes),
        _ => return None,
    };
    let width = runs.run_bytes;
    let stride = planes.extent * width;
    let (src, dst) = (runs.src + src_base, runs.dst + dst_base);
    let side_by_side =
        (pixels.src_step, pixels.dst_step, planes.dst_step) == (width, stride, width);
    let bytes = pixels.extent * stride;
    // The planes' alignment is the picker's to judge (`join_program`); each image's pixels
    // start on a unit, past the image before.
    let image = images.unwrap_or(Level {
        extent: 1,
        src_step: 0,
        dst_step: bytes.next_multiple_of(UNIT_BYTES),
    });
    let aligned = dst.is_multiple_of(UNIT_BYTES) && image.dst_step.is_multiple_of(UNIT_BYTES);
    let last = image.extent - 1;
    let src_end = src + last * image.src_step + planes.extent * planes.src_step;
    let fits = src_end.max(dst + last * image.dst_step + bytes) <= u32::MAX as u64;
    if !(side_by_side && aligned && image.dst_step >= bytes && fits) {
        return None;
    }
    let segment = Segment {
        first_byte: 0,
        row_bytes: width as u32,
        src_offset: src as u32,
        binding: 0,
        count: planes.extent as u32,
        part_step: planes.src_step as u32,
    };
    let segments = std::slice::from_ref(&segment);
    // The channels load each join's planes as vec4s: the images' sources a whole vec4 apart.
    let whole = images.is_none_or(|i| i.src_step.is_multiple_of(UNIT_BYTES));
    let program = join_program(stride, segments, whole, tuning.mode);
    let units = bytes.div_ceil(UNIT_BYTES);
    // A lane's steps and the blocks that take them, as a concat's join counts them.
    let (steps, blocks) = match program.channels {
        Some(c) => {
            let p = channel_lanes(c, pixels.extent, tuning);
            (p.steps_per_lane as u64, p.num_blocks as u64)
        }
        None if join_walks(stride, segments) => unit_steps(units, tuning),
        None => return None,
    };
    let header = JoinHeader {
        first_unit: (dst / UNIT_BYTES) as u32,
        units: units as u32,
        row_bytes: stride as u32,
        end_byte: bytes as u32,
        band_units: 0,
        band_first: 0,
        band_width: 0,
        repeat_blocks: blocks.max(1) as u32,
        repeat_src: images.map_or(0, |i| i.src_step) as u32,
        repeat_units: images.map_or(0, |i| i.dst_step / UNIT_BYTES) as u32,
        binding,
        repeat_binding: 0,
    };
    let num_blocks = u32::try_from(blocks * image.extent).ok()?;
    Some(Dispatch {
        program,
        src_offset: 0,
        src_size,
        dst_offset: 0,
        dst_size,
        params: Params {
            num_blocks,
            num_entries: 1,
            steps_per_lane: steps as u32,
            num_lanes: 0,
            interleaved: 0,
        },
        table: Table::Join(JoinTable {
            header,
            segments: vec![segment],
        }),
    })
}

/// `dispatches` (parts written channels-last, a join each: [`view_channels`]) with each run
/// of equal joins one dispatch of repeated joins, its blocks mapped to their join
/// (`join_block` in the shader): the same program, windows, lanes and table but for the
/// first unit and the source, which step by the same amounts from each join to the next (a
/// split into equal parts written channels-last). On the H200 each dispatch cost about 7
/// microseconds, most of the gap of two such parts of 16 MB (`channels_last`, 0.61 of the
/// copy kernel, where one dispatch of the same program over 64 MB ran at 0.84:
/// docs/performance.md).
pub fn repeat_joins(dispatches: Vec<Dispatch>) -> Vec<Dispatch> {
    let mut out: Vec<Dispatch> = Vec::new();
    for d in dispatches {
        let merged = out.last().and_then(|joins| repeated(joins, &d));
        if merged.is_some() {
            out.pop();
        }
        out.push(merged.unwrap_or(d));
    }
    out
}

/// `joins`, one join or several repeated, with `next` after them, where `next` is one join,
/// the first moved on by the repeat's steps (by any step from one join) to units of its own.
fn repeated(joins: &Dispatch, next: &Dispatch) -> Option<Dispatch> {
    let (Table::Join(a), Table::Join(b)) = (&joins.table, &next.table) else {
        return None;
    };
    let ([sa], [sb]) = (&a.segments[..], &b.segments[..]) else {
        return None;
    };
    let count = |d: &Dispatch, h: &JoinHeader| (d.params.num_blocks / h.repeat_blocks).max(1);
    let (ha, hb) = (a.header, b.header);
    let blocks = next.params.num_blocks;
    if blocks == 0 || hb.repeat_blocks == 0 || ha.repeat_blocks == 0 || count(next, &hb) != 1 {
        return None;
    }
    let n = count(joins, &ha);
    // The steps from one join to the next: source bytes, units, output bindings.
    let steps = match n {
        1 => (
            sb.src_offset.wrapping_sub(sa.src_offset),
            hb.first_unit.wrapping_sub(ha.first_unit),
            hb.binding.wrapping_sub(ha.binding),
        ),
        _ => (ha.repeat_src, ha.repeat_units, ha.repeat_binding),
    };
    // `n` joins as `next` repeated from the first join's place would be (a single join has
    // no steps).
    let of = |n: u32, (repeat_src, repeat_units, repeat_binding): (u32, u32, u32)| {
        let header = JoinHeader {
            first_unit: ha.first_unit,
            repeat_src,
            repeat_units,
            binding: ha.binding,
            repeat_binding,
            ..hb
        };
        let segment = Segment {
            src_offset: sa.src_offset,
            ..*sb
        };
        Some(Dispatch {
            params: Params {
                num_blocks: blocks.checked_mul(n)?,
                ..next.params
            },
            table: Table::Join(JoinTable {
                header,
                segments: vec![segment],
            }),
            ..next.clone()
        })
    };
    let moved = sb.src_offset == sa.src_offset.wrapping_add(n.wrapping_mul(steps.0))
        && hb.first_unit == ha.first_unit.wrapping_add(n.wrapping_mul(steps.1))
        && hb.binding == ha.binding.wrapping_add(n.wrapping_mul(steps.2));
    // Each join's units apart from the next's: in bindings a step apart, or units apart.
    let apart = steps.2 == 1 || (steps.2 == 0 && steps.1.min(steps.1.wrapping_neg()) >= hb.units);
    let before = if n == 1 { (0, 0, 0) } else { steps };
    if !(moved && apart && of(n, before).as_ref() == Some(joins)) {
        return None;
    }
    of(n + 1, steps)
}

/// The dispatch of each of `entries`, numbered from 0: entries that write one unit (one
/// starting inside a unit where another ends) take different dispatches; the others the
/// first. At most 16 entries can share a unit, so at most 16 dispatches.
fn dispatch_of(entries: &[Entry]) -> Vec<usize> {
    // Units by binding and place.
    let mut taken: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    entries
        .iter()
        .map(|e| {
            let units = (e.out_bytes as u64).div_ceil(UNIT_BYTES) as u32;
            let first = (e.skip > 0).then_some((e.binding, e.dst_unit));
            let partial = !(e.out_bytes as u64).is_multiple_of(UNIT_BYTES);
            let last = partial.then_some((e.binding, e.dst_unit + units - 1));
            let edges: Vec<(u32, u32)> = first.into_iter().chain(last).collect();
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
mod view_entries_tests;
