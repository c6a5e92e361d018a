//! [`PlannerInput`]: what the fuzzers generate.

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
