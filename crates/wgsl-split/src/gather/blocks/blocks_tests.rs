//! How entries are numbered into blocks and lanes, checked through whole splits' dispatches.

use super::*;
use crate::gather::abi::{Channels, EntryPoint};
use crate::gather::dispatches::plan_dispatches;
use crate::gather::dispatches::tests::{dispatches, BIG};
use crate::gather::runs::{MAX_LANE_STEPS, MIN_RUN_UNITS};
use crate::gather::GatherMode;
use crate::placement::PartLayout;
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
    let interleaved = |shape: &[usize], parts, dtype| runs(shape, parts, dtype, 2048).interleaved;
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
        (EntryPoint::Rows, false, Channels::of(16, 4, 4))
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
    // Asked for 30,000 units a lane, every program takes at most MAX_LANE_STEPS (468): one
    // bound for unaligned rows, rows of a byte and aligned rows alike.
    let runs_of = |shape: &[usize], parts, dtype| runs(shape, parts, dtype, 30_000).steps_per_lane;
    assert_eq!(MAX_LANE_STEPS, 468);
    for (shape, parts, dtype) in [
        ([1 << 22, 24], 24, DType::U8),
        ([1 << 22, 34], 2, DType::U8),
        ([1 << 22, 64], 2, DType::F32),
    ] {
        let steps = runs_of(&shape, parts, dtype) as u64;
        assert!(
            steps <= MAX_LANE_STEPS && steps > MAX_LANE_STEPS - 8,
            "{shape:?}: {steps}"
        );
    }
}

#[test]
fn grids_fold_into_rows_within_the_limit() {
    let limits = crate::Limits {
        max_compute_workgroups_per_dimension: 100,
        ..crate::Limits::default()
    };
    assert_eq!(grid(&limits, 7).unwrap(), (7, 1));
    assert_eq!(grid(&limits, 250).unwrap(), (100, 3));
    assert!(matches!(
        grid(&limits, 10_001),
        Err(SplitError::TooLarge(_))
    ));
}
