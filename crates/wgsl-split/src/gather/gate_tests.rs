//! One test per precondition: a table the planner made passes the gate; the same table
//! broken in that one way is refused, naming the precondition, by the one way a table
//! reaches a device (`Dispatch::table_bytes`).

use super::*;
use crate::error::SplitError;
use crate::gather::abi::ProgramKey;
use crate::gather::dispatches::tests::{dispatches, BIG};
use crate::gather::dispatches::{Dispatch, GatherTuning};
use crate::gather::GatherMode;
use crate::gather::{join_dispatch, join_parts};
use crate::placement::PartLayout;
use crate::plan::bytes::ByteRows;
use crate::{ops, DType, IntTensor};

/// A split's dispatch in `mode`: `[64, 12]` split into 3 on axis 1, of `dtype`.
fn split(dtype: DType, mode: GatherMode) -> Dispatch {
    let plan = ops::split(&[64, 12], &IntTensor::scalar(1), 3).unwrap();
    dispatches(&plan, dtype, 16, mode, 4, BIG)
        .unwrap()
        .remove(0)
}

/// A split into unequal parts in `mode`: `[64, 12]` of u8 into 5, 3 and 4 on axis 1.
fn unequal(mode: GatherMode) -> Dispatch {
    let lengths = IntTensor::vector(vec![5, 3, 4]);
    let plan = ops::variadic_split(&[64, 12], &IntTensor::scalar(1), &lengths).unwrap();
    dispatches(&plan, DType::U8, 16, mode, 4, BIG)
        .unwrap()
        .remove(0)
}

/// A concat's join in `mode`: `[64, 12]` of u8 from 3 parts, or from 3 equal channels of
/// bytes where `channels`.
fn join(mode: GatherMode, channels: bool) -> Dispatch {
    let (shape, parts) = if channels {
        ([64, 3], 3)
    } else {
        ([64, 13], 1)
    };
    let plan = match parts {
        3 => ops::split(&shape, &IntTensor::scalar(1), 3).unwrap(),
        _ => ops::variadic_split(
            &shape,
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![5, 3, 5]),
        )
        .unwrap(),
    };
    let bytes = ByteRows::new(&plan, 1).unwrap();
    let layout = PartLayout::packed(&plan, DType::U8).unwrap();
    let tuning = GatherTuning {
        mode,
        max_steps_per_lane: 4,
    };
    let parts = join_parts(&bytes, &layout);
    join_dispatch(&bytes, &parts, &[layout.total_bytes], tuning, BIG).unwrap()
}

/// A split's channels: `[64, 3]` of u8 into 3 on axis 1 (each row a pixel).
fn channels() -> Dispatch {
    let plan = ops::split(&[64, 3], &IntTensor::scalar(1), 3).unwrap();
    let d = dispatches(&plan, DType::U8, 16, GatherMode::Gpu, 4, BIG)
        .unwrap()
        .remove(0);
    assert!(d.program.channels.is_some(), "{d:?}");
    d
}

/// Rows placed by indices in `mode`: `[2, 9, 5]` of u8 gathered on axis 1 by 4 i64 indices.
fn indexed(mode: GatherMode) -> Dispatch {
    let plan = ops::gather(&[2, 9, 5], &[4], 1).unwrap();
    let rows = plan.rows(DType::U8).unwrap();
    let tuning = GatherTuning {
        mode,
        max_steps_per_lane: 4,
    };
    let rule = crate::gather::IndexRule {
        words: 2,
        negative: 1,
    };
    crate::gather::gather_dispatch(rows, rule, BIG, tuning)
        .unwrap()
        .unwrap()
}

/// A scatter in `mode`: 6 tokens of 3 heads of 10 bytes each into 40 slots of blocks of 8.
fn scattered(mode: GatherMode) -> Dispatch {
    use crate::gather::{IndexRule, ScatterJob, ScatterRows};
    let part = ScatterRows {
        src_offset: 4,
        src_stride: 64,
        src_head_step: 12,
        heads: 3,
        row_bytes: 10,
        dst_offset: 8,
        block_size: 8,
        dst_block_stride: 8 * 40,
        dst_slot_stride: 40,
        dst_head_stride: 12,
    };
    let job = ScatterJob {
        tokens: 6,
        capacity: 40,
        rule: IndexRule {
            words: 1,
            negative: 2,
        },
        src_bytes: 6 * 64,
        dst_bytes: 8 + 5 * 8 * 40,
        parts: vec![part],
        copy: Vec::new(),
        counts: true,
    };
    let tuning = GatherTuning {
        mode,
        max_steps_per_lane: 4,
    };
    crate::gather::scatter_dispatch(&job, BIG, tuning)
        .unwrap()
        .unwrap()
}

fn entries(d: &mut Dispatch) -> &mut Vec<Entry> {
    match &mut d.table {
        Table::Split(e) => e,
        _ => panic!("a split's table"),
    }
}

fn joined(d: &mut Dispatch) -> &mut JoinTable {
    match &mut d.table {
        Table::Join(j) => j,
        _ => panic!("a join's table"),
    }
}

fn index_rows(d: &mut Dispatch) -> (&mut Entry, &mut IndexRows) {
    match &mut d.table {
        Table::Indexed(e, x) => (&mut e[0], &mut x[0]),
        _ => panic!("an indexed table"),
    }
}

/// `d` passes; `d` broken by `breaks` is refused for `rule` alone, with its name in the error.
fn refused(rule: Precondition, mut d: Dispatch, breaks: impl FnOnce(&mut Dispatch)) {
    assert_eq!(d.gate(), Ok(()), "{rule:?}: the planner's table: {d:?}");
    assert!(d.table_bytes().is_ok());
    breaks(&mut d);
    match d.gate() {
        Err(r) => assert_eq!(r.rule, rule, "{r}: {d:?}"),
        Ok(()) => panic!("{rule:?} broken, yet the gate passes {d:?}"),
    }
    match d.table_bytes() {
        Err(SplitError::Device(m)) => assert!(m.contains(rule.name()), "{m}"),
        other => panic!("{rule:?}: {other:?}"),
    }
}

/// Breaks `rule` in a table the planner made, as each test below does: every precondition has
/// its test (a new one fails to compile here until it has).
fn break_it(rule: Precondition) {
    use Precondition as P;
    let gpu = GatherMode::Gpu;
    let cpu = GatherMode::Cpu;
    match rule {
        P::ProgramKind => {
            refused(rule, split(DType::F32, gpu), |d| {
                d.program = ProgramKey {
                    entry: EntryPoint::Join,
                    ..d.program
                }
            });
            refused(rule, indexed(gpu), |d| {
                d.program.channels = crate::gather::abi::Channels::of(3, 1, 3)
            });
            refused(rule, indexed(cpu), |d| d.program.entry = EntryPoint::Join);
        }
        P::RecordCount => refused(rule, join(gpu, false), |d| d.params.num_entries += 1),
        P::StepBound => refused(rule, split(DType::U8, cpu), |d| {
            d.params.steps_per_lane = MAX_LANE_STEPS as u32 + 1
        }),
        P::LaneSpan => refused(rule, unequal(cpu), |d| {
            d.params.steps_per_lane = MAX_LANE_STEPS as u32;
            d.params.num_lanes = 1 << 24;
            let e = entries(d);
            e.truncate(1);
            d.params.num_entries = 1;
        }),
        P::EntryOrder => refused(rule, unequal(cpu), |d| {
            let e = entries(d);
            e[1].block_start = e[2].block_start + 1;
        }),
        P::Divisors => {
            refused(rule, split(DType::F32, gpu), |d| {
                entries(d)[1].row_bytes = 0
            });
            refused(rule, split(DType::F32, gpu), |d| {
                entries(d)[2].dst_stride = 1
            });
            refused(rule, join(gpu, false), |d| {
                joined(d).header.repeat_blocks = 0
            });
            refused(rule, join(cpu, false), |d| joined(d).segments[1].count = 0);
            refused(rule, indexed(cpu), |d| index_rows(d).1.count = 0);
            refused(rule, scattered(cpu), |d| index_rows(d).1.block_size = 0);
            refused(rule, scattered(gpu), |d| index_rows(d).1.heads = 0);
            refused(rule, split(DType::F32, cpu), |d| {
                d.params.interleaved = 1;
                entries(d).clear();
                d.params.num_entries = 0;
            });
        }
        P::UnitRange => {
            refused(rule, split(DType::F32, gpu), |d| {
                entries(d)[0].dst_unit = (WINDOW_UNITS - 1) as u32
            });
            refused(rule, unequal(cpu), |d| entries(d)[2].out_bytes = 0);
        }
        P::Skip => refused(rule, unequal(cpu), |d| {
            let e = &mut entries(d)[2];
            e.skip = e.out_bytes.min(15);
            e.out_bytes = e.skip;
        }),
        P::Mode => {
            refused(rule, split(DType::U8, cpu), |d| entries(d)[0].mode = 4);
            refused(rule, split(DType::U8, cpu), |d| {
                entries(d)[0].mode = Mode::Vec4 as u32
            });
            refused(rule, unequal(cpu), |d| {
                d.program.entry = EntryPoint::RowsVec4
            });
            refused(rule, split(DType::U8, gpu), |d| {
                entries(d)[0].mode = Mode::Indexed as u32
            });
            refused(rule, indexed(gpu), |d| index_rows(d).0.mode = 5);
        }
        P::ShiftedRows => refused(rule, unequal(cpu), |d| {
            d.program.lanes_in_runs = false;
            d.params.num_blocks = 3;
            d.params.steps_per_lane = 1;
            for (i, e) in entries(d).iter_mut().enumerate() {
                e.block_start = i as u32;
            }
        }),
        P::Channels => {
            refused(rule, channels(), |d| {
                entries(d).truncate(1);
                d.params.num_entries = 1;
            });
            refused(rule, channels(), |d| entries(d)[1].src_offset += 1);
            refused(rule, join(cpu, true), |d| {
                joined(d).segments[0].count = 9;
                joined(d).header.row_bytes = 9;
            });
            // A repeated join's next join off a vec4.
            refused(rule, join(gpu, true), |d| joined(d).header.repeat_src = 440);
        }
        P::JoinLayout => {
            refused(rule, join(gpu, false), |d| {
                let s = &mut joined(d).segments;
                s.swap(0, 1);
            });
            refused(rule, join(cpu, false), |d| {
                joined(d).header.end_byte = u32::MAX
            });
        }
        P::IndexedRows => {
            refused(rule, indexed(gpu), |d| index_rows(d).1.index_words = 3);
            refused(rule, indexed(cpu), |d| index_rows(d).1.negative = 3);
            refused(rule, indexed(gpu), |d| index_rows(d).1.capacity = 1 << 31);
            // Any index in range reaches past the window.
            refused(rule, indexed(cpu), |d| index_rows(d).1.capacity = 1 << 29);
            refused(rule, indexed(gpu), |d| index_rows(d).0.first_byte = 1);
            refused(rule, indexed(cpu), |d| index_rows(d).0.out_bytes -= 1);
            // A scatter's last slot, or its last token's last head, past the window.
            refused(rule, scattered(gpu), |d| {
                index_rows(d).1.dst_block_stride = 1 << 29
            });
            refused(rule, scattered(cpu), |d| {
                index_rows(d).1.src_head_step = 1 << 30
            });
            refused(rule, scattered(gpu), |d| {
                if let Table::Indexed(_, x) = &mut d.table {
                    x.pop();
                }
            });
        }
    }
}

#[test]
fn every_precondition_is_refused_when_broken() {
    for rule in Precondition::ALL {
        break_it(rule);
    }
}

#[test]
fn tables_of_every_kind_pass() {
    for d in [
        split(DType::F32, GatherMode::Gpu),
        split(DType::U8, GatherMode::Gpu),
        split(DType::U8, GatherMode::Cpu),
        split(DType::Complex128, GatherMode::Cpu),
        join(GatherMode::Gpu, false),
        join(GatherMode::Cpu, true),
        channels(),
        indexed(GatherMode::Gpu),
        indexed(GatherMode::Cpu),
        scattered(GatherMode::Gpu),
        scattered(GatherMode::Cpu),
    ] {
        assert_eq!(d.gate(), Ok(()), "{d:?}");
    }
}
