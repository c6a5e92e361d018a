//! OpenVINO VariadicSplit-1.

use super::inputs::{exact_lengths, read_axis, read_lengths};
use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;

/// OpenVINO VariadicSplit-1: outputs of the lengths in `split_lengths`.
///
/// - `axis`: a scalar or a shape-`[1]` tensor of any integer type in `[-rank, rank-1]`.
/// - `split_lengths`: 1-D, any integer type, at least one entry. At most one entry is `-1` and
///   takes whatever the others leave (possibly 0); every other entry is >= 0; the sum equals the
///   axis length.
///
/// ```
/// use wgsl_split::{ops, IntTensor};
/// let plan = ops::variadic_split(&[6, 12], &IntTensor::scalar(0), &IntTensor::vector(vec![-1, 2])).unwrap();
/// assert_eq!(plan.part_shapes(), vec![vec![4, 12], vec![2, 12]]);
/// ```
pub fn variadic_split(
    data_shape: &[usize],
    axis: &IntTensor,
    split_lengths: &IntTensor,
) -> Result<SplitPlan> {
    const INPUT: &str = "split_lengths";
    let axis = read_axis(axis, data_shape.len(), true)?;
    let given = read_lengths(split_lengths, INPUT)?;
    let length = data_shape[axis];
    if given.is_empty() {
        return Err(SplitError::BadLength {
            input: INPUT,
            lengths: vec![],
            rule: "needs at least one entry".into(),
        });
    }
    let inferred: Vec<usize> = (0..given.len()).filter(|&i| given[i] == -1).collect();
    if inferred.len() > 1 {
        return Err(SplitError::BadLength {
            input: INPUT,
            lengths: given.to_vec(),
            rule: "at most one entry may be -1".into(),
        });
    }
    let mut lengths = given.to_vec();
    if let Some(&i) = inferred.first() {
        // The -1 takes the rest; any other negative entry is caught by exact_lengths.
        let others: i128 = given
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, &l)| l as i128)
            .sum();
        let rest = length as i128 - others;
        if given.iter().all(|&l| l >= -1) && rest < 0 {
            return Err(SplitError::LengthsSumMismatch {
                input: INPUT,
                lengths: given.to_vec(),
                sum: others,
                axis,
                length,
            });
        }
        lengths[i] = i64::try_from(rest).unwrap_or(-1);
    }
    let lengths = exact_lengths(INPUT, &lengths, axis, length).map_err(|e| match e {
        // Report the list as the caller gave it, with its -1.
        SplitError::BadLength { rule, .. } => SplitError::BadLength {
            input: INPUT,
            lengths: given.to_vec(),
            rule,
        },
        other => other,
    })?;
    SplitPlan::from_lengths(data_shape, axis, &lengths, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(l: &[i64]) -> IntTensor {
        IntTensor::vector(l.to_vec())
    }

    #[test]
    fn spec_examples() {
        let s = [6, 12, 10, 24];
        let p = variadic_split(&s, &IntTensor::scalar(0), &v(&[1, 2, 3])).unwrap();
        assert_eq!(
            p.part_shapes(),
            vec![
                vec![1, 12, 10, 24],
                vec![2, 12, 10, 24],
                vec![3, 12, 10, 24]
            ]
        );
        let p = variadic_split(&s, &IntTensor::vector(vec![0]), &v(&[-1, 2])).unwrap();
        assert_eq!(
            p.part_shapes(),
            vec![vec![4, 12, 10, 24], vec![2, 12, 10, 24]]
        );
        let p = variadic_split(&s, &IntTensor::scalar(-4), &v(&[6, -1])).unwrap();
        assert_eq!(p.part_shapes()[1], vec![0, 12, 10, 24]);
    }

    #[test]
    fn rules() {
        let a = IntTensor::scalar(0);
        let e = variadic_split(&[6], &a, &v(&[2, 2])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "split_lengths [2, 2] sum to 4, but axis 0 has length 6"
        );
        assert!(matches!(
            variadic_split(&[6], &a, &v(&[-1, -1, 6])),
            Err(SplitError::BadLength { .. })
        ));
        let e = variadic_split(&[6], &a, &v(&[-2, 8])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "split_lengths [-2, 8]: entry -2 is negative; every entry must be >= 0"
        );
        assert!(matches!(
            variadic_split(&[6], &a, &v(&[-1, 8])),
            Err(SplitError::LengthsSumMismatch { .. })
        ));
        assert!(matches!(
            variadic_split(&[6], &a, &v(&[])),
            Err(SplitError::BadLength { .. })
        ));
        assert!(matches!(
            variadic_split(&[6], &a, &IntTensor::scalar(6)),
            Err(SplitError::BadIntegerInput { .. })
        ));
        let bad_axis = IntTensor::new(vec![1, 1], vec![0]).unwrap();
        assert!(matches!(
            variadic_split(&[6], &bad_axis, &v(&[6])),
            Err(SplitError::BadIntegerInput { .. })
        ));
        assert!(matches!(
            variadic_split(&[6], &a, &v(&[i64::MAX, i64::MAX, -1])),
            Err(SplitError::LengthsSumMismatch { .. })
        ));
        assert!(matches!(
            variadic_split(&[6], &a, &v(&[i64::MIN, -1])),
            Err(SplitError::BadLength { .. })
        ));
    }
}
