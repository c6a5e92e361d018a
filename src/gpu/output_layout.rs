//! Where each output lives in the output region. Pure arithmetic, tested without a device.
//!
//! Two placements are used: *bindable* (every output at the device's
//! `min_storage_buffer_offset_alignment`, so a following kernel can bind each one on its own;
//! what [`GpuSplitter::encode`](crate::GpuSplitter::encode) uses) and *packed* (every output
//! at 16 bytes, memory in proportion to the data; what [`GpuSplitter::run`](crate::GpuSplitter::run)
//! reads back when it can).

use crate::error::{Result, SplitError};
use crate::gpu::gather::abi::{binding_bytes, UNIT_BYTES};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::tensor::HostTensor;
use crate::DType;

/// Byte range of one output inside the output region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputRange {
    /// Offset from the start of the output region, a multiple of the layout's alignment.
    pub offset: u64,
    /// Size in bytes (0 for an empty output).
    pub size: u64,
}

/// Placement of every output of a split in one output region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLayout {
    /// One range per output, in output order. An empty output takes no room: its offset is
    /// where the next output starts, which may be past `total_bytes`.
    pub ranges: Vec<OutputRange>,
    /// Bytes the output region needs: the last output's end, rounded up to 4 (at least 4).
    /// The bytes between outputs are not written.
    pub total_bytes: u64,
    /// Alignment of every offset.
    pub alignment: u64,
}

/// Outputs that lie back to back both in the input and in the output region, which one copy
/// (or one gather entry) moves together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ContiguousRun {
    /// The first output of the run.
    pub output: usize,
    /// Input byte offset of the run.
    pub src: u64,
    /// Output-region byte offset of the run.
    pub dst: u64,
    /// Bytes of the run.
    pub len: u64,
}

impl OutputLayout {
    /// The runs of the non-empty outputs of `bytes`, in order, each output being one range of
    /// the input ([`RowKind::Contiguous`](crate::plan::bytes::RowKind::Contiguous)).
    pub(crate) fn contiguous_runs(&self, bytes: &ByteRows) -> Vec<ContiguousRun> {
        let mut runs: Vec<ContiguousRun> = Vec::new();
        for o in &bytes.outputs {
            let (src, dst, len) = (o.offset, self.ranges[o.output].offset, bytes.size(o));
            match runs.last_mut() {
                Some(r) if r.src + r.len == src && r.dst + r.len == dst => r.len += len,
                _ => runs.push(ContiguousRun {
                    output: o.output,
                    src,
                    dst,
                    len,
                }),
            }
        }
        runs
    }

    /// Places the outputs of `plan` for elements of `dtype`, each at a multiple of `alignment`
    /// (raised to 16 if smaller, since the gather writes whole 16-byte units; must be a power of
    /// two). Empty outputs take no room.
    pub fn new(plan: &SplitPlan, dtype: DType, alignment: u64) -> Result<Self> {
        let alignment = alignment.max(UNIT_BYTES);
        if !alignment.is_power_of_two() {
            return Err(SplitError::BadBuffer(format!(
                "output alignment {alignment} is not a power of two"
            )));
        }
        let mut ranges = Vec::with_capacity(plan.num_outputs());
        let (mut cursor, mut end) = (0u64, 0u64);
        let overflow = || SplitError::TooLarge("outputs overflow a 64-bit byte offset".into());
        for i in 0..plan.num_outputs() {
            let size = plan.output_bytes(i, dtype.size())?;
            ranges.push(OutputRange {
                offset: cursor,
                size,
            });
            if size > 0 {
                end = cursor.checked_add(size).ok_or_else(overflow)?;
            }
            cursor = size
                .checked_next_multiple_of(alignment)
                .and_then(|s| cursor.checked_add(s))
                .ok_or_else(overflow)?;
        }
        Ok(Self {
            ranges,
            total_bytes: binding_bytes(end),
            alignment,
        })
    }

    /// The packed placement: every output at a multiple of 16 bytes.
    pub fn packed(plan: &SplitPlan, dtype: DType) -> Result<Self> {
        Self::new(plan, dtype, UNIT_BYTES)
    }

    /// Checks that this layout can receive the outputs of `plan` for `dtype`: one range per
    /// output of the output's size, offsets at multiples of `alignment` (a power of two, at
    /// least 16) in output order without overlap, and `total_bytes` a multiple of 4 that
    /// holds them all. A layout from [`OutputLayout::new`] always passes; one built by hand is
    /// checked before [`Outputs::Placed`](crate::Outputs)
    /// records anything.
    pub fn check(&self, plan: &SplitPlan, dtype: DType) -> Result<()> {
        let bad = |rule: String| Err(SplitError::BadBuffer(format!("output layout: {rule}")));
        if self.ranges.len() != plan.num_outputs() {
            return bad(format!(
                "{} ranges for {} outputs",
                self.ranges.len(),
                plan.num_outputs()
            ));
        }
        if self.alignment < UNIT_BYTES || !self.alignment.is_power_of_two() {
            return bad(format!(
                "alignment {} must be a power of two of at least {UNIT_BYTES}",
                self.alignment
            ));
        }
        if !self.total_bytes.is_multiple_of(4) {
            return bad(format!(
                "total_bytes {} is not a multiple of 4",
                self.total_bytes
            ));
        }
        let mut end = 0u64;
        for (i, r) in self.ranges.iter().enumerate() {
            let size = plan.output_bytes(i, dtype.size())?;
            if r.size != size {
                return bad(format!(
                    "output {i} has {size} bytes, its range says {}",
                    r.size
                ));
            }
            if size == 0 {
                continue;
            }
            if !r.offset.is_multiple_of(self.alignment) || r.offset < end {
                return bad(format!(
                    "output {i} at offset {} must be a multiple of {} at or after byte {end}, \
                     where the output before it ends",
                    r.offset, self.alignment
                ));
            }
            end = r
                .offset
                .checked_add(size)
                .filter(|&e| e <= self.total_bytes)
                .ok_or_else(|| {
                    SplitError::BadBuffer(format!(
                        "output layout: output {i} ends past total_bytes {}",
                        self.total_bytes
                    ))
                })?;
        }
        Ok(())
    }

    /// Cuts a read-back output region (`total_bytes` long, as
    /// [`GpuSplitter::encode`](crate::GpuSplitter::encode) left it) into one host tensor per
    /// output.
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
                // An empty output may lie past the region's end: it takes no room.
                let bytes = match r.size {
                    0 => Vec::new(),
                    n => region[r.offset as usize..(r.offset + n) as usize].to_vec(),
                };
                HostTensor::new(dtype, plan.output_shape(i), bytes)
            })
            .collect()
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
        // The region ends with the last output, rounded up to a word: 256 + 14 bytes.
        assert_eq!(layout.total_bytes, 272);
        let packed = OutputLayout::packed(&plan, DType::U8).unwrap();
        assert_eq!((packed.ranges[2].offset, packed.total_bytes), (16, 32));
    }

    #[test]
    fn hand_built_layouts_are_checked() {
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        let good = OutputLayout::packed(&plan, DType::F32).unwrap();
        assert_eq!(good.check(&plan, DType::F32), Ok(()));
        let broken = |f: &dyn Fn(&mut OutputLayout)| {
            let mut l = good.clone();
            f(&mut l);
            l.check(&plan, DType::F32).unwrap_err().to_string()
        };
        assert!(broken(&|l| l.ranges[1].offset = 48).contains("output 1 at offset 48"));
        assert!(broken(&|l| l.ranges[1].size = 32).contains("output 1 has 64 bytes"));
        assert!(broken(&|l| l.total_bytes = 112).contains("ends past total_bytes 112"));
        assert!(broken(&|l| l.alignment = 8).contains("alignment 8"));
        assert!(broken(&|l| {
            l.ranges.pop();
        })
        .contains("1 ranges for 2"));
        // Outputs out of order would overlap the gather's units: refused too.
        assert!(broken(&|l| l.ranges.swap(0, 1)).contains("output 1 at offset 0"));
    }

    #[test]
    fn huge_shapes_are_refused_not_wrapped() {
        let plan = ops::split(&[1 << 40, 1 << 30], &IntTensor::scalar(1), 2).unwrap();
        assert!(OutputLayout::new(&plan, DType::F32, 256).is_err());
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        assert!(OutputLayout::new(&plan, DType::F32, 48).is_err());
    }

    #[test]
    fn a_region_too_short_for_the_layout_is_an_error() {
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        let layout = OutputLayout::packed(&plan, DType::F32).unwrap();
        assert!(layout.outputs_from(&[0; 127], &plan, DType::F32).is_err());
        let outputs = layout.outputs_from(&[7; 128], &plan, DType::F32).unwrap();
        assert_eq!(outputs[1].shape(), &[4, 4]);
    }
}
