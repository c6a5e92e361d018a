//! Every program key is some dispatch's: the picker reaches each of them, on one kind of
//! device or the other.

use crate::gather::abi::{Channels, EntryPoint, ProgramKey};
use crate::gather::dispatches::tests::{dispatches, BIG};
use crate::gather::joins::join_parts;
use crate::gather::GatherMode;
use crate::gather::{plan_joins, GatherTuning};
use crate::placement::PartLayout;
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::{ops, DType, IntTensor};
use std::collections::BTreeMap;

/// `shape` of `dtype` cut into `lengths` on its last axis.
fn plan(shape: &[usize], lengths: Vec<i64>) -> SplitPlan {
    let lengths = IntTensor::vector(lengths);
    ops::variadic_split(shape, &IntTensor::scalar(-1), &lengths).unwrap()
}

/// The programs of the split of `plan` of `dtype`, and of the concat of its parts packed in
/// one region, in `mode` (4 steps a lane).
fn programs(plan: &SplitPlan, dtype: DType, mode: GatherMode) -> Vec<ProgramKey> {
    let split = dispatches(plan, dtype, 16, mode, 4, BIG).unwrap();
    let bytes = ByteRows::new(plan, dtype.size()).unwrap();
    let parts = join_parts(&bytes, &PartLayout::packed(plan, dtype).unwrap());
    let tuning = GatherTuning {
        mode,
        max_steps_per_lane: 4,
    };
    let concat = plan_joins(&bytes, &parts, tuning, BIG, 256).unwrap();
    split.iter().chain(&concat).map(|d| d.program).collect()
}

#[test]
fn every_program_key_is_some_dispatchs() {
    // Aligned rows; unaligned rows of 64 bytes or more, and shorter; equal parts of 1, 2 and
    // 4 bytes side by side, 3 and 6 of them (the channels, narrow and wide).
    let cases = [
        (plan(&[8, 64], vec![32; 2]), DType::F32),
        (plan(&[8, 300], vec![100; 3]), DType::U8),
        (plan(&[8, 12], vec![5, 7]), DType::U8),
        (plan(&[64, 3], vec![1; 3]), DType::U8),
        (plan(&[64, 3], vec![1; 3]), DType::F16),
        (plan(&[64, 3], vec![1; 3]), DType::F32),
        (plan(&[64, 6], vec![1; 6]), DType::U8),
        (plan(&[64, 6], vec![1; 6]), DType::F16),
        (plan(&[64, 6], vec![1; 6]), DType::F32),
    ];
    let mut reached = BTreeMap::new();
    for (plan, dtype) in &cases {
        for mode in [GatherMode::Cpu, GatherMode::Gpu] {
            for key in programs(plan, *dtype, mode) {
                reached.insert(key.index(), key.to_string());
            }
        }
    }
    let missing: Vec<usize> = (0..ProgramKey::COUNT)
        .filter(|i| !reached.contains_key(i))
        .collect();
    // A split's wide word channels in runs: CPU adapters take the rows there
    // (`cpu_wide_word_channels_take_runs`), GPUs the lanes.
    let by_design = ProgramKey {
        entry: EntryPoint::Rows,
        lanes_in_runs: true,
        channels: Some(Channels {
            width: 4,
            wide: true,
        }),
    };
    assert_eq!(
        missing,
        [by_design.index()],
        "keys unreached; reached {reached:?}"
    );
}
