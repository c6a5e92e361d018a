//! The planner's invariants, checked on arbitrary inputs by the fuzz target (`fuzz/`, with the
//! `fuzzing` feature) and by a proptest among the unit tests (`fuzzing/proptests.rs`). Not in the
//! library's default build.
//!
//! [`check_planner`] feeds one input to an operator and, when the operator accepts it, checks
//! that the plan tiles the axis and that the output layout stays inside its region; then
//! (`routes`) that every route (buffer copies, texture bands, gather dispatches, and what
//! [`planner::choose`] picks) keeps inside its buffers and writes every output byte exactly once,
//! from the right input byte. It panics on a broken invariant; an operator must never panic,
//! whatever the input.

mod input;
#[cfg(test)]
mod proptests;
mod routes;

pub use input::PlannerInput;

use crate::gpu::gather::abi::binding_bytes;
use crate::gpu::gather::dispatches::{plan_dispatches, GatherTuning};
use crate::gpu::gather::{join_dispatch, join_parts, Band, Dispatch, JoinPart};
use crate::gpu::placement::OutputLayout;
use crate::gpu::planner::{self, DeviceCaps, Regions};
use crate::ops::{OnnxSplitParts, Operator};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;
use crate::DType;
use crate::GatherExperiment;
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
    let Ok(layout) = OutputLayout::new(&plan, dtype, 256) else {
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
        for direction in [planner::Direction::Split, planner::Direction::Concat] {
            let texture = crate::gpu::cpu_texture::texture_plan(
                &bytes,
                &layout,
                regions.input_offset,
                regions.output_offset,
                8192,
                direction,
            );
            if let Some(t) = texture {
                check.texture_bands(&t, &regions);
            }
        }
    }
    for (mode, units, spread, window) in [
        (GatherMode::Cpu, 1, 96, 1u64 << 27),
        (GatherMode::Cpu, 128, 48, 4096),
        (GatherMode::Cpu, 2048, 1, 1 << 27),
        (GatherMode::Gpu, 4, 96, 1 << 27),
        (GatherMode::Gpu, 2, 96, 4096),
        (
            GatherMode::Experiment(GatherExperiment::Shifted),
            4,
            96,
            1 << 27,
        ),
        (
            GatherMode::Experiment(GatherExperiment::Tiles),
            4,
            96,
            1 << 27,
        ),
    ] {
        let planned = plan_dispatches(&bytes, &layout, tuning(mode, units, spread), window, 32);
        if let Ok(dispatches) = planned {
            check.dispatches(&dispatches, window);
        }
    }
    // The multi-output build: consecutive outputs in 1, 2 or 3 bindings.
    for groups in [1, 2, 3] {
        for mode in [
            GatherMode::Cpu,
            GatherMode::Gpu,
            GatherMode::Experiment(GatherExperiment::Shifted),
            GatherMode::Experiment(GatherExperiment::Tiles),
        ] {
            check.multi_output(groups, mode);
        }
    }
    // The concat of the same plan: its inputs packed at 16 bytes in one region.
    let packed = OutputLayout::packed(&plan, dtype);
    for (mode, steps) in [
        (GatherMode::Cpu, 2048),
        (GatherMode::Gpu, 4),
        (GatherMode::Gpu, 1),
    ] {
        if let Ok(packed) = &packed {
            check_join(input, &bytes, packed, tuning(mode, steps, 96));
        }
    }
    // And the route the splitter would choose: for a CPU adapter, with and without the texture
    // route, and for a GPU.
    for (buffer_copies, texture_copies, gather_mode) in [
        (true, true, GatherMode::Cpu),
        (true, false, GatherMode::Cpu),
        (false, false, GatherMode::Gpu),
    ] {
        let caps = DeviceCaps {
            window_limit: 1 << 27,
            offset_align: 256,
            max_texture_dimension: 8192,
            buffer_copies,
            texture_copies,
            texture_command_cost: 2,
            gather: tuning(gather_mode, 4, 96),
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
    for i in 0..plan.num_outputs() {
        let mut expect = shape.to_vec();
        if plan.keep_axis() {
            expect[plan.axis()] = plan.chunks()[i].len;
        } else {
            assert_eq!(plan.chunks()[i].len, 1, "{input:?}");
            expect.remove(plan.axis());
        }
        assert_eq!(plan.output_shape(i), expect, "{input:?}");
    }
}

/// A concat's dispatch of all its parts, and of some of them (one buffer's inputs among
/// several: every other part, the first, the last), numbers every unit holding their bytes
/// exactly once; its segments lie inside their rows and their source window; and each block
/// keeps the segments of every column it writes.
fn check_join(input: &PlannerInput, bytes: &ByteRows, layout: &OutputLayout, tuning: GatherTuning) {
    let all = join_parts(bytes, layout);
    let subsets: [&dyn Fn(usize) -> bool; 4] = [&|_| true, &|i| i % 2 == 1, &|i| i == 0, &|i| {
        i + 1 == all.len()
    }];
    for keep in subsets {
        let parts: Vec<JoinPart> = (0..all.len())
            .filter(|&i| keep(i))
            .map(|i| all[i])
            .collect();
        let Ok(d) = join_dispatch(bytes, &parts, &[layout.total_bytes], tuning, 1 << 31) else {
            return;
        };
        check_join_dispatch(input, bytes, &parts, &d);
    }
}

/// [`check_join`] of one dispatch of `parts`; the checks walk every unit, so outputs up to
/// 16 MiB.
fn check_join_dispatch(input: &PlannerInput, bytes: &ByteRows, parts: &[JoinPart], d: &Dispatch) {
    if bytes.input_bytes() > 1 << 24 {
        return;
    }
    let h = d.entries[0];
    let segments = &d.entries[1..h.first_byte as usize];
    let records = &d.entries[h.first_byte as usize..];
    let p = d.params;
    assert_eq!(segments.len(), parts.len(), "{input:?}");
    assert_eq!(records.len(), p.num_blocks as usize, "{input:?}");
    if segments.is_empty() {
        return;
    }
    let numbered = h.block_start as u64;
    let block_units = p.steps_per_lane as u64 * 256;
    assert!(p.num_blocks as u64 * block_units >= numbered, "{input:?}");
    // The output unit of each numbered unit: every one from the first, or a band's.
    let band = (h.src_stride > 0).then_some(Band {
        first: h.src_offset as u64,
        width: h.mode as u64,
        units_per_row: h.src_stride as u64,
    });
    let unit = |v: u64| match band {
        None => Some(h.dst_unit as u64 + v),
        Some(b) => b.unit(bytes.stride, v),
    };
    // Each output unit numbered at most once; `below[u]` counts those numbered before `u`.
    let mut seen = vec![false; bytes.input_bytes().div_ceil(16) as usize];
    for u in (0..numbered).filter_map(unit) {
        let slot = seen.get_mut(u as usize);
        assert!(
            slot.as_ref().is_some_and(|s| !**s),
            "{input:?}: unit {u} twice or past the end"
        );
        if let Some(s) = slot {
            *s = true;
        }
    }
    let below: Vec<u64> = std::iter::once(0)
        .chain(seen.iter().scan(0u64, |n, &s| {
            *n += u64::from(s);
            Some(*n)
        }))
        .collect();
    let mut column = 0u64;
    for (e, part) in segments.iter().zip(parts) {
        assert!(e.first_byte as u64 >= column, "{input:?}");
        column = e.first_byte as u64 + e.row_bytes as u64;
        assert!(column <= bytes.stride, "{input:?}");
        let end = part.src + bytes.rows * e.row_bytes as u64;
        assert!(end <= d.src_size, "{input:?}");
        for row in 0..bytes.rows {
            let at = row * bytes.stride + e.first_byte as u64;
            let (first, last) = (at / 16, (at + e.row_bytes as u64 - 1) / 16);
            let numbered = below[last as usize + 1] - below[first as usize];
            assert_eq!(
                numbered,
                last - first + 1,
                "{input:?}: row {row} not all numbered"
            );
        }
    }
    // Each block keeps the segments of every column it writes: each byte's column lies in a
    // kept segment, in the gap after the last kept one (which the next segment, if any,
    // starts after), or before segment 1 where that is kept first.
    for (block, r) in records.iter().enumerate() {
        let (first, count) = (r.block_start as usize, r.dst_unit as usize);
        if count == 0 {
            continue;
        }
        let kept = &segments[first - 1..first - 1 + count];
        let next = segments.get(first - 1 + count).map(|e| e.first_byte as u64);
        let from = block as u64 * block_units;
        let to = ((block as u64 + 1) * block_units).min(numbered);
        for u in (from..to).filter_map(unit) {
            // The unit's first and last byte, and the row's ends where it crosses one: the
            // rules hold for every column between.
            let last = (u * 16 + 16).min(bytes.input_bytes()) - 1;
            let mut ends = vec![u * 16, last];
            if (u * 16) / bytes.stride != last / bytes.stride {
                let row_end = last / bytes.stride * bytes.stride;
                ends.extend([row_end - 1, row_end]);
            }
            for b in ends {
                let c = b % bytes.stride;
                let before_first = c < kept[0].first_byte as u64;
                assert!(
                    !before_first || first == 1,
                    "{input:?} block {block} byte {b}"
                );
                if !before_first {
                    assert!(
                        next.is_none_or(|n| c < n),
                        "{input:?} block {block} byte {b}"
                    );
                }
            }
        }
    }
}

/// A [`GatherTuning`] for the checks above.
fn tuning(mode: GatherMode, max_steps_per_lane: u64, spread_lanes: u64) -> GatherTuning {
    GatherTuning {
        mode,
        max_steps_per_lane,
        spread_lanes,
    }
}
