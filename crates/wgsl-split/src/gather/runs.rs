//! A lane's run where each lane writes a run of units (CPU adapters): how far a split or a
//! concat spreads over a dispatch's lanes, and how long llvmpipe lets one lane run. Pure.

use super::abi::{RUNS_WORKGROUP_SIZE, WORKGROUP_SIZE};

/// Lanes a small split or concat is spread over when each lane writes a run of units
/// ([`GatherMode::Cpu`](super::modes::GatherMode::Cpu)): one full workgroup and a second half
/// full. Every lane has a fixed cost on a CPU adapter, and a dispatch's second workgroup
/// starts tens of microseconds after its first (another thread wakes up), so the first gets
/// the larger share (`docs/performance.md`, "CPU adapters"). Larger ones reach
/// `max_steps_per_lane` per lane and spread over many workgroups anyway.
const SPREAD_LANES: u64 = RUNS_WORKGROUP_SIZE * 3 / 2;

/// Units per lane of a dispatch of `total` units whose lanes each write a run: spread over
/// [`SPREAD_LANES`], in runs of at least [`MIN_RUN_UNITS`]; past `max_steps` per lane, as many
/// full workgroups as runs of at most `max_steps` need, with equal runs, so that no workgroup
/// is left to finish alone.
pub(super) fn run_units(total: u64, max_steps: u64) -> u64 {
    let max_steps = max_steps.max(1);
    let spread = total
        .div_ceil(SPREAD_LANES)
        .max(MIN_RUN_UNITS.min(max_steps));
    if spread <= max_steps {
        return spread;
    }
    let workgroups = total.div_ceil(RUNS_WORKGROUP_SIZE * max_steps);
    total.div_ceil(workgroups * RUNS_WORKGROUP_SIZE)
}

/// The shortest run of a lane when a split is spread (lanes in runs): splits of up to
/// 64 x 16 units (16 KiB) stay in one workgroup, where a second one would mostly wait for its
/// thread.
pub const MIN_RUN_UNITS: u64 = 16;

/// Loop turns one lane may take in all. llvmpipe (lavapipe, and GL through it) counts every
/// turn of every loop of an invocation against one limit of 65,535
/// (`LP_MAX_TGSI_LOOP_ITERATIONS` in Mesa) and past it leaves every loop, so the lane's later
/// units would never be written. The host keeps each lane's steps within this, with room for
/// the turns outside them, on every device: on a GPU it shortens only runs no GPU takes.
const LANE_TURNS: u64 = 60_000;

/// How `count` steps spread over a dispatch's lanes, at most `most` a lane: in runs (CPU
/// adapters: [`run_units`] a lane, workgroups of [`RUNS_WORKGROUP_SIZE`]) or in turn (GPUs:
/// consecutive lanes on consecutive steps, workgroups of [`WORKGROUP_SIZE`], each lane as
/// many as fill its block); the steps per lane and the blocks. The shader's `lane_span` walks
/// them back.
pub(super) fn lane_steps(count: u64, most: u64, runs: bool) -> (u64, u64) {
    if runs {
        let steps = run_units(count, most);
        (steps, count.div_ceil(steps).div_ceil(RUNS_WORKGROUP_SIZE))
    } else {
        let steps = count.div_ceil(WORKGROUP_SIZE).clamp(1, most.max(1));
        (steps, count.div_ceil(steps * WORKGROUP_SIZE))
    }
}

/// Loop turns one step of any program takes at most, as llvmpipe counts them (every test of
/// a loop's condition): a concat's unit assembled part by part in turn (`join_unit`, up to 20
/// parts visited, 16 runs of bytes moved, two searches of up to 23 turns, its stores and the
/// step's own test: about 100) takes the most; a vec4, a shifted unit or a walked one a few.
const STEP_TURNS: u64 = 128;

/// The most steps one lane takes, whatever its program: [`LANE_TURNS`] over [`STEP_TURNS`].
/// One bound in place of a model of each program's turns: it costs CPU adapters a tenth to a
/// fifth on their longest runs (docs/performance.md), and a GPU takes 4 steps a lane.
pub const MAX_LANE_STEPS: u64 = LANE_TURNS / STEP_TURNS;

/// The most steps per lane: `max_steps`, from 1 to [`MAX_LANE_STEPS`].
pub(super) fn max_steps(max_steps: u64) -> u64 {
    max_steps.clamp(1, MAX_LANE_STEPS)
}
