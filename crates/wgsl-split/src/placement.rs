//! Where the parts (a split's outputs, a concat's inputs) lie in their region
//! ([`PartLayout`]), and the checks a layout given by hand passes. Pure arithmetic.
//!
//! Two placements are used: *bindable* (every part at the device's
//! `min_storage_buffer_offset_alignment`, so a neighbouring kernel can bind each one on its
//! own; what a driver's `encode` uses for parts in one region) and *packed* (every part at 16
//! bytes, memory in proportion to the data; what a driver's `run` uploads or reads back when
//! it can).

use crate::direction::Direction;
use crate::error::{Result, SplitError};
use crate::gather::{binding_bytes, UNIT_BYTES};
use crate::plan::bytes::ByteRows;
use crate::plan::{ConcatPlan, SplitPlan};
use crate::tensor::HostTensor;
use crate::DType;

/// A split's plan or a concat's: the split geometry and the way the bytes move, which a
/// layout's parts follow. Implemented by [`SplitPlan`] and [`ConcatPlan`] alone.
#[doc(hidden)]
pub trait Geometry: sealed::Sealed {
    /// Which way the bytes move.
    const DIRECTION: Direction;
    /// The split geometry: the split's own, the concat's inverse.
    fn geometry(&self) -> &SplitPlan;
}

impl Geometry for SplitPlan {
    const DIRECTION: Direction = Direction::Split;

    fn geometry(&self) -> &SplitPlan {
        self
    }
}

impl Geometry for ConcatPlan {
    const DIRECTION: Direction = Direction::Concat;

    fn geometry(&self) -> &SplitPlan {
        self.split()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::SplitPlan {}
    impl Sealed for crate::ConcatPlan {}
}

/// Byte range of one part (a split's output, a concat's input) in its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartRange {
    /// Offset from the start of the region, a multiple of the layout's alignment.
    pub offset: u64,
    /// Size in bytes (0 for an empty part).
    pub size: u64,
}

/// Where every part of a split or a concat lies (a split's outputs, a concat's inputs): in one
/// region ([`GpuSplitter::layout`](https://docs.rs/wgpu-split/latest/wgpu_split/struct.GpuSplitter.html#method.layout), [`PartLayout::packed`]), or
/// each in its own region, as [`Encoded::parts`](https://docs.rs/wgpu-split/latest/wgpu_split/struct.Encoded.html) reports them.
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

/// Outputs that lie back to back both in the input and in the output region, which one copy
/// (or one gather entry) moves together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct ContiguousRun {
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
    /// [`Outputs::Regions`](https://docs.rs/wgpu-split/latest/wgpu_split/enum.Outputs.html#variant.Regions), or one buffer's inputs of a concat.
    #[doc(hidden)]
    pub fn window(&self, bytes: &ByteRows, members: &[usize]) -> (u64, PartLayout) {
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
    #[doc(hidden)]
    pub fn contiguous_runs(&self, bytes: &ByteRows) -> Vec<ContiguousRun> {
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
    #[doc(hidden)]
    pub fn place(plan: &SplitPlan, dtype: DType, alignment: u64) -> Result<Self> {
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
    #[doc(hidden)]
    pub fn check_as(&self, direction: Direction, plan: &SplitPlan, dtype: DType) -> Result<()> {
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

/// The layouts of a split's or a concat's parts, placed by this crate or checked.
impl PartLayout {
    /// Places the parts of `plan` (a split's outputs, a concat's inputs) for elements of
    /// `dtype`, each at a multiple of `alignment` (raised to 16 if smaller, since the gather
    /// writes whole 16-byte units; must be a power of two). Empty parts take no room.
    pub fn new<P: Geometry>(plan: &P, dtype: DType, alignment: u64) -> Result<Self> {
        Self::place(plan.geometry(), dtype, alignment)
    }

    /// The packed placement: every part at a multiple of 16 bytes.
    ///
    /// ```
    /// use wgsl_split::{ops, DType, IntTensor, PartLayout};
    /// let plan = ops::split(&[2, 10], &IntTensor::scalar(1), 2)?;
    /// let layout = PartLayout::packed(&plan, DType::U8)?;
    /// assert_eq!(layout.ranges[1].offset, 16); // 10 bytes, then the next unit
    /// assert_eq!(layout.total_bytes, 28);
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn packed<P: Geometry>(plan: &P, dtype: DType) -> Result<Self> {
        Self::place(plan.geometry(), dtype, UNIT_BYTES)
    }

    /// Checks that this layout can place the parts of `plan` (a split's outputs, a concat's
    /// inputs) for `dtype`: one range per part of the part's size, offsets at multiples of
    /// `alignment` (a power of two, at least 16) in order without overlap, and `total_bytes` a
    /// multiple of 4 that holds them all. A layout from [`PartLayout::new`] always passes;
    /// one built by hand is checked before [`Outputs::Placed`](https://docs.rs/wgpu-split/latest/wgpu_split/enum.Outputs.html#variant.Placed) or
    /// [`Inputs::Placed`](https://docs.rs/wgpu-split/latest/wgpu_split/enum.Inputs.html#variant.Placed) records anything.
    pub fn check<P: Geometry>(&self, plan: &P, dtype: DType) -> Result<()> {
        self.check_as(P::DIRECTION, plan.geometry(), dtype)
    }

    /// Cuts a region of `plan`'s parts read back (at least `total_bytes` long; a split's
    /// outputs as [`GpuSplitter::encode`](https://docs.rs/wgpu-split/latest/wgpu_split/struct.GpuSplitter.html#method.encode) left them) into one
    /// host tensor of `dtype` per part.
    pub fn parts_from<P: Geometry>(
        &self,
        region: &[u8],
        plan: &P,
        dtype: DType,
    ) -> Result<Vec<HostTensor>> {
        let plan = plan.geometry();
        let (part, _) = P::DIRECTION.names();
        if (region.len() as u64) < self.total_bytes || self.ranges.len() != plan.num_parts() {
            return Err(SplitError::DataMismatch(format!(
                "a region of {} bytes for {} {part}s does not match this layout ({} bytes, {} \
                 {part}s)",
                region.len(),
                plan.num_parts(),
                self.total_bytes,
                self.ranges.len()
            )));
        }
        self.ranges
            .iter()
            .enumerate()
            .map(|(i, r)| {
                // An empty part may lie past the region's end: it takes no room.
                let bytes = match r.size {
                    0 => Vec::new(),
                    n => region[r.offset as usize..(r.offset + n) as usize].to_vec(),
                };
                HostTensor::new(dtype, plan.part_shape(i), bytes)
            })
            .collect()
    }

    /// The region of `plan`'s parts, `total_bytes` long, with each of `parts` at its range
    /// and zeros between: a concat's inputs to write where [`Inputs::Placed`](https://docs.rs/wgpu-split/latest/wgpu_split/enum.Inputs.html#variant.Placed)
    /// reads them (`queue.write_buffer`). `parts` are the plan's, in order, of one dtype,
    /// each of its part's shape and of its range's size.
    ///
    /// ```
    /// use wgsl_split::{ops, HostTensor, PartLayout};
    /// let a = HostTensor::from_slice(&[2, 1], &[1u8, 2])?;
    /// let b = HostTensor::from_slice(&[2, 2], &[3u8, 4, 5, 6])?;
    /// let plan = ops::concat(&[a.shape().to_vec(), b.shape().to_vec()], 1)?;
    /// let layout = PartLayout::packed(&plan, a.dtype())?;
    /// let region = layout.region_of(&plan, &[a, b])?;
    /// assert_eq!(region.len(), 20);
    /// assert_eq!(region[..2], [1, 2]);
    /// assert_eq!(region[16..], [3, 4, 5, 6]);
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn region_of<P: Geometry>(&self, plan: &P, parts: &[HostTensor]) -> Result<Vec<u8>> {
        let geometry = plan.geometry();
        let (part, _) = P::DIRECTION.names();
        let dtype = parts.first().map(|t| t.dtype());
        if let Some(dtype) = dtype {
            self.check(plan, dtype)?;
        }
        if parts.len() != geometry.num_parts() {
            return Err(SplitError::DataMismatch(format!(
                "{} tensors for {} {part}s",
                parts.len(),
                geometry.num_parts()
            )));
        }
        let mut region = vec![0u8; self.total_bytes as usize];
        for (i, (t, r)) in parts.iter().zip(&self.ranges).enumerate() {
            let shape = geometry.part_shape(i);
            if t.shape() != shape || Some(t.dtype()) != dtype {
                return Err(SplitError::DataMismatch(format!(
                    "{part} {i} is {:?} {}, where the plan's is {shape:?} of the first's dtype",
                    t.shape(),
                    t.dtype().name()
                )));
            }
            let at = r.offset as usize;
            region[at..at + t.bytes().len()].copy_from_slice(t.bytes());
        }
        Ok(region)
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
