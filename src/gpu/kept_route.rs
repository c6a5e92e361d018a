//! The planner on a [`GpuSplitter`]: what its device offers ([`GpuSplitter::caps`]), and the
//! routes it keeps with their uploaded tables ([`GpuSplitter::kept_route`],
//! [`crate::gpu::kept`]).

use crate::error::Result;
use crate::gpu::gather::window_limit;
use crate::gpu::kept::{KeptRoute, RouteKey};
use crate::gpu::placement::{BufferRegion, Placement};
use crate::gpu::planner::{choose_for, DeviceCaps, Regions, RouteChoice};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::bytes::ByteRows;
use std::sync::Arc;
use wgsl_split::recording::Recording;

/// The planner on a splitter: what its device and settings offer, the routes it keeps and
/// their tables.
impl GpuSplitter {
    /// What `input` and `output` allow the route.
    pub(crate) fn regions(&self, input: &BufferRegion<'_>, output: &BufferRegion<'_>) -> Regions {
        Regions {
            input_offset: input.offset,
            output_offset: output.offset,
            copies_allowed: input.allows(wgpu::BufferUsages::COPY_SRC)
                && output.allows(wgpu::BufferUsages::COPY_DST),
        }
    }

    /// What this device and these settings offer the route.
    pub(crate) fn caps(&self) -> DeviceCaps {
        // Copy commands are memcpy on CPU adapters, far faster than a shader there.
        let cpu = self.info.device_type == wgpu::DeviceType::Cpu;
        DeviceCaps {
            window_limit: window_limit(&self.limits),
            offset_align: self.limits.min_storage_buffer_offset_alignment as u64,
            buffer_copies: match self.route {
                RouteChoice::Auto => cpu,
                RouteChoice::Gather => false,
                RouteChoice::Copies => true,
            },
            gather: self.gather_tuning,
        }
    }

    /// The route of `key`, with the regions checked against its layout: kept from an earlier
    /// split ([`crate::gpu::planner`]), or placed and chosen now, its gather tables uploaded,
    /// and kept. A kept route's layout passed the checks that placing makes, so a repeated
    /// split places nothing and costs the same whatever its number of outputs. `input` is
    /// where the bytes are read: the split's input, or the concat's inputs.
    pub(crate) async fn kept_route(
        &self,
        key: &RouteKey<'_>,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> Result<Arc<KeptRoute>> {
        if let Some(kept) = self.kept.route(key) {
            self.check_regions(key, input, output, &kept.layout)?;
            return Ok(kept);
        }
        let layout = match key.layout {
            Placement::Bindable => self.bindable_layout(key.direction, key.plan, key.dtype)?,
            Placement::Given(layout) => layout.clone(),
        };
        self.check_regions(key, input, output, &layout)?;
        let bytes = ByteRows::new(key.plan, key.dtype.size())?;
        let route = choose_for(key.direction, &bytes, &layout, &key.caps, &key.regions)?;
        let (build, at) = (self.gather.build(), (input.offset, output.offset));
        let recording = route.recording(build, at, &self.limits)?;
        let tables = self.upload_tables(&recording).await?;
        let kept = Arc::new(KeptRoute {
            layout: Arc::new(layout),
            recording,
            tables,
        });
        self.kept.keep_route(key, kept.clone());
        Ok(kept)
    }

    /// The device copies of the tables of `recording`'s dispatches, one each.
    pub(crate) async fn upload_tables(&self, recording: &Recording) -> Result<Vec<wgpu::Buffer>> {
        let tables: Vec<Vec<u8>> = recording.dispatches().map(|d| d.table.clone()).collect();
        if tables.is_empty() {
            return Ok(Vec::new());
        }
        self.kept.tables(&self.device, &tables).await
    }
}
