//! The indexed build's recordings (rows placed by indices, a paged KV write) bound to the
//! caller's buffers: each dispatch's pipeline (the build compiled on first use), its table
//! and its bind group, kept as the [`Prepared`](crate::Prepared) node that records them.

use crate::error::{Result, SplitError};
use crate::gpu::gather::{BoundDispatch, BufferOf, GatherPipeline, ScatterStores};
use crate::gpu::placement::{PartLayout, PartRange};
use crate::gpu::prepared::{Commands, PreparedParts};
use crate::gpu::GpuSplitter;
use std::sync::Arc;
use wgsl_split::gather::builds::Convert;
use wgsl_split::recording::{Command, Recording};

impl GpuSplitter {
    /// Binds `recording`, dispatches of the indexed build, to `buffer(role)` on this device:
    /// the build's pipeline, each table uploaded, each dispatch's bind group. `op` names it
    /// in errors; `written` are the regions it writes, in order (its
    /// [`Encoded::parts`](crate::Encoded::parts)).
    pub(crate) async fn bind_indexed<'b>(
        &self,
        op: &'static str,
        written: Vec<PartRange>,
        recording: &Recording,
        buffer: &BufferOf<'_, 'b>,
    ) -> Result<PreparedParts> {
        let mut bound: Vec<BoundDispatch> = Vec::new();
        for command in &recording.commands {
            let Command::Dispatch(d) = command else {
                return Err(SplitError::Device(format!(
                    "a copy command in a recording of {op}: it is dispatched"
                )));
            };
            let Some(stores) = d.build.indexed else {
                return Err(SplitError::Device(format!(
                    "a dispatch of {} in a recording of {op}: its build binds no indices",
                    d.program
                )));
            };
            let pipeline = self.indexed_pipeline(stores, d.build.convert).await?;
            let table = std::slice::from_ref(&d.table);
            let tables = self.kept.tables(&self.device, table).await?;
            bound.push(
                pipeline
                    .bind_recorded(&self.device, op, d, &tables[0], buffer)
                    .await?,
            );
        }
        let total_bytes = written.iter().map(|r| r.offset + r.size).max().unwrap_or(0);
        let layout = PartLayout {
            ranges: written,
            total_bytes,
            alignment: self.offset_align(),
        };
        let mut prepared = self.prepare_nothing(op, Arc::new(layout));
        if !bound.is_empty() {
            prepared.recorded.dispatches = bound.len() as u32;
            prepared.commands.push(Commands::Gather(bound));
        }
        Ok(prepared)
    }

    /// The indexed build whose scatter stores as `stores` says and whose input `convert`
    /// converts, compiled on first use and shared by clones.
    async fn indexed_pipeline(
        &self,
        stores: ScatterStores,
        convert: Option<Convert>,
    ) -> Result<GatherPipeline> {
        let c = convert.map_or(0, |c| {
            1 + Convert::ALL.iter().position(|&k| k == c).unwrap_or(0)
        });
        let cell = &self.indexed[stores as usize * (1 + Convert::ALL.len()) + c];
        if let Some(p) = cell.get() {
            return Ok(p.clone());
        }
        let made = GatherPipeline::indexed(&self.device, stores, convert)
            .await?
            .with_cache(self.gather.cache());
        Ok(cell.get_or_init(|| made).clone())
    }
}
