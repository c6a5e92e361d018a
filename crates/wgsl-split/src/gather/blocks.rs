//! How a split's entries are numbered into blocks (workgroups) and lanes for the program
//! [`split_program`] picks. Pure arithmetic.

use super::abi::{Entry, Params, ProgramKey, RUNS_WORKGROUP_SIZE, UNIT_BYTES, WORKGROUP_SIZE};
use super::channels::channel_params;
use super::modes::GatherTuning;
use super::picker::{lanes_in_runs, split_program, MIN_LANES_ROW};
use super::runs::{max_steps, run_units};
use crate::error::{Result, SplitError};
use crate::plan::bytes::ByteRows;

/// The longest rows of equal aligned entries that still take lanes in turn (in runs,
/// see [`number_blocks`]).
const MAX_INTERLEAVED_VEC4_ROW: u64 = 1024;

/// Units of an entry of `out_bytes`.
pub(super) fn units(out_bytes: u64) -> u64 {
    out_bytes.div_ceil(UNIT_BYTES)
}

/// What one dispatch of a split runs ([`ProgramKey`]), its header and its entries.
pub(super) type SplitTable = (ProgramKey, Params, Vec<Entry>);

/// The dispatch of `entries` in `tuning`'s mapping: its program ([`split_program`]), then its steps
/// per lane and numbering. `bytes` is the whole split's rows where the dispatch covers it
/// (`None` for a window of one output), which the short-row programs need.
pub(super) fn split_table(
    bytes: Option<&ByteRows>,
    mut entries: Vec<Entry>,
    tuning: GatherTuning,
) -> SplitTable {
    let program = split_program(bytes, &entries, tuning.mode);
    let params = match program.channels {
        Some(c) => channel_params(c, &mut entries, tuning),
        None => {
            let steps = steps_per_lane(program, &entries, tuning);
            number_blocks(&mut entries, program, steps)
        }
    };
    (program, params, entries)
}

/// The program and header of an indexed dispatch (`gather::indexed`) whose `entries` take
/// `work[i]` steps each (units, or a scatter's chunks), numbered here: `main_rows` in the
/// device's lane mapping ([`lanes_in_runs`]), in runs on any device where a plain entry has
/// unaligned rows shorter than [`MIN_LANES_ROW`] (as [`split_program`] rules).
pub(super) fn indexed_table(
    entries: &mut [Entry],
    work: &[u64],
    tuning: GatherTuning,
) -> (ProgramKey, Params) {
    use super::abi::Mode;
    let short = |e: &Entry| {
        e.mode < Mode::Indexed as u32 && !e.is_vec4() && (e.row_bytes as u64) < MIN_LANES_ROW
    };
    let runs = lanes_in_runs(tuning.mode) || entries.iter().any(short);
    let program = ProgramKey {
        entry: super::abi::EntryPoint::Rows,
        lanes_in_runs: runs,
        channels: None,
    };
    let longest = max_steps(tuning.max_steps_per_lane);
    let (largest, total) = work.iter().fold((0, 0), |(l, t), &w| (l.max(w), t + w));
    let steps = match runs {
        true => run_units(total, longest),
        false => largest.div_ceil(WORKGROUP_SIZE),
    }
    .clamp(1, longest);
    let step = if runs { steps } else { steps * WORKGROUP_SIZE };
    let mut next = 0u64;
    for (e, &w) in entries.iter_mut().zip(work) {
        e.block_start = next as u32;
        next += w.div_ceil(step);
    }
    let (num_blocks, num_lanes) = match runs {
        true => (next.div_ceil(RUNS_WORKGROUP_SIZE), next),
        false => (next, 0),
    };
    let params = Params {
        num_blocks: num_blocks as u32,
        num_entries: entries.len() as u32,
        steps_per_lane: steps as u32,
        num_lanes: num_lanes as u32,
        interleaved: 0,
    };
    (program, params)
}

/// Steps per lane for `entries` in the rows' `program`.
fn steps_per_lane(program: ProgramKey, entries: &[Entry], tuning: GatherTuning) -> u64 {
    let (largest, total) = entries
        .iter()
        .map(|e| units(e.out_bytes as u64))
        .fold((0, 0), |(l, t), u| (l.max(u), t + u));
    let longest = max_steps(tuning.max_steps_per_lane);
    let steps = match program.entry {
        // Spread small splits: a CPU adapter runs workgroups on several threads.
        _ if program.lanes_in_runs => run_units(total, longest),
        // A block no larger than the largest entry, so small entries do not idle whole
        // workgroups.
        _ => largest.div_ceil(WORKGROUP_SIZE),
    };
    steps.clamp(1, longest)
}

/// Numbers `entries` (their `block_start`) by lane (lanes in runs) or by block whose lanes
/// take `steps` steps (lanes in turn), and returns the header of their dispatch.
fn number_blocks(entries: &mut [Entry], program: ProgramKey, steps: u64) -> Params {
    let runs = program.lanes_in_runs;
    let step = if runs { steps } else { steps * WORKGROUP_SIZE };
    let mut next = 0u64;
    for e in entries.iter_mut() {
        e.block_start = next as u32;
        next += units(e.out_bytes as u64).div_ceil(step);
    }
    // Equal entries with short rows take lanes in turn (in runs): neighbouring lanes then read
    // the same or adjacent input rows, where each lane's run would otherwise jump from row to
    // row far from its neighbours'. That pays for short rows and vec4 rows, not for long
    // unaligned rows, where neighbouring lanes take different shifts ("CPU adapters" in
    // docs/performance.md).
    let equal = entries.len() > 1
        && entries
            .windows(2)
            .all(|w| (w[0].out_bytes, w[0].row_bytes) == (w[1].out_bytes, w[1].row_bytes));
    let interleaved = runs
        && equal
        && ((entries[0].row_bytes as u64) < MIN_LANES_ROW
            || (entries[0].row_bytes as u64 <= MAX_INTERLEAVED_VEC4_ROW
                && entries.iter().all(Entry::is_vec4)));
    let (num_blocks, num_lanes) = match runs {
        true => (next.div_ceil(RUNS_WORKGROUP_SIZE), next),
        false => (next, 0),
    };
    Params {
        num_blocks: num_blocks as u32,
        num_entries: entries.len() as u32,
        steps_per_lane: steps as u32,
        num_lanes: num_lanes as u32,
        interleaved: u32::from(interleaved),
    }
}

/// The dispatch grid for `groups` workgroups (blocks): as wide as the device allows, then folded into rows (the
/// shaders rebuild the flat index).
pub fn grid(limits: &crate::Limits, groups: u64) -> Result<(u32, u32)> {
    let max = limits.max_compute_workgroups_per_dimension as u64;
    let x = groups.min(max);
    let y = groups.div_ceil(x.max(1));
    if y > max {
        return Err(SplitError::TooLarge(format!(
            "{groups} workgroups exceed {max} x {max}, the device's dispatch grid"
        )));
    }
    Ok((x as u32, y as u32))
}

#[cfg(test)]
mod blocks_tests;
