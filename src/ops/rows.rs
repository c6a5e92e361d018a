//! Rows placed by indices on the device: ONNX Gather and get rows ([`RowsPlan`]).

use crate::error::Result;
use crate::plan::{NegativeIndex, RowsPlan};

/// ONNX Gather-1, -11 and -13: rows of `data_shape` on `axis` (in `[-rank, rank - 1]`) picked
/// by indices of `indices_shape` (any rank; rank 0 drops the axis); a negative index counts
/// from the end. The output's shape is `data[..axis] ++ indices ++ data[axis + 1..]`.
///
/// ```
/// use wgpu_split::ops;
/// let plan = ops::gather(&[32000, 4096], &[2, 256], 0)?; // an embedding lookup
/// assert_eq!(plan.output_shape(), vec![2, 256, 4096]);
/// let last = ops::gather(&[4, 5, 6], &[], -1)?; // one element of each row
/// assert_eq!(last.output_shape(), vec![4, 5]);
/// # Ok::<(), wgpu_split::SplitError>(())
/// ```
pub fn gather(data_shape: &[usize], indices_shape: &[usize], axis: i64) -> Result<RowsPlan> {
    RowsPlan::new(data_shape, axis, indices_shape, NegativeIndex::FromEnd)
}

/// Get rows (ggml's `GET_ROWS`, PyTorch's `index_select` on dim 0 and `embedding`): rows of
/// `data_shape` on axis 0 picked by indices of `indices_shape`; a negative index is out of
/// range.
///
/// ```
/// use wgpu_split::ops;
/// let plan = ops::get_rows(&[32000, 4096], &[512])?;
/// assert_eq!(plan.output_shape(), vec![512, 4096]);
/// # Ok::<(), wgpu_split::SplitError>(())
/// ```
pub fn get_rows(data_shape: &[usize], indices_shape: &[usize]) -> Result<RowsPlan> {
    RowsPlan::new(data_shape, 0, indices_shape, NegativeIndex::OutOfRange)
}
