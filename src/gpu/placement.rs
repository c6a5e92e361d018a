//! Where the parts (a split's outputs, a concat's inputs) lie: the caller's buffers
//! ([`BufferRegion`]), where each part lives in its region ([`PartLayout`]), and the checks
//! made before anything is recorded. Pure arithmetic, tested without a device.
//!
//! Two placements are used: *bindable* (every part at the device's
//! `min_storage_buffer_offset_alignment`, so a neighbouring kernel can bind each one on its
//! own; what [`GpuSplitter::encode`](crate::GpuSplitter::encode) uses for parts in one
//! region) and *packed* (every part at 16 bytes, memory in proportion to the data; what
//! [`GpuSplitter::run`](crate::GpuSplitter::run) uploads or reads back when it can).

use crate::error::{Result, SplitError};
use crate::gpu::direction::Direction;
use crate::gpu::gather::{binding_bytes, UNIT_BYTES};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::DType;

/// Byte range of one part (a split's output, a concat's input) in its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartRange {
    /// Offset from the start of the region, a multiple of the layout's alignment.
    pub offset: u64,
    /// Size in bytes (0 for an empty part).
    pub size: u64,
}

/// Where every part of a split or a concat lies (a split's outputs, a concat's inputs): in one
/// region ([`GpuSplitter::layout`](crate::GpuSplitter::layout), [`PartLayout::packed`]), or
/// each in its own region, as [`Encoded::parts`](crate::Encoded) reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartLayout {
    /// One range per part, in order. An empty part takes no room: its offset is where the
    /// next part starts, which may be past `total_bytes`.
    pub ranges: Vec<PartRange>,
    /// Bytes the region needs: the last part's end, rounded up to 4 (at least 4). The bytes
    /// between parts are neither read nor written.
    pub total_bytes: u64,
    /// Alignment of every offset.
    pub alignment: u64,
}

/// How the parts in one region are placed: at the device's storage offset alignment
/// ([`GpuSplitter::layout`](crate::GpuSplitter::layout), `Outputs::Region`), or by a layout
/// given and checked (`Outputs::Placed`, `Inputs::Placed`). A kept route is found by the
/// first without a layout, so that a repeated split or concat places nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Placement<'a> {
    Bindable,
    Given(&'a PartLayout),
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

impl PartLayout {
    /// The layout of the outputs `members` of this layout (positions in `bytes.outputs`),
    /// numbered in `members` order as [`ByteRows::subset`] numbers them, placed from the
    /// lowest of their offsets (returned with it): one buffer's outputs of
    /// [`Outputs::Regions`](crate::Outputs::Regions), or one buffer's inputs of a concat.
    pub(crate) fn window(&self, bytes: &ByteRows, members: &[usize]) -> (u64, PartLayout) {
        let ranges = members
            .iter()
            .map(|&k| self.ranges[bytes.outputs[k].output]);
        let base = ranges.clone().map(|r| r.offset).min().unwrap_or(0);
        let end = ranges
            .clone()
            .map(|r| r.offset + binding_bytes(r.size))
            .max()
            .unwrap_or(base);
        let window = PartLayout {
            ranges: ranges
                .map(|r| PartRange {
                    offset: r.offset - base,
                    size: r.size,
                })
                .collect(),
            total_bytes: end - base,
            alignment: self.alignment,
        };
        (base, window)
    }

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

    /// [`PartLayout::new`] over the split geometry of a split or a concat: every part at a
    /// multiple of `alignment` (at least 16). Empty parts take no room.
    pub(crate) fn place(plan: &SplitPlan, dtype: DType, alignment: u64) -> Result<Self> {
        let alignment = alignment.max(UNIT_BYTES);
        if !alignment.is_power_of_two() {
            return Err(SplitError::BadBuffer(format!(
                "output alignment {alignment} is not a power of two"
            )));
        }
        let mut ranges = Vec::with_capacity(plan.num_parts());
        let (mut cursor, mut end) = (0u64, 0u64);
        let overflow = || SplitError::TooLarge("outputs overflow a 64-bit byte offset".into());
        // `SplitPlan::part_bytes`, in its order (outer * len * inner bytes), with outer and
        // inner taken once, not per output: a sequence has thousands.
        let (inner_bytes, _) = plan.row_bytes(dtype.size())?;
        let outer = plan.outer() as u64;
        for (i, chunk) in plan.chunks().iter().enumerate() {
            let bytes = outer.checked_mul(chunk.len as u64);
            let size = match bytes.and_then(|rows| rows.checked_mul(inner_bytes)) {
                Some(size) => size,
                // The plan's own error names the output and its shape.
                None => plan.part_bytes(i, dtype)?,
            };
            ranges.push(PartRange {
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

    /// [`PartLayout::check`] over the split geometry of a split or a concat (`direction`),
    /// whose parts the messages name.
    pub(crate) fn check_as(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<()> {
        let (part, _) = direction.names();
        let bad = |rule: String| Err(SplitError::BadBuffer(format!("{part} layout: {rule}")));
        if self.ranges.len() != plan.num_parts() {
            return bad(format!(
                "{} ranges for {} {part}s",
                self.ranges.len(),
                plan.num_parts()
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
            let size = plan.part_bytes(i, dtype)?;
            if r.size != size {
                return bad(format!(
                    "{part} {i} has {size} bytes, its range says {}",
                    r.size
                ));
            }
            if size == 0 {
                continue;
            }
            if !r.offset.is_multiple_of(self.alignment) || r.offset < end {
                return bad(format!(
                    "{part} {i} at offset {} must be a multiple of {} at or after byte {end}, \
                     where the {part} before it ends",
                    r.offset, self.alignment
                ));
            }
            end = r
                .offset
                .checked_add(size)
                .filter(|&e| e <= self.total_bytes)
                .ok_or_else(|| {
                    SplitError::BadBuffer(format!(
                        "{part} layout: {part} {i} ends past total_bytes {}",
                        self.total_bytes
                    ))
                })?;
        }
        Ok(())
    }
}

/// A buffer and a byte offset into it, for [`GpuSplitter::encode`](crate::GpuSplitter::encode).
/// A whole buffer is `BufferRegion::from(&buffer)` (or `(&buffer).into()`): offset 0.
#[derive(Debug, Clone, Copy)]
pub struct BufferRegion<'a> {
    /// The buffer.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset; a multiple of the device's `min_storage_buffer_offset_alignment`.
    pub offset: u64,
}

impl<'a> From<&'a wgpu::Buffer> for BufferRegion<'a> {
    /// The whole buffer: the region from offset 0.
    fn from(buffer: &'a wgpu::Buffer) -> Self {
        Self { buffer, offset: 0 }
    }
}

impl BufferRegion<'_> {
    /// Checks that the region has `usage`, starts at a multiple of `align` and holds `needed`
    /// bytes, which `rule` explains; `name` names it in the error.
    pub(crate) fn check(
        &self,
        name: &str,
        needed: u64,
        rule: &str,
        usage: wgpu::BufferUsages,
        align: u64,
    ) -> Result<()> {
        if !self.buffer.usage().contains(usage) {
            return Err(SplitError::BadBuffer(format!(
                "{name} buffer has usage {:?}; it needs {usage:?}",
                self.buffer.usage()
            )));
        }
        if !self.offset.is_multiple_of(align) {
            return Err(SplitError::BadBuffer(format!(
                "{name} offset {} is not a multiple of the device's storage offset alignment {align}",
                self.offset
            )));
        }
        let size = self.buffer.size();
        let end = self.offset.checked_add(needed);
        if end.is_none_or(|end| end > size) {
            return Err(SplitError::BadBuffer(format!(
                "{name} needs {needed} bytes ({rule}); its region has {} (a buffer of {size} \
                 bytes, from offset {})",
                size.saturating_sub(self.offset),
                self.offset
            )));
        }
        Ok(())
    }

    /// Whether the buffer has every flag of `usage`.
    pub(crate) fn allows(&self, usage: wgpu::BufferUsages) -> bool {
        self.buffer.usage().contains(usage)
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
        let layout = PartLayout::new(&plan, DType::U8, 256).unwrap();
        let offsets: Vec<u64> = layout.ranges.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 256, 256]);
        assert_eq!(layout.ranges[2].size, 14);
        // The region ends with the last output, rounded up to a word: 256 + 14 bytes.
        assert_eq!(layout.total_bytes, 272);
        let packed = PartLayout::packed(&plan, DType::U8).unwrap();
        assert_eq!((packed.ranges[2].offset, packed.total_bytes), (16, 32));
    }

    #[test]
    fn hand_built_layouts_are_checked() {
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        let good = PartLayout::packed(&plan, DType::F32).unwrap();
        assert_eq!(good.check(&plan, DType::F32), Ok(()));
        let broken = |f: &dyn Fn(&mut PartLayout)| {
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
        assert!(PartLayout::new(&plan, DType::F32, 256).is_err());
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        assert!(PartLayout::new(&plan, DType::F32, 48).is_err());
    }

    #[test]
    fn a_region_too_short_for_the_layout_is_an_error() {
        let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
        let layout = PartLayout::packed(&plan, DType::F32).unwrap();
        assert!(layout.parts_from(&[0; 127], &plan, DType::F32).is_err());
        let outputs = layout.parts_from(&[7; 128], &plan, DType::F32).unwrap();
        assert_eq!(outputs[1].shape(), &[4, 4]);
    }

    /// A concat's inputs placed in their region come back from it as they were; tensors that
    /// are not the plan's parts are refused.
    #[test]
    fn a_concats_inputs_are_placed_and_read_back() {
        use crate::HostTensor;
        let shapes = [vec![3, 1], vec![3, 0], vec![3, 5]];
        let plan = ops::concat(&shapes, 1).unwrap();
        let parts: Vec<HostTensor> = shapes
            .iter()
            .map(|s| {
                let n = s.iter().product::<usize>() as u16;
                HostTensor::from_slice(s, &(0..n).map(|i| i * 7 + 1).collect::<Vec<u16>>()).unwrap()
            })
            .collect();
        for layout in [
            PartLayout::packed(&plan, DType::U16).unwrap(),
            PartLayout::new(&plan, DType::U16, 256).unwrap(),
        ] {
            let region = layout.region_of(&plan, &parts).unwrap();
            assert_eq!(region.len() as u64, layout.total_bytes);
            let back = layout.parts_from(&region, &plan, DType::U16).unwrap();
            assert_eq!(back, parts);
            assert!(layout.region_of(&plan, &parts[..2]).is_err());
            let mut wrong = parts.clone();
            wrong.swap(0, 1);
            assert!(layout.region_of(&plan, &wrong).is_err());
            let f32s = HostTensor::from_slice(&[3, 1], &[0f32; 3]).unwrap();
            let mixed = [parts[0].clone(), parts[1].clone(), f32s];
            assert!(layout.region_of(&plan, &mixed).is_err());
        }
    }
}
