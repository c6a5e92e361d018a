//! How a split's entries are numbered into blocks (workgroups) and lanes for the program
//! [`split_program`] picks. Pure arithmetic.

use super::abi::{Entry, Params, ProgramKey, RUNS_WORKGROUP_SIZE, UNIT_BYTES, WORKGROUP_SIZE};
use super::channels::channel_params;
use super::modes::GatherTuning;
use super::picker::{split_program, MIN_LANES_ROW};
use super::runs::{max_steps, run_units};
use crate::error::{Result, SplitError};
use crate::plan::bytes::ByteRows;

/// The longest rows of equal aligned entries that still take lanes in turn (in runs,
/// see [`number_blocks`]).
const MAX_INTERLEAVED_VEC4_ROW: u64 = 1024;

/// Loop turns one unit of a split's rows may take, on average over a lane's steps. Rows of
/// 16 bytes or more: one a unit and one a row segment in runs (a unit that crosses a row end
/// takes no loop), up to three counted. Shorter rows (`run_narrow`, no inner loop): one. An
/// output's partial last unit is taken alone (`copy_unit`, up to 20), within the room
/// `runs::LANE_TURNS` leaves.
fn split_unit_turns(entries: &[Entry]) -> u64 {
    let long_unaligned = entries
        .iter()
        .any(|e| !e.is_vec4() && e.row_bytes as u64 >= UNIT_BYTES);
    if long_unaligned {
        3
    } else {
        1
    }
}

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

/// Steps per lane for `entries` in the rows' `program`.
fn steps_per_lane(program: ProgramKey, entries: &[Entry], tuning: GatherTuning) -> u64 {
    let (largest, total) = entries
        .iter()
        .map(|e| units(e.out_bytes as u64))
        .fold((0, 0), |(l, t), u| (l.max(u), t + u));
    let longest = max_steps(tuning.max_steps_per_lane, split_unit_turns(entries));
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
pub fn grid(limits: &wgpu::Limits, groups: u64) -> Result<(u32, u32)> {
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
mod tests {
    use super::*;
    use crate::gpu::gather::abi::{Channels, EntryPoint};
    use crate::gpu::gather::dispatches::plan_dispatches;
    use crate::gpu::gather::dispatches::tests::{dispatches, BIG};
    use crate::gpu::gather::runs::MIN_RUN_UNITS;
    use crate::gpu::gather::GatherMode;
    use crate::gpu::placement::PartLayout;
    use crate::{ops, DType, IntTensor};

    /// The header of the runs' dispatch of a split of `shape` along axis 1 into `parts`.
    fn runs(shape: &[usize], parts: i64, dtype: DType, max_units: u64) -> Params {
        let plan = ops::split(shape, &IntTensor::scalar(1), parts).unwrap();
        let layout = PartLayout::new(&plan, dtype, 16).unwrap();
        let bytes = ByteRows::new(&plan, dtype.size()).unwrap();
        let tuning = GatherTuning {
            mode: GatherMode::Cpu,
            max_steps_per_lane: max_units,
        };
        plan_dispatches(&bytes, &layout, tuning, 1 << 27, 16).unwrap()[0].params
    }

    #[test]
    fn runs_spread_small_splits_and_lengthen_for_large_ones() {
        let lanes = |shape: &[usize], parts, max_units| {
            let p = runs(shape, parts, DType::F32, max_units);
            (p.num_blocks, p.num_lanes, p.steps_per_lane)
        };
        // 4000 bytes = 250 units: runs of at least MIN_RUN_UNITS, so one workgroup of 16 lanes.
        assert_eq!(MIN_RUN_UNITS, 16);
        assert_eq!(lanes(&[1, 1000], 1, 2048), (1, 16, 16));
        // The 69 KB spec split, 3 x 1440 units: 96 lanes (64 + 32) of 45 units.
        assert_eq!(lanes(&[6, 12, 240], 3, 2048), (2, 96, 45));
        // 64 MiB = 4 Mi units: runs grow to the maximum, 8 here, in workgroups of 64 lanes.
        assert_eq!(lanes(&[1, 1 << 24], 1, 8), (8192, 1 << 19, 8));
    }

    #[test]
    fn equal_entries_with_short_rows_take_lanes_in_turn() {
        let interleaved =
            |shape: &[usize], parts, dtype| runs(shape, parts, dtype, 2048).interleaved;
        // Rows of 4 bytes, 32 apart (16 apart, they would be channels); aligned rows of 256
        // bytes (heads64).
        assert_eq!(interleaved(&[4096, 8], 8, DType::F32), 1);
        assert_eq!(interleaved(&[512, 4096], 64, DType::F32), 1);
        // Aligned rows of 3,840 bytes (the spec split); unaligned rows of 1,365 bytes.
        assert_eq!(interleaved(&[6, 12, 240], 3, DType::F32), 0);
        assert_eq!(interleaved(&[16, 4095], 3, DType::U8), 0);
    }

    /// The entry point and header of the first dispatch of a variadic split of `shape` along
    /// axis 1 in `mode`, at 4 units per lane.
    fn variadic(
        shape: &[usize],
        lengths: Vec<i64>,
        dtype: DType,
        mode: GatherMode,
    ) -> (EntryPoint, Params) {
        let lengths = IntTensor::vector(lengths);
        let plan = ops::variadic_split(shape, &IntTensor::scalar(1), &lengths).unwrap();
        let d = &dispatches(&plan, dtype, 256, mode, 4, BIG).unwrap()[0];
        assert!(!d.program.lanes_in_runs, "{d:?}");
        (d.program.entry, d.params)
    }

    #[test]
    fn short_rows_take_the_channels_or_the_runs_on_gpus() {
        let program = |shape: &[usize], lengths: Vec<i64>, dtype| {
            let lengths = IntTensor::vector(lengths);
            let plan = ops::variadic_split(shape, &IntTensor::scalar(1), &lengths).unwrap();
            let d = &dispatches(&plan, dtype, 256, GatherMode::Gpu, 4, BIG).unwrap()[0];
            d.program
        };
        // tiny_runs (equal parts of one f32): the channels, 16-byte rows of 4-byte parts,
        // lanes in turn.
        let p = program(&[1 << 22, 4], vec![1; 4], DType::F32);
        assert_eq!(
            (p.entry, p.lanes_in_runs, p.channels),
            (
                EntryPoint::Rows,
                false,
                Some(Channels {
                    stride: 16,
                    width: 4
                })
            )
        );
        // Unequal short rows, of words or of bytes: the runs.
        for (shape, lengths, dtype) in [
            (&[1000, 3][..], vec![1, 2], DType::F32),
            (&[4096, 7], vec![3, 4], DType::U8),
        ] {
            let p = program(shape, lengths, dtype);
            assert_eq!(
                (p.entry, p.lanes_in_runs, p.channels),
                (EntryPoint::Rows, true, None)
            );
        }
        // Long unaligned rows: the shifted lanes.
        let p = program(&[64, 4095], vec![1365, 1365, 1365], DType::U8);
        assert_eq!((p.entry, p.lanes_in_runs), (EntryPoint::Rows, false));
    }

    #[test]
    fn unaligned_long_rows_take_the_shifted_lanes() {
        let params_of = |shape: &[usize], lengths, dtype| {
            let (entry, p) = variadic(shape, lengths, dtype, GatherMode::Gpu);
            (entry, p.steps_per_lane)
        };
        // bytes_odd's rows of 1,365 bytes and rows of 64 bytes at odd offsets: main_rows, a
        // block's steps the largest entry's units over the workgroup, at most 4.
        let p = params_of(&[16384, 4095], vec![1365; 3], DType::U8);
        assert_eq!(p, (EntryPoint::Rows, 4));
        let p = params_of(&[64, 193], vec![65, 64, 64], DType::U8);
        assert_eq!(p, (EntryPoint::Rows, 2));
        // Aligned rows keep the vec4 lanes.
        let p = params_of(&[64, 4096], vec![2048, 2048], DType::F32);
        assert_eq!(p, (EntryPoint::RowsVec4, 4));
    }

    #[test]
    fn a_lanes_loop_turns_stay_within_llvmpipes_limit() {
        // Asked for 30,000 units a lane: unaligned rows of 17 bytes take up to 3 turns a
        // unit, so at most 20,000 units; 1-byte rows 24 apart (one turn a unit) and aligned
        // rows take more (equal runs in full workgroups).
        let runs_of =
            |shape: &[usize], parts, dtype| runs(shape, parts, dtype, 30_000).steps_per_lane;
        assert!(runs_of(&[1 << 22, 24], 24, DType::U8) > 20_000);
        assert!(runs_of(&[1 << 22, 34], 2, DType::U8) <= 20_000);
        assert!(runs_of(&[1 << 22, 64], 2, DType::F32) > 20_000);
    }

    #[test]
    fn grids_fold_into_rows_within_the_limit() {
        let limits = wgpu::Limits {
            max_compute_workgroups_per_dimension: 100,
            ..wgpu::Limits::default()
        };
        assert_eq!(grid(&limits, 7).unwrap(), (7, 1));
        assert_eq!(grid(&limits, 250).unwrap(), (100, 3));
        assert!(matches!(
            grid(&limits, 10_001),
            Err(SplitError::TooLarge(_))
        ));
    }
}
