//! Rows placed by indices, on the CPU: the rules of [`RowsPlan`] applied index by index,
//! from the shapes alone (nothing shared with the GPU path's byte rows).

use crate::error::{Result, SplitError};
use crate::plan::{NegativeIndex, RowsKind, RowsPlan, RowsStatus};
use crate::tensor::HostTensor;
use crate::DType;

/// The rows of `data` that `indices` (i32, i64 or u32) pick, as `plan` says, and the status of
/// the indices out of range (whose rows are zeros), as the GPU gives them.
fn gather_rows(
    plan: &RowsPlan,
    data: &HostTensor,
    indices: &HostTensor,
) -> Result<(HostTensor, RowsStatus)> {
    let shape = plan.data_shape();
    let axis = plan.axis();
    let outer: usize = shape[..axis].iter().product();
    let len = shape[axis];
    let row = shape[axis + 1..].iter().product::<usize>() * data.dtype().size();
    let values = index_values(indices, false)?;
    let mut out = vec![0u8; outer * values.len() * row];
    let mut status = RowsStatus::default();
    for (i, &v) in values.iter().enumerate() {
        let picked = pick(v, len, plan.negative());
        // An output of no bytes reads no index (the GPU runs no dispatch for it).
        if picked.is_none() && outer * row > 0 {
            status.bad_indices += 1;
            status.first_bad.get_or_insert(i as u32);
        }
        let Some(r) = picked else { continue };
        for o in 0..outer {
            let from = (o * len + r) * row;
            let to = (o * values.len() + i) * row;
            out[to..to + row].copy_from_slice(&data.bytes()[from..from + row]);
        }
    }
    Ok((
        HostTensor::new(data.dtype(), plan.output_shape(), out)?,
        status,
    ))
}

/// The data with the rows of `updates` placed where `indices` (i32, i64 or u32) say, as `plan`
/// (a scatter) says, and the status of the indices out of range (whose updates are left
/// out), as the GPU gives them.
fn scatter_rows(
    plan: &RowsPlan,
    data: &HostTensor,
    indices: &HostTensor,
    updates: &HostTensor,
) -> Result<(HostTensor, RowsStatus)> {
    let shape = plan.data_shape();
    let len = shape[0];
    let row = shape[1..].iter().product::<usize>() * data.dtype().size();
    let mut out = data.bytes().to_vec();
    let mut status = RowsStatus::default();
    for (i, &v) in index_values(indices, false)?.iter().enumerate() {
        match pick(v, len, plan.negative()) {
            Some(r) => out[r * row..(r + 1) * row]
                .copy_from_slice(&updates.bytes()[i * row..(i + 1) * row]),
            // No update of no bytes reads its index (the GPU runs no chunk for it).
            None if row > 0 => {
                status.bad_indices += 1;
                status.first_bad.get_or_insert(i as u32);
            }
            None => {}
        }
    }
    Ok((HostTensor::new(data.dtype(), shape.to_vec(), out)?, status))
}

/// The row index `v` names on an axis of `len` rows, or `None` out of range.
fn pick(v: i64, len: usize, negative: NegativeIndex) -> Option<usize> {
    if negative == NegativeIndex::Padding && v == -1 {
        return None;
    }
    let len = len as i64;
    let v = match negative {
        NegativeIndex::FromEnd if v < 0 => v.checked_add(len)?,
        _ => v,
    };
    (0..len).contains(&v).then_some(v as usize)
}

/// Refuses tensors other than the plan's: data of its shape, indices i32, i64 or u32 of theirs,
/// and a scatter's updates (`Some` for a scatter alone) of theirs and the data's dtype.
fn check_tensors(
    plan: &RowsPlan,
    data: &HostTensor,
    indices: &HostTensor,
    updates: Option<&HostTensor>,
) -> Result<()> {
    let mismatch = |what: &str, got: &[usize], want: &[usize]| {
        Err(SplitError::DataMismatch(format!(
            "{what} has shape {got:?}; the plan's is {want:?}"
        )))
    };
    if data.shape() != plan.data_shape() {
        return mismatch("data", data.shape(), plan.data_shape());
    }
    if indices.shape() != plan.indices_shape() {
        return mismatch("indices", indices.shape(), plan.indices_shape());
    }
    match (plan.kind(), updates) {
        (RowsKind::Gather, None) => {}
        (RowsKind::Scatter, Some(u)) if u.shape() != plan.updates_shape() => {
            return mismatch("updates", u.shape(), &plan.updates_shape())
        }
        (RowsKind::Scatter, Some(u)) if u.dtype() != plan.rows_dtype(data.dtype()) => {
            return Err(SplitError::DataMismatch(format!(
                "updates of {} for data of {}: the plan's updates are {}",
                u.dtype(),
                data.dtype(),
                plan.rows_dtype(data.dtype())
            )))
        }
        (RowsKind::Scatter, Some(_)) => {}
        (kind, _) => {
            return Err(SplitError::DataMismatch(format!(
                "a {kind:?} takes updates: {}; given: {}",
                kind == RowsKind::Scatter,
                updates.is_some()
            )))
        }
    }
    plan.conversion(data.dtype())?;
    index_values(indices, false).map(|_| ())
}

/// The indices' values, i32, i64 or u32. A u32 is never negative; where `padding` (a paged
/// write's slots), `0xffffffff` is the padding, -1.
pub(super) fn index_values(indices: &HostTensor, padding: bool) -> Result<Vec<i64>> {
    match indices.dtype() {
        DType::I32 => Ok(indices
            .to_vec::<i32>()?
            .into_iter()
            .map(i64::from)
            .collect()),
        DType::I64 => indices.to_vec::<i64>(),
        DType::U32 => Ok(indices
            .to_vec::<u32>()?
            .into_iter()
            .map(|v| match v {
                u32::MAX if padding => -1,
                v => i64::from(v),
            })
            .collect()),
        other => Err(SplitError::DataMismatch(format!(
            "indices of {other}: indices are i32, i64 or u32"
        ))),
    }
}

impl RowsPlan {
    /// The rows this plan places, on the CPU, as the GPU gives them: `tensors` is a gather's
    /// `[data, indices]` (its output is the rows of `data` the indices, i32, i64 or u32, pick; the
    /// rows of indices out of range are zeros), a scatter's `[data, indices, updates]` (its
    /// output is `data` with the rows of `updates` placed where the indices say; updates
    /// whose index is out of range are left out). The status counts the indices out of
    /// range.
    ///
    /// ```
    /// use wgsl_split::{ops, HostTensor};
    /// let data = HostTensor::from_slice(&[3, 2], &[1u8, 2, 3, 4, 5, 6])?;
    /// let ids = HostTensor::from_slice(&[3], &[2i32, -1, 7])?;
    /// let (rows, status) = ops::gather(&[3, 2], &[3], 0)?.reference(&[data.clone(), ids])?;
    /// assert_eq!(rows.bytes(), &[5, 6, 5, 6, 0, 0]); // -1 is the last row; 7 is out of range
    /// assert_eq!((status.bad_indices, status.first_bad), (1, Some(2)));
    ///
    /// let ids = HostTensor::from_slice(&[2, 1], &[-1i64, 5])?;
    /// let updates = HostTensor::from_slice(&[2, 2], &[7u8, 8, 9, 9])?;
    /// let plan = ops::scatter_nd(&[3, 2], &[2, 1], &[2, 2])?;
    /// let (out, status) = plan.reference(&[data, ids, updates])?;
    /// assert_eq!(out.bytes(), &[1, 2, 3, 4, 7, 8]); // -1 is the last row; 5 is out of range
    /// assert_eq!((status.bad_indices, status.first_bad), (1, Some(1)));
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn reference(&self, tensors: &[HostTensor]) -> Result<(HostTensor, RowsStatus)> {
        use super::convert::convert_tensor;
        match self.host_tensors(tensors)? {
            (data, indices, Some(updates)) => {
                let updates = convert_tensor(updates, data.dtype())?;
                scatter_rows(self, data, indices, &updates)
            }
            (data, indices, None) => {
                let (out, status) = gather_rows(self, data, indices)?;
                Ok((convert_tensor(&out, self.rows_dtype(data.dtype()))?, status))
            }
        }
    }

    /// The data, the indices and a scatter's updates of `tensors`, checked against the plan.
    #[doc(hidden)]
    pub fn host_tensors<'t>(
        &self,
        tensors: &'t [HostTensor],
    ) -> Result<(&'t HostTensor, &'t HostTensor, Option<&'t HostTensor>)> {
        let (data, indices, updates) = match (self.kind(), tensors) {
            (RowsKind::Gather, [data, indices]) => (data, indices, None),
            (RowsKind::Scatter, [data, indices, updates]) => (data, indices, Some(updates)),
            (kind, _) => {
                return Err(SplitError::DataMismatch(format!(
                    "{} tensors for a {kind:?}: a gather takes [data, indices], a scatter \
                     [data, indices, updates]",
                    tensors.len()
                )))
            }
        };
        check_tensors(self, data, indices, updates)?;
        Ok((data, indices, updates))
    }
}
