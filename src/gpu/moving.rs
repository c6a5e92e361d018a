//! A prepared split (or concat) through views with its views moved: a decode step writes K
//! and V into their caches one position further every token. Only the views' offsets
//! change, so each buffer's window moves by its parts' shift: the bind groups stay and take
//! new dynamic offsets, the table stays, nothing is planned
//! ([`Prepared::set_views`](crate::Prepared::set_views)).

use crate::error::{Result, SplitError};
use crate::gpu::direction::Direction;
use crate::gpu::gather::BoundDispatch;
use crate::gpu::placement::PartLayout;
use crate::gpu::plans::Recorded;
use crate::plan::PartView;
use std::sync::Arc;

/// What a split or concat prepared through views keeps to record it at new offsets.
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
    /// Each batch of dispatches, with the windows it binds.
    pub batches: Vec<MovableBatch>,
    /// Where each part lies, as prepared.
    pub layout: Arc<PartLayout>,
}

/// The dispatches of a prepared split through views that bind the same windows, bound with
/// those windows at dynamic offsets, and each window (buffer, offset, size, and the parts in
/// it) as prepared.
#[derive(Debug)]
pub(crate) struct MovableBatch {
    pub bound: Vec<BoundDispatch>,
    pub windows: Vec<(wgpu::Buffer, u64, u64, Vec<usize>)>,
}

impl Movable {
    /// Binds `batches` (the node's dispatches, one list per batch, as prepared) at `views`
    /// in place of the prepared ones: each dispatch takes its prepared offsets moved by its
    /// windows' shifts. Checks everything before it changes anything; returns what they
    /// record ([`Prepared::set_views`](crate::Prepared::set_views)).
    pub(crate) fn move_into<'b>(
        &self,
        views: &[PartView],
        batches: impl Iterator<Item = &'b mut Vec<BoundDispatch>>,
    ) -> Result<Recorded> {
        let shifts = self.shifts(views)?;
        let mut moves = Vec::with_capacity(self.batches.len());
        for batch in &self.batches {
            let window_shifts = self.window_shifts(batch, &shifts)?;
            if !batch
                .bound
                .iter()
                .all(|b| BoundDispatch::moves(b, &window_shifts))
            {
                return Err(SplitError::BadView(format!(
                    "the views move a window more than 2 GiB from where the node was \
                     prepared ({window_shifts:?} bytes): prepare it again"
                )));
            }
            moves.push(window_shifts);
        }
        let mut dispatches = 0;
        for ((batch, window_shifts), bound) in self.batches.iter().zip(&moves).zip(batches) {
            for (now, prepared) in bound.iter_mut().zip(&batch.bound) {
                now.move_from(prepared, window_shifts);
                dispatches += 1;
            }
        }
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
            parts: Arc::new(layout),
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

    /// The shift of each of `batch`'s windows: its parts' shift, one per buffer, which keeps
    /// the window at a multiple of the storage offset alignment, inside its buffer.
    fn window_shifts(&self, batch: &MovableBatch, shifts: &[i64]) -> Result<Vec<i64>> {
        let part = self.direction.names().0;
        let mut window_shifts = Vec::with_capacity(batch.windows.len());
        for (buffer, offset, size, parts) in &batch.windows {
            let shift = parts.first().map_or(0, |&k| shifts[k]);
            if let Some(&k) = parts.iter().find(|&&k| shifts[k] != shift) {
                return Err(SplitError::BadView(format!(
                    "{part}s {} and {k} share a buffer and move by different offsets ({} and {} \
                     bytes): a prepared node moves each buffer's parts together; encode it \
                     with GpuSplitter::encode",
                    parts[0], shift, shifts[k]
                )));
            }
            let moved = offset.checked_add_signed(shift).filter(|o| {
                o.is_multiple_of(self.align) && o.saturating_add(*size) <= buffer.size()
            });
            if moved.is_none() {
                return Err(SplitError::BadView(format!(
                    "{part} {} moves by {shift} bytes, which would bind its buffer from byte {}, \
                     not a multiple of the device's storage offset alignment {} inside the \
                     buffer: encode it with GpuSplitter::encode",
                    parts[0],
                    *offset as i128 + shift as i128,
                    self.align
                )));
            }
            window_shifts.push(shift);
        }
        Ok(window_shifts)
    }
}
