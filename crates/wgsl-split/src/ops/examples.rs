//! The examples of the operator specifications, one list for every front end: the command's
//! demo (`cargo run --release`) and the browser page (`web/`) run each on the GPU and check it
//! against the CPU reference.

use crate::error::Result;
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;

/// One example of a specification: its title and its plan over its input shape.
#[derive(Debug, Clone)]
pub struct SpecExample {
    /// What the specification calls it, with its parameters.
    pub title: &'static str,
    /// The input's shape.
    pub shape: Vec<usize>,
    /// The operator's plan, or the error its rules give.
    pub plan: Result<SplitPlan>,
}

/// Every example of the OpenVINO Split-1 and VariadicSplit-1 and ONNX SplitToSequence-11
/// specifications.
pub fn spec_examples() -> Vec<SpecExample> {
    let spec = vec![6, 12, 10, 24];
    let small = vec![7, 3];
    let v = IntTensor::vector;
    let s = IntTensor::scalar;
    let example = |title, shape: &Vec<usize>, plan| SpecExample {
        title,
        shape: shape.clone(),
        plan,
    };
    vec![
        example(
            "Split-1: axis 1, num_splits 3",
            &spec,
            super::split(&spec, &s(1), 3),
        ),
        example(
            "VariadicSplit-1: axis 0, split_lengths [1, 2, 3]",
            &spec,
            super::variadic_split(&spec, &s(0), &v(vec![1, 2, 3])),
        ),
        example(
            "VariadicSplit-1: axis 0, split_lengths [-1, 2]",
            &spec,
            super::variadic_split(&spec, &s(0), &v(vec![-1, 2])),
        ),
        example(
            "SplitToSequence-11: axis 0, split 3 (scalar, remainder 1)",
            &small,
            super::split_to_sequence(&small, 0, Some(&s(3)), true),
        ),
        example(
            "SplitToSequence-11: axis 0, split [2, 0, 5] (1-D, with a 0)",
            &small,
            super::split_to_sequence(&small, 0, Some(&v(vec![2, 0, 5])), true),
        ),
        example(
            "SplitToSequence-11: axis 1, no split, keepdims 1",
            &small,
            super::split_to_sequence(&small, 1, None, true),
        ),
        example(
            "SplitToSequence-11: axis 1, no split, keepdims 0",
            &small,
            super::split_to_sequence(&small, 1, None, false),
        ),
    ]
}
