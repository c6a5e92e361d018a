//! The concat operators: OpenVINO Concat-1, ONNX Concat (opsets 1, 4, 11, 13) and ONNX
//! ConcatFromSequence-11.
//!
//! Each function returns a [`ConcatPlan`]: the inputs' shapes and the output's. Underneath it
//! is the split that takes the output apart into the inputs (a chunk per input, as long as
//! that input on the axis; stacking on a new axis drops it), so every route of the split runs
//! the other way ([`GpuSplitter::encode`](https://docs.rs/wgpu-split/latest/wgpu_split/struct.GpuSplitter.html#method.encode) with a concat's plan).

use crate::error::{Result, SplitError};
use crate::plan::{normalize_axis, ConcatPlan, SplitPlan};

/// OpenVINO Concat-1: the inputs joined along `axis` (in `[-rank, rank-1]`).
///
/// Every input has the same rank (at least 1) and the same length on every axis but `axis`;
/// an input of length 0 on the axis adds nothing. At least one input.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::concat(&[[1, 32, 4095, 128], [1, 32, 1, 128]], 2).unwrap();
/// assert_eq!(plan.whole_shape(), &[1, 32, 4096, 128]);
/// assert_eq!(plan.part_shape(1), vec![1, 32, 1, 128]);
/// ```
pub fn concat<S: AsRef<[usize]>>(input_shapes: &[S], axis: i64) -> Result<ConcatPlan> {
    let rank = first_rank(input_shapes)?;
    join(input_shapes, normalize_axis(axis, rank)?, false)
}

/// ONNX Concat at a model's `opset` (1 to [`super::OnnxSplitParts::NEWEST_OPSET`]): Concat-1 takes
/// `axis` as optional (default 1) and non-negative; Concat-4 requires it; from Concat-11 it
/// may be negative (`[-rank, rank-1]`). Concat-13 adds dtypes only. Otherwise as
/// [`concat()`].
pub fn onnx_concat<S: AsRef<[usize]>>(
    input_shapes: &[S],
    axis: Option<i64>,
    opset: i64,
) -> Result<ConcatPlan> {
    // Checks the opset is one this crate knows (the same range as ONNX Split's).
    super::onnx_split_version(opset)?;
    let version = [13, 11, 4, 1]
        .into_iter()
        .find(|&v| v <= opset)
        .unwrap_or(1);
    let axis = match (axis, version) {
        (Some(axis), _) => axis,
        (None, 1) => 1,
        (None, v) => {
            return Err(SplitError::ConflictingInputs(format!(
                "ONNX Concat-{v} (opset {opset}) requires the axis attribute; only Concat-1 \
                 defaults it to 1"
            )))
        }
    };
    if axis < 0 && version < 11 {
        return Err(SplitError::BadIntegerInput {
            input: "axis",
            problem: format!(
                "{axis} is negative: ONNX Concat takes a negative axis from opset 11, and \
                 opset {opset} runs Concat-{version}"
            ),
        });
    }
    concat(input_shapes, axis)
}

/// ONNX ConcatFromSequence-11: `new_axis = 0` joins the sequence along `axis` as
/// [`concat()`] does; `new_axis = 1` stacks its tensors, which all have one shape, along a new
/// axis at `axis` (in `[-rank-1, rank]`: the output has one dimension more). The sequence may
/// not be empty.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::concat_from_sequence(&[[2, 3], [2, 3]], -1, 1).unwrap();
/// assert_eq!(plan.whole_shape(), &[2, 3, 2]); // stacked on a new last axis
/// assert!(plan.stacks());
/// ```
pub fn concat_from_sequence<S: AsRef<[usize]>>(
    input_shapes: &[S],
    axis: i64,
    new_axis: i64,
) -> Result<ConcatPlan> {
    let stack = match new_axis {
        0 => false,
        1 => true,
        other => {
            return Err(SplitError::BadIntegerInput {
                input: "new_axis",
                problem: format!("{other} must be 0 or 1"),
            })
        }
    };
    let rank = first_rank(input_shapes)?;
    if !stack {
        return concat(input_shapes, axis);
    }
    // A new axis may go anywhere from before the first dimension to after the last.
    let axis = normalize_axis(axis, rank + 1).map_err(|_| SplitError::AxisOutOfRange {
        axis,
        rank: rank + 1,
    })?;
    join(input_shapes, axis, true)
}

/// The rank of the first input; an error for an empty list.
fn first_rank<S: AsRef<[usize]>>(input_shapes: &[S]) -> Result<usize> {
    input_shapes
        .first()
        .map(|s| s.as_ref().len())
        .ok_or(SplitError::CountNotPositive {
            what: "inputs",
            count: 0,
        })
}

/// The plan of joining `input_shapes` along `axis` (normalised), or stacking them on a new
/// axis there.
fn join<S: AsRef<[usize]>>(input_shapes: &[S], axis: usize, stack: bool) -> Result<ConcatPlan> {
    let first = input_shapes[0].as_ref();
    let mut total = 0usize;
    for (i, shape) in input_shapes.iter().enumerate() {
        let shape = shape.as_ref();
        let mismatch = |rule| SplitError::ShapeMismatch {
            input: i,
            shape: shape.to_vec(),
            first: first.to_vec(),
            rule,
        };
        if shape.len() != first.len() {
            return Err(mismatch("every input has the same rank"));
        }
        let differs = shape
            .iter()
            .zip(first)
            .enumerate()
            .any(|(d, (a, b))| a != b && (stack || d != axis));
        if differs {
            return Err(mismatch(if stack {
                "stacking needs every input to have the same shape"
            } else {
                "inputs may differ only on the concat axis"
            }));
        }
        if !stack {
            total = total.checked_add(shape[axis]).ok_or_else(|| {
                SplitError::TooLarge(format!(
                    "the inputs' lengths on axis {axis} overflow a {}-bit count",
                    usize::BITS
                ))
            })?;
        }
    }
    let mut output = first.to_vec();
    let lengths: Vec<usize> = if stack {
        output.insert(axis, input_shapes.len());
        vec![1; input_shapes.len()]
    } else {
        output[axis] = total;
        input_shapes.iter().map(|s| s.as_ref()[axis]).collect()
    };
    SplitPlan::from_lengths(&output, axis, &lengths, !stack).map(ConcatPlan::of_split)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops;

    #[test]
    fn concat_joins_and_checks_shapes() {
        let p = concat(&[vec![2, 3, 4], vec![2, 0, 4], vec![2, 5, 4]], -2).unwrap();
        assert_eq!(p.whole_shape(), &[2, 8, 4]);
        assert_eq!(
            p.part_shapes(),
            vec![vec![2, 3, 4], vec![2, 0, 4], vec![2, 5, 4]]
        );
        let e = concat(&[vec![2, 3], vec![3, 3]], 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "input 1 has shape [3, 3], but input 0 has shape [2, 3]: inputs may differ only \
             on the concat axis"
        );
        assert!(matches!(
            concat(&[vec![2, 3], vec![2, 3, 1]], 0),
            Err(SplitError::ShapeMismatch { input: 1, .. })
        ));
        assert_eq!(concat(&[[0usize; 0]], 0), Err(SplitError::RankZero));
        assert!(matches!(
            concat::<Vec<usize>>(&[], 0),
            Err(SplitError::CountNotPositive { count: 0, .. })
        ));
        assert!(matches!(
            concat(&[[2, 3]], 2),
            Err(SplitError::AxisOutOfRange { axis: 2, rank: 2 })
        ));
    }

    #[test]
    fn a_concat_plan_is_the_split_of_its_output() {
        // Concatenating a split's outputs gives back a plan equal to the split's.
        let split = ops::variadic_split(
            &[4, 9, 2],
            &crate::IntTensor::scalar(1),
            &crate::IntTensor::vector(vec![2, -1, 0]),
        )
        .unwrap();
        assert_eq!(concat(&split.part_shapes(), 1).unwrap(), split.inverse());
        assert_eq!(concat(&split.part_shapes(), 1).unwrap().inverse(), split);
        let sequence = ops::split_to_sequence(&[4, 3], 1, None, false).unwrap();
        assert_eq!(
            concat_from_sequence(&sequence.part_shapes(), 1, 1).unwrap(),
            sequence.inverse()
        );
    }

    #[test]
    fn onnx_opsets_set_the_axis_rules() {
        let shapes = [vec![2, 3], vec![2, 4]];
        assert_eq!(
            onnx_concat(&shapes, None, 1).unwrap().whole_shape(),
            &[2, 7]
        );
        assert!(matches!(
            onnx_concat(&shapes, None, 4),
            Err(SplitError::ConflictingInputs(_))
        ));
        let e = onnx_concat(&shapes, Some(-1), 10).unwrap_err().to_string();
        assert!(e.contains("opset 10 runs Concat-4"), "{e}");
        assert_eq!(
            onnx_concat(&shapes, Some(-1), 11).unwrap().whole_shape(),
            &[2, 7]
        );
        assert_eq!(
            onnx_concat(&shapes, Some(1), 13).unwrap().whole_shape(),
            &[2, 7]
        );
        assert!(matches!(
            onnx_concat(&shapes, Some(1), 0),
            Err(SplitError::UnknownOpset { .. })
        ));
    }

    #[test]
    fn sequences_join_or_stack() {
        let shapes = [vec![2, 3], vec![2, 3], vec![2, 3]];
        let joined = concat_from_sequence(&shapes, 0, 0).unwrap();
        assert_eq!(joined.whole_shape(), &[6, 3]);
        for (axis, want) in [(0, vec![3, 2, 3]), (2, vec![2, 3, 3]), (-1, vec![2, 3, 3])] {
            let p = concat_from_sequence(&shapes, axis, 1).unwrap();
            assert_eq!(p.whole_shape(), want.as_slice(), "axis {axis}");
            assert_eq!(p.part_shape(0), vec![2, 3]);
        }
        assert!(matches!(
            concat_from_sequence(&shapes, 3, 1),
            Err(SplitError::AxisOutOfRange { axis: 3, rank: 3 })
        ));
        assert!(matches!(
            concat_from_sequence(&shapes, -4, 1),
            Err(SplitError::AxisOutOfRange { axis: -4, rank: 3 })
        ));
        // Stacking needs one shape; scalars stack into a vector.
        assert!(matches!(
            concat_from_sequence(&[vec![2, 3], vec![2, 4]], 0, 1),
            Err(SplitError::ShapeMismatch { input: 1, .. })
        ));
        let scalars = concat_from_sequence(&[[0usize; 0]; 4], 0, 1).unwrap();
        assert_eq!(scalars.whole_shape(), &[4]);
        assert!(matches!(
            concat_from_sequence(&shapes, 0, 2),
            Err(SplitError::BadIntegerInput {
                input: "new_axis",
                ..
            })
        ));
        assert!(concat_from_sequence::<Vec<usize>>(&[], 0, 1).is_err());
    }
}
