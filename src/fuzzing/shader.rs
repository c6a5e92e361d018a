//! The shader's address arithmetic for a split's entry, as the WGSL computes it: u32 that
//! wraps. The fuzzers take every source address from here, not from an exact sum, so a step
//! that goes back (a read view's rows that repeat or overlap) or a sum past 2^32 fails them
//! wherever the shader's arithmetic would go wrong, rather than passing as a correct i128.

use crate::gpu::gather::abi::{Entry, Mode};

/// `place(e, b)` in `shaders/split_gather.wgsl`: byte `b` of entry `e` (counted from its
/// row 0's first byte) lies in row `row`, column `col`, at source byte `src` of the window
/// and `dst` bytes past the entry's first unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Place {
    pub row: u32,
    pub col: u32,
    pub src: u32,
    pub dst: u32,
}

pub(super) fn place(e: &Entry, b: u32) -> Place {
    let row = b / e.row_bytes;
    let col = b - row * e.row_bytes;
    let src = row
        .wrapping_mul(e.src_stride)
        .wrapping_add(e.src_offset)
        .wrapping_add(col);
    let dst = row
        .wrapping_mul(e.dst_stride)
        .wrapping_add(col)
        .wrapping_sub(e.first_byte);
    Place { row, col, src, dst }
}

/// The source of the next row's first byte as each loop of the runs steps to it from byte
/// `s` of a row, at column `col` (the row's first byte the loop reads: its start, or where
/// an entry starts inside it), each in the unit its loop indexes the input by: `run_vec4`'s
/// vec4 index, `run_shifted`'s byte and the walk's step (`walk_from`'s `to_row`, a word or a
/// byte as the entry's mode reads), beside `place`'s source of that byte in the same unit.
/// Each pair must be equal: an index that wraps is another element of the binding, even
/// where scaling it back to bytes would wrap again onto the right one.
pub(super) fn next_row_sources(e: &Entry, s: u32, col: u32) -> [Option<(u32, u32)>; 3] {
    let next = s.wrapping_sub(col).wrapping_add(e.src_stride);
    let vec4 = (e.mode == Mode::Vec4 as u32).then(|| {
        let row_units = e.row_bytes / 16;
        let gap4 = (e.src_stride / 16).wrapping_sub(row_units);
        let left = row_units - col / 16;
        ((s / 16).wrapping_add(left).wrapping_add(gap4), next / 16)
    });
    let gap = e.src_stride.wrapping_sub(e.row_bytes);
    let bytes = (s.wrapping_add(e.row_bytes - col).wrapping_add(gap), next);
    let sh = if e.mode == Mode::Byte as u32 { 0 } else { 2 };
    let w = e.row_bytes >> sh;
    let to_row = 1u32.wrapping_add(e.src_stride >> sh).wrapping_sub(w);
    // The walk's last step of the row, then its move to the next row.
    let last = (s >> sh).wrapping_add(w - 1 - (col >> sh));
    let walk = (last.wrapping_add(to_row), next >> sh);
    [vec4, Some(bytes), Some(walk)]
}
