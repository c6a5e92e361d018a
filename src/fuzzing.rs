//! The planner's invariants, checked on arbitrary inputs by the fuzz target (`fuzz/`) and by a
//! proptest in the test suite. Not part of the stable API.
//!
//! [`check_planner`] feeds one input to an operator and, when the operator accepts it, checks
//! that the plan tiles the axis, that the output layout, the dispatch pieces and the texture
//! copy bands stay inside their buffers, and that every byte of every output is written
//! exactly once. It panics on a
//! broken invariant; an operator must never panic, whatever the input.

use crate::gpu::layout::{gather_pieces, OutputLayout};
use crate::gpu::strided::texture_plan;
use crate::ops::{self, OnnxSplitParts};
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;
use crate::DType;

/// One arbitrary planner input.
#[derive(Debug, Clone)]
pub struct PlannerInput {
    /// Data shape (any values, huge ones included).
    pub shape: Vec<u64>,
    /// Axis value.
    pub axis: i64,
    /// Shape of the axis tensor: 0 scalar, 1 shape `[1]`, else shape `[2]`.
    pub axis_form: u8,
    /// Operator and form of its parts, 0 to 8.
    pub op: u8,
    /// Scalar parameter: num_splits, split, num_outputs.
    pub scalar: i64,
    /// Length list.
    pub lengths: Vec<i64>,
    /// SplitToSequence keepdims.
    pub keepdims: bool,
    /// Index into the numeric dtypes.
    pub dtype: u8,
}

fn plan_of(input: &PlannerInput, shape: &[usize]) -> crate::Result<SplitPlan> {
    let axis = match input.axis_form {
        0 => IntTensor::scalar(input.axis),
        1 => IntTensor::vector(vec![input.axis]),
        _ => IntTensor::vector(vec![input.axis, input.axis]),
    };
    let lengths = IntTensor::vector(input.lengths.clone());
    match input.op % 9 {
        0 => ops::split(shape, &axis, input.scalar),
        1 => ops::variadic_split(shape, &axis, &lengths),
        2 => ops::split_to_sequence(shape, input.axis, None, input.keepdims),
        3 => ops::split_to_sequence(
            shape,
            input.axis,
            Some(&IntTensor::scalar(input.scalar)),
            input.keepdims,
        ),
        4 => ops::split_to_sequence(shape, input.axis, Some(&lengths), input.keepdims),
        5 => ops::onnx_split(
            shape,
            input.axis,
            &OnnxSplitParts::Lengths(input.lengths.clone()),
        ),
        6 => ops::onnx_split(
            shape,
            input.axis,
            &OnnxSplitParts::EqualOutputs(input.scalar),
        ),
        7 => ops::onnx_split(shape, input.axis, &OnnxSplitParts::NumOutputs(input.scalar)),
        _ => {
            let matrix = IntTensor::new(vec![1, input.lengths.len()], input.lengths.clone())?;
            ops::split_to_sequence(shape, input.axis, Some(&matrix), input.keepdims)
        }
    }
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
    let Ok(plan) = plan_of(input, &shape) else {
        return;
    };

    // The chunks tile the axis, in order.
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
        let out = plan.output_shape(i);
        let mut expect = shape.clone();
        if plan.keep_axis() {
            expect[plan.axis()] = plan.chunks()[i].len;
        } else {
            assert_eq!(plan.chunks()[i].len, 1, "{input:?}");
            expect.remove(plan.axis());
        }
        assert_eq!(out, expect, "{input:?}");
    }

    let dtype = DType::ALL_NUMERIC[input.dtype as usize % DType::ALL_NUMERIC.len()];
    let Ok(layout) = OutputLayout::new(&plan, dtype, 256) else {
        return;
    };
    let mut end = 0;
    for r in &layout.ranges {
        assert!(r.offset % 256 == 0 && r.offset >= end, "{input:?}");
        end = r.offset + r.size;
    }
    assert!(end <= layout.total_bytes, "{input:?}");

    let input_bytes = plan
        .input_shape()
        .iter()
        .map(|&d| d as u128)
        .product::<u128>()
        * dtype.size() as u128;
    check_texture_bands(input, &plan, dtype, &layout, input_bytes);
    for (units, window) in [(1, 1u64 << 27), (128, 4096)] {
        let Ok(pieces) = gather_pieces(&plan, dtype, &layout, units, window, 32) else {
            continue;
        };
        let mut written = vec![0u64; plan.num_outputs()];
        for p in &pieces {
            assert!(
                (p.src_offset + p.src_size) as u128 <= input_bytes.next_multiple_of(4),
                "{input:?} {p:?}"
            );
            assert!(
                p.dst_offset + p.dst_size <= layout.total_bytes,
                "{input:?} {p:?}"
            );
            assert!(
                p.src_size <= window && p.dst_size <= window,
                "{input:?} {p:?}"
            );
            assert_eq!(p.entries.len() as u32, p.params.num_entries);
            for e in &p.entries {
                let dst = p.dst_offset + e.dst_unit as u64 * 16;
                let i = layout
                    .ranges
                    .iter()
                    .rposition(|r| r.offset <= dst && r.size > 0)
                    .expect("entry inside an output");
                written[i] += e.out_bytes as u64;
                // The entry's first and last source bytes lie inside its window. The shader's
                // wrapping u32 offset is read back as signed (windows are at most 2 GiB).
                let source = |b: u64| {
                    let row = (b / e.row_bytes as u64) as i128;
                    row * e.src_stride as i128
                        + e.src_offset as i32 as i128
                        + (b % e.row_bytes as u64) as i128
                };
                let first = source(e.first_byte as u64);
                let last = source(e.first_byte as u64 + e.out_bytes as u64 - 1);
                assert!(first >= 0 && last < p.src_size as i128, "{input:?} {p:?}");
            }
        }
        for (i, r) in layout.ranges.iter().enumerate() {
            assert_eq!(
                written[i], r.size,
                "output {i} must be written exactly once: {input:?}"
            );
        }
    }
}

/// The texture route's bands: rows read inside the input, written inside their output, each
/// output's bytes exactly once, and the copy rules (256-byte rows, 16-byte offsets) kept.
fn check_texture_bands(
    input: &PlannerInput,
    plan: &SplitPlan,
    dtype: DType,
    layout: &OutputLayout,
    input_bytes: u128,
) {
    let Ok(Some(t)) = texture_plan(plan, dtype, layout, 0, 0, 8192) else {
        return;
    };
    assert!(t.src_stride.is_multiple_of(256), "{input:?} {t:?}");
    let mut written = vec![0u64; layout.ranges.len()];
    let mut last_end = 0;
    for b in &t.bands {
        let row = b.width as u64 * 16;
        assert!(
            row.is_multiple_of(256)
                && b.src_offset.is_multiple_of(16)
                && b.dst_offset.is_multiple_of(16),
            "{input:?} {b:?}"
        );
        assert!(
            b.rows >= 1 && b.width <= t.scratch.0 && b.rows <= t.scratch.1,
            "{t:?}"
        );
        let read_end =
            b.src_offset as u128 + (b.rows as u128 - 1) * t.src_stride as u128 + row as u128;
        assert!(read_end <= input_bytes, "{input:?} {b:?}");
        // Bands are in output order and never overlap.
        assert!(b.dst_offset >= last_end, "{input:?} {b:?}");
        last_end = b.dst_offset + b.rows as u64 * row;
        let i = layout
            .ranges
            .iter()
            .rposition(|r| r.offset <= b.dst_offset && r.size > 0)
            .expect("band inside an output");
        assert!(
            last_end <= layout.ranges[i].offset + layout.ranges[i].size,
            "{b:?}"
        );
        written[i] += b.rows as u64 * row;
    }
    for (i, r) in layout.ranges.iter().enumerate() {
        assert_eq!(
            written[i], r.size,
            "output {i} through the texture: {input:?}"
        );
    }
}
