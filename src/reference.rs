//! The CPU reference: the same splits computed with ndarray slicing, for any element type.
//!
//! It shares nothing with the GPU path but the [`SplitPlan`], so agreement between the two is
//! a real check.

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::tensor::HostTensor;
use ndarray::{ArrayD, ArrayViewD, Axis, IxDyn, Slice};

/// Splits an ndarray array of any element type (numbers, strings, ...) as `plan` says.
///
/// ```
/// use ndarray::ArrayD;
/// use wgpu_split::{ops, reference, IntTensor};
/// let names = ArrayD::from_shape_vec(vec![3], vec!["a".to_string(), "b".into(), "c".into()]).unwrap();
/// let plan = ops::split_to_sequence(&[3], 0, Some(&IntTensor::scalar(2)), true).unwrap();
/// let parts = reference::split_array(names.view(), &plan).unwrap();
/// assert_eq!(parts[1].as_slice().unwrap(), &["c".to_string()]);
/// ```
pub fn split_array<T: Clone>(input: ArrayViewD<'_, T>, plan: &SplitPlan) -> Result<Vec<ArrayD<T>>> {
    if input.shape() != plan.input_shape() {
        return Err(SplitError::DataMismatch(format!(
            "the plan is for shape {:?}, the data has shape {:?}",
            plan.input_shape(),
            input.shape()
        )));
    }
    Ok(split_view(input, plan))
}

/// The slicing itself; `input` may carry trailing dimensions beyond the plan's shape.
fn split_view<T: Clone>(input: ArrayViewD<'_, T>, plan: &SplitPlan) -> Vec<ArrayD<T>> {
    let axis = Axis(plan.axis());
    plan.chunks()
        .iter()
        .map(|c| {
            let part = input.slice_axis(axis, Slice::from(c.start..c.start + c.len));
            let part = if plan.keep_axis() {
                part
            } else {
                part.index_axis_move(axis, 0)
            };
            part.as_standard_layout().into_owned()
        })
        .collect()
}

/// Splits a host tensor of any dtype, moving its bytes exactly.
///
/// The bytes are viewed as an array with one extra trailing dimension of `dtype.size()` bytes,
/// so one `u8` code path serves every element type, strings included.
pub fn split_tensor(input: &HostTensor, plan: &SplitPlan) -> Result<Vec<HostTensor>> {
    if input.shape() != plan.input_shape() {
        return Err(SplitError::DataMismatch(format!(
            "the plan is for shape {:?}, the data has shape {:?}",
            plan.input_shape(),
            input.shape()
        )));
    }
    let dtype = input.dtype();
    let mut byte_shape = input.shape().to_vec();
    byte_shape.push(dtype.size());
    let bytes = ArrayViewD::from_shape(IxDyn(&byte_shape), input.bytes())
        .map_err(|e| SplitError::DataMismatch(e.to_string()))?;
    split_view(bytes, plan)
        .into_iter()
        .enumerate()
        .map(|(i, part)| {
            let (data, _) = part.into_raw_vec_and_offset();
            HostTensor::new(dtype, plan.output_shape(i), data)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ops, IntTensor};

    #[test]
    fn bytes_follow_elements() {
        let data: Vec<u16> = (0..24).collect();
        let t = HostTensor::from_slice(&[2, 3, 4], &data).unwrap();
        let plan = ops::variadic_split(
            &[2, 3, 4],
            &IntTensor::scalar(2),
            &IntTensor::vector(vec![1, 3]),
        )
        .unwrap();
        let out = split_tensor(&t, &plan).unwrap();
        assert_eq!(out[0].to_vec::<u16>().unwrap(), vec![0, 4, 8, 12, 16, 20]);
        assert_eq!(out[1].shape(), &[2, 3, 3]);
        assert_eq!(out[1].to_vec::<u16>().unwrap()[..4], [1, 2, 3, 5]);
    }

    #[test]
    fn keepdims_zero_drops_the_axis() {
        let t = HostTensor::from_slice(&[2, 2], &[1i32, 2, 3, 4]).unwrap();
        let plan = ops::split_to_sequence(&[2, 2], 1, None, false).unwrap();
        let out = split_tensor(&t, &plan).unwrap();
        assert_eq!(out[1].shape(), &[2]);
        assert_eq!(out[1].to_vec::<i32>().unwrap(), vec![2, 4]);
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let t = HostTensor::from_slice(&[4], &[1i32, 2, 3, 4]).unwrap();
        let plan = ops::split(&[2, 2], &IntTensor::scalar(0), 2).unwrap();
        assert!(matches!(
            split_tensor(&t, &plan),
            Err(SplitError::DataMismatch(_))
        ));
    }
}
