//! The planner's invariants, checked on arbitrary inputs by the fuzz targets (`fuzz/`, with the
//! `fuzzing` feature) and by proptests among the unit tests (`fuzzing/proptests.rs`). Not in the
//! library's default build.
//!
//! [`check_planner`] feeds one input to an operator and, when the operator accepts it, checks
//! that the plan tiles the axis and that the output layout stays inside its region; then
//! (`routes`) that every route (buffer copies, gather dispatches, and what
//! [`planner::choose`] picks) keeps inside its buffers and writes every output byte exactly once,
//! from the right input byte, and that every table passes the gate of the trusted module.
//! [`check_views`] does the same for parts through views ([`ViewCase`]). Source addresses
//! come from the shader's own u32 arithmetic (`shader`), never from exact sums. It panics on
//! a broken invariant; an operator must never panic, whatever the input.

mod input;
mod joins;
#[cfg(test)]
mod proptests;
mod routes;
mod rows;
mod shader;
mod views;

pub use input::PlannerInput;
pub use rows::check_rows;
pub use views::{check_views, ViewCase};

use crate::gpu::gather::abi::binding_bytes;
use crate::gpu::gather::dispatches::{plan_dispatches, GatherTuning};
use crate::gpu::placement::PartLayout;
use crate::gpu::planner::{self, DeviceCaps, Regions};
use crate::ops::{OnnxSplitParts, Operator};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;
use crate::DType;
use crate::GatherMode;

/// The operator an input names: every [`Operator`], with each form of its parameters.
fn operator_of(input: &PlannerInput) -> crate::Result<Operator> {
    let axis = match input.axis_form {
        0 => IntTensor::scalar(input.axis),
        1 => IntTensor::vector(vec![input.axis]),
        _ => IntTensor::vector(vec![input.axis, input.axis]),
    };
    let lengths = IntTensor::vector(input.lengths.clone());
    let sequence = |split| Operator::SplitToSequence {
        axis: input.axis,
        split,
        keepdims: input.keepdims,
    };
    let onnx = |parts| Operator::OnnxSplit {
        axis: input.axis,
        parts,
    };
    Ok(match input.op % 9 {
        0 => Operator::Split {
            axis,
            num_splits: input.scalar,
        },
        1 => Operator::VariadicSplit {
            axis,
            split_lengths: lengths,
        },
        2 => sequence(None),
        3 => sequence(Some(IntTensor::scalar(input.scalar))),
        4 => sequence(Some(lengths)),
        5 => onnx(OnnxSplitParts::Lengths(input.lengths.clone())),
        6 => onnx(OnnxSplitParts::EqualOutputs(input.scalar)),
        7 => onnx(OnnxSplitParts::NumOutputs(input.scalar)),
        _ => sequence(Some(IntTensor::new(
            vec![1, input.lengths.len()],
            input.lengths.clone(),
        )?)),
    })
}

/// Checks one input; panics if an invariant breaks.
pub fn check_planner(input: &PlannerInput) {
    let Ok(shape) = input
        .shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
    else {
        return;
    };
    let Ok(plan) = operator_of(input).and_then(|op| op.plan(&shape)) else {
        return;
    };
    check_plan(input, &plan, &shape);

    let dtype = DType::ALL_NUMERIC[input.dtype as usize % DType::ALL_NUMERIC.len()];
    let Ok(layout) = PartLayout::new(&plan, dtype, 256) else {
        return;
    };
    let mut end = 0;
    for r in layout.ranges.iter().filter(|r| r.size > 0) {
        assert!(r.offset % 256 == 0 && r.offset >= end, "{input:?}");
        end = r.offset + r.size;
    }
    // The region ends with the last output, rounded up to a word.
    assert_eq!(layout.total_bytes, binding_bytes(end), "{input:?}");
    assert_eq!(layout.check(&plan, dtype), Ok(()), "{input:?}");
    let Ok(bytes) = ByteRows::new(&plan, dtype.size()) else {
        return;
    };
    for (i, r) in layout.ranges.iter().enumerate() {
        let rows = bytes.outputs.iter().find(|o| o.output == i);
        assert_eq!(rows.map_or(0, |o| bytes.size(o)), r.size, "{input:?}");
    }

    let check = routes::RouteCheck {
        input,
        bytes: &bytes,
        layout: &layout,
    };
    // Each route's planner on its own, at offsets that are and are not aligned for it.
    for regions in [
        Regions {
            input_offset: 0,
            output_offset: 0,
            copies_allowed: true,
        },
        Regions {
            input_offset: 256,
            output_offset: 4096,
            copies_allowed: true,
        },
    ] {
        if let Some(copies) = planner::buffer_copies(&bytes, &layout, &regions) {
            check.buffer_copies(&copies, &regions);
        }
    }
    for (mode, units, window) in [
        (GatherMode::Cpu, 1, 1u64 << 27),
        (GatherMode::Cpu, 128, 4096),
        (GatherMode::Cpu, 2048, 1 << 27),
        (GatherMode::Gpu, 4, 1 << 27),
        (GatherMode::Gpu, 2, 4096),
    ] {
        let planned = plan_dispatches(&bytes, &layout, tuning(mode, units), window, 32);
        if let Ok(dispatches) = planned {
            check.dispatches(&dispatches, window);
        }
    }
    // The multi-output build: consecutive outputs in 1, 2 or 3 bindings.
    for groups in [1, 2, 3] {
        for mode in [GatherMode::Cpu, GatherMode::Gpu] {
            check.multi_output(groups, mode);
        }
    }
    // The concat of the same plan: its inputs packed at 16 bytes in one region.
    let packed = PartLayout::packed(&plan, dtype);
    for (mode, steps) in [
        (GatherMode::Cpu, 2048),
        (GatherMode::Cpu, 16),
        (GatherMode::Gpu, 4),
        (GatherMode::Gpu, 1),
    ] {
        if let Ok(packed) = &packed {
            joins::check_join(input, &bytes, packed, tuning(mode, steps));
        }
    }
    // And past one binding: windows of aligned rows, or pieces of rows.
    if let Ok(packed) = &packed {
        let output = bytes.input_bytes();
        for (limit, align) in [
            (1 << 10, 256),
            ((output / 3).max(1 << 10), 256),
            (1 << 8, 32),
        ] {
            joins::check_join_windows(
                input,
                &bytes,
                packed,
                tuning(GatherMode::Gpu, 4),
                limit,
                align,
            );
        }
    }
    // And the route the splitter would choose: for a CPU adapter and for a GPU.
    for (buffer_copies, gather_mode) in [(true, GatherMode::Cpu), (false, GatherMode::Gpu)] {
        let caps = DeviceCaps {
            window_limit: 1 << 27,
            offset_align: 256,
            buffer_copies,
            gather: tuning(gather_mode, 4),
        };
        let regions = Regions {
            input_offset: 0,
            output_offset: 0,
            copies_allowed: true,
        };
        if let Ok(chosen) = planner::choose(&bytes, &layout, &caps, &regions) {
            check.route(&chosen, &caps, &regions);
        }
    }
}

/// The chunks tile the axis in order, and the output shapes follow them.
fn check_plan(input: &PlannerInput, plan: &SplitPlan, shape: &[usize]) {
    let mut next = 0usize;
    for c in plan.chunks() {
        assert_eq!(c.start, next, "chunks must be contiguous: {input:?}");
        next += c.len;
    }
    assert_eq!(
        next,
        plan.axis_len(),
        "chunks must cover the axis: {input:?}"
    );
    for i in 0..plan.num_parts() {
        let mut expect = shape.to_vec();
        if plan.keep_axis() {
            expect[plan.axis()] = plan.chunks()[i].len;
        } else {
            assert_eq!(plan.chunks()[i].len, 1, "{input:?}");
            expect.remove(plan.axis());
        }
        assert_eq!(plan.part_shape(i), expect, "{input:?}");
    }
}

/// A [`GatherTuning`] for the checks above.
fn tuning(mode: GatherMode, max_steps_per_lane: u64) -> GatherTuning {
    GatherTuning {
        mode,
        max_steps_per_lane,
    }
}
