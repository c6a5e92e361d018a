//! Parts through views on the GPU ([`Outputs::Views`](crate::Outputs::Views),
//! [`Inputs::Views`](crate::Inputs::Views)): the core records them
//! (`wgsl_split::views::record_views`: each view checked against its region, its batches and
//! windows), the driver binds each batch's windows at dynamic offsets, which a prepared node
//! moves ([`Prepared::set_views`]).

use crate::error::{Result, SplitError};
use crate::gpu::direction::Direction;
use crate::gpu::moving::{Movable, MovableBatch};
use crate::gpu::placement::BufferRegion;
use crate::gpu::plans::Plan;
use crate::gpu::prepared::{Commands, Prepared, PreparedParts};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::{PartView, SplitPlan};
use crate::DType;
use std::sync::Arc;
use wgsl_split::views::{record_views, HostRegion};

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] of a split whose output `k` is written through `views[k]`
    /// into `regions[k]`, or of a concat whose input `k` is read so, as `direction` says;
    /// `whole` is the whole tensor's region. The core records it
    /// (`wgsl_split::views::record_views`); each batch binds its windows' buffers, which must
    /// be storage buffers.
    pub(crate) async fn prepare_views<'a>(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        whole: BufferRegion<'a>,
        regions: &[BufferRegion<'a>],
        views: &[PartView],
    ) -> Result<PreparedParts> {
        self.probe
            .check(format_args!("preparing the {}", direction.op()))?;
        let whole_name = direction.names().1;
        self.check_whole(whole_name, &whole, plan, dtype)?;
        // The core tells the buffers apart by wgpu's resource id, which never changes.
        let host = |r: &BufferRegion<'a>| HostRegion {
            buffer: r.buffer,
            offset: r.offset,
            buffer_size: r.buffer.size(),
        };
        let parts: Vec<HostRegion<&wgpu::Buffer>> = regions.iter().map(host).collect();
        let recorded = record_views(
            direction,
            plan,
            dtype,
            host(&whole),
            &parts,
            views,
            &self.limits,
            (self.gather_tuning, self.output_bindings),
        )?;
        let (part, _) = direction.names();
        let layout = Arc::new(recorded.layout);
        let mut prepared = self.prepare_nothing(direction.op(), layout.clone());
        let mut batches = Vec::new();
        for batch in recorded.batches {
            for w in &batch.windows {
                if !w.buffer.usage().contains(wgpu::BufferUsages::STORAGE) {
                    return Err(SplitError::BadBuffer(format!(
                        "{part} {} buffer has usage {:?}; it needs {:?}",
                        w.parts[0],
                        w.buffer.usage(),
                        wgpu::BufferUsages::STORAGE
                    )));
                }
            }
            let b = batch.build;
            let pipeline = self.build_with(b.inputs, b.outputs, b.moving).await?;
            let buffers: Vec<&wgpu::Buffer> = batch.windows.iter().map(|w| w.buffer).collect();
            let bound = self
                .bind_windows(
                    &pipeline,
                    direction,
                    &batch.recording,
                    whole.buffer,
                    &buffers,
                )
                .await?;
            prepared.recorded.dispatches += bound.len() as u32;
            prepared.commands.push(Commands::Gather(bound.clone()));
            let windows = batch.windows.into_iter();
            batches.push(MovableBatch {
                bound,
                windows: windows
                    .map(|w| (w.buffer.clone(), w.offset, w.size, w.parts))
                    .collect(),
            });
        }
        prepared.movable = Some(Arc::new(Movable {
            direction,
            es: dtype.size() as u64,
            align: self.offset_align(),
            views: views.to_vec(),
            reach: recorded.reach,
            room: recorded.room,
            batches,
            layout,
        }));
        Ok(prepared)
    }
}

impl<P: Plan> Prepared<P> {
    /// Moves this split or concat, prepared through views
    /// ([`Outputs::Views`](crate::Outputs::Views), [`Inputs::Views`](crate::Inputs::Views)),
    /// to `views` in place of the views it was prepared with: the same strides, other
    /// offsets (a decode step's K and V one position further into their caches). Each moved
    /// view is checked inside its region; each buffer's parts move by one shift, which keeps
    /// its window at a multiple of the storage offset alignment (K and V of heads of 128 f16
    /// or 64 f32 at any position) and within 2 GiB of where it was prepared. The table and
    /// the bind groups stay, each window takes a new dynamic offset, nothing is made on the
    /// device and nothing waits: the next [`Prepared::encode`] records the node at `views`.
    /// Anything else is a [`SplitError::BadView`] that says what to prepare again, and leaves
    /// the node as it was.
    ///
    /// ```no_run
    /// # use wgpu_split::{ops::Attention, wgpu, DType, GpuSplitter, Outputs};
    /// # fn decode(gpu: &GpuSplitter, qkv: &wgpu::Buffer, q: &wgpu::Buffer, k: &wgpu::Buffer,
    /// #           v: &wgpu::Buffer) -> wgpu_split::Result<()> {
    /// let layer = Attention { batch: 1, seq: 1, q_heads: 32, kv_heads: 8, head_dim: 128 };
    /// let (plan, views) = layer.split_qkv(4096, 0)?;
    /// let regions = [q.into(), k.into(), v.into()];
    /// let mut node = gpu.prepare(&plan, DType::F16, qkv.into(), Outputs::Views(&regions, &views))?;
    /// for p in 0..4096 {
    ///     node.set_views(&layer.split_qkv(4096, p)?.1)?;
    ///     let mut encoder = gpu.device().create_command_encoder(&Default::default());
    ///     node.encode(&mut encoder)?;
    ///     gpu.queue().submit([encoder.finish()]);
    /// }
    /// # Ok(()) }
    /// ```
    pub fn set_views(&mut self, views: &[PartView]) -> Result<()> {
        self.parts.set_views(views)
    }
}

impl PreparedParts {
    /// [`Prepared::set_views`].
    pub(crate) fn set_views(&mut self, views: &[PartView]) -> Result<()> {
        let Some(movable) = &self.movable else {
            return Err(SplitError::BadView(format!(
                "this {} was prepared without views: set_views moves the views of a node \
                 prepared with Outputs::Views or Inputs::Views",
                self.op
            )));
        };
        // Nothing here reaches the device: its loss is the next encode's error.
        // A node through views records its batches' gathers alone, one per batch.
        let batches = self.commands.iter_mut().filter_map(|c| match c {
            Commands::Gather(bound) => Some(bound),
            Commands::BufferCopies { .. } => None,
        });
        self.recorded = movable.move_into(views, batches)?;
        Ok(())
    }
}
