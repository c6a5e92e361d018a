//! OpenVINO Split-1.

use super::inputs::{equal_parts, read_axis};
use crate::error::Result;
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;

/// OpenVINO Split-1: `num_splits` equal parts of `data_shape[axis]`.
///
/// - `axis`: a scalar of any integer type in `[-rank, rank-1]`.
/// - `num_splits` >= 1 and divides the axis length (an axis of length 0 gives `num_splits`
///   empty outputs).
///
/// ```
/// use wgsl_split::{ops, IntTensor};
/// let plan = ops::split(&[6, 12, 10, 24], &IntTensor::scalar(1), 3).unwrap();
/// assert_eq!(plan.part_shapes(), vec![vec![6, 4, 10, 24]; 3]);
/// ```
pub fn split(data_shape: &[usize], axis: &IntTensor, num_splits: i64) -> Result<SplitPlan> {
    let axis = read_axis(axis, data_shape.len(), false)?;
    let lengths = equal_parts("num_splits", num_splits, axis, data_shape[axis])?;
    SplitPlan::from_lengths(data_shape, axis, &lengths, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SplitError;

    #[test]
    fn spec_example() {
        let p = split(&[6, 12, 10, 24], &IntTensor::scalar(1), 3).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![6, 4, 10, 24]; 3]);
        let p = split(&[6, 12], &IntTensor::scalar(-1), 12).unwrap();
        assert_eq!(p.num_parts(), 12);
    }

    #[test]
    fn rules() {
        let s = IntTensor::scalar;
        assert!(matches!(
            split(&[6], &s(0), 4),
            Err(SplitError::NotDivisible { .. })
        ));
        assert_eq!(
            split(&[6], &s(0), 4).unwrap_err().to_string(),
            "num_splits 4 does not divide axis 0 of length 6"
        );
        assert!(matches!(
            split(&[6], &s(0), 0),
            Err(SplitError::NumSplitsNotPositive { .. })
        ));
        assert!(matches!(
            split(&[6], &s(0), -2),
            Err(SplitError::NumSplitsNotPositive { .. })
        ));
        assert!(matches!(
            split(&[6], &s(1), 1),
            Err(SplitError::AxisOutOfRange { .. })
        ));
        assert!(matches!(split(&[], &s(0), 1), Err(SplitError::RankZero)));
        assert!(matches!(
            split(&[6], &IntTensor::vector(vec![0]), 1),
            Err(SplitError::BadIntegerInput { .. })
        ));
        assert_eq!(
            split(&[0, 2], &s(0), 5).unwrap().part_shapes(),
            vec![vec![0, 2]; 5]
        );
    }
}
