//! [`RowsPlan`]: rows placed by indices that live on the device (ONNX Gather, get rows), and
//! [`RowsStatus`], what the shader records of indices out of range. Pure shape arithmetic: the
//! indices' values are never seen here.

use crate::error::{Result, SplitError};
use crate::gather::builds::Convert;
use crate::tensor::element_count;
use crate::DType;

/// What a negative index means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum NegativeIndex {
    /// It counts from the end of the axis: `-1` is the last row (ONNX Gather).
    FromEnd,
    /// It is out of range, as an index at or past the axis length is (get rows, ggml's
    /// `GET_ROWS`).
    OutOfRange,
    /// `-1` is padding: its rows are left as they are and not counted; any other negative is
    /// out of range (a paged KV cache's slot mapping, vLLM's).
    Padding,
}

/// Which way rows placed by indices move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum RowsKind {
    /// Rows picked from the data: the output row `(o, i)` is row `indices[i]` of the data's
    /// block `o` ([`crate::ops::gather`], [`crate::ops::get_rows`]).
    Gather,
    /// Rows placed into the data, in place: row `i` of the updates goes to row `indices[i]`
    /// ([`crate::ops::scatter_nd`], [`crate::ops::set_rows`]); the other rows keep their
    /// bytes. Which of two updates a row named twice holds is unspecified; every other byte
    /// is exact.
    Scatter,
}

/// Rows of `data` on `axis` picked (a gather) or placed (a scatter, axis 0) by `indices` of
/// any shape (i32, i64 or u32, in a device buffer). A gather's output is `data.shape[..axis] ++
/// indices.shape ++ data.shape[axis + 1..]`; a scatter's updates are `indices.shape` (less a
/// last axis of 1, ONNX ScatterND's) `++ data.shape[1..]`, and its output is the data.
///
/// An index out of range (past the axis, below `-len` where negatives count from the end,
/// any negative where they do not, an i64 whose high word is not its low word's sign) moves
/// no byte (a gather's rows of it are zeros, a scatter leaves the data as it is), and the
/// status buffer counts it ([`RowsStatus`]). No index is clamped, wrapped or cut to 32 bits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowsPlan {
    data_shape: Vec<usize>,
    axis: usize,
    indices_shape: Vec<usize>,
    negative: NegativeIndex,
    kind: RowsKind,
    rows_dtype: Option<DType>,
}

/// Most rows on a gathered axis: an index in range is below it, so every valid index is a
/// non-negative i32, and a row index fits the shader's u32 words with room for the mark of
/// one out of range.
#[doc(hidden)]
pub const MAX_GATHER_AXIS: usize = (1 << 31) - 1;

impl RowsPlan {
    /// Plans rows of `data_shape` on `axis` (in `[-rank, rank - 1]`) picked by indices of
    /// `indices_shape` (rank 0 picks one row and drops the axis), negatives read as
    /// `negative` says.
    #[doc(hidden)]
    pub fn new(
        data_shape: &[usize],
        axis: i64,
        indices_shape: &[usize],
        negative: NegativeIndex,
        kind: RowsKind,
    ) -> Result<Self> {
        let axis = crate::plan::normalize_axis(axis, data_shape.len())?;
        if data_shape[axis] > MAX_GATHER_AXIS {
            return Err(SplitError::TooLarge(format!(
                "axis {axis} of data {data_shape:?} has {} rows; indexed rows take at most \
                 {MAX_GATHER_AXIS} (2^31 - 1)",
                data_shape[axis]
            )));
        }
        element_count(data_shape)?;
        element_count(indices_shape)?;
        let plan = RowsPlan {
            data_shape: data_shape.to_vec(),
            axis,
            indices_shape: indices_shape.to_vec(),
            negative,
            kind,
            rows_dtype: None,
        };
        element_count(&plan.picked_shape())?;
        Ok(plan)
    }

    /// The data tensor's shape.
    pub fn data_shape(&self) -> &[usize] {
        &self.data_shape
    }

    /// The gathered axis, in `[0, rank)`.
    pub fn axis(&self) -> usize {
        self.axis
    }

    /// The indices' shape.
    pub fn indices_shape(&self) -> &[usize] {
        &self.indices_shape
    }

    /// What a negative index means.
    #[doc(hidden)]
    pub fn negative(&self) -> NegativeIndex {
        self.negative
    }

    /// Which way the rows move.
    #[doc(hidden)]
    pub fn kind(&self) -> RowsKind {
        self.kind
    }

    /// The output's shape: a gather's `data[..axis] ++ indices ++ data[axis + 1..]`, a
    /// scatter's the data's.
    pub fn output_shape(&self) -> Vec<usize> {
        match self.kind {
            RowsKind::Gather => self.picked_shape(),
            RowsKind::Scatter => self.data_shape.clone(),
        }
    }

    /// A scatter's updates: `indices ++ data[1..]`, less the indices' last axis of 1 where
    /// they have one (ONNX ScatterND's tuples of one index). A gather's output shape.
    pub fn updates_shape(&self) -> Vec<usize> {
        self.picked_shape()
    }

    /// The rows the indices pick, in the indices' shape (less a scatter's tuple axis).
    fn picked_shape(&self) -> Vec<usize> {
        let mut shape = self.data_shape[..self.axis].to_vec();
        match (self.kind, self.indices_shape.split_last()) {
            (RowsKind::Scatter, Some((1, places))) => shape.extend_from_slice(places),
            _ => shape.extend_from_slice(&self.indices_shape),
        }
        shape.extend_from_slice(&self.data_shape[self.axis + 1..]);
        shape
    }

    /// The rows on the other side of the data, a gather's output or a scatter's updates, as
    /// `dtype`, converted on the way: f32 where the data is f16 or bf16 (a gather reads the
    /// data's halves into f32, a scatter rounds its f32 updates into the data's halves to
    /// nearest even; a NaN stays a NaN). The data's dtype is the one given to `prepare`;
    /// another pair is refused there.
    ///
    /// ```
    /// use wgsl_split::{ops, DType};
    /// // ggml's SET_ROWS: f32 activations into an f16 cache.
    /// let plan = ops::set_rows(&[4096, 4096], &[512])?.with_rows_dtype(DType::F32);
    /// assert_eq!(plan.rows_dtype(DType::F16), DType::F32);
    /// let [updates, _, cache] = plan.bytes(DType::F16, DType::I64)?;
    /// assert_eq!((updates, cache), (512 * 4096 * 4, 4096 * 4096 * 2));
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn with_rows_dtype(self, dtype: DType) -> Self {
        Self {
            rows_dtype: Some(dtype),
            ..self
        }
    }

    /// The dtype of a gather's output or a scatter's updates for data of `data`.
    pub fn rows_dtype(&self, data: DType) -> DType {
        self.rows_dtype.unwrap_or(data)
    }

    /// The conversion the shader reads through for data of `data` (`None`: one dtype), and
    /// the dtype it writes.
    #[doc(hidden)]
    pub fn conversion(&self, data: DType) -> Result<(Option<Convert>, DType)> {
        let rows = self.rows_dtype(data);
        Ok(match self.kind {
            RowsKind::Gather => (Convert::of(data, rows)?, rows),
            RowsKind::Scatter => (Convert::of(rows, data)?, data),
        })
    }

    /// How many indices pick rows (the indices' elements).
    pub fn index_count(&self) -> usize {
        self.indices_shape.iter().product()
    }

    /// The rows of this plan for elements of `dtype`, in bytes.
    #[doc(hidden)]
    pub fn rows(&self, dtype: DType) -> Result<GatherRows> {
        let outer: usize = self.data_shape[..self.axis].iter().product();
        let inner: usize = self.data_shape[self.axis + 1..].iter().product();
        let row_bytes = (inner as u64)
            .checked_mul(dtype.size() as u64)
            .ok_or_else(|| SplitError::TooLarge(format!("rows of {inner} {dtype} elements")))?;
        let rows = GatherRows {
            outer: outer as u64,
            capacity: self.data_shape[self.axis] as u64,
            count: self.index_count() as u64,
            row_bytes,
        };
        rows.output_bytes()?;
        rows.data_bytes()?;
        Ok(rows)
    }
}

/// A plan's rows in bytes: `outer` blocks of `capacity` rows in the data, `outer` blocks of
/// `count` rows in the output, each row `row_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct GatherRows {
    pub outer: u64,
    pub capacity: u64,
    pub count: u64,
    pub row_bytes: u64,
}

impl GatherRows {
    /// Bytes of the output.
    pub fn output_bytes(&self) -> Result<u64> {
        self.product(self.count, "output")
    }

    /// Bytes of the data.
    pub fn data_bytes(&self) -> Result<u64> {
        self.product(self.capacity, "data")
    }

    fn product(&self, rows: u64, what: &str) -> Result<u64> {
        self.outer
            .checked_mul(rows)
            .and_then(|r| r.checked_mul(self.row_bytes))
            .ok_or_else(|| {
                SplitError::TooLarge(format!(
                    "the {what}'s {} x {rows} rows of {} bytes overflow u64",
                    self.outer, self.row_bytes
                ))
            })
    }
}

/// What the shader recorded of the indices out of range ([`RowsPlan`]): how many there
/// were, and the first of them (its place in the indices, flattened). Read from a status
/// buffer of [`RowsStatus::BYTES`] ([`RowsStatus::from_bytes`]), which the caller zeroes
/// before the dispatches it checks: each dispatch adds to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowsStatus {
    /// Indices out of range.
    pub bad_indices: u32,
    /// The first of them, `None` where there is none.
    pub first_bad: Option<u32>,
}

impl RowsStatus {
    /// Bytes of a status buffer: two u32 words, the count and the first index's place
    /// inverted (`!place`, so that zeroed words read as none and the smallest place wins an
    /// atomic max).
    pub const BYTES: u64 = 8;

    /// The status in a status buffer's bytes (little-endian words); `None` where fewer than
    /// [`RowsStatus::BYTES`] are given.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        let word = |k: usize| {
            Some(u32::from_le_bytes(
                bytes.get(4 * k..4 * k + 4)?.try_into().ok()?,
            ))
        };
        let (count, first) = (word(0)?, word(1)?);
        Some(RowsStatus {
            bad_indices: count,
            first_bad: (count > 0).then_some(!first),
        })
    }

    /// Whether every index was in range.
    pub fn is_clean(&self) -> bool {
        self.bad_indices == 0
    }
}
