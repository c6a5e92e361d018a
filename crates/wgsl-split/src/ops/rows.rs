//! Rows placed by indices on the device: ONNX Gather, get rows, ONNX ScatterND and set rows
//! ([`RowsPlan`]).

use crate::error::{Result, SplitError};
use crate::plan::{CacheLayout, NegativeIndex, PagedKvPlan, RowsKind, RowsPlan};

/// ONNX Gather-1, -11 and -13: rows of `data_shape` on `axis` (in `[-rank, rank - 1]`) picked
/// by indices of `indices_shape` (any rank; rank 0 drops the axis); a negative index counts
/// from the end. The output's shape is `data[..axis] ++ indices ++ data[axis + 1..]`.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::gather(&[32000, 4096], &[2, 256], 0)?; // an embedding lookup
/// assert_eq!(plan.output_shape(), vec![2, 256, 4096]);
/// let last = ops::gather(&[4, 5, 6], &[], -1)?; // one element of each row
/// assert_eq!(last.output_shape(), vec![4, 5]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
pub fn gather(data_shape: &[usize], indices_shape: &[usize], axis: i64) -> Result<RowsPlan> {
    RowsPlan::new(
        data_shape,
        axis,
        indices_shape,
        NegativeIndex::FromEnd,
        RowsKind::Gather,
    )
}

/// Get rows (ggml's `GET_ROWS`, PyTorch's `index_select` on dim 0 and `embedding`): rows of
/// `data_shape` on axis 0 picked by indices of `indices_shape`; a negative index is out of
/// range.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::get_rows(&[32000, 4096], &[512])?;
/// assert_eq!(plan.output_shape(), vec![512, 4096]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
pub fn get_rows(data_shape: &[usize], indices_shape: &[usize]) -> Result<RowsPlan> {
    RowsPlan::new(
        data_shape,
        0,
        indices_shape,
        NegativeIndex::OutOfRange,
        RowsKind::Gather,
    )
}

/// ONNX ScatterND-11, -13, -16 and -18 with `reduction = "none"` and indices of one
/// coordinate (`indices.shape[-1] == 1`): row `updates[i]` goes to row `indices[i]` of the
/// data, a negative index counting from the end. `updates_shape` must be
/// `indices.shape[..-1] ++ data.shape[1..]`. The output is the data with the rows placed.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::scatter_nd(&[4096, 4096], &[512, 1], &[512, 4096])?;
/// assert_eq!(plan.updates_shape(), vec![512, 4096]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
pub fn scatter_nd(
    data_shape: &[usize],
    indices_shape: &[usize],
    updates_shape: &[usize],
) -> Result<RowsPlan> {
    match indices_shape.last() {
        Some(1) => {}
        _ => {
            return Err(SplitError::BadIntegerInput {
                input: "indices",
                problem: format!(
                    "of shape {indices_shape:?}: ScatterND's indices here end in an axis of 1 \
                     (one coordinate per update, a row of the data's first axis)"
                ),
            })
        }
    }
    let plan = RowsPlan::new(
        data_shape,
        0,
        indices_shape,
        NegativeIndex::FromEnd,
        RowsKind::Scatter,
    )?;
    check_updates(&plan, updates_shape)?;
    Ok(plan)
}

/// Set rows (ggml's `SET_ROWS`, PyTorch's `index_copy_` on dim 0): row `i` of updates of
/// shape `indices.shape ++ data.shape[1..]` goes to row `indices[i]` of `data_shape`, in
/// place; a negative index is out of range.
///
/// ```
/// use wgsl_split::ops;
/// let plan = ops::set_rows(&[4096, 8, 128], &[64])?; // 64 tokens into a cache of 4096
/// assert_eq!(plan.updates_shape(), vec![64, 8, 128]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
pub fn set_rows(data_shape: &[usize], indices_shape: &[usize]) -> Result<RowsPlan> {
    RowsPlan::new(
        data_shape,
        0,
        indices_shape,
        NegativeIndex::OutOfRange,
        RowsKind::Scatter,
    )
}

/// Refuses updates other than the plan's.
fn check_updates(plan: &RowsPlan, updates_shape: &[usize]) -> Result<()> {
    let want = plan.updates_shape();
    if updates_shape != want {
        return Err(SplitError::DataMismatch(format!(
            "updates {updates_shape:?} must be indices.shape[..-1] ++ data.shape[1..] = {want:?}"
        )));
    }
    Ok(())
}

/// A paged KV write from the fused QKV projection ([`PagedKvPlan`]): `tokens` rows of
/// `q_heads` queries, `kv_heads` keys and `kv_heads` values of `head_dim` each; the queries
/// out packed, the keys and values into caches of `blocks` blocks of `block_size` slots in
/// `layout`, at each token's slot (-1: padding). One dispatch moves all three.
/// [`PagedKvPlan::with_heads_first_queries`] writes the queries `[q_heads, tokens, head_dim]`.
///
/// ```
/// use wgsl_split::{ops, CacheLayout};
/// // Llama-3-8B's decode step: 64 tokens, 32 query heads, 8 KV heads of 128, blocks of 16.
/// let plan = ops::paged_kv_write(64, 32, 8, 128, 4096, 16, CacheLayout::Nhd)?;
/// assert_eq!(plan.qkv_shape(), vec![64, 6144]);
/// assert_eq!(plan.cache_shape(), vec![4096, 16, 8, 128]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
pub fn paged_kv_write(
    tokens: usize,
    q_heads: usize,
    kv_heads: usize,
    head_dim: usize,
    blocks: usize,
    block_size: usize,
    layout: CacheLayout,
) -> Result<PagedKvPlan> {
    PagedKvPlan::new(PagedKvPlan {
        tokens,
        q_heads,
        kv_heads,
        head_dim,
        blocks,
        block_size,
        layout,
        heads_first: false,
        queries: true,
        kv_strides: None,
        rows_dtype: None,
    })
}
