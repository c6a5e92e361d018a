//! ONNX Split at every opset: the versions 1, 2, 11, 13 and 18, and which one an opset means.

use super::inputs::{equal_parts, exact_lengths};
use crate::error::{Result, SplitError};
use crate::plan::{check_output_count, normalize_axis, SplitPlan};

/// The version of Split in force at ONNX `opset` (what a model's `opset_import` states): 1 at
/// opset 1, 2 at 2 to 10, 11 at 11 and 12, 13 at 13 to 17, 18 from 18 to
/// [`OnnxSplitParts::NEWEST_OPSET`]. Any other opset is [`SplitError::UnknownOpset`].
#[doc(hidden)]
pub fn onnx_split_version(opset: i64) -> Result<u32> {
    const SINCE: [u32; 5] = [18, 13, 11, 2, 1];
    u32::try_from(opset)
        .ok()
        .filter(|o| (1..=OnnxSplitParts::NEWEST_OPSET).contains(o))
        .and_then(|o| SINCE.into_iter().find(|&v| v <= o))
        .ok_or(SplitError::UnknownOpset {
            opset,
            newest: OnnxSplitParts::NEWEST_OPSET,
        })
}

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

impl OnnxSplitParts {
    /// The newest ONNX opset this crate knows (ONNX 1.22). Split-18 is in force from opset 18
    /// on.
    pub const NEWEST_OPSET: u32 = 27;

    /// The parts of a Split node of a model at ONNX `opset`, from what the node states: its
    /// `split` (an attribute, or from Split-13 on an input) and `outputs`, the number the node
    /// gives: its `num_outputs` attribute under Split-18, its number of outputs before. Split-1
    /// to Split-13 without `split` cut equal parts ([`OnnxSplitParts::EqualOutputs`]); Split-18
    /// cuts chunks of `ceil(length / num_outputs)` ([`OnnxSplitParts::NumOutputs`]) and takes
    /// exactly one of `split` and `num_outputs`.
    ///
    /// ```
    /// use wgsl_split::ops::OnnxSplitParts;
    /// // YOLOv8n is an opset-17 model: Split-13, equal parts.
    /// assert_eq!(OnnxSplitParts::at_opset(17, None, Some(2)).unwrap(), OnnxSplitParts::EqualOutputs(2));
    /// assert_eq!(OnnxSplitParts::at_opset(18, None, Some(2)).unwrap(), OnnxSplitParts::NumOutputs(2));
    /// ```
    pub fn at_opset(opset: i64, split: Option<Vec<i64>>, outputs: Option<i64>) -> Result<Self> {
        let version = onnx_split_version(opset)?;
        let count = if version >= 18 {
            "the num_outputs attribute"
        } else {
            "the number of outputs"
        };
        match (split, outputs) {
            (Some(_), Some(_)) => Err(SplitError::ConflictingInputs(format!(
                "Split-{version} (opset {opset}) takes split or {count}, not both"
            ))),
            (None, None) => Err(SplitError::ConflictingInputs(format!(
                "Split-{version} (opset {opset}) needs split or {count}"
            ))),
            (Some(lengths), None) => Ok(OnnxSplitParts::Lengths(lengths)),
            (None, Some(n)) if version >= 18 => Ok(OnnxSplitParts::NumOutputs(n)),
            (None, Some(n)) => Ok(OnnxSplitParts::EqualOutputs(n)),
        }
    }
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
/// lengths follow the rule ([`SplitError::LastChunkNegative`]; the chunks need not divide the
/// axis). The axis may be negative under every version, as ONNX Runtime accepts it.
///
/// ```
/// use wgsl_split::ops::{onnx_split, OnnxSplitParts};
/// let plan = onnx_split(&[2, 8], 1, &OnnxSplitParts::NumOutputs(3)).unwrap();
/// assert_eq!(plan.part_shapes(), vec![vec![2, 3], vec![2, 3], vec![2, 2]]);
/// ```
pub fn onnx_split(data_shape: &[usize], axis: i64, parts: &OnnxSplitParts) -> Result<SplitPlan> {
    let axis = normalize_axis(axis, data_shape.len())?;
    let length = data_shape[axis];
    let lengths = match parts {
        OnnxSplitParts::Lengths(l) => exact_lengths("split", l, axis, length)?,
        OnnxSplitParts::EqualOutputs(n) => equal_parts("number of outputs", *n, axis, length)?,
        OnnxSplitParts::NumOutputs(n) => {
            let count = usize::try_from(*n).ok().filter(|&c| c >= 1).ok_or(
                SplitError::CountNotPositive {
                    what: "num_outputs",
                    count: *n,
                },
            )?;
            check_output_count(count as u128)?;
            let chunk = length.div_ceil(count);
            let last = length as i128 - chunk as i128 * (count as i128 - 1);
            if last < 0 {
                return Err(SplitError::LastChunkNegative {
                    num_outputs: count as u64,
                    axis,
                    length,
                    chunk: chunk as u64,
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
            onnx_split(&[6], 0, &EqualOutputs(3)).unwrap().part_shapes(),
            vec![vec![2]; 3]
        );
        assert_eq!(
            onnx_split(&[2, 6], 1, &EqualOutputs(2))
                .unwrap()
                .part_shapes(),
            vec![vec![2, 3]; 2]
        );
        // split_variable_parts
        assert_eq!(
            onnx_split(&[6], 0, &Lengths(vec![2, 4]))
                .unwrap()
                .part_shapes(),
            vec![vec![2], vec![4]]
        );
        // split_zero_size_splits
        assert_eq!(
            onnx_split(&[0], 0, &Lengths(vec![0, 0, 0]))
                .unwrap()
                .part_shapes(),
            vec![vec![0]; 3]
        );
        // split_1d_uneven_split_opset18: 7 into 4 gives 2, 2, 2, 1
        let p = onnx_split(&[7], 0, &NumOutputs(4)).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![2], vec![2], vec![2], vec![1]]);
        // split_2d_uneven_split_opset18: 8 into 3 gives 3, 3, 2
        let p = onnx_split(&[2, 8], 1, &NumOutputs(3)).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![2, 3], vec![2, 3], vec![2, 2]]);
    }

    #[test]
    fn every_opset_maps_to_the_split_version_in_force() {
        let want = |o: i64| match o {
            1 => 1,
            2..=10 => 2,
            11 | 12 => 11,
            13..=17 => 13,
            _ => 18,
        };
        for opset in 1..=OnnxSplitParts::NEWEST_OPSET as i64 {
            assert_eq!(onnx_split_version(opset).unwrap(), want(opset), "{opset}");
        }
        for opset in [0, -1, OnnxSplitParts::NEWEST_OPSET as i64 + 1, i64::MAX] {
            assert_eq!(
                onnx_split_version(opset),
                Err(SplitError::UnknownOpset {
                    opset,
                    newest: OnnxSplitParts::NEWEST_OPSET
                })
            );
        }
        assert_eq!(
            OnnxSplitParts::at_opset(1, None, Some(3)).unwrap(),
            EqualOutputs(3)
        );
        assert_eq!(
            OnnxSplitParts::at_opset(27, Some(vec![1, 2]), None).unwrap(),
            Lengths(vec![1, 2])
        );
        let e = OnnxSplitParts::at_opset(18, Some(vec![1]), Some(1)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Split-18 (opset 18) takes split or the num_outputs attribute, not both"
        );
        let e = OnnxSplitParts::at_opset(12, None, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Split-11 (opset 12) needs split or the number of outputs"
        );
    }

    #[test]
    fn rules() {
        assert!(matches!(
            onnx_split(&[5], 0, &EqualOutputs(2)),
            Err(SplitError::NotDivisible { .. })
        ));
        // Split-18 asks no divisibility; 5 into 4 fails because its last chunk would be -1.
        let e = onnx_split(&[5], 0, &NumOutputs(4)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "num_outputs 4 leaves no valid last chunk on axis 0 of length 5: Split-18 cuts \
             chunks of ceil(5 / 4) = 2, and the first 3 of them already take 6"
        );
        assert_eq!(
            onnx_split(&[5], 0, &NumOutputs(0)),
            Err(SplitError::CountNotPositive {
                what: "num_outputs",
                count: 0
            })
        );
        assert_eq!(
            onnx_split(&[5], 0, &EqualOutputs(0))
                .unwrap_err()
                .to_string(),
            "number of outputs 0 must be at least 1"
        );
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
