//! A prepared split (or concat) through views recorded again with its views moved: a decode
//! step writes K and V into their caches one position further every token. Only the views'
//! offsets change, so each buffer's window moves by its parts' shift and the table stays:
//! new bind groups, no planning
//! ([`Prepared::encode_with_views`](crate::Prepared::encode_with_views)).

use crate::error::{Result, SplitError};
use crate::gpu::device::scoped_async;
use crate::gpu::direction::Direction;
use crate::gpu::gather::pipeline::record_unscoped;
use crate::gpu::gather::{Dispatch, GatherPipeline, Windows};
use crate::gpu::placement::{BufferRegion, PartLayout};
use crate::gpu::plans::Recorded;
use crate::plan::PartView;
use std::sync::Arc;

/// What a split or concat prepared through views keeps to bind it again at new offsets.
#[derive(Debug)]
pub(crate) struct Movable {
    pub direction: Direction,
    /// Bytes of an element.
    pub es: u64,
    /// The device's storage offset alignment: a window's offset stays a multiple of it.
    pub align: u64,
    /// The views as prepared.
    pub views: Vec<PartView>,
    /// Elements of its region each view reaches (0 for an empty part), and the region holds.
    pub reach: Vec<u64>,
    pub room: Vec<u64>,
    /// The whole tensor's region.
    pub whole: (wgpu::Buffer, u64),
    /// Each dispatch, with the windows it binds.
    pub batches: Vec<MovableBatch>,
    /// Where each part lies, as prepared.
    pub layout: Arc<PartLayout>,
    /// The device's limits (its dispatch grid).
    pub limits: wgpu::Limits,
}

/// The dispatches of a prepared split through views that bind the same windows: their
/// pipeline, their tables, and each window (buffer, offset, size, and the parts in it).
#[derive(Debug)]
pub(crate) struct MovableBatch {
    pub pipeline: GatherPipeline,
    pub dispatches: Vec<Dispatch>,
    pub tables: Vec<wgpu::Buffer>,
    pub windows: Vec<(wgpu::Buffer, u64, u64, Vec<usize>)>,
}

impl Movable {
    /// Records the prepared dispatches into `encoder` with `views` in place of the prepared
    /// ones ([`Prepared::encode_with_views`](crate::Prepared::encode_with_views)).
    pub(crate) async fn encode(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        views: &[PartView],
    ) -> Result<Recorded> {
        let shifts = self.shifts(views)?;
        let windows = self.moved_windows(&shifts)?;
        let whole = BufferRegion {
            buffer: &self.whole.0,
            offset: self.whole.1,
        };
        // Bound and recorded in one set of error scopes: a decode step's host time.
        let what = format!("encoding the prepared {} at new views", self.direction.op());
        let dispatches = scoped_async(device, &what, || {
            let mut bound = Vec::new();
            for (batch, windows) in self.batches.iter().zip(&windows) {
                let (reads, writes) = self
                    .direction
                    .in_order(Windows::Region(&whole), Windows::PerBinding(windows));
                let (dispatches, tables) = (&batch.dispatches, &batch.tables);
                let limits = &self.limits;
                bound.extend(
                    batch
                        .pipeline
                        .bind_unscoped(device, limits, dispatches, tables, reads, writes)?,
                );
            }
            record_unscoped(encoder, &bound);
            Ok::<_, SplitError>(bound.len() as u32)
        })
        .await??;
        let mut layout = (*self.layout).clone();
        for (range, shift) in layout.ranges.iter_mut().zip(&shifts) {
            if range.size > 0 {
                range.offset = range.offset.wrapping_add_signed(*shift);
            }
        }
        layout.total_bytes = layout
            .ranges
            .iter()
            .map(|r| r.offset + r.size)
            .max()
            .unwrap_or(0);
        Ok(Recorded {
            layout: Arc::new(layout),
            dispatches,
            buffer_copies: 0,
        })
    }

    /// Each part's shift in bytes from its prepared view to `views[k]`, which must have the
    /// same strides and lie inside the region.
    fn shifts(&self, views: &[PartView]) -> Result<Vec<i64>> {
        let part = self.direction.names().0;
        if views.len() != self.views.len() {
            return Err(SplitError::BadView(format!(
                "{} views for a node prepared with {} {part}s",
                views.len(),
                self.views.len()
            )));
        }
        let mut shifts = Vec::with_capacity(views.len());
        for (k, (new, old)) in views.iter().zip(&self.views).enumerate() {
            if new.strides != old.strides {
                return Err(SplitError::BadView(format!(
                    "{part} {k}'s view has strides {:?}, the node was prepared with {:?}: a \
                     prepared node moves its views' offsets alone; prepare it again",
                    new.strides, old.strides
                )));
            }
            let delta = new.offset as i128 - old.offset as i128;
            let last = self.reach[k] as i128 - 1 + delta;
            if self.reach[k] > 0 && last >= self.room[k] as i128 {
                return Err(SplitError::BadView(format!(
                    "{part} {k}'s view moved to offset {}: its last element is element {last} \
                     of its region, which holds {}",
                    new.offset, self.room[k]
                )));
            }
            let shift = i64::try_from(delta * self.es as i128).map_err(|_| {
                SplitError::TooLarge(format!("{part} {k}'s view moves past a 64-bit offset"))
            })?;
            shifts.push(shift);
        }
        Ok(shifts)
    }

    /// Each batch's windows moved by their parts' shift: one shift per buffer, at a multiple
    /// of the storage offset alignment, inside the buffer.
    fn moved_windows(&self, shifts: &[i64]) -> Result<Vec<Vec<(BufferRegion<'_>, u64)>>> {
        let part = self.direction.names().0;
        let mut moved_windows = Vec::with_capacity(self.batches.len());
        for batch in &self.batches {
            let mut windows = Vec::with_capacity(batch.windows.len());
            for (buffer, offset, size, parts) in &batch.windows {
                let shift = parts.first().map_or(0, |&k| shifts[k]);
                if let Some(&k) = parts.iter().find(|&&k| shifts[k] != shift) {
                    return Err(SplitError::BadView(format!(
                        "{part}s {} and {k} share a buffer and move by different offsets ({} \
                         and {} bytes): a prepared node moves each buffer's parts together; \
                         encode it with GpuSplitter::encode",
                        parts[0], shift, shifts[k]
                    )));
                }
                let moved = offset
                    .checked_add_signed(shift)
                    .filter(|o| o.is_multiple_of(self.align) && o + size <= buffer.size());
                let Some(moved) = moved else {
                    return Err(SplitError::BadView(format!(
                        "{part} {} moves by {shift} bytes, which would bind its buffer from byte \
                         {}, not a multiple of the device's storage offset alignment {} inside \
                         the buffer: encode it with GpuSplitter::encode",
                        parts[0],
                        *offset as i128 + shift as i128,
                        self.align
                    )));
                };
                windows.push((
                    BufferRegion {
                        buffer,
                        offset: moved,
                    },
                    *size,
                ));
            }
            moved_windows.push(windows);
        }
        Ok(moved_windows)
    }
}
