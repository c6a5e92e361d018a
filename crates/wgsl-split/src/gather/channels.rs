//! The channels ([`Channels`]): which dispatches of a split or a concat take them, and how
//! their lanes take groups of rows. Pure.

use super::abi::{Channels, Entry, Params, UNIT_BYTES};
use super::modes::GatherTuning;
use super::picker::lanes_in_runs;
use super::runs::{lane_steps, max_steps};

/// How the lanes of channels `c` of `rows` rows take their groups of rows (a unit of each
/// part: `16 / c.width` rows), in `tuning`'s mapping (in runs on CPU adapters): the
/// dispatch's header, its entries still to count.
///
/// - CPU adapters: each lane a run of consecutive groups, at most half its loop turns (the
///   groups past the whole units below a binding's end, at most 17 a lane, take up to 20
///   turns a unit). Lanes taking groups in turn ran RGB planes at a third of the runs' rate
///   on lavapipe and GL (performance.md, session 34).
/// - GPUs: consecutive lanes take consecutive groups, a block's lanes as many steps each as
///   fill it up to `max_steps_per_lane`, as the H200's kernel for RGB planes did (each lane
///   the bytes of a few whole pixels, constant shifts: 1.46 TB/s, against 0.16 for the
///   product's tiles then).
pub(super) fn channel_lanes(c: Channels, rows: u64, tuning: GatherTuning) -> Params {
    step_lanes(rows.div_ceil(UNIT_BYTES / c.width as u64), tuning)
}

/// How a dispatch's lanes take `count` groups in `tuning`'s mapping ([`lane_steps`]): the
/// dispatch's header, its entries still to count.
fn step_lanes(count: u64, tuning: GatherTuning) -> Params {
    let runs = lanes_in_runs(tuning.mode);
    let (steps, blocks) = lane_steps(count, max_steps(tuning.max_steps_per_lane), runs);
    let lanes = if runs { count.div_ceil(steps) } else { 0 };
    Params {
        num_blocks: blocks as u32,
        num_entries: 0,
        steps_per_lane: steps as u32,
        num_lanes: lanes as u32,
        interleaved: 0,
    }
}

/// The header of the channels' dispatch of a split's `entries`.
pub(super) fn channel_params(c: Channels, entries: &mut [Entry], tuning: GatherTuning) -> Params {
    let rows = entries[0].out_bytes as u64 / c.width as u64;
    entries.iter_mut().for_each(|e| e.block_start = 0);
    Params {
        num_entries: entries.len() as u32,
        ..channel_lanes(c, rows, tuning)
    }
}

#[cfg(test)]
mod channels_tests;
