//! Where the parts lie on the device: the caller's buffers ([`BufferRegion`]) and how a
//! route places its parts ([`Placement`]); the layouts themselves ([`PartLayout`]) are the
//! core's.

use crate::error::{Result, SplitError};
pub use wgsl_split::placement::{PartLayout, PartRange};

/// How the parts in one region are placed: at the device's storage offset alignment
/// ([`GpuSplitter::layout`](crate::GpuSplitter::layout), `Outputs::Region`), or by a layout
/// given and checked (`Outputs::Placed`, `Inputs::Placed`). A kept route is found by the
/// first without a layout, so that a repeated split or concat places nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Placement<'a> {
    Bindable,
    Given(&'a PartLayout),
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
