//! ONNX SplitToSequence-11.

use super::inputs::exact_lengths;
use crate::error::{Result, SplitError};
use crate::plan::{check_output_count, normalize_axis, SplitPlan};
use crate::tensor::IntTensor;

/// ONNX SplitToSequence-11.
///
/// - `axis` attribute (ONNX default 0) in `[-rank, rank-1]`; `keepdims` attribute (default 1).
/// - No `split`: chunks of length 1; `keepdims = 0` drops the axis. An axis of length 0 gives
///   an empty sequence.
/// - Scalar `split` s > 0: chunks of s, the last one smaller when s does not divide the axis
///   (s larger than the axis gives one chunk).
/// - 1-D `split`: entries >= 0 summing to the axis length.
/// - `keepdims` is ignored whenever `split` is given.
///
/// ```
/// use wgsl_split::{ops, IntTensor};
/// let plan = ops::split_to_sequence(&[7, 2], 0, Some(&IntTensor::scalar(3)), true).unwrap();
/// assert_eq!(plan.part_shapes(), vec![vec![3, 2], vec![3, 2], vec![1, 2]]);
/// ```
pub fn split_to_sequence(
    data_shape: &[usize],
    axis: i64,
    split: Option<&IntTensor>,
    keepdims: bool,
) -> Result<SplitPlan> {
    let axis = normalize_axis(axis, data_shape.len())?;
    let length = data_shape[axis];
    let Some(split) = split else {
        check_output_count(length as u128)?;
        return SplitPlan::from_lengths(data_shape, axis, &vec![1; length], keepdims);
    };
    let lengths = match split.shape().len() {
        0 => {
            let s = split.values()[0];
            let size = usize::try_from(s)
                .ok()
                .filter(|&s| s > 0)
                .ok_or(SplitError::SplitNotPositive { split: s })?;
            check_output_count(length.div_ceil(size) as u128)?;
            let mut lengths = vec![size; length / size];
            if !length.is_multiple_of(size) {
                lengths.push(length % size);
            }
            lengths
        }
        1 => exact_lengths("split", split.values(), axis, length)?,
        _ => {
            return Err(SplitError::BadIntegerInput {
                input: "split",
                problem: format!(
                    "must be a scalar or a 1-D tensor, got shape {:?}",
                    split.shape()
                ),
            })
        }
    };
    SplitPlan::from_lengths(data_shape, axis, &lengths, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_of_split() {
        let p = split_to_sequence(&[5, 2], 0, Some(&IntTensor::scalar(2)), false).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![2, 2], vec![2, 2], vec![1, 2]]);
        let p = split_to_sequence(&[5, 2], 0, Some(&IntTensor::scalar(9)), true).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![5, 2]]);
        let p =
            split_to_sequence(&[5, 2], -2, Some(&IntTensor::vector(vec![2, 0, 3])), false).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![2, 2], vec![0, 2], vec![3, 2]]);
        let p = split_to_sequence(&[3, 2], 1, None, true).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![3, 1]; 2]);
        let p = split_to_sequence(&[3, 2], 1, None, false).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![3]; 2]);
        assert_eq!(
            split_to_sequence(&[0, 2], 0, None, true)
                .unwrap()
                .num_parts(),
            0
        );
        assert_eq!(
            split_to_sequence(&[0, 2], 0, Some(&IntTensor::scalar(3)), true)
                .unwrap()
                .num_parts(),
            0
        );
    }

    #[test]
    fn rules() {
        assert!(matches!(
            split_to_sequence(&[5], 0, Some(&IntTensor::scalar(0)), true),
            Err(SplitError::SplitNotPositive { .. })
        ));
        assert!(matches!(
            split_to_sequence(&[5], 0, Some(&IntTensor::vector(vec![2, 2])), true),
            Err(SplitError::LengthsSumMismatch { .. })
        ));
        assert!(matches!(
            split_to_sequence(&[5], 0, Some(&IntTensor::vector(vec![6, -1])), true),
            Err(SplitError::BadLength { .. })
        ));
        let m = IntTensor::new(vec![1, 1], vec![5]).unwrap();
        assert!(matches!(
            split_to_sequence(&[5], 0, Some(&m), true),
            Err(SplitError::BadIntegerInput { .. })
        ));
        assert!(matches!(
            split_to_sequence(&[5], 1, None, true),
            Err(SplitError::AxisOutOfRange { .. })
        ));
        assert!(matches!(
            split_to_sequence(&[], 0, None, true),
            Err(SplitError::RankZero)
        ));
    }
}
