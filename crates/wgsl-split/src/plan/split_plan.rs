//! [`SplitPlan`]: the chunks of one split over the view `[outer, axis_len, inner]`, validated.

use crate::error::{Result, SplitError};
use crate::tensor::element_count;
use crate::DType;
use std::sync::Arc;

/// Most outputs one split may have: 1,048,576, ten times the largest sequences inference
/// graphs produce. Every output costs host memory (chunk, layout range, table entry: about
/// 80 bytes), so counts beyond this (say, a sequence of 2^63 chunks of an empty axis) are
/// refused before anything is allocated.
#[doc(hidden)]
pub const MAX_OUTPUTS: usize = 1 << 20;

/// Refuses a split into more than [`MAX_OUTPUTS`] outputs.
#[doc(hidden)]
pub fn check_output_count(count: u128) -> Result<()> {
    if count > MAX_OUTPUTS as u128 {
        return Err(SplitError::TooLarge(format!(
            "{count} outputs exceed the limit of {MAX_OUTPUTS} outputs per split"
        )));
    }
    Ok(())
}

/// Converts an axis in `[-rank, rank-1]` to `[0, rank)`.
#[doc(hidden)]
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize> {
    if rank == 0 {
        return Err(SplitError::RankZero);
    }
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(SplitError::AxisOutOfRange { axis, rank });
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// One output's range on the split axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct Chunk {
    /// First index on the axis.
    pub start: usize,
    /// Number of indices on the axis (may be 0).
    pub len: usize,
}

/// Output shapes and chunk offsets of one split, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitPlan {
    input_shape: Vec<usize>,
    axis: usize,
    /// Shared by the plan's clones: a kept route's copy of a plan of thousands of outputs
    /// costs no copy of them, and comparing a plan with its clone stops at the pointer.
    chunks: Arc<[Chunk]>,
    keep_axis: bool,
}

impl SplitPlan {
    /// Plans outputs of the given lengths, in order, along `axis` (already normalised).
    ///
    /// `keep_axis = false` drops the split axis from every output shape; it needs every length
    /// to be 1 (ONNX SplitToSequence with `keepdims = 0`).
    pub fn from_lengths(
        input_shape: &[usize],
        axis: usize,
        lengths: &[usize],
        keep_axis: bool,
    ) -> Result<Self> {
        if input_shape.is_empty() {
            return Err(SplitError::RankZero);
        }
        if axis >= input_shape.len() {
            return Err(SplitError::AxisOutOfRange {
                axis: axis as i64,
                rank: input_shape.len(),
            });
        }
        // outer and axis_len * inner must each be countable; their product may still be
        // unrepresentable when one side is zero, so the layout checks bytes again.
        element_count(&input_shape[..axis])?;
        element_count(&input_shape[axis..])?;
        check_output_count(lengths.len() as u128)?;
        let axis_len = input_shape[axis];
        let mut chunks = Vec::with_capacity(lengths.len());
        let mut start = 0usize;
        for &len in lengths {
            chunks.push(Chunk { start, len });
            start = start.saturating_add(len);
        }
        if start != axis_len {
            let as_i64: Vec<i64> = lengths.iter().map(|&l| l as i64).collect();
            return Err(SplitError::LengthsSumMismatch {
                input: "lengths",
                sum: lengths.iter().map(|&l| l as i128).sum(),
                lengths: as_i64,
                axis,
                length: axis_len,
            });
        }
        if !keep_axis && lengths.iter().any(|&l| l != 1) {
            return Err(SplitError::ConflictingInputs(
                "dropping the split axis needs every chunk to have length 1".into(),
            ));
        }
        Ok(Self {
            input_shape: input_shape.to_vec(),
            axis,
            chunks: chunks.into(),
            keep_axis,
        })
    }

    /// The whole tensor's shape: the split's input. (A split and a concat name their tensors
    /// alike: the whole, and its parts.)
    pub fn whole_shape(&self) -> &[usize] {
        &self.input_shape
    }

    /// The split axis, in `[0, rank)`.
    pub fn axis(&self) -> usize {
        self.axis
    }

    /// The chunks, one per output, in output order.
    #[doc(hidden)]
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Whether outputs keep the split axis (false only for SplitToSequence `keepdims = 0`).
    pub fn keep_axis(&self) -> bool {
        self.keep_axis
    }

    /// Number of parts: the split's outputs.
    pub fn num_parts(&self) -> usize {
        self.chunks.len()
    }

    /// Each part's length on the axis of the whole tensor, in order (1 for each part of a
    /// split that drops the axis: SplitToSequence with `keepdims = 0`). They add up to
    /// [`SplitPlan::axis_len`].
    pub fn lengths(&self) -> Vec<usize> {
        self.chunks.iter().map(|c| c.len).collect()
    }

    /// Product of the dimensions before the axis.
    pub fn outer(&self) -> usize {
        self.input_shape[..self.axis].iter().product()
    }

    /// Length of the split axis.
    pub fn axis_len(&self) -> usize {
        self.input_shape[self.axis]
    }

    /// Product of the dimensions after the axis.
    pub fn inner(&self) -> usize {
        self.input_shape[self.axis + 1..].iter().product()
    }

    /// Bytes of one index on the axis (`inner * elem_size`) and of one outer row of the input
    /// (`axis_len * inner * elem_size`), or an error if they overflow. They can overflow even
    /// for an empty tensor, when `outer` is 0.
    #[doc(hidden)]
    pub fn row_bytes(&self, elem_size: usize) -> Result<(u64, u64)> {
        let inner = (self.inner() as u64).checked_mul(elem_size as u64);
        let stride = inner.and_then(|i| i.checked_mul(self.axis_len() as u64));
        match (inner, stride) {
            (Some(inner), Some(stride)) => Ok((inner, stride)),
            _ => Err(SplitError::TooLarge(format!(
                "rows of shape {:?} with {elem_size}-byte elements overflow a 64-bit byte count",
                &self.input_shape[self.axis..]
            ))),
        }
    }

    /// Bytes of part `i` (output `i`) of `dtype` (`outer * len * inner` elements), without
    /// building its shape; an error if the count overflows. `dtype` is the element type
    /// (`DType::F32`), not its size: `DType::Utf32(4)` is a string of 4 characters, 16 bytes
    /// (0.1's `output_bytes(i, 4)` is `part_bytes(i, DType::F32)`).
    pub fn part_bytes(&self, i: usize, dtype: DType) -> Result<u64> {
        self.part_bytes_sized(i, dtype.size())
    }

    /// [`SplitPlan::part_bytes`] for `elem_size`-byte elements.
    #[doc(hidden)]
    pub fn part_bytes_sized(&self, i: usize, elem_size: usize) -> Result<u64> {
        let (inner_bytes, _) = self.row_bytes(elem_size)?;
        (self.outer() as u64)
            .checked_mul(self.chunks[i].len as u64)
            .and_then(|rows| rows.checked_mul(inner_bytes))
            .ok_or_else(|| {
                SplitError::TooLarge(format!(
                    "output {i} of shape {:?} with {elem_size}-byte elements overflows a 64-bit byte count",
                    self.part_shape(i)
                ))
            })
    }

    /// Shape of part `i`: output `i`.
    pub fn part_shape(&self, i: usize) -> Vec<usize> {
        let mut shape = self.input_shape.clone();
        if self.keep_axis {
            shape[self.axis] = self.chunks[i].len;
        } else {
            shape.remove(self.axis);
        }
        shape
    }

    /// Checks that data of `shape` is the whole tensor this plan was made for.
    pub fn check_whole_shape(&self, shape: &[usize]) -> Result<()> {
        if shape != self.input_shape.as_slice() {
            return Err(SplitError::DataMismatch(format!(
                "the plan is for shape {:?}, the data has shape {:?}",
                self.input_shape, shape
            )));
        }
        Ok(())
    }

    /// Shapes of all parts, in order.
    pub fn part_shapes(&self) -> Vec<Vec<usize>> {
        (0..self.num_parts()).map(|i| self.part_shape(i)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn view_and_shapes() {
        let p = SplitPlan::from_lengths(&[6, 12, 10, 24], 1, &[4, 4, 4], true).unwrap();
        assert_eq!((p.outer(), p.axis_len(), p.inner()), (6, 12, 240));
        assert_eq!(p.chunks()[2], Chunk { start: 8, len: 4 });
        assert_eq!(p.part_shapes(), vec![vec![6, 4, 10, 24]; 3]);
    }

    #[test]
    fn drop_axis_and_zero_lengths() {
        let p = SplitPlan::from_lengths(&[2, 3], 1, &[1, 1, 1], false).unwrap();
        assert_eq!(p.part_shape(0), vec![2]);
        // A dropped axis: each part's length is 1, in the whole's axis, and the concat back
        // says the same.
        assert_eq!(p.lengths(), vec![1, 1, 1]);
        assert_eq!(p.inverse().lengths(), vec![1, 1, 1]);
        let p = SplitPlan::from_lengths(&[0, 3], 0, &[0, 0], true).unwrap();
        assert_eq!(p.part_shapes(), vec![vec![0, 3], vec![0, 3]]);
        assert_eq!(p.lengths(), vec![0, 0]);
        let p = SplitPlan::from_lengths(&[6, 12], 1, &[4, 0, 8], true).unwrap();
        assert_eq!(p.lengths(), vec![4, 0, 8]);
        assert!(SplitPlan::from_lengths(&[2, 3], 1, &[1, 2], false).is_err());
    }

    #[test]
    fn part_bytes_match_the_part_shapes() {
        let plans = [
            SplitPlan::from_lengths(&[6, 12, 10, 24], 1, &[4, 0, 8], true).unwrap(),
            SplitPlan::from_lengths(&[2, 3, 5], 1, &[1, 1, 1], false).unwrap(),
            SplitPlan::from_lengths(&[0, 3], 1, &[2, 1], true).unwrap(),
        ];
        for p in &plans {
            for i in 0..p.num_parts() {
                let elements: usize = p.part_shape(i).iter().product();
                assert_eq!(p.part_bytes(i, DType::F64).unwrap(), elements as u64 * 8);
            }
        }
        let huge = SplitPlan::from_lengths(&[1 << 40, 1 << 20, 2], 1, &[1 << 20], true).unwrap();
        assert!(matches!(
            huge.part_bytes(0, DType::Complex128),
            Err(SplitError::TooLarge(_))
        ));
    }

    #[test]
    fn sum_and_axis_are_checked() {
        let e = SplitPlan::from_lengths(&[6], 0, &[2, 2], true).unwrap_err();
        assert_eq!(
            e.to_string(),
            "lengths [2, 2] sum to 4, but axis 0 has length 6"
        );
        assert_eq!(
            SplitPlan::from_lengths(&[], 0, &[], true),
            Err(SplitError::RankZero)
        );
        assert_eq!(normalize_axis(-1, 3), Ok(2));
        assert_eq!(
            normalize_axis(3, 3),
            Err(SplitError::AxisOutOfRange { axis: 3, rank: 3 })
        );
        assert_eq!(
            normalize_axis(-4, 3),
            Err(SplitError::AxisOutOfRange { axis: -4, rank: 3 })
        );
    }
}
