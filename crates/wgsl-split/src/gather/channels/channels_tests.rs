//! Which splits take the channels, and how their lanes take groups, through whole splits' dispatches.

use super::*;
use crate::gather::abi::{EntryPoint, ProgramKey};
use crate::gather::dispatches::tests::{dispatches, BIG};
use crate::gather::GatherMode;
use crate::{ops, DType, IntTensor};

/// The program and header of the first dispatch of a variadic split of `shape` along its
/// last axis into `lengths`, on a CPU adapter at `max_units` steps a lane.
fn split(shape: &[usize], lengths: Vec<i64>, dtype: DType, max_units: u64) -> (ProgramKey, Params) {
    let plan =
        ops::variadic_split(shape, &IntTensor::scalar(-1), &IntTensor::vector(lengths)).unwrap();
    let d = &dispatches(&plan, dtype, 16, GatherMode::Cpu, max_units, BIG).unwrap()[0];
    (d.program, d.params)
}

#[test]
fn equal_parts_of_short_rows_are_channels() {
    let channels = |shape: &[usize], lengths, dtype| split(shape, lengths, dtype, 2048).0.channels;
    let of = |width| Some(Channels { width, wide: false });
    let wide = |width| Some(Channels { width, wide: true });
    // RGB and RGBA planes of u8 and f16, pairs of u8; f32 ones and pairs of f16 (parts of 4
    // bytes).
    assert_eq!(channels(&[64, 48, 3], vec![1; 3], DType::U8), of(1));
    assert_eq!(channels(&[64, 4], vec![1; 4], DType::U8), of(1));
    assert_eq!(channels(&[100, 3], vec![1; 3], DType::F16), of(2));
    assert_eq!(channels(&[7, 2], vec![1; 2], DType::U8), of(1));
    assert_eq!(channels(&[7, 4], vec![1; 4], DType::F32), of(4));
    assert_eq!(channels(&[100, 6], vec![2; 3], DType::F16), of(4));
    assert_eq!(channels(&[7, 2], vec![1; 2], DType::F32), of(4));
    // Five to eight parts: the wide channels.
    assert_eq!(channels(&[7, 10], vec![2; 5], DType::U8), wide(2));
    assert_eq!(channels(&[100, 8], vec![1; 8], DType::F16), wide(2));
    assert_eq!(channels(&[9, 7], vec![1; 7], DType::U8), wide(1));
    // Wide ones of 4-byte parts: the runs on CPU adapters, the channels on GPUs.
    let gpu = |shape: &[usize], lengths: Vec<i64>, dtype| {
        let lengths = IntTensor::vector(lengths);
        let plan = ops::variadic_split(shape, &IntTensor::scalar(-1), &lengths).unwrap();
        dispatches(&plan, dtype, 16, GatherMode::Gpu, 4, BIG).unwrap()[0]
            .program
            .channels
    };
    assert_eq!(channels(&[9, 8], vec![1; 8], DType::F32), None);
    assert_eq!(channels(&[9, 6], vec![1; 6], DType::F32), None);
    assert_eq!(gpu(&[9, 8], vec![1; 8], DType::F32), wide(4));
    assert_eq!(gpu(&[9, 6], vec![1; 6], DType::F32), wide(4));
    assert_eq!(channels(&[7, 4], vec![1; 4], DType::F32), of(4));
    // More than eight parts; parts of 3 or 8 bytes; unequal parts; rows past 16 bytes; parts
    // of a unit or more; one part: the runs.
    assert_eq!(channels(&[7, 9], vec![1; 9], DType::U8), None);
    assert_eq!(channels(&[7, 9], vec![3; 3], DType::U8), None);
    assert_eq!(channels(&[7, 2], vec![1; 2], DType::F64), None);
    assert_eq!(channels(&[64, 3], vec![1, 2], DType::U8), None);
    assert_eq!(channels(&[64, 17], vec![1; 17], DType::U8), None);
    assert_eq!(channels(&[64, 8], vec![4; 2], DType::F32), None);
    assert_eq!(channels(&[64, 1, 3], vec![3], DType::U8), None);
    // A GPU takes the channels too, lanes in turn.
    let plan = ops::split(&[64, 3], &IntTensor::scalar(1), 3).unwrap();
    let d = &dispatches(&plan, DType::U8, 16, GatherMode::Gpu, 4, BIG).unwrap()[0];
    assert_eq!(
        (d.program.entry, d.program.lanes_in_runs, d.program.channels),
        (EntryPoint::Rows, false, Some(of(1).unwrap()))
    );
}

#[test]
fn lanes_take_runs_of_groups_of_16_rows() {
    // rgb_planes: 8,294,400 pixels, 518,400 groups; at most MAX_LANE_STEPS (468) a lane,
    // so 18 full workgroups, in equal runs of 450.
    let (program, p) = split(&[4, 1080, 1920, 3], vec![1; 3], DType::U8, 2048);
    assert_eq!(
        (program.entry, program.lanes_in_runs),
        (EntryPoint::Rows, true)
    );
    assert_eq!(
        (p.steps_per_lane, p.num_lanes, p.num_blocks),
        (450, 1152, 18)
    );
    assert_eq!(p.num_entries, 3);
    // 1,000 rows: 63 groups (the last of 8 rows), in runs of at least 16.
    let (_, p) = split(&[1000, 3], vec![1; 3], DType::U8, 2048);
    assert_eq!((p.steps_per_lane, p.num_lanes, p.num_blocks), (16, 4, 1));
    // Half a lane's turns at most: 30,000 groups.
    let (_, p) = split(&[1 << 24, 2], vec![1; 2], DType::U8, 1 << 20);
    assert!(p.steps_per_lane <= 30_000, "{p:?}");
}
