//! Where the outputs go: the caller's buffers ([`BufferRegion`], [`Outputs`]), where each output
//! lives in the output region ([`OutputLayout`]), and the checks made before anything is
//! recorded. Pure arithmetic, tested without a device.
//!
//! Two placements are used: *bindable* (every output at the device's
//! `min_storage_buffer_offset_alignment`, so a following kernel can bind each one on its own;
//! what [`GpuSplitter::encode`](crate::GpuSplitter::encode) uses) and *packed* (every output
//! at 16 bytes, memory in proportion to the data; what [`GpuSplitter::run`](crate::GpuSplitter::run)
//! reads back when it can).

use crate::error::{Result, SplitError};
use crate::gpu::gather::{binding_bytes, UNIT_BYTES};
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;

/// Bytes the input buffer must hold from its offset for a split of `plan`: the input's bytes
/// rounded up to 4 (what WebGPU asks of a storage binding), at least 4.
pub fn input_binding_size(plan: &SplitPlan, dtype: DType) -> Result<u64> {
    Ok(binding_bytes(byte_count(plan.input_shape(), dtype)? as u64))
}

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

/// How the outputs of a split into one region are placed: at the device's storage offset
/// alignment ([`GpuSplitter::output_layout`](crate::GpuSplitter::output_layout),
/// `Outputs::Region`), or by a layout given and checked (`Outputs::Placed`). A kept route is
/// found by the first without a layout, so that a repeated split places nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Placement<'a> {
    Bindable,
    Given(&'a OutputLayout),
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
    /// The layout of the outputs `members` of this layout (positions in `bytes.outputs`),
    /// numbered in `members` order as [`ByteRows::subset`] numbers them, placed from the
    /// lowest of their offsets (returned with it): one buffer's outputs of
    /// [`Outputs::Regions`], or one buffer's inputs of a concat.
    pub(crate) fn window(&self, bytes: &ByteRows, members: &[usize]) -> (u64, OutputLayout) {
        let ranges = members
            .iter()
            .map(|&k| self.ranges[bytes.outputs[k].output]);
        let base = ranges.clone().map(|r| r.offset).min().unwrap_or(0);
        let end = ranges
            .clone()
            .map(|r| r.offset + binding_bytes(r.size))
            .max()
            .unwrap_or(base);
        let window = OutputLayout {
            ranges: ranges
                .map(|r| OutputRange {
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
        // `SplitPlan::output_bytes`, in its order (outer * len * inner bytes), with outer and
        // inner taken once, not per output: a sequence has thousands.
        let (inner_bytes, _) = plan.row_bytes(dtype.size())?;
        let outer = plan.outer() as u64;
        for (i, chunk) in plan.chunks().iter().enumerate() {
            let bytes = outer.checked_mul(chunk.len as u64);
            let size = match bytes.and_then(|rows| rows.checked_mul(inner_bytes)) {
                Some(size) => size,
                // The plan's own error names the output and its shape.
                None => plan.output_bytes(i, dtype.size())?,
            };
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

/// Where a split's outputs go, for [`GpuSplitter::encode`](crate::GpuSplitter::encode) and
/// [`GpuSplitter::prepare`](crate::GpuSplitter::prepare).
///
/// Every region needs usage STORAGE and an offset at the device's storage offset alignment.
/// No byte outside the outputs is written: the bytes between outputs, and after the last one,
/// keep their values (an output whose size is not a multiple of 4 has its last word read and
/// written back with the bytes after it unchanged, so nothing else may write those bytes in
/// the same submission's split).
#[derive(Debug, Clone, Copy)]
pub enum Outputs<'a> {
    /// Every output in one region, each at the device's storage offset alignment
    /// ([`GpuSplitter::output_layout`](crate::GpuSplitter::output_layout)), so a following
    /// kernel can bind each on its own. The region holds at least the layout's `total_bytes`:
    /// the last output's end, rounded up to 4.
    Region(BufferRegion<'a>),
    /// Every output in one region, placed by the layout: for example
    /// [`OutputLayout::packed`] (16 bytes), where 10,000 outputs of 12 bytes take 160 KB
    /// instead of 2.5 MB at a 256-byte alignment. A layout built by hand is checked first
    /// ([`OutputLayout::check`]).
    Placed(BufferRegion<'a>, &'a OutputLayout),
    /// One region per output, in output order, each in any buffer: the engine allocates every
    /// tensor itself. Output `i` needs `plan.output_bytes(i)` rounded up to 4 bytes: a tensor
    /// of the engine's exact size. Regions in one buffer must not overlap; the regions of
    /// empty outputs are not touched. Outputs that share a buffer move together (copy commands
    /// where the buffers allow them and they are cheaper, else the gather).
    ///
    /// **The device's limits set the number of dispatches.** The gather writes several
    /// buffers in one dispatch, `b` of them, so `n` buffers take `n / b` dispatches, rounded
    /// up (on CPU adapters only buffers of up to 4 KiB of outputs share dispatches). `b` comes
    /// from the `max_storage_buffers_per_shader_stage` the device was **opened with**, less
    /// the three the table and the input take, halved (each output buffer is bound as units
    /// and as words), at most 32: 14 on lavapipe and 6 on llvmpipe GL opened with their
    /// adapters' limits ([`GpuSplitter::open`](crate::GpuSplitter::open) does), but 1 on a
    /// device opened with `wgpu::Limits::downlevel_defaults()` (4 storage buffers) and 2 with
    /// `wgpu::Limits::default()` (8): 64 outputs of 1 KiB in 64 buffers take 5, 11, 64 and
    /// 32 dispatches (`tests/separate_buffers.rs`). An engine that splits into many buffers requests the adapter's limit when
    /// it opens its device:
    ///
    /// ```no_run
    /// # async fn open(adapter: wgpu_split::wgpu::Adapter) -> Result<(), Box<dyn std::error::Error>> {
    /// let (device, queue) = adapter
    ///     .request_device(&wgpu_split::wgpu::DeviceDescriptor {
    ///         required_limits: adapter.limits(), // not wgpu's defaults
    ///         ..Default::default()
    ///     })
    ///     .await?;
    /// let gpu = wgpu_split::GpuSplitter::new_async(device, queue).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// The returned layout gives each output's offset in its own buffer.
    Regions(&'a [BufferRegion<'a>]),
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
