//! The caller's buffers: a region of each, where the outputs go, and the checks made before
//! anything is recorded.

use crate::error::{Result, SplitError};
use crate::gpu::output_layout::OutputLayout;

/// A buffer and a byte offset into it, for [`GpuSplitter::encode`](crate::GpuSplitter::encode).
#[derive(Debug, Clone, Copy)]
pub struct BufferRegion<'a> {
    /// The buffer.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset; a multiple of the device's `min_storage_buffer_offset_alignment`.
    pub offset: u64,
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
    /// The gather binds the buffers it writes together, `output_bindings` of them per dispatch
    /// ([`SplitOptions`](crate::SplitOptions)), so `n` buffers take `n / output_bindings`
    /// dispatches, rounded up; on CPU adapters only buffers of up to 4 KiB of outputs are.
    /// The most comes from the device's `max_storage_buffers_per_shader_stage`, less the three
    /// the table and the input take, halved (each output buffer is bound as units and as
    /// words), at most 32: 14 on lavapipe and 6 on llvmpipe GL opened with their adapters'
    /// limits ([`GpuSplitter::open`](crate::GpuSplitter::open) does), but 1 on a device opened
    /// with `wgpu::Limits::downlevel_defaults()` (4 storage buffers) and 2 with
    /// `wgpu::Limits::default()` (8). An engine that splits into many buffers requests the
    /// adapter's `max_storage_buffers_per_shader_stage` when it opens its device (for example
    /// `required_limits: adapter.limits()`). The returned layout gives each output's offset
    /// in its own buffer.
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
