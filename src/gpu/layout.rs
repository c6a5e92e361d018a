//! Where each output lives in the shared output buffer, and the table the gather shader reads.
//! Pure arithmetic, tested without a device.

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;
use crate::tensor::byte_count;
use crate::DType;

/// The shader writes whole 16-byte units, so outputs start at least 16-byte aligned.
pub const UNIT_BYTES: u64 = 16;

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
            let size = byte_count(&plan.output_shape(i), dtype)? as u64;
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

/// Uniform block of the shader (`Params` in `shaders/split_gather.wgsl`).
#[repr(C)]
#[derive(Debug, Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Params {
    pub num_units: u32,
    pub num_entries: u32,
    pub _pad: [u32; 2],
}

/// One row of the shader's entry table (`Entry` in the shader); byte quantities.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub(crate) struct Entry {
    pub unit_start: u32,
    pub dst_word: u32,
    pub out_bytes: u32,
    pub row_bytes: u32,
    pub src_stride: u32,
    pub src_offset: u32,
    pub word_aligned: u32,
    pub _pad: u32,
}

/// What the gather dispatch needs: its uniform block and one entry per non-empty output.
#[derive(Debug, Clone)]
pub(crate) struct GatherTable {
    pub params: Params,
    pub entries: Vec<Entry>,
}

/// The shader addresses bytes with u32, so input and output regions must stay below 4 GiB.
const MAX_ADDRESSABLE: u64 = u32::MAX as u64;

impl GatherTable {
    /// Builds the table for `plan` on elements of `dtype`, outputs placed by `layout`.
    pub fn new(plan: &SplitPlan, dtype: DType, layout: &OutputLayout) -> Result<Self> {
        let size = dtype.size() as u64;
        let input_bytes = byte_count(plan.input_shape(), dtype)? as u64;
        let too_large = |what: &str, bytes: u64| {
            SplitError::TooLarge(format!(
                "{what} of {bytes} bytes exceeds the 4 GiB the gather shader can address with u32 offsets"
            ))
        };
        if input_bytes > MAX_ADDRESSABLE {
            return Err(too_large("input", input_bytes));
        }
        if layout.total_bytes > MAX_ADDRESSABLE {
            return Err(too_large("output region", layout.total_bytes));
        }
        // Every quantity below is at most input_bytes or total_bytes, so the casts are exact.
        let inner_bytes = plan.inner() as u64 * size;
        let src_stride = plan.axis_len() as u64 * inner_bytes;
        let mut entries = Vec::new();
        let mut units = 0u64;
        for (chunk, range) in plan.chunks().iter().zip(&layout.ranges) {
            if range.size == 0 {
                continue;
            }
            let row_bytes = chunk.len as u64 * inner_bytes;
            let src_offset = chunk.start as u64 * inner_bytes;
            entries.push(Entry {
                unit_start: units as u32,
                dst_word: (range.offset / 4) as u32,
                out_bytes: range.size as u32,
                row_bytes: row_bytes as u32,
                src_stride: src_stride as u32,
                src_offset: src_offset as u32,
                word_aligned: u32::from((row_bytes | src_stride | src_offset).is_multiple_of(4)),
                _pad: 0,
            });
            units += range.size.div_ceil(UNIT_BYTES);
        }
        Ok(Self {
            params: Params {
                num_units: units as u32,
                num_entries: entries.len() as u32,
                _pad: [0; 2],
            },
            entries,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ops, IntTensor};

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

        let table = GatherTable::new(&plan, DType::U8, &layout).unwrap();
        assert_eq!(table.entries.len(), 2);
        assert_eq!(table.entries[1].unit_start, 1);
        assert_eq!(table.entries[1].src_offset, 3);
        assert_eq!(table.entries[1].src_stride, 10);
        assert_eq!(table.entries[1].word_aligned, 0);
        assert_eq!(table.params.num_units, 2);
    }

    #[test]
    fn word_alignment_follows_bytes() {
        let plan = ops::split(&[3, 8], &IntTensor::scalar(1), 2).unwrap();
        let table = GatherTable::new(
            &plan,
            DType::U8,
            &OutputLayout::new(&plan, DType::U8, 16).unwrap(),
        )
        .unwrap();
        assert!(table.entries.iter().all(|e| e.word_aligned == 1));
        let table = GatherTable::new(
            &plan,
            DType::F16,
            &OutputLayout::new(&plan, DType::F16, 16).unwrap(),
        )
        .unwrap();
        assert_eq!(table.entries[1].src_offset, 8);
    }

    #[test]
    fn refuses_what_u32_cannot_address() {
        let plan = ops::split(&[1 << 31, 2], &IntTensor::scalar(1), 2).unwrap();
        let layout = OutputLayout::new(&plan, DType::F32, 256).unwrap();
        assert!(matches!(
            GatherTable::new(&plan, DType::F32, &layout),
            Err(SplitError::TooLarge(_))
        ));
        assert!(OutputLayout::new(&plan, DType::F32, 48).is_err());
    }
}
