//! [`ConcatPlan`]: the inputs and the output of one concat, validated. A concat moves the bytes
//! of a split the other way, so it is the split of its output into its inputs underneath.

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;

/// Input shapes and output shape of one concat, validated: what [`crate::ops::concat()`],
/// [`crate::ops::onnx_concat`] and [`crate::ops::concat_from_sequence`] return.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::concat(&[[1, 32, 4095, 128], [1, 32, 1, 128]], 2)?;
/// assert_eq!(plan.whole_shape(), &[1, 32, 4096, 128]);
/// assert_eq!(plan.part_shape(1), vec![1, 32, 1, 128]);
/// // The inverse: the split that takes the output apart into the inputs.
/// assert_eq!(plan.inverse().part_shapes(), plan.part_shapes());
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConcatPlan {
    /// The split of the concat's output into its inputs: the same chunks on the same axis.
    split: SplitPlan,
}

impl ConcatPlan {
    /// The concat that joins the outputs of `split` back into its input.
    #[doc(hidden)]
    pub fn of_split(split: SplitPlan) -> Self {
        Self { split }
    }

    /// The split this concat undoes, whose chunks it shares.
    #[doc(hidden)]
    pub fn split(&self) -> &SplitPlan {
        &self.split
    }

    /// The split that takes this concat's output apart into its inputs.
    pub fn inverse(&self) -> SplitPlan {
        self.split.clone()
    }

    /// The whole tensor's shape: the concat's output. (A split and a concat name their
    /// tensors alike: the whole, and its parts.)
    pub fn whole_shape(&self) -> &[usize] {
        self.split.whole_shape()
    }

    /// Number of parts: the concat's inputs.
    pub fn num_parts(&self) -> usize {
        self.split.num_parts()
    }

    /// Shape of part `k`: input `k`.
    pub fn part_shape(&self, k: usize) -> Vec<usize> {
        self.split.part_shape(k)
    }

    /// Shapes of all parts, in order.
    pub fn part_shapes(&self) -> Vec<Vec<usize>> {
        self.split.part_shapes()
    }

    /// Each part's length on the axis of the whole tensor, in order (1 for each stacked
    /// part: ConcatFromSequence with `new_axis = 1`).
    pub fn lengths(&self) -> Vec<usize> {
        self.split.lengths()
    }

    /// The output's axis the inputs are joined along, in `[0, rank)`; where they are stacked
    /// ([`ConcatPlan::stacks`]), the new axis.
    pub fn axis(&self) -> usize {
        self.split.axis()
    }

    /// Whether the inputs are stacked on a new axis (ConcatFromSequence with `new_axis = 1`)
    /// rather than joined along an existing one.
    pub fn stacks(&self) -> bool {
        !self.split.keep_axis()
    }

    /// Bytes of part `k` (input `k`) of `dtype` (the element type, not its size:
    /// `DType::Utf32(4)` is a string of 4 characters, 16 bytes); an error if the count
    /// overflows.
    pub fn part_bytes(&self, k: usize, dtype: DType) -> Result<u64> {
        self.split.part_bytes(k, dtype)
    }

    /// Bytes the whole tensor's buffer (the output) must hold from its offset: its bytes
    /// rounded up to 4 (what WebGPU asks of a storage binding), at least 4.
    pub fn whole_binding_size(&self, dtype: DType) -> Result<u64> {
        self.split.whole_binding_size(dtype)
    }

    /// Checks host tensors against this concat: one per input (at least one), each of its
    /// input's shape, all of one dtype, which it returns.
    #[doc(hidden)]
    pub fn check_inputs(&self, inputs: &[HostTensor]) -> Result<DType> {
        if inputs.len() != self.num_parts() {
            return Err(SplitError::DataMismatch(format!(
                "{} input tensors for a concat of {} inputs",
                inputs.len(),
                self.num_parts()
            )));
        }
        // A concat of no inputs (the inverse of a sequence split of an empty axis) has no
        // dtype to give its output.
        let Some(dtype) = inputs.first().map(HostTensor::dtype) else {
            return Err(SplitError::CountNotPositive {
                what: "inputs",
                count: 0,
            });
        };
        for (k, t) in inputs.iter().enumerate() {
            if t.dtype() != dtype {
                return Err(SplitError::DataMismatch(format!(
                    "input {k} is {}, but input 0 is {dtype}: a concat's inputs share one dtype",
                    t.dtype()
                )));
            }
            if t.shape() != self.part_shape(k) {
                return Err(SplitError::DataMismatch(format!(
                    "input {k} has shape {:?}; the concat is for {:?}",
                    t.shape(),
                    self.part_shape(k)
                )));
            }
        }
        Ok(dtype)
    }

    /// The output's bytes from `bytes` (at least the output's size, as read back).
    #[doc(hidden)]
    pub fn output_from(&self, bytes: &[u8], dtype: DType) -> Result<HostTensor> {
        let size = byte_count(self.whole_shape(), dtype)?;
        let bytes = bytes.get(..size).ok_or_else(|| {
            SplitError::DataMismatch(format!(
                "{} bytes read back for a concat output of {size}",
                bytes.len()
            ))
        })?;
        HostTensor::new(dtype, self.whole_shape().to_vec(), bytes.to_vec())
    }
}

impl SplitPlan {
    /// The concat that joins this split's outputs back into its input.
    pub fn inverse(&self) -> ConcatPlan {
        ConcatPlan::of_split(self.clone())
    }

    /// Bytes the whole tensor's buffer (the input) must hold from its offset: its bytes
    /// rounded up to 4 (what WebGPU asks of a storage binding), at least 4.
    pub fn whole_binding_size(&self, dtype: DType) -> Result<u64> {
        let bytes = byte_count(self.whole_shape(), dtype)? as u64;
        Ok(crate::plan::bytes::binding_bytes(bytes))
    }
}
