//! One registry of the operators: the command, the benchmark suite and the fuzzers all name
//! an operator and its parameters with [`Operator`], and plan it with [`Operator::plan`].

use super::onnx_split::{onnx_split, OnnxSplitParts};
use super::sequence::split_to_sequence;
use super::split::split;
use super::variadic::variadic_split;
use crate::error::Result;
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;

/// An operator with its parameters (everything but the data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operator {
    /// OpenVINO Split-1: an `axis` input and `num_splits`.
    Split {
        /// The `axis` input (a scalar).
        axis: IntTensor,
        /// The `num_splits` attribute.
        num_splits: i64,
    },
    /// OpenVINO VariadicSplit-1: `axis` and `split_lengths` inputs.
    VariadicSplit {
        /// The `axis` input (a scalar or shape `[1]`).
        axis: IntTensor,
        /// The `split_lengths` input (1-D, one `-1` allowed).
        split_lengths: IntTensor,
    },
    /// ONNX SplitToSequence-11: `axis` and `keepdims` attributes, optional `split` input.
    SplitToSequence {
        /// The `axis` attribute.
        axis: i64,
        /// The optional `split` input (a scalar or 1-D).
        split: Option<IntTensor>,
        /// The `keepdims` attribute.
        keepdims: bool,
    },
    /// ONNX Split (opsets 2, 11, 13, 18): `axis` attribute and the parts.
    OnnxSplit {
        /// The `axis` attribute.
        axis: i64,
        /// How the parts are chosen.
        parts: OnnxSplitParts,
    },
}

impl Operator {
    /// Every operator's name, as the command spells it (`--op NAME`).
    pub const NAMES: [&'static str; 4] =
        ["split", "variadic-split", "split-to-sequence", "onnx-split"];

    /// The command-line name: one of [`Operator::NAMES`].
    pub fn name(&self) -> &'static str {
        let i = match self {
            Operator::Split { .. } => 0,
            Operator::VariadicSplit { .. } => 1,
            Operator::SplitToSequence { .. } => 2,
            Operator::OnnxSplit { .. } => 3,
        };
        Self::NAMES[i]
    }

    /// The axis as given (before normalisation): the attribute, or the first value of the
    /// axis input.
    pub fn axis(&self) -> i64 {
        match self {
            Operator::Split { axis, .. } | Operator::VariadicSplit { axis, .. } => {
                axis.values().first().copied().unwrap_or(0)
            }
            Operator::SplitToSequence { axis, .. } | Operator::OnnxSplit { axis, .. } => *axis,
        }
    }

    /// Validates the parameters against `data_shape` as the operator's specification says
    /// and plans the outputs.
    ///
    /// ```
    /// use wgsl_split::{ops::Operator, IntTensor};
    /// let op = Operator::Split { axis: IntTensor::scalar(1), num_splits: 3 };
    /// assert_eq!(op.plan(&[6, 12, 10, 24]).unwrap().num_parts(), 3);
    /// ```
    pub fn plan(&self, data_shape: &[usize]) -> Result<SplitPlan> {
        match self {
            Operator::Split { axis, num_splits } => split(data_shape, axis, *num_splits),
            Operator::VariadicSplit {
                axis,
                split_lengths,
            } => variadic_split(data_shape, axis, split_lengths),
            Operator::SplitToSequence {
                axis,
                split,
                keepdims,
            } => split_to_sequence(data_shape, *axis, split.as_ref(), *keepdims),
            Operator::OnnxSplit { axis, parts } => onnx_split(data_shape, *axis, parts),
        }
    }
}
