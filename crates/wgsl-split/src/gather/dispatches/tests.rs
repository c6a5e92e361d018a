//! How a split's rows become dispatches and entries; helpers the gather's other tests share.

use super::*;
use crate::error::SplitError;
use crate::gather::abi::EntryPoint;
use crate::gather::GatherMode;
use crate::plan::SplitPlan;
use crate::{ops, DType, IntTensor};

/// A window larger than any test's.
pub(in crate::gather) const BIG: u64 = 1 << 27;

/// The dispatches of `plan` for `dtype`, its outputs aligned to `align`, in `mode` with up
/// to `units` units per lane, windows of at most `window` bytes.
pub(in crate::gather) fn dispatches(
    plan: &SplitPlan,
    dtype: DType,
    align: u64,
    mode: GatherMode,
    units: u64,
    window: u64,
) -> Result<Vec<Dispatch>> {
    let tuning = GatherTuning {
        mode,
        max_steps_per_lane: units,
    };
    let layout = PartLayout::new(plan, dtype, align)?;
    let bytes = ByteRows::new(plan, dtype.size())?;
    plan_dispatches(&bytes, &layout, tuning, window, align)
}

#[test]
fn empty_outputs_get_no_entry() {
    let plan = ops::variadic_split(
        &[2, 10],
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![3, 0, 7]),
    )
    .unwrap();
    let d = dispatches(&plan, DType::U8, 256, GatherMode::Cpu, 8, BIG).unwrap();
    assert_eq!(d.len(), 1);
    let e = &d[0].entries();
    assert_eq!(e.len(), 2);
    assert_eq!(
        (
            e[1].block_start,
            e[1].dst_unit,
            e[1].src_offset,
            e[1].src_stride
        ),
        (1, 16, 3, 10)
    );
    assert_eq!(e[1].mode, Mode::Byte as u32);
    // Runs: one lane each, in one block.
    assert_eq!((d[0].params.num_blocks, d[0].params.num_lanes), (1, 2));
    assert_eq!(
        d[0].program,
        ProgramKey {
            entry: EntryPoint::Rows,
            lanes_in_runs: true,
            channels: None,
        }
    );
}

#[test]
fn modes_follow_byte_alignment() {
    let mode = |plan: &SplitPlan| {
        dispatches(plan, DType::U8, 16, GatherMode::Cpu, 8, BIG).unwrap()[0].entries()[1].mode
    };
    let plan = ops::split(&[3, 64], &IntTensor::scalar(1), 2).unwrap();
    assert_eq!(mode(&plan), Mode::Vec4 as u32); // rows of 32 bytes
    let plan = ops::split(&[3, 8], &IntTensor::scalar(1), 2).unwrap();
    assert_eq!(mode(&plan), Mode::Word as u32);
}

#[test]
fn coalesced_layouts_follow_the_rows() {
    let layout_of = |shape: &[usize], lengths: Vec<i64>, dtype| {
        let plan =
            ops::variadic_split(shape, &IntTensor::scalar(1), &IntTensor::vector(lengths)).unwrap();
        let d = dispatches(&plan, dtype, 256, GatherMode::Gpu, 4, BIG).unwrap();
        let (p, params) = (d[0].program, d[0].params);
        ((p.entry, p.lanes_in_runs), params.steps_per_lane)
    };
    // Aligned rows: vec4 lanes, 4 units each; long unaligned rows: shifted lanes, 4 each.
    assert_eq!(
        layout_of(&[512, 4096], vec![2048, 2048], DType::F32),
        ((EntryPoint::RowsVec4, false), 4)
    );
    assert_eq!(
        layout_of(&[64, 4095], vec![1365, 1365, 1365], DType::U8),
        ((EntryPoint::Rows, false), 4)
    );
    // Equal short parts (channels): groups of rows, lanes in turn; other short rows: runs.
    assert_eq!(
        layout_of(&[4096, 4], vec![1, 1, 1, 1], DType::F32).0,
        (EntryPoint::Rows, false)
    );
    assert_eq!(
        layout_of(&[4096, 7], vec![3, 4], DType::U8).0,
        (EntryPoint::Rows, true)
    );
    assert_eq!(
        layout_of(&[64, 17], vec![1; 17], DType::U8).0,
        (EntryPoint::Rows, true)
    );
}

#[test]
fn entries_get_whole_blocks() {
    // Three outputs of 1,440 units in blocks of 2 x 256 units: 3 blocks each.
    let plan = ops::split(&[6, 12, 10, 24], &IntTensor::scalar(1), 3).unwrap();
    let d = &dispatches(&plan, DType::F32, 256, GatherMode::Gpu, 2, BIG).unwrap()[0];
    let starts: Vec<u32> = d.entries().iter().map(|e| e.block_start).collect();
    assert_eq!((starts, d.params.num_blocks), (vec![0, 3, 6], 9));
}

#[test]
fn large_tensors_are_cut_into_windows_that_fit() {
    // 16 rows of 1000 u8, split into 600 + 400, with a 4096-byte binding limit.
    let plan = ops::variadic_split(
        &[16, 1000],
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![600, 400]),
    )
    .unwrap();
    let layout = PartLayout::new(&plan, DType::U8, 32).unwrap();
    let d = dispatches(&plan, DType::U8, 32, GatherMode::Cpu, 8, 4096).unwrap();
    assert!(d.len() > 2);
    let mut covered = [0u64; 2];
    for p in &d {
        assert!(p.src_size <= 4096 && p.dst_size <= 4096, "{p:?}");
        assert!(p.src_offset.is_multiple_of(32) && p.dst_offset.is_multiple_of(32));
        assert!(p.src_offset + p.src_size <= 16_000);
        let out = usize::from(p.dst_offset >= layout.ranges[1].offset);
        covered[out] += p.entries()[0].out_bytes as u64;
    }
    assert_eq!(covered, [9600, 6400]);
    // A row stride wider than the window cannot be cut.
    let plan = ops::split(&[4, 5000], &IntTensor::scalar(1), 2).unwrap();
    assert!(matches!(
        dispatches(&plan, DType::U8, 32, GatherMode::Cpu, 8, 4096),
        Err(SplitError::TooLarge(_))
    ));
}

#[test]
fn a_table_the_trusted_module_cannot_run_is_refused_by_name() {
    let plan = ops::split(&[64, 12], &IntTensor::scalar(1), 3).unwrap();
    let mut d = dispatches(&plan, DType::F32, 16, GatherMode::Gpu, 4, BIG)
        .unwrap()
        .remove(0);
    // What the planner makes passes.
    assert!(d.table_bytes().is_ok());
    // A zero row (a divisor) in entry 1 is named, not uploaded.
    let Table::Split(entries) = &mut d.table else {
        panic!("a split's table")
    };
    entries[1].row_bytes = 0;
    match d.table_bytes() {
        Err(SplitError::Device(m)) => assert!(m.contains("entry 1"), "{m}"),
        other => panic!("{other:?}"),
    }
}
