//! Routes kept between splits ([`RouteCache`]), and the planner on a [`GpuSplitter`]: what
//! its device offers ([`GpuSplitter::caps`]), the kept routes with their uploaded tables
//! ([`GpuSplitter::kept_route`]).

use super::{choose_for, DeviceCaps, Regions, Route, RouteChoice};
use crate::cache::Lru;
use crate::error::Result;
use crate::gpu::direction::Direction;
use crate::gpu::gather::window_limit;
use crate::gpu::placement::{BufferRegion, PartLayout, Placement};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::bytes::ByteRows;
use crate::plan::SplitPlan;
use crate::DType;
use std::sync::Arc;

/// Routes kept at most; the least recently used goes first.
pub(super) const MAX_ROUTES: usize = 32;

/// Outputs of all kept routes together at most: a kept route holds its plan, layout and
/// tables, in proportion to its outputs. A plan of any size up to this is kept, so a repeated
/// split of thousands of outputs is not planned again.
pub(super) const MAX_KEPT_OUTPUTS: usize = 1 << 19;

/// Everything a route depends on, borrowed from the split at hand.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteKey<'a> {
    pub direction: Direction,
    pub plan: &'a SplitPlan,
    pub dtype: DType,
    pub layout: Placement<'a>,
    pub regions: Regions,
    pub caps: DeviceCaps,
}

/// A chosen route, with the layout it was chosen for and the device copies of its gather
/// tables (one per dispatch).
#[derive(Debug)]
pub(crate) struct KeptRoute {
    pub layout: Arc<PartLayout>,
    pub route: Route,
    pub tables: Vec<wgpu::Buffer>,
}

/// The cache; shared by a splitter's clones, whose settings are part of every key.
#[derive(Debug)]
pub(crate) struct RouteCache(Lru<OwnedKey, Arc<KeptRoute>>);

impl Default for RouteCache {
    fn default() -> Self {
        Self(Lru::new(MAX_ROUTES, MAX_KEPT_OUTPUTS))
    }
}

/// A [`RouteKey`], owned. The plan's chunks are shared with the caller's plan
/// ([`SplitPlan`]'s clones share them), so a repeated split's key compares at the pointer.
#[derive(Debug)]
struct OwnedKey {
    direction: Direction,
    plan: SplitPlan,
    dtype: DType,
    /// `None` for the bindable placement (its alignment is `caps.offset_align`); the caller's
    /// layout otherwise.
    given: Option<Arc<PartLayout>>,
    regions: Regions,
    caps: DeviceCaps,
}

impl OwnedKey {
    fn matches(&self, key: &RouteKey<'_>) -> bool {
        let layout = match (&self.given, key.layout) {
            (None, Placement::Bindable) => true,
            (Some(given), Placement::Given(layout)) => **given == *layout,
            _ => false,
        };
        // The cheap fields first: most misses differ there.
        (self.direction, self.dtype, self.regions, self.caps)
            == (key.direction, key.dtype, key.regions, key.caps)
            && self.plan.num_outputs() == key.plan.num_outputs()
            && layout
            && self.plan == *key.plan
    }
}

impl RouteCache {
    /// The route kept for `key`, if any.
    pub(crate) fn get(&self, key: &RouteKey<'_>) -> Option<Arc<KeptRoute>> {
        self.0.get(|k| k.matches(key))
    }

    /// Keeps `route` for `key`.
    pub(crate) fn insert(&self, key: &RouteKey<'_>, route: Arc<KeptRoute>) {
        let given = match key.layout {
            Placement::Bindable => None,
            Placement::Given(_) => Some(route.layout.clone()),
        };
        let owned = OwnedKey {
            direction: key.direction,
            plan: key.plan.clone(),
            dtype: key.dtype,
            given,
            regions: key.regions,
            caps: key.caps,
        };
        let weight = key.plan.num_outputs().max(1);
        self.0.insert(owned, route, weight, |k| k.matches(key));
    }
}

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
        if let Some(kept) = self.routes.get(key) {
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
        let tables = self.upload_tables(&route).await?;
        let kept = Arc::new(KeptRoute {
            layout: Arc::new(layout),
            route,
            tables,
        });
        self.routes.insert(key, kept.clone());
        Ok(kept)
    }

    /// The device copies of the gather's tables of `route`, one per dispatch; none for the
    /// other routes.
    pub(crate) async fn upload_tables(&self, route: &Route) -> Result<Vec<wgpu::Buffer>> {
        match route {
            Route::Gather(dispatches) => {
                let tables: Vec<Vec<u8>> = dispatches.iter().map(|d| d.table_bytes()).collect();
                self.tables.buffers(&self.device, &tables).await
            }
            _ => Ok(Vec::new()),
        }
    }
}
