//! The CPU reference: the same splits (and concats, their inverse) computed on the host, for
//! any element type.
//!
//! [`split_array`] slices elements with ndarray and shares nothing with the GPU path but the
//! [`SplitPlan`]; [`SplitPlan::reference`] copies bytes along the plan's byte rows, and is
//! checked against [`split_array`] in the tests below, so agreement with the GPU is a real
//! check. Each plan's `reference` method is its operation on host tensors:
//! [`SplitPlan::reference`], [`ConcatPlan::reference`],
//! [`RowsPlan::reference`](crate::RowsPlan::reference) and
//! [`PagedKvPlan::reference`](crate::PagedKvPlan::reference).

use crate::error::{Result, SplitError};
use crate::plan::bytes::ByteRows;
use crate::plan::views::{check_view, Access};
use crate::plan::{ConcatPlan, PartView, SplitPlan};
use crate::tensor::HostTensor;
use crate::DType;
mod convert;
mod paged;
mod rows;
pub use paged::PagedKvOutput;

use ndarray::{s, ArrayD, ArrayView2, ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder, Slice};

/// Splits an ndarray array of any element type (numbers, strings, ...) as `plan` says.
///
/// ```
/// use ndarray::ArrayD;
/// use wgsl_split::{ops, reference, IntTensor};
/// let names = ArrayD::from_shape_vec(vec![3], vec!["a".to_string(), "b".into(), "c".into()]).unwrap();
/// let plan = ops::split_to_sequence(&[3], 0, Some(&IntTensor::scalar(2)), true).unwrap();
/// let parts = reference::split_array(names.view(), &plan).unwrap();
/// assert_eq!(parts[1].as_slice().unwrap(), &["c".to_string()]);
/// ```
pub fn split_array<T: Clone>(input: ArrayViewD<'_, T>, plan: &SplitPlan) -> Result<Vec<ArrayD<T>>> {
    plan.check_whole_shape(input.shape())?;
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

impl SplitPlan {
    /// Splits a host tensor of any dtype on the CPU, moving its bytes exactly: what the GPU
    /// gives, and what `Plan::verify` checks it against.
    ///
    /// The bytes are viewed as the 2-D array `[rows, stride]` of the plan's byte rows;
    /// output `i` is the column band of its rows, copied row by row. One `u8` code path
    /// serves every element type, strings included.
    ///
    /// ```
    /// use wgsl_split::{ops, HostTensor, IntTensor};
    /// let x = HostTensor::from_slice(&[2, 3], &[1u8, 2, 3, 4, 5, 6])?;
    /// let parts = ops::split(x.shape(), &IntTensor::scalar(1), 3)?.reference(&x)?;
    /// assert_eq!(parts[2].bytes(), &[3, 6]);
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn reference(&self, input: &HostTensor) -> Result<Vec<HostTensor>> {
        split_tensor(input, self)
    }
}

impl ConcatPlan {
    /// Concatenates host tensors of any dtype on the CPU, moving their bytes exactly:
    /// [`SplitPlan::reference`] run backwards.
    pub fn reference(&self, inputs: &[HostTensor]) -> Result<HostTensor> {
        concat_tensors(inputs, self)
    }
}

/// [`SplitPlan::reference`].
pub(crate) fn split_tensor(input: &HostTensor, plan: &SplitPlan) -> Result<Vec<HostTensor>> {
    let mut data = Vec::new();
    split_bytes_into(input, plan, &mut data)?;
    let dtype = input.dtype();
    data.into_iter()
        .enumerate()
        .map(|(i, bytes)| HostTensor::new(dtype, plan.part_shape(i), bytes))
        .collect()
}

/// [`SplitPlan::reference`]'s bytes, into `outputs` (one `Vec` per output, resized to the plan's
/// count): their memory is reused, so a caller splitting window after window allocates once.
#[doc(hidden)]
pub fn split_bytes_into(
    input: &HostTensor,
    plan: &SplitPlan,
    outputs: &mut Vec<Vec<u8>>,
) -> Result<()> {
    plan.check_whole_shape(input.shape())?;
    let dtype = input.dtype();
    let bytes = ByteRows::new(plan, dtype.size())?;
    // The bytes exist, so the row sizes fit usize unless the tensor is empty (no rows).
    let to_usize = |n: u64| {
        usize::try_from(n).map_err(|_| {
            SplitError::TooLarge("rows do not fit this machine's address space".into())
        })
    };
    let rows = ArrayView2::from_shape(
        (to_usize(bytes.rows)?, to_usize(bytes.stride)?),
        input.bytes(),
    )
    .map_err(|e| SplitError::DataMismatch(e.to_string()))?;
    outputs.resize_with(plan.num_parts(), Vec::new);
    outputs.iter_mut().for_each(Vec::clear);
    for o in &bytes.outputs {
        let start = to_usize(o.offset)?;
        let band = rows.slice(s![.., start..start + to_usize(o.row_bytes)?]);
        let out = &mut outputs[o.output];
        out.reserve_exact(band.len());
        for row in band.outer_iter() {
            // Rows of a C-order view are contiguous: a straight copy.
            match row.as_slice() {
                Some(bytes) => out.extend_from_slice(bytes),
                None => out.extend(row.iter()),
            }
        }
    }
    Ok(())
}

/// Concatenates ndarray arrays of any element type as the concat `plan` says
/// ([`crate::ops::concat()`]): joined along its axis, or stacked on a new one.
pub fn concat_arrays<T: Clone>(
    inputs: &[ArrayViewD<'_, T>],
    plan: &ConcatPlan,
) -> Result<ArrayD<T>> {
    let axis = Axis(plan.axis());
    let joined = if !plan.stacks() {
        ndarray::concatenate(axis, inputs)
    } else {
        ndarray::stack(axis, inputs)
    };
    let joined = joined.map_err(|e| SplitError::DataMismatch(format!("concat: {e}")))?;
    plan.split().check_whole_shape(joined.shape())?;
    Ok(joined.as_standard_layout().into_owned())
}

/// [`ConcatPlan::reference`]: each input's rows copied into its column band of the output's
/// byte rows.
pub(crate) fn concat_tensors(inputs: &[HostTensor], plan: &ConcatPlan) -> Result<HostTensor> {
    let dtype = plan.check_inputs(inputs)?;
    let bytes = ByteRows::new(plan.split(), dtype.size())?;
    let mut out = vec![0u8; crate::tensor::byte_count(plan.whole_shape(), dtype)?];
    for o in &bytes.outputs {
        // The bytes exist on the host, so every count fits usize.
        let (start, len) = (o.offset as usize, o.row_bytes as usize);
        let rows = inputs[o.output].bytes().chunks_exact(len);
        for (row, part) in out.chunks_exact_mut(bytes.stride as usize).zip(rows) {
            row[start..start + len].copy_from_slice(part);
        }
    }
    HostTensor::new(dtype, plan.whole_shape().to_vec(), out)
}

/// Splits `input` as `plan` says and writes output `i` through `views[i]` into `regions[i]`,
/// leaving every other byte of the regions as it was: what a split into views writes on the
/// GPU. Each view is checked first ([`PartView`]'s rules).
///
/// ```
/// use wgsl_split::{ops, reference, HostTensor, IntTensor, PartView};
/// // [2, 3] into two [2, 1] and [2, 2]; the second stored transposed, [2, 2].
/// let input = HostTensor::from_slice(&[2, 3], &[1u8, 2, 3, 4, 5, 6])?;
/// let plan = ops::variadic_split(&[2, 3], &IntTensor::scalar(1), &IntTensor::vector(vec![1, 2]))?;
/// let views = [PartView::contiguous(&[2, 1]), PartView::within(&[2, 2], &[2, 2], &[1, 0], &[0, 0])?];
/// let mut regions = vec![vec![0u8; 2], vec![0u8; 4]];
/// reference::split_into_views(&input, &plan, &views, &mut regions)?;
/// assert_eq!(regions[1], [2, 5, 3, 6]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
pub fn split_into_views(
    input: &HostTensor,
    plan: &SplitPlan,
    views: &[PartView],
    regions: &mut [Vec<u8>],
) -> Result<()> {
    let n = plan.num_parts();
    check_counts("outputs", n, views.len(), regions.len())?;
    let es = input.dtype().size();
    for (i, (part, (view, region))) in split_tensor(input, plan)?
        .iter()
        .zip(views.iter().zip(regions.iter_mut()))
        .enumerate()
    {
        let elements = (region.len() / es) as u64;
        check_view(
            &format!("output {i}"),
            part.shape(),
            view,
            elements,
            Access::Write,
        )?;
        if part.bytes().is_empty() {
            continue;
        }
        let (shape, strides) = element_bytes(part.shape(), &view.strides, es);
        let start = view.offset as usize * es;
        let mut to =
            ArrayViewMutD::from_shape(IxDyn(&shape).strides(IxDyn(&strides)), &mut region[start..])
                .map_err(|e| SplitError::BadView(format!("output {i}: {e}")))?;
        let from = ArrayViewD::from_shape(IxDyn(&shape), part.bytes())
            .map_err(|e| SplitError::DataMismatch(format!("output {i}: {e}")))?;
        to.assign(&from);
    }
    Ok(())
}

/// Concatenates the inputs of `plan`, input `k` read through `views[k]` from `regions[k]`
/// (`dtype` elements): what a concat from views computes on the GPU. Views are only read, so
/// their elements may repeat (a stride of 0).
pub fn concat_from_views(
    plan: &ConcatPlan,
    dtype: DType,
    views: &[PartView],
    regions: &[&[u8]],
) -> Result<HostTensor> {
    let n = plan.num_parts();
    check_counts("inputs", n, views.len(), regions.len())?;
    let es = dtype.size();
    let inputs = (0..n)
        .map(|k| {
            let (shape, view, region) = (plan.part_shape(k), &views[k], regions[k]);
            let elements = (region.len() / es) as u64;
            check_view(&format!("input {k}"), &shape, view, elements, Access::Read)?;
            if shape.contains(&0) {
                return HostTensor::new(dtype, shape, Vec::new());
            }
            let (dims, strides) = element_bytes(&shape, &view.strides, es);
            let start = view.offset as usize * es;
            let from =
                ArrayViewD::from_shape(IxDyn(&dims).strides(IxDyn(&strides)), &region[start..])
                    .map_err(|e| SplitError::BadView(format!("input {k}: {e}")))?;
            HostTensor::new(dtype, shape, from.iter().copied().collect())
        })
        .collect::<Result<Vec<_>>>()?;
    concat_tensors(&inputs, plan)
}

/// One view and one region per part.
fn check_counts(parts: &str, n: usize, views: usize, regions: usize) -> Result<()> {
    if views != n || regions != n {
        return Err(SplitError::BadView(format!(
            "{views} views and {regions} regions for {n} {parts}: one each"
        )));
    }
    Ok(())
}

/// A checked view of `shape` as an array of bytes: the element's bytes a last axis. Axes of
/// one index take stride 0 (their stride is never used, and may not fit `usize`).
fn element_bytes(shape: &[usize], strides: &[u64], es: usize) -> (Vec<usize>, Vec<usize>) {
    let mut dims = shape.to_vec();
    dims.push(es);
    let mut bytes: Vec<usize> = shape
        .iter()
        .zip(strides)
        .map(|(&n, &s)| if n > 1 { s as usize * es } else { 0 })
        .collect();
    bytes.push(1);
    (dims, bytes)
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
    fn byte_rows_agree_with_element_slicing() {
        // Every axis of a [3, 4, 5] u32 tensor, with empty and uneven parts.
        let values: Vec<u32> = (0..60u32).map(|i| i.wrapping_mul(2654435761)).collect();
        let t = HostTensor::from_slice(&[3, 4, 5], &values).unwrap();
        let array = ArrayD::from_shape_vec(vec![3, 4, 5], values).unwrap();
        for (axis, lengths) in [(0, vec![1, 0, 2]), (1, vec![3, 1]), (2, vec![2, 0, 2, 1])] {
            let lengths = IntTensor::vector(lengths);
            let plan = ops::variadic_split(&[3, 4, 5], &IntTensor::scalar(axis), &lengths).unwrap();
            let bytes = split_tensor(&t, &plan).unwrap();
            let elements = split_array(array.view(), &plan).unwrap();
            for (b, e) in bytes.iter().zip(&elements) {
                assert_eq!(b.shape(), e.shape());
                assert_eq!(
                    b.to_vec::<u32>().unwrap(),
                    e.iter().copied().collect::<Vec<_>>()
                );
            }
        }
    }

    #[test]
    fn concat_undoes_split_and_agrees_with_ndarray() {
        let values: Vec<u16> = (0..60u16).map(|i| i.wrapping_mul(977)).collect();
        let t = HostTensor::from_slice(&[3, 4, 5], &values).unwrap();
        let array = ArrayD::from_shape_vec(vec![3, 4, 5], values).unwrap();
        let sequence = ops::split_to_sequence(&[3, 4, 5], 2, None, false).unwrap();
        let uneven = IntTensor::vector(vec![1, 0, 3]);
        let variadic = ops::variadic_split(&[3, 4, 5], &IntTensor::scalar(1), &uneven).unwrap();
        for plan in [sequence, variadic] {
            let parts = split_tensor(&t, &plan).unwrap();
            let concat = plan.inverse();
            assert_eq!(concat_tensors(&parts, &concat).unwrap(), t);
            let views: Vec<ArrayD<u16>> = parts.iter().map(|p| p.to_array().unwrap()).collect();
            let views: Vec<ArrayViewD<'_, u16>> = views.iter().map(|v| v.view()).collect();
            assert_eq!(concat_arrays(&views, &concat).unwrap(), array);
        }
        let plan = ops::concat(&[[2], [3]], 0).unwrap();
        let a = HostTensor::from_slice(&[2], &[1u8, 2]).unwrap();
        let b = HostTensor::from_slice(&[3], &[3i8, 4, 5]).unwrap();
        assert!(matches!(
            concat_tensors(&[a.clone(), b], &plan),
            Err(SplitError::DataMismatch(_))
        ));
        assert!(concat_tensors(&[a], &plan).is_err());
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
