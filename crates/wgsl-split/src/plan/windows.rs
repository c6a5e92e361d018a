//! Windows: consecutive pieces of the input that can be split one at a time.
//!
//! Every output byte comes from exactly one input byte, so a split can run on a window of the
//! input at a time: window `w`'s part of output `i` follows window `w - 1`'s part of it. That
//! is how an input larger than memory or than one device buffer is split in bounded memory
//! (wgpu-split's streaming run). In the view `[outer, axis_len, inner]`, a window is a run of whole
//! rows (`outer` indices) when a row fits the budget, and a piece of one row otherwise. Each
//! window is itself a [`SplitPlan`] with as many outputs as the whole split, some of them
//! empty, so every route and the CPU reference split it as they split anything else.

use super::split_plan::SplitPlan;
use crate::error::{Result, SplitError};

/// One window of the input, in the view `[outer, axis_len, inner]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Whole rows `first .. first + count`.
    Rows {
        /// First row.
        first: usize,
        /// Number of rows.
        count: usize,
    },
    /// Elements `start .. start + len` of one row (a row holds `axis_len * inner` elements).
    Piece {
        /// The row.
        row: usize,
        /// First element in the row.
        start: usize,
        /// Number of elements.
        len: usize,
    },
}

impl Window {
    /// The split of this window's input: the chunks of `whole` that fall in it, in output
    /// order, with an empty chunk for each output that has no bytes here.
    pub fn plan(&self, whole: &SplitPlan) -> Result<SplitPlan> {
        let lengths: Vec<usize> = whole.chunks().iter().map(|c| c.len).collect();
        match *self {
            Window::Rows { count, .. } => SplitPlan::from_lengths(
                &[count, whole.axis_len(), whole.inner()],
                1,
                &lengths,
                true,
            ),
            Window::Piece { start, len, .. } => {
                let inner = whole.inner();
                let end = start + len;
                let overlaps: Vec<usize> = whole
                    .chunks()
                    .iter()
                    .map(|c| {
                        let (a, b) = (c.start * inner, (c.start + c.len) * inner);
                        b.min(end).saturating_sub(a.max(start))
                    })
                    .collect();
                SplitPlan::from_lengths(&[1, len], 1, &overlaps, true)
            }
        }
    }
}

/// The windows of a split, in input order; see [`windows`].
#[derive(Debug, Clone)]
pub struct Windows {
    rows: usize,
    row_elems: usize,
    /// Rows per window, when a row fits the budget.
    rows_per_window: usize,
    /// Elements per piece, when it does not (0 otherwise).
    piece_elems: usize,
    next: usize,
    count: usize,
}

/// Cuts the input of `plan` (elements of `elem_size` bytes) into windows of at most
/// `budget_bytes` bytes each, or one element where an element is larger. An empty input has
/// no windows.
pub fn windows(plan: &SplitPlan, elem_size: usize, budget_bytes: u64) -> Result<Windows> {
    if elem_size == 0 {
        return Err(SplitError::DataMismatch("elements of 0 bytes".into()));
    }
    let rows = plan.outer();
    let row_elems = plan.axis_len() * plan.inner();
    let budget_elems = usize::try_from(budget_bytes / elem_size as u64)
        .unwrap_or(usize::MAX)
        .max(1);
    let (rows_per_window, piece_elems, count) = if rows == 0 || row_elems == 0 {
        (1, 0, 0)
    } else if row_elems <= budget_elems {
        let per = (budget_elems / row_elems).min(rows);
        (per, 0, rows.div_ceil(per))
    } else {
        let pieces = row_elems.div_ceil(budget_elems);
        let count = rows.checked_mul(pieces).ok_or_else(|| {
            SplitError::TooLarge(format!(
                "{rows} rows of {pieces} windows each overflow a window count"
            ))
        })?;
        (1, budget_elems, count)
    };
    Ok(Windows {
        rows,
        row_elems,
        rows_per_window,
        piece_elems,
        next: 0,
        count,
    })
}

impl Iterator for Windows {
    type Item = Window;

    fn next(&mut self) -> Option<Window> {
        if self.next == self.count {
            return None;
        }
        let w = self.next;
        self.next += 1;
        if self.piece_elems == 0 {
            let first = w * self.rows_per_window;
            let count = self.rows_per_window.min(self.rows - first);
            return Some(Window::Rows { first, count });
        }
        let pieces = self.row_elems.div_ceil(self.piece_elems);
        let start = (w % pieces) * self.piece_elems;
        Some(Window::Piece {
            row: w / pieces,
            start,
            len: self.piece_elems.min(self.row_elems - start),
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.count - self.next;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Windows {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DType, HostTensor};

    fn pattern(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    /// Splits window by window and appends each window's outputs: the result must be the
    /// whole split's, byte for byte, and no window may exceed the budget.
    fn check(shape: &[usize], axis: usize, lengths: &[usize], dtype: DType, budget: u64) {
        let whole = SplitPlan::from_lengths(shape, axis, lengths, true).unwrap();
        let bytes = crate::tensor::byte_count(shape, dtype).unwrap();
        let input = HostTensor::new(dtype, shape.to_vec(), pattern(bytes)).unwrap();
        let want = whole.reference(&input).unwrap();
        let mut got = vec![Vec::new(); lengths.len()];
        let mut offset = 0usize;
        for window in windows(&whole, dtype.size(), budget).unwrap() {
            let plan = window.plan(&whole).unwrap();
            assert_eq!(plan.num_parts(), lengths.len());
            let n = crate::tensor::byte_count(plan.whole_shape(), dtype).unwrap();
            assert!(
                n as u64 <= budget.max(dtype.size() as u64),
                "{window:?}: {n} bytes"
            );
            let part = HostTensor::new(
                dtype,
                plan.whole_shape().to_vec(),
                input.bytes()[offset..offset + n].to_vec(),
            )
            .unwrap();
            offset += n;
            for (i, o) in plan.reference(&part).unwrap().iter().enumerate() {
                got[i].extend_from_slice(o.bytes());
            }
        }
        assert_eq!(offset, bytes, "the windows tile the input");
        for (i, w) in want.iter().enumerate() {
            assert_eq!(
                got[i],
                w.bytes(),
                "{shape:?} axis {axis} budget {budget}: output {i}"
            );
        }
    }

    #[test]
    fn windows_of_rows_and_pieces_rebuild_the_whole_split() {
        for budget in [1, 3, 16, 40, 96, 100, 1000, 1 << 20] {
            check(&[6, 5, 4], 1, &[2, 0, 3], DType::F32, budget);
            check(&[6, 5, 4], 0, &[1, 5], DType::U16, budget);
            check(&[7, 9], 1, &[4, 1, 0, 4], DType::U8, budget);
            check(&[3, 10], 1, &[1; 10], DType::Complex128, budget);
        }
    }

    #[test]
    fn rows_fill_the_budget_and_long_rows_are_cut() {
        let plan = SplitPlan::from_lengths(&[10, 4, 2], 1, &[1, 3], true).unwrap();
        // A row is 8 f32 = 32 bytes: 100 bytes take 3 rows.
        let w: Vec<Window> = windows(&plan, 4, 100).unwrap().collect();
        assert_eq!(w.len(), 4);
        assert_eq!(w[3], Window::Rows { first: 9, count: 1 });
        // 12 bytes are 3 elements: each row is cut into 3 pieces, the last of 2 elements.
        let w: Vec<Window> = windows(&plan, 4, 12).unwrap().collect();
        assert_eq!(w.len(), 30);
        assert_eq!(
            w[5],
            Window::Piece {
                row: 1,
                start: 6,
                len: 2
            }
        );
        // Elements 3..6 of a row all belong to output 1; elements 0..3 are output 0's 2 and one more.
        let p = w[1].plan(&plan).unwrap();
        assert_eq!(
            p.chunks().iter().map(|c| c.len).collect::<Vec<_>>(),
            vec![0, 3]
        );
        let p = w[0].plan(&plan).unwrap();
        assert_eq!(
            p.chunks().iter().map(|c| c.len).collect::<Vec<_>>(),
            vec![2, 1]
        );
    }

    #[test]
    fn an_empty_input_has_no_windows() {
        let plan = SplitPlan::from_lengths(&[0, 4], 1, &[1, 3], true).unwrap();
        assert_eq!(windows(&plan, 4, 64).unwrap().len(), 0);
        let plan = SplitPlan::from_lengths(&[5, 0], 1, &[0, 0], true).unwrap();
        assert_eq!(windows(&plan, 4, 64).unwrap().len(), 0);
    }
}
