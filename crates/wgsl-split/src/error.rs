//! The one error type of the crate.
//!
//! Every rule an input can break has its own variant, and every message names the input, the
//! value and the rule, so a caller can show it to a user as it is.

use thiserror::Error;

/// Everything that can go wrong in planning, running or checking a split.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SplitError {
    /// The data tensor (a concat's inputs) is a scalar: it has no axis to split (or to
    /// concatenate on).
    #[error("data is a scalar (rank 0): it has no axis to split or concatenate on")]
    RankZero,

    /// The axis lies outside `[-rank, rank-1]`.
    #[error("axis {axis} is out of range for data of rank {rank}: it must lie in [{}, {}]", -(*.rank as i64), *.rank as i64 - 1)]
    AxisOutOfRange {
        /// The axis as given.
        axis: i64,
        /// The rank of the data tensor.
        rank: usize,
    },

    /// An integer input tensor (axis, split_lengths, split) has a dtype or shape its rule forbids.
    #[error("{input} {problem}")]
    BadIntegerInput {
        /// Which input: `axis`, `split_lengths`, `split`.
        input: &'static str,
        /// What is wrong with it.
        problem: String,
    },

    /// Split-1's `num_splits` is below 1.
    #[error("num_splits {num_splits} must be at least 1")]
    NumSplitsNotPositive {
        /// The value given.
        num_splits: i64,
    },

    /// A number of parts (ONNX Split's number of outputs, `num_outputs`, a concat's inputs)
    /// is below 1.
    #[error("{what} {count} must be at least 1")]
    CountNotPositive {
        /// What the number counts: `number of outputs`, `num_outputs`, `inputs`.
        what: &'static str,
        /// The value given.
        count: i64,
    },

    /// ONNX Split-18's `num_outputs` chunks of `ceil(length / num_outputs)` overrun the axis,
    /// so its last chunk would be negative.
    #[error(
        "num_outputs {num_outputs} leaves no valid last chunk on axis {axis} of length \
         {length}: Split-18 cuts chunks of ceil({length} / {num_outputs}) = {chunk}, and the \
         first {} of them already take {}", *.num_outputs - 1, *.chunk * (*.num_outputs - 1)
    )]
    LastChunkNegative {
        /// The value given.
        num_outputs: u64,
        /// The axis, normalised.
        axis: usize,
        /// The axis length.
        length: usize,
        /// The chunk length, `ceil(length / num_outputs)`.
        chunk: u64,
    },

    /// An ONNX opset outside the ones this crate knows (1 to [`crate::ops::OnnxSplitParts::NEWEST_OPSET`]).
    #[error("ONNX opset {opset} is not one of 1 to {newest}, the opsets this crate knows")]
    UnknownOpset {
        /// The opset given.
        opset: i64,
        /// The newest opset this crate knows.
        newest: u32,
    },

    /// The axis length is not divisible by the number of equal parts.
    #[error("{what} {parts} does not divide axis {axis} of length {length}")]
    NotDivisible {
        /// The attribute that sets the number of parts (`num_splits`, `num_outputs`).
        what: &'static str,
        /// The number of parts.
        parts: i64,
        /// The axis, normalised to `[0, rank)`.
        axis: usize,
        /// The axis length.
        length: usize,
    },

    /// A length list holds a value its rule forbids (negative, or a second `-1`).
    #[error("{input} {lengths:?}: {rule}")]
    BadLength {
        /// Which input: `split_lengths` or `split`.
        input: &'static str,
        /// The list as given.
        lengths: Vec<i64>,
        /// The rule it breaks.
        rule: String,
    },

    /// The lengths do not add up to the axis length.
    #[error("{input} {lengths:?} sum to {sum}, but axis {axis} has length {length}")]
    LengthsSumMismatch {
        /// Which input: `split_lengths` or `split`.
        input: &'static str,
        /// The list as given.
        lengths: Vec<i64>,
        /// Their sum (saturating).
        sum: i128,
        /// The axis, normalised.
        axis: usize,
        /// The axis length.
        length: usize,
    },

    /// A scalar split size is not positive.
    #[error("split {split} must be positive when given as a scalar")]
    SplitNotPositive {
        /// The value given.
        split: i64,
    },

    /// A concat's input does not match the first input: another rank, or another length on
    /// an axis other than the concat axis (on any axis, when stacking on a new one).
    #[error("input {input} has shape {shape:?}, but input 0 has shape {first:?}: {rule}")]
    ShapeMismatch {
        /// The input's position.
        input: usize,
        /// Its shape.
        shape: Vec<usize>,
        /// Input 0's shape.
        first: Vec<usize>,
        /// The rule it breaks.
        rule: &'static str,
    },

    /// Two attributes or inputs that exclude each other were both given, or neither.
    #[error("{0}")]
    ConflictingInputs(String),

    /// A shape, element count or byte count does not fit the machine or the device.
    #[error("{0}")]
    TooLarge(String),

    /// A streaming window smaller than one element of the input.
    #[error(
        "window_bytes {window_bytes} is smaller than one element: the smallest window is one \
         element, {element_bytes} bytes"
    )]
    WindowTooSmall {
        /// The window asked for.
        window_bytes: u64,
        /// Bytes of one element of the input's dtype.
        element_bytes: usize,
    },

    /// Host data does not match the shape and dtype it claims.
    #[error("{0}")]
    DataMismatch(String),

    /// A part's view ([`crate::PartView`]) breaks a rule: a stride per axis, every element
    /// inside its region, no two written elements or parts on one byte.
    #[error("{0}")]
    BadView(String),

    /// Buffers passed by the caller are too small or lack a usage flag.
    #[error("{0}")]
    BadBuffer(String),

    /// A backend name that is not one of auto, vulkan, gl, metal, dx12.
    #[error("unknown backend {0:?}: expected auto, vulkan, gl, metal or dx12")]
    UnknownBackend(String),

    /// No adapter could be found or opened.
    #[error("no GPU adapter: {0}")]
    NoAdapter(String),

    /// wgpu reported a validation error, an out-of-memory error or a lost device.
    #[error("wgpu: {0}")]
    Device(String),

    /// A file could not be read or written, or is not a valid `.npy` file.
    #[error("{0}")]
    File(String),

    /// The GPU result differs from the CPU reference.
    #[error("GPU result differs from the CPU reference: {0}")]
    Mismatch(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = SplitError> = std::result::Result<T, E>;
