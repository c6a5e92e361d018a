//! Readers of the operators' inputs that several operators share: the axis, length lists,
//! explicit lengths and equal parts.

use crate::error::{Result, SplitError};
use crate::plan::{check_output_count, normalize_axis};
use crate::tensor::IntTensor;

/// Reads an `axis` input: a scalar, or a shape-`[1]` tensor where `allow_shape_1` is set.
pub(super) fn read_axis(axis: &IntTensor, rank: usize, allow_shape_1: bool) -> Result<usize> {
    if rank == 0 {
        return Err(SplitError::RankZero);
    }
    let ok_shape = axis.shape().is_empty() || (allow_shape_1 && axis.shape() == [1]);
    if !ok_shape {
        let allowed = if allow_shape_1 {
            "a scalar or a tensor of shape [1]"
        } else {
            "a scalar"
        };
        return Err(SplitError::BadIntegerInput {
            input: "axis",
            problem: format!("must be {allowed}, got shape {:?}", axis.shape()),
        });
    }
    normalize_axis(axis.values()[0], rank)
}

/// Checks that a length list is 1-D; `input` names it in errors.
pub(super) fn read_lengths<'a>(lengths: &'a IntTensor, input: &'static str) -> Result<&'a [i64]> {
    if lengths.shape().len() != 1 {
        return Err(SplitError::BadIntegerInput {
            input,
            problem: format!("must be a 1-D tensor, got shape {:?}", lengths.shape()),
        });
    }
    Ok(lengths.values())
}

/// Checks explicit lengths: every entry >= 0 and the sum equals the axis length.
pub(super) fn exact_lengths(
    input: &'static str,
    lengths: &[i64],
    axis: usize,
    length: usize,
) -> Result<Vec<usize>> {
    if let Some(bad) = lengths.iter().find(|&&l| l < 0) {
        return Err(SplitError::BadLength {
            input,
            lengths: lengths.to_vec(),
            rule: format!("entry {bad} is negative; every entry must be >= 0"),
        });
    }
    let sum: i128 = lengths.iter().map(|&l| l as i128).sum();
    if sum != length as i128 {
        return Err(SplitError::LengthsSumMismatch {
            input,
            lengths: lengths.to_vec(),
            sum,
            axis,
            length,
        });
    }
    Ok(lengths.iter().map(|&l| l as usize).collect())
}

/// `count` equal parts of `length`, which must divide evenly; `what` names the count.
pub(super) fn equal_parts(
    what: &'static str,
    count: i64,
    axis: usize,
    length: usize,
) -> Result<Vec<usize>> {
    let parts = usize::try_from(count)
        .ok()
        .filter(|&p| p >= 1)
        .ok_or(match what {
            "num_splits" => SplitError::NumSplitsNotPositive { num_splits: count },
            _ => SplitError::CountNotPositive { what, count },
        })?;
    if !length.is_multiple_of(parts) {
        return Err(SplitError::NotDivisible {
            what,
            parts: count,
            axis,
            length,
        });
    }
    check_output_count(parts as u128)?;
    Ok(vec![length / parts; parts])
}
