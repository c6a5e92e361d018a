//! ONNX Split, opsets 2, 11, 13 and 18.

use super::inputs::{equal_parts, exact_lengths};
use crate::error::{Result, SplitError};
use crate::plan::{check_output_count, normalize_axis, SplitPlan};

/// How ONNX Split chooses its parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnnxSplitParts {
    /// The `split` attribute (opsets 2, 11) or input (13, 18): entries >= 0 summing to the axis.
    Lengths(Vec<i64>),
    /// No `split`, opsets 2 to 13: the node's number of outputs, equal parts that must divide
    /// the axis.
    EqualOutputs(i64),
    /// Opset 18 `num_outputs`: chunks of `ceil(length / n)`, the last one smaller.
    NumOutputs(i64),
}

/// ONNX Split: `axis` attribute (default 0, negative counts from the end) and the parts.
///
/// With [`OnnxSplitParts::NumOutputs`] the lengths are those of the ONNX reference
/// implementation: `n - 1` chunks of `c = ceil(length / n)` and a last chunk of
/// `length - c * (n - 1)`. ONNX Runtime agrees wherever `length % c` is that last chunk (7 into
/// 4: 2, 2, 2, 1; 10 into 4: 3, 3, 3, 1) and differs elsewhere:
///
/// | length, n | ONNX reference | ONNX Runtime | this crate |
/// | --- | --- | --- | --- |
/// | 6, 4 | 2, 2, 2, 0 | 2, 2, 2, 2 (sums to 8) | 2, 2, 2, 0 |
/// | 2, 3 | 1, 1, 0 | error: num_outputs > length | 1, 1, 0 |
/// | 0, 3 | 0, 0, 0 | error: num_outputs > length | 0, 0, 0 |
/// | 5, 4 | 2, 2, 2, -1 (wrong-sized outputs) | 2, 2, 2, 1 (sums to 7) | error |
///
/// that is, the reference's lengths whenever they are valid, and an error where no valid
/// lengths follow the rule.
///
/// ```
/// use wgpu_split::ops::{onnx_split, OnnxSplitParts};
/// let plan = onnx_split(&[2, 8], 1, &OnnxSplitParts::NumOutputs(3)).unwrap();
/// assert_eq!(plan.output_shapes(), vec![vec![2, 3], vec![2, 3], vec![2, 2]]);
/// ```
pub fn onnx_split(data_shape: &[usize], axis: i64, parts: &OnnxSplitParts) -> Result<SplitPlan> {
    let axis = normalize_axis(axis, data_shape.len())?;
    let length = data_shape[axis];
    let lengths = match parts {
        OnnxSplitParts::Lengths(l) => exact_lengths("split", l, axis, length)?,
        OnnxSplitParts::EqualOutputs(n) => equal_parts("number of outputs", *n, axis, length)?,
        OnnxSplitParts::NumOutputs(n) => {
            let count = usize::try_from(*n)
                .ok()
                .filter(|&c| c >= 1)
                .ok_or_else(|| {
                    SplitError::ConflictingInputs(format!("num_outputs {n} must be at least 1"))
                })?;
            check_output_count(count as u128)?;
            let chunk = length.div_ceil(count);
            let last = length as i128 - chunk as i128 * (count as i128 - 1);
            if last < 0 {
                return Err(SplitError::NotDivisible {
                    what: "num_outputs",
                    parts: *n,
                    axis,
                    length,
                });
            }
            let mut lengths = vec![chunk; count - 1];
            lengths.push(last as usize);
            lengths
        }
    };
    SplitPlan::from_lengths(data_shape, axis, &lengths, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use OnnxSplitParts::*;

    #[test]
    fn onnx_node_cases() {
        // split_equal_parts_1d / 2d, default axis 0
        assert_eq!(
            onnx_split(&[6], 0, &EqualOutputs(3))
                .unwrap()
                .output_shapes(),
            vec![vec![2]; 3]
        );
        assert_eq!(
            onnx_split(&[2, 6], 1, &EqualOutputs(2))
                .unwrap()
                .output_shapes(),
            vec![vec![2, 3]; 2]
        );
        // split_variable_parts
        assert_eq!(
            onnx_split(&[6], 0, &Lengths(vec![2, 4]))
                .unwrap()
                .output_shapes(),
            vec![vec![2], vec![4]]
        );
        // split_zero_size_splits
        assert_eq!(
            onnx_split(&[0], 0, &Lengths(vec![0, 0, 0]))
                .unwrap()
                .output_shapes(),
            vec![vec![0]; 3]
        );
        // split_1d_uneven_split_opset18: 7 into 4 gives 2, 2, 2, 1
        let p = onnx_split(&[7], 0, &NumOutputs(4)).unwrap();
        assert_eq!(p.output_shapes(), vec![vec![2], vec![2], vec![2], vec![1]]);
        // split_2d_uneven_split_opset18: 8 into 3 gives 3, 3, 2
        let p = onnx_split(&[2, 8], 1, &NumOutputs(3)).unwrap();
        assert_eq!(p.output_shapes(), vec![vec![2, 3], vec![2, 3], vec![2, 2]]);
    }

    #[test]
    fn rules() {
        assert!(matches!(
            onnx_split(&[5], 0, &EqualOutputs(2)),
            Err(SplitError::NotDivisible { .. })
        ));
        assert!(matches!(
            onnx_split(&[5], 0, &NumOutputs(4)),
            Err(SplitError::NotDivisible { .. })
        ));
        assert!(matches!(
            onnx_split(&[5], 0, &NumOutputs(0)),
            Err(SplitError::ConflictingInputs(_))
        ));
        assert!(matches!(
            onnx_split(&[5], 0, &Lengths(vec![2, 2])),
            Err(SplitError::LengthsSumMismatch { .. })
        ));
        assert!(matches!(
            onnx_split(&[5], 0, &Lengths(vec![-1, 6])),
            Err(SplitError::BadLength { .. })
        ));
        assert!(matches!(
            onnx_split(&[5], -2, &EqualOutputs(1)),
            Err(SplitError::AxisOutOfRange { .. })
        ));
    }
}
