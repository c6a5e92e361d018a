//! The caller's buffers: a region of each, and the checks made before anything is recorded.

use crate::error::{Result, SplitError};

/// A buffer and a byte offset into it, for [`GpuSplitter::encode`](crate::GpuSplitter::encode).
#[derive(Debug, Clone, Copy)]
pub struct BufferRegion<'a> {
    /// The buffer.
    pub buffer: &'a wgpu::Buffer,
    /// Byte offset; a multiple of the device's `min_storage_buffer_offset_alignment`.
    pub offset: u64,
}

impl BufferRegion<'_> {
    /// Checks that the region has `usage`, starts at a multiple of `align` and holds `needed`
    /// bytes, which `rule` explains; `name` names it in the error.
    pub fn check(
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
    pub fn allows(&self, usage: wgpu::BufferUsages) -> bool {
        self.buffer.usage().contains(usage)
    }
}
