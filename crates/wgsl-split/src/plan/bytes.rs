//! The byte geometry of a split: where each non-empty output's rows lie in the input.
//!
//! Viewed as bytes, the input is `rows` rows of `stride` bytes (`rows = outer`,
//! `stride = axis_len * inner * element size`), and output `i` takes the same column band of
//! every row: `row_bytes = len_i * inner * element size` bytes from `start_i * inner * element
//! size`. Every route (buffer copies, the gather) and the CPU reference read this
//! one description. Like candle's `Layout::strided_blocks`, it is classified once
//! ([`RowKind`]), and each consumer matches on the result.

use super::split_plan::SplitPlan;

/// Bytes a storage binding of a tensor of `bytes` covers: its size rounded up to a word (4
/// bytes), as WebGPU asks of every storage binding, and at least one word.
pub fn binding_bytes(bytes: u64) -> u64 {
    bytes.next_multiple_of(4).max(4)
}
use crate::error::{Result, SplitError};

/// One non-empty output's rows in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputRows {
    /// The output's index in the plan.
    pub output: usize,
    /// Input byte offset of the output's first row.
    pub offset: u64,
    /// Bytes of one row of this output.
    pub row_bytes: u64,
}

/// How the outputs lie in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    /// Each output is one contiguous range of the input: there is one row (`outer <= 1`), or
    /// one output spans the whole axis.
    Contiguous,
    /// Each output is `rows` rows, `stride` bytes apart, with other outputs between them.
    Strided,
}

impl RowKind {
    /// Contiguous when there is one row, or every output's rows are whole input rows (one
    /// output spanning the axis).
    fn of(rows: u64, stride: u64, outputs: &[OutputRows]) -> Self {
        if rows <= 1 || outputs.iter().all(|o| o.row_bytes == stride) {
            RowKind::Contiguous
        } else {
            RowKind::Strided
        }
    }
}

/// The byte geometry of a split, for elements of one size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteRows {
    /// Rows of the input (`outer`).
    pub rows: u64,
    /// Bytes between consecutive rows of the input.
    pub stride: u64,
    /// The non-empty outputs, in output order.
    pub outputs: Vec<OutputRows>,
    /// How the outputs lie in the input.
    pub kind: RowKind,
}

impl ByteRows {
    /// The geometry of `plan` for `elem_size`-byte elements; an error if a byte count
    /// overflows 64 bits.
    pub fn new(plan: &SplitPlan, elem_size: usize) -> Result<Self> {
        let (inner_bytes, stride) = plan.row_bytes(elem_size)?;
        let rows = plan.outer() as u64;
        let mut outputs = Vec::new();
        for (output, chunk) in plan.chunks().iter().enumerate() {
            // Sizes are checked here, once, so every later product of rows and row bytes fits.
            if plan.part_bytes_sized(output, elem_size)? > 0 {
                outputs.push(OutputRows {
                    output,
                    offset: chunk.start as u64 * inner_bytes,
                    row_bytes: chunk.len as u64 * inner_bytes,
                });
            }
        }
        let kind = RowKind::of(rows, stride, &outputs);
        if rows.checked_mul(stride).is_none() {
            return Err(SplitError::TooLarge(format!(
                "an input of shape {:?} with {elem_size}-byte elements overflows a 64-bit byte count",
                plan.whole_shape()
            )));
        }
        Ok(Self {
            rows,
            stride,
            outputs,
            kind,
        })
    }

    /// The same input with only the outputs `keep` picks (by position in `outputs`), numbered
    /// 0, 1, ... in that order, so a layout of just these outputs goes with it, and classified
    /// anew: one output of several is strided, though the whole split's outputs were not.
    pub fn subset(&self, keep: impl IntoIterator<Item = usize>) -> ByteRows {
        let outputs: Vec<OutputRows> = keep
            .into_iter()
            .enumerate()
            .map(|(output, k)| OutputRows {
                output,
                ..self.outputs[k]
            })
            .collect();
        ByteRows {
            rows: self.rows,
            stride: self.stride,
            kind: RowKind::of(self.rows, self.stride, &outputs),
            outputs,
        }
    }

    /// Bytes of the input.
    pub fn input_bytes(&self) -> u64 {
        self.rows * self.stride
    }

    /// Bytes of one output: all its rows.
    pub fn size(&self, o: &OutputRows) -> u64 {
        self.rows * o.row_bytes
    }

    /// The input byte that holds byte `b` of output `o`.
    pub fn source_of(&self, o: &OutputRows, b: u64) -> u64 {
        (b / o.row_bytes) * self.stride + o.offset + b % o.row_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(shape: &[usize], axis: usize, lengths: &[usize], elem: usize) -> ByteRows {
        let plan = SplitPlan::from_lengths(shape, axis, lengths, true).unwrap();
        ByteRows::new(&plan, elem).unwrap()
    }

    #[test]
    fn an_inner_split_is_strided_and_skips_empty_outputs() {
        // [6, 12, 10, 24] f32 on axis 1 as 4, 0, 8: rows of 960 bytes per axis index.
        let r = rows(&[6, 12, 10, 24], 1, &[4, 0, 8], 4);
        assert_eq!((r.rows, r.stride, r.kind), (6, 11520, RowKind::Strided));
        let got: Vec<(usize, u64, u64)> = r
            .outputs
            .iter()
            .map(|o| (o.output, o.offset, o.row_bytes))
            .collect();
        assert_eq!(got, vec![(0, 0, 3840), (2, 3840, 7680)]);
        assert_eq!(r.size(&r.outputs[1]), 6 * 7680);
        // Byte 7,680 of output 2 is the first byte of its second row.
        assert_eq!(r.source_of(&r.outputs[1], 7680), 11520 + 3840);
        assert_eq!(r.input_bytes(), 6 * 11520);
    }

    #[test]
    fn one_row_or_one_output_is_contiguous() {
        assert_eq!(rows(&[1, 8], 1, &[3, 5], 2).kind, RowKind::Contiguous);
        assert_eq!(rows(&[8, 4], 0, &[3, 5], 2).kind, RowKind::Contiguous);
        // Several rows, but only one output has bytes: its rows are back to back.
        let r = rows(&[5, 4], 1, &[0, 4, 0], 8);
        assert_eq!(r.kind, RowKind::Contiguous);
        assert_eq!(r.outputs.len(), 1);
        assert_eq!(r.outputs[0].row_bytes, r.stride);
        // An empty input has no non-empty output.
        assert!(rows(&[0, 4], 1, &[2, 2], 4).outputs.is_empty());
        // One output of several, on its own, is strided; both, or one row, are what they were.
        let r = rows(&[5, 4], 1, &[1, 3], 8);
        assert_eq!(r.subset([1]).kind, RowKind::Strided);
        assert_eq!(
            r.subset([1]).outputs[0].output,
            0,
            "numbered within the subset"
        );
        assert_eq!(r.subset([0, 1]), r);
        assert_eq!(
            rows(&[1, 4], 1, &[1, 3], 8).subset([1]).kind,
            RowKind::Contiguous
        );
    }

    #[test]
    fn byte_counts_that_overflow_are_errors() {
        let plan = SplitPlan::from_lengths(&[1 << 40, 1 << 20, 2], 1, &[1 << 20], true).unwrap();
        assert!(matches!(
            ByteRows::new(&plan, 16),
            Err(SplitError::TooLarge(_))
        ));
    }
}
