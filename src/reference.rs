//! The CPU reference: the same splits computed with ndarray slicing, for any element type.
//!
//! It shares nothing with the GPU path but the [`SplitPlan`], so agreement between the two is
//! a real check.

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::tensor::HostTensor;
use ndarray::{s, ArrayD, ArrayView2, ArrayViewD, Axis, Slice};

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
    plan.check_input_shape(input.shape())?;
    let axis = Axis(plan.axis());
    Ok(plan
        .chunks()
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
        .collect())
}

/// Splits a host tensor of any dtype, moving its bytes exactly.
///
/// The bytes are viewed as the 2-D array `[outer, axis_len * inner * dtype.size()]`; output `i`
/// is the column band of its chunk, copied row by row. One `u8` code path serves every element
/// type, strings included.
pub fn split_tensor(input: &HostTensor, plan: &SplitPlan) -> Result<Vec<HostTensor>> {
    plan.check_input_shape(input.shape())?;
    let dtype = input.dtype();
    // The bytes exist, so the row sizes fit usize unless the tensor is empty (outer == 0).
    let (inner_bytes, stride) = plan.row_bytes(dtype.size())?;
    let (inner_bytes, stride) = match (usize::try_from(inner_bytes), usize::try_from(stride)) {
        (Ok(i), Ok(s)) => (i, s),
        _ => {
            return Err(SplitError::TooLarge(
                "rows do not fit this machine's address space".into(),
            ))
        }
    };
    let rows = ArrayView2::from_shape((plan.outer(), stride), input.bytes())
        .map_err(|e| SplitError::DataMismatch(e.to_string()))?;
    plan.chunks()
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let band = rows.slice(s![
                ..,
                c.start * inner_bytes..(c.start + c.len) * inner_bytes
            ]);
            let mut data = Vec::with_capacity(band.len());
            for row in band.outer_iter() {
                // Rows of a C-order view are contiguous: a straight copy.
                match row.as_slice() {
                    Some(bytes) => data.extend_from_slice(bytes),
                    None => data.extend(row.iter()),
                }
            }
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
