//! What each dispatch runs: the one choice of its program ([`ProgramKey`], also its
//! pipeline's cache key), for a split's entries ([`split_program`]; a view's parts and a
//! concat's aligned parts take a split's table) and for a concat's join ([`join_program`];
//! a split's part written channels-last is its planes joined; [`join_walks`] for its
//! segments).
//! Pure.

use super::abi::{Channels, Entry, EntryPoint, Mode, ProgramKey, Segment, UNIT_BYTES};
use super::modes::GatherMode;
use crate::plan::bytes::{ByteRows, RowKind};

/// Unaligned output rows shorter than this do not take the shifted lanes, whose units each
/// span at most two rows (16 bytes would do), but the runs: a split with rows that short is
/// mostly row ends.
pub(super) const MIN_LANES_ROW: u64 = 64;

/// The one rule of a device's kind: whether its lanes each take a run of units (CPU
/// adapters, where every invocation has a fixed cost) or consecutive lanes consecutive units
/// (GPUs, so a warp touches memory as a plain copy does). Every program runs in either; the
/// one other rule that depends on the device is named for it
/// ([`cpu_wide_word_channels_take_runs`]).
pub(super) fn lanes_in_runs(mode: GatherMode) -> bool {
    mode == GatherMode::Cpu
}

/// A rule CPU adapters alone need: a split's wide channels of 4-byte parts (5 to 8 f32
/// columns) take the runs there, whose equal entries take lanes in turn. `columns` (eight f32
/// columns of 2^21 rows), `scripts/ab.sh` on a Xeon with 260 MiB of L3, llvmpipe 15: 0.67 to
/// 0.69 of the copy kernel in the runs, 0.47 to 0.49 in the channels. Narrow ones keep the
/// channels (`tiny_runs`: 0.87 to 0.96 there, 0.69 to 0.71 in the runs). GPUs take every
/// channels program; so `main_rows runs channels w4 wide` is no dispatch's.
fn cpu_wide_word_channels_take_runs(c: Channels, mode: GatherMode) -> bool {
    lanes_in_runs(mode) && c.width == 4 && c.wide
}

/// The one choice of what runs a split's dispatch of `entries` in `mode`. Where the entries
/// are [`Channels`] ([`channels_of`]), but for [`cpu_wide_word_channels_take_runs`]: the
/// channels, in `mode`'s lane mapping. Else the rows:
/// in the device's mapping ([`lanes_in_runs`]), but in runs on any device where the dispatch covers a split with short rows ([`short_rows`])
/// or an unaligned entry's rows are shorter than [`MIN_LANES_ROW`] (the shifted lanes' units
/// span at most two rows).
pub(super) fn split_program(
    bytes: Option<&ByteRows>,
    entries: &[Entry],
    mode: GatherMode,
) -> ProgramKey {
    let channels = channels_of(entries).filter(|&c| !cpu_wide_word_channels_take_runs(c, mode));
    if let Some(c) = channels {
        // The channels branch of `main_rows`.
        return ProgramKey {
            entry: EntryPoint::Rows,
            lanes_in_runs: lanes_in_runs(mode),
            channels: Some(c),
        };
    }
    let short = entries
        .iter()
        .any(|e| !e.is_vec4() && (e.row_bytes as u64) < MIN_LANES_ROW);
    let runs = lanes_in_runs(mode) || bytes.is_some_and(short_rows) || short;
    ProgramKey::rows(entries, runs)
}

/// Whether a split takes the runs on any device: strided, with a row shorter than
/// [`MIN_LANES_ROW`] bytes.
fn short_rows(bytes: &ByteRows) -> bool {
    bytes.kind == RowKind::Strided && bytes.outputs.iter().any(|o| o.row_bytes < MIN_LANES_ROW)
}

/// The channels `entries` are, if they are ([`Channels::of`]): the parts of rows in column
/// order, each from the first byte of its destination unit, its rows back to back there, the
/// rows' first byte a whole vec4 of the input.
fn channels_of(entries: &[Entry]) -> Option<Channels> {
    let first = entries.first()?;
    let (width, stride) = (first.row_bytes as u64, first.src_stride as u64);
    let side_by_side = entries.iter().zip(0..).all(|(e, k)| {
        (e.row_bytes, e.out_bytes, e.src_stride)
            == (first.row_bytes, first.out_bytes, first.src_stride)
            && e.src_offset as u64 == first.src_offset as u64 + k * width
            && (e.dst_stride, e.first_byte, e.skip) == (e.row_bytes, 0, 0)
    });
    let aligned = (first.src_offset as u64).is_multiple_of(UNIT_BYTES);
    Channels::of(stride, width, entries.len() as u64).filter(|_| side_by_side && aligned)
}

/// The channels of a concat's dispatch whose `segments` are one, into rows of `stride`
/// bytes from its output's first unit, if they are ([`Channels::of`]): its parts side by
/// side from the rows' first byte, in binding 0, each part's rows from a whole vec4.
fn join_channels_of(stride: u64, segments: &[Segment]) -> Option<Channels> {
    let [s] = segments else { return None };
    let fits = (s.first_byte, s.binding) == (0, 0);
    let from = (s.src_offset as u64 | s.part_step as u64) % UNIT_BYTES;
    Channels::of(stride, s.row_bytes as u64, s.count as u64).filter(|_| fits && from == 0)
}

/// Whether a concat's `segments` into rows of `stride` bytes, merged where parts lie side by
/// side (in rows longer than a unit), are walked (`join_walk`): one segment of parts that is
/// the whole row ([`walked`]), each part narrower than a unit, or of whole words up to a unit read
/// from whole words (sixteen f32 columns, f64 or complex columns; up to eight f32 columns are
/// channels). In the join's units such parts ran at a fifth to a seventeenth of the walk's
/// rate on lavapipe (five 7-byte parts: 0.04 of the copy kernel, 0.20 walked; eight f32
/// columns: 0.20 GB/s, 3.3 walked a word at a time).
pub(super) fn join_walks(stride: u64, segments: &[Segment]) -> bool {
    let [s] = segments else { return false };
    let words = (s.row_bytes | s.src_offset | s.part_step).is_multiple_of(4);
    let narrow = (s.row_bytes as u64) < UNIT_BYTES || (words && s.row_bytes as u64 == UNIT_BYTES);
    walked(stride, segments) && s.count > 1 && narrow
}

/// Whether the shader walks a join of `segments` into rows of `stride` bytes (`Join.walked`,
/// whatever the parts' widths): one segment in binding 0 that is the whole row.
pub(super) fn walked(stride: u64, segments: &[Segment]) -> bool {
    let [s] = segments else { return false };
    (s.first_byte, s.binding) == (0, 0) && s.count as u64 * s.row_bytes as u64 == stride
}

/// Whether a concat's parts, each its input binding and how its bytes align, read from
/// `windows` input windows, take a split's table: every part aligned to 16 bytes (its rows,
/// columns and source offset) and read through one binding, so each unit is one vec4 copied,
/// as a split's aligned rows are (the H200's splits of aligned rows at 0.94 to 0.99 of the
/// copy kernel, its join at 0.51 to 0.65).
pub(super) fn join_takes_split_rows(
    windows: usize,
    mut parts: impl ExactSizeIterator<Item = (u32, Mode)>,
) -> bool {
    windows == 1 && parts.len() > 0 && parts.all(|part| part == (0, Mode::Vec4))
}

/// The program of a concat's join of `segments` into rows of `stride` bytes (or of a split's
/// part written channels-last, its planes the segment's parts: `view_channels`), in `mode`:
/// the channels where `whole` (the dispatch writes the whole output from one binding) and the
/// segment is channels ([`join_channels_of`]), on every device (`concat_tiny_runs` at 0.96
/// of the copy kernel on lavapipe in them, 0.2 in the join's units); else the join's units.
/// Either in `mode`'s lane mapping: on GPUs consecutive lanes take consecutive units, each
/// funnel-shifted from its part's aligned vec4s as the split's shifted lanes do (0.91 to
/// 0.93 of the copy kernel on an H100; the H200's join in lanes ran slower than in runs
/// while it staged segments in workgroup memory, 0.23 against 0.32 for `concat_bytes_odd`).
pub(super) fn join_program(
    stride: u64,
    segments: &[Segment],
    whole: bool,
    mode: GatherMode,
) -> ProgramKey {
    let channels = join_channels_of(stride, segments).filter(|_| whole);
    ProgramKey {
        entry: EntryPoint::Join,
        lanes_in_runs: lanes_in_runs(mode),
        channels,
    }
}

#[cfg(test)]
mod picker_tests;
