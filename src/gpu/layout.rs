//! Where each output lives in the shared output buffer, and the table the gather shader reads.
//! Pure arithmetic, tested without a device.

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;

/// The shader writes whole 16-byte units, so outputs start at least 16-byte aligned.
pub const UNIT_BYTES: u64 = 16;

/// Largest binding the shader addresses: 2 GiB keeps every u32 byte offset in range.
pub const MAX_WINDOW: u64 = 1 << 31;

/// Most dispatches one split is cut into (each has its own table and bind group).
pub const MAX_PIECES: u64 = 1 << 16;

/// Workgroups a split is spread over before invocations take longer runs of units.
pub const TARGET_WORKGROUPS: u64 = 4;

/// Byte range of one output inside the output buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputRange {
    /// Offset from the start of the output region, a multiple of the layout's alignment.
    pub offset: u64,
    /// Size in bytes (0 for an empty output).
    pub size: u64,
}

/// Placement of every output of a split in one output buffer.
///
/// With the device's `min_storage_buffer_offset_alignment` as alignment, a following kernel
/// can bind each output directly at `offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLayout {
    /// One range per output, in output order.
    pub ranges: Vec<OutputRange>,
    /// Bytes the output region needs, padding included.
    pub total_bytes: u64,
    /// Alignment of every offset.
    pub alignment: u64,
}

impl OutputLayout {
    /// Places the outputs of `plan` for elements of `dtype`, each at a multiple of `alignment`
    /// (raised to 16 if smaller; must be a power of two).
    pub fn new(plan: &SplitPlan, dtype: DType, alignment: u64) -> Result<Self> {
        let alignment = alignment.max(UNIT_BYTES);
        if !alignment.is_power_of_two() {
            return Err(SplitError::BadBuffer(format!(
                "output alignment {alignment} is not a power of two"
            )));
        }
        let mut ranges = Vec::with_capacity(plan.num_outputs());
        let mut cursor = 0u64;
        for i in 0..plan.num_outputs() {
            let size = plan.output_bytes(i, dtype.size())?;
            ranges.push(OutputRange {
                offset: cursor,
                size,
            });
            cursor = size
                .checked_next_multiple_of(alignment)
                .and_then(|s| cursor.checked_add(s))
                .ok_or_else(|| {
                    SplitError::TooLarge("outputs overflow a 64-bit byte offset".into())
                })?;
        }
        Ok(Self {
            ranges,
            total_bytes: cursor.max(UNIT_BYTES),
            alignment,
        })
    }
}

impl OutputLayout {
    /// Cuts a read-back output region (`total_bytes` long, as [`GpuSplitter::encode`] left
    /// it) into one host tensor per output.
    ///
    /// [`GpuSplitter::encode`]: crate::GpuSplitter::encode
    pub fn outputs_from(
        &self,
        region: &[u8],
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<Vec<HostTensor>> {
        if (region.len() as u64) < self.total_bytes || self.ranges.len() != plan.num_outputs() {
            return Err(SplitError::DataMismatch(format!(
                "an output region of {} bytes for {} outputs does not match this layout ({} bytes, {} outputs)",
                region.len(),
                plan.num_outputs(),
                self.total_bytes,
                self.ranges.len()
            )));
        }
        self.ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let bytes = region[r.offset as usize..(r.offset + r.size) as usize].to_vec();
                HostTensor::new(dtype, plan.output_shape(i), bytes)
            })
            .collect()
    }
}

/// Header of the shader's table (`Params` in `shaders/split_gather.wgsl`); 16 bytes, followed
/// by the entries in the same buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Invocations with work.
    pub num_invocations: u32,
    /// Entries in the table.
    pub num_entries: u32,
    /// 1 when invocations take equal-sized entries in turn.
    pub interleaved: u32,
    /// 16-byte units per invocation.
    pub units_per_invocation: u32,
}

/// How the shader reads an entry's words (`MODE_*` in the shader).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rows, stride and offset are multiples of 16 bytes: one vec4 per unit.
    Vec4 = 0,
    /// Multiples of 4 bytes: one source word per output word.
    Word = 1,
    /// Anything else: shifted or byte-assembled words.
    Byte = 2,
}

/// One row of the shader's entry table (`Entry` in the shader); byte quantities.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Entry {
    /// First invocation of this entry.
    pub invocation_start: u32,
    /// First 16-byte unit of this entry in the output window.
    pub dst_unit: u32,
    /// Offset of the entry's first output byte within its first row.
    pub first_byte: u32,
    /// Bytes this entry writes.
    pub out_bytes: u32,
    /// Bytes of one output row.
    pub row_bytes: u32,
    /// Bytes between rows in the source.
    pub src_stride: u32,
    /// Offset of the entry's first row in the input window.
    pub src_offset: u32,
    /// A [`Mode`] as u32.
    pub mode: u32,
}

/// One dispatch: a window of the input, a window of the output region, and its entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Piece {
    /// Start of the input window, relative to the input region; a multiple of the offset alignment.
    pub src_offset: u64,
    /// Size of the input window, a multiple of 4.
    pub src_size: u64,
    /// Start of the output window, relative to the output region; a multiple of the alignment.
    pub dst_offset: u64,
    /// Size of the output window, a multiple of 16.
    pub dst_size: u64,
    /// The table's header.
    pub params: Params,
    /// One entry per output (part), sorted by `invocation_start`.
    pub entries: Vec<Entry>,
}

impl Piece {
    /// The bytes of the shader's `Table`: the header, then the entries.
    pub fn table_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(
            std::mem::size_of::<Params>() + std::mem::size_of_val(self.entries.as_slice()),
        );
        bytes.extend_from_slice(bytemuck::bytes_of(&self.params));
        bytes.extend_from_slice(bytemuck::cast_slice(&self.entries));
        bytes
    }
}

/// One output's geometry in bytes over the view `[outer, axis_len, inner]`.
#[derive(Debug, Clone, Copy)]
struct OutputRows {
    /// Bytes of one row of this output.
    row: u64,
    /// Bytes between rows in the input.
    stride: u64,
    /// Offset of row 0 in the input.
    offset: u64,
}

impl OutputRows {
    /// Input byte holding output byte `b`.
    fn src_of(&self, b: u64) -> u64 {
        (b / self.row) * self.stride + self.offset + b % self.row
    }
}

/// Builds the entry for output bytes `[b0, b1)` of `rows`, reading from an input window that
/// starts at `window` and writing at unit `dst_unit` of the output window.
fn entry(
    rows: &OutputRows,
    b0: u64,
    b1: u64,
    window: u64,
    dst_unit: u64,
    invocation_start: u64,
) -> Entry {
    // Rebase on the piece's first row. When a piece starts mid-row its window starts after
    // that row's first byte, so `src_offset` is "negative": it is stored wrapped to u32, and
    // the shader's wrapping u32 sums `row * stride + src_offset + col` land inside the window.
    let r0 = b0 / rows.row;
    let first_byte = b0 - r0 * rows.row;
    let src_offset = (rows.offset + r0 * rows.stride).wrapping_sub(window) & u32::MAX as u64;
    let all = rows.row | rows.stride | src_offset | first_byte;
    let mode = if all.is_multiple_of(16) {
        Mode::Vec4
    } else if all.is_multiple_of(4) {
        Mode::Word
    } else {
        Mode::Byte
    };
    Entry {
        invocation_start: invocation_start as u32,
        dst_unit: dst_unit as u32,
        first_byte: first_byte as u32,
        out_bytes: (b1 - b0) as u32,
        row_bytes: rows.row as u32,
        src_stride: rows.stride as u32,
        src_offset: src_offset as u32,
        mode: mode as u32,
    }
}

/// The entry of a piece: output bytes `[b0, b1)` of `rows`, read from a window at `window`.
fn piece_entry(rows: &OutputRows, b0: u64, b1: u64, window: u64) -> Entry {
    if b0 / rows.row == (b1 - 1) / rows.row {
        // Inside one row, which may be longer than u32 counts: describe the piece as a
        // single row of its own.
        let row = OutputRows {
            row: b1 - b0,
            stride: b1 - b0,
            offset: rows.src_of(b0),
        };
        return entry(&row, 0, b1 - b0, window, 0, 0);
    }
    entry(rows, b0, b1, window, 0, 0)
}

/// Invocations an entry of `bytes` output bytes needs at `units` units per invocation.
fn invocations(bytes: u64, units: u64) -> u64 {
    bytes.div_ceil(UNIT_BYTES).div_ceil(units)
}

/// Plans the gather dispatches for `plan` on elements of `dtype`, outputs placed by `layout`.
///
/// Each invocation writes up to `max_units_per_invocation` 16-byte units: fewer when the split
/// is small, so it still spreads over [`TARGET_WORKGROUPS`] workgroups. `window_limit` is the largest binding the device allows (clamped to 2 GiB so the shader's
/// u32 byte offsets cannot overflow) and `offset_align` its storage offset alignment. When the
/// input and the output region each fit one binding, this is **one** dispatch for all outputs.
/// Otherwise each output is cut into pieces of whole 16-byte units whose input and output
/// windows fit a binding, one dispatch per piece.
pub fn gather_pieces(
    plan: &SplitPlan,
    dtype: DType,
    layout: &OutputLayout,
    max_units_per_invocation: u64,
    window_limit: u64,
    offset_align: u64,
) -> Result<Vec<Piece>> {
    let input_bytes = byte_count(plan.input_shape(), dtype)? as u64;
    let input_binding = input_bytes.next_multiple_of(4);
    let window_limit = window_limit.min(MAX_WINDOW);
    let (inner_bytes, stride) = plan.row_bytes(dtype.size())?;
    let outputs: Vec<(OutputRows, OutputRange)> = plan
        .chunks()
        .iter()
        .zip(&layout.ranges)
        .filter(|(_, r)| r.size > 0)
        .map(|(c, r)| {
            (
                OutputRows {
                    row: c.len as u64 * inner_bytes,
                    stride,
                    offset: c.start as u64 * inner_bytes,
                },
                *r,
            )
        })
        .collect();
    if outputs.is_empty() {
        return Ok(vec![]);
    }
    let total_units: u64 = outputs
        .iter()
        .map(|(_, r)| r.size.div_ceil(UNIT_BYTES))
        .sum();
    let units = total_units
        .div_ceil(TARGET_WORKGROUPS * 64)
        .clamp(1, max_units_per_invocation.max(1));

    if input_binding <= window_limit && layout.total_bytes <= window_limit {
        let mut entries = Vec::with_capacity(outputs.len());
        let mut next = 0u64;
        for (rows, range) in &outputs {
            entries.push(entry(
                rows,
                0,
                range.size,
                0,
                range.offset / UNIT_BYTES,
                next,
            ));
            next += invocations(range.size, units);
        }
        // Equal parts (Split-1, ONNX equal splits) take turns, invocation by invocation.
        let equal = entries
            .windows(2)
            .all(|w| (w[0].out_bytes, w[0].row_bytes) == (w[1].out_bytes, w[1].row_bytes));
        return Ok(vec![Piece {
            src_offset: 0,
            src_size: input_binding,
            dst_offset: 0,
            dst_size: layout.total_bytes,
            params: Params {
                num_invocations: next as u32,
                num_entries: entries.len() as u32,
                interleaved: u32::from(equal && entries.len() > 1),
                units_per_invocation: units as u32,
            },
            entries,
        }]);
    }

    // Pieces: output byte ranges of `step` bytes (a multiple of the layout alignment, so
    // pieces never share a unit) whose input window fits `window_limit`.
    let align = layout.alignment.max(offset_align);
    let usable = window_limit.saturating_sub(2 * align);
    let mut steps = Vec::with_capacity(outputs.len());
    let mut count = 0u64;
    for (rows, range) in &outputs {
        let one_row = range.size <= rows.row;
        // A piece of `step` bytes touches at most step / row + 2 rows of the input.
        let step = if one_row {
            usable
        } else {
            (usable / rows.stride).saturating_sub(2) * rows.row
        };
        let step = step / align * align;
        if step == 0 {
            return Err(SplitError::TooLarge(format!(
                "output rows of {} bytes, {} bytes apart in the input, cannot be cut into pieces that fit \
                 the device's max_storage_buffer_binding_size of {window_limit} bytes",
                rows.row, rows.stride
            )));
        }
        steps.push(step);
        count += range.size.div_ceil(step);
    }
    if count > MAX_PIECES {
        return Err(SplitError::TooLarge(format!(
            "this split would need {count} dispatches of at most {window_limit} bytes; the limit is {MAX_PIECES}"
        )));
    }
    let mut pieces = Vec::with_capacity(count as usize);
    for ((rows, range), step) in outputs.into_iter().zip(steps) {
        let mut b0 = 0;
        while b0 < range.size {
            let b1 = (b0 + step).min(range.size);
            let window = rows.src_of(b0) / offset_align * offset_align;
            let src_end = (rows.src_of(b1 - 1) + 1)
                .next_multiple_of(4)
                .min(input_binding);
            pieces.push(Piece {
                src_offset: window,
                src_size: src_end - window,
                dst_offset: range.offset + b0,
                dst_size: (b1 - b0).next_multiple_of(UNIT_BYTES),
                params: Params {
                    num_invocations: invocations(b1 - b0, units) as u32,
                    num_entries: 1,
                    interleaved: 0,
                    units_per_invocation: units as u32,
                },
                entries: vec![piece_entry(&rows, b0, b1, window)],
            });
            b0 = b1;
        }
    }
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ops, IntTensor};

    const BIG: u64 = 1 << 27;

    #[test]
    fn outputs_are_aligned_and_zero_sized_ones_take_no_room() {
        let plan = ops::variadic_split(
            &[2, 10],
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![3, 0, 7]),
        )
        .unwrap();
        let layout = OutputLayout::new(&plan, DType::U8, 256).unwrap();
        let offsets: Vec<u64> = layout.ranges.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 256, 256]);
        assert_eq!(layout.ranges[2].size, 14);
        assert_eq!(layout.total_bytes, 512);

        let pieces = gather_pieces(&plan, DType::U8, &layout, 8, BIG, 256).unwrap();
        assert_eq!(pieces.len(), 1);
        let e = &pieces[0].entries;
        assert_eq!(e.len(), 2);
        assert_eq!(
            (
                e[1].invocation_start,
                e[1].dst_unit,
                e[1].src_offset,
                e[1].src_stride
            ),
            (1, 16, 3, 10)
        );
        assert_eq!(e[1].mode, Mode::Byte as u32);
        assert_eq!(pieces[0].params.num_invocations, 2);
    }

    #[test]
    fn modes_follow_byte_alignment() {
        let plan = ops::split(&[3, 64], &IntTensor::scalar(1), 2).unwrap();
        let mode = |d: DType| {
            let layout = OutputLayout::new(&plan, d, 16).unwrap();
            gather_pieces(&plan, d, &layout, 8, BIG, 16).unwrap()[0].entries[1].mode
        };
        assert_eq!(mode(DType::U8), Mode::Vec4 as u32); // rows of 32 bytes
        let plan = ops::split(&[3, 8], &IntTensor::scalar(1), 2).unwrap();
        let layout = OutputLayout::new(&plan, DType::U8, 16).unwrap();
        assert_eq!(
            gather_pieces(&plan, DType::U8, &layout, 8, BIG, 16).unwrap()[0].entries[1].mode,
            Mode::Word as u32
        );
    }

    #[test]
    fn many_units_share_an_invocation() {
        let plan = ops::split(&[1, 1000], &IntTensor::scalar(1), 1).unwrap();
        let layout = OutputLayout::new(&plan, DType::F32, 16).unwrap();
        // 4000 bytes = 250 units: small enough for one unit per invocation.
        let piece = &gather_pieces(&plan, DType::F32, &layout, 8, BIG, 16).unwrap()[0];
        assert_eq!(
            (
                piece.params.num_invocations,
                piece.params.units_per_invocation
            ),
            (250, 1)
        );
        // 64 MiB = 4 Mi units: runs grow to the maximum, 8 here.
        let plan = ops::split(&[1, 1 << 24], &IntTensor::scalar(1), 1).unwrap();
        let layout = OutputLayout::new(&plan, DType::F32, 16).unwrap();
        let piece = &gather_pieces(&plan, DType::F32, &layout, 8, BIG, 16).unwrap()[0];
        assert_eq!(
            (
                piece.params.num_invocations,
                piece.params.units_per_invocation
            ),
            (1 << 19, 8)
        );
    }

    #[test]
    fn large_tensors_are_cut_into_windows_that_fit() {
        // 16 rows of 1000 u8, split into 600 + 400, with a 4096-byte binding limit.
        let plan = ops::variadic_split(
            &[16, 1000],
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![600, 400]),
        )
        .unwrap();
        let layout = OutputLayout::new(&plan, DType::U8, 32).unwrap();
        let pieces = gather_pieces(&plan, DType::U8, &layout, 8, 4096, 32).unwrap();
        assert!(pieces.len() > 2);
        let mut covered = [0u64; 2];
        for p in &pieces {
            assert!(p.src_size <= 4096 && p.dst_size <= 4096, "{p:?}");
            assert!(p.src_offset.is_multiple_of(32) && p.dst_offset.is_multiple_of(32));
            assert!(p.src_offset + p.src_size <= 16_000);
            let out = usize::from(p.dst_offset >= layout.ranges[1].offset);
            covered[out] += p.entries[0].out_bytes as u64;
        }
        assert_eq!(covered, [9600, 6400]);
        // A row stride wider than the window cannot be cut.
        let plan = ops::split(&[4, 5000], &IntTensor::scalar(1), 2).unwrap();
        let layout = OutputLayout::new(&plan, DType::U8, 32).unwrap();
        assert!(matches!(
            gather_pieces(&plan, DType::U8, &layout, 8, 4096, 32),
            Err(SplitError::TooLarge(_))
        ));
    }

    #[test]
    fn huge_shapes_are_refused_not_wrapped() {
        let plan = ops::split(&[1 << 40, 1 << 30], &IntTensor::scalar(1), 2).unwrap();
        assert!(OutputLayout::new(&plan, DType::F32, 256).is_err());
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        assert!(OutputLayout::new(&plan, DType::F32, 48).is_err());
    }
}
