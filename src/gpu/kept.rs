//! What a splitter keeps between splits, in one cache shared by its clones ([`Kept`]): the
//! routes chosen before ([`KeptRoute`], by [`RouteKey`]), the dispatch tables on the device
//! (by their bytes) and the gather's builds beyond the splitter's own (by [`BuildKey`]).
//! Least recently used first out, bounded in entries and in bytes.
//!
//! A graph runtime runs the same node again and again with the same shapes. A kept route
//! saves placing and planning it; a kept table the buffer creation per dispatch, which costs
//! more than a small split's copying on a CPU adapter; a kept build the shader's compilation.
//! Tables and builds are immutable once made, so a kept one is safe to bind from any encoder,
//! thread or submission.

use crate::cache::Lru;
use crate::error::Result;
use crate::gpu::device::{buffer_with, scoped_async};
use crate::gpu::direction::Direction;
use crate::gpu::gather::builds::{InputBindings, OutputBindings};
use crate::gpu::gather::GatherPipeline;
use crate::gpu::placement::{PartLayout, Placement};
use crate::gpu::planner::{DeviceCaps, Regions};
use crate::plan::SplitPlan;
use crate::DType;
use std::collections::HashMap;
use std::sync::Arc;
use wgsl_split::recording::Recording;

/// Entries kept at most; the least recently used goes first.
pub(crate) const MAX_ENTRIES: usize = 128;

/// Bytes kept at most, as each entry is counted: a table its bytes, a route
/// [`PART_BYTES`] per part and its tables' bytes, a build [`BUILD_BYTES`].
pub(crate) const MAX_BYTES: usize = 64 << 20;

/// What a kept route is counted per part: its share of the plan, the layout and the tables,
/// on the host and the device. So a route of up to half a million parts is kept, and a
/// repeated split of thousands of outputs is not planned again.
pub(crate) const PART_BYTES: usize = 128;

/// The largest table kept on its own: a larger one (a split into thousands of parts) is kept
/// with its route, so one such split does not push every other entry out.
const MAX_TABLE_BYTES: usize = 2 << 20;

/// What a kept build is counted: its module and its pipelines.
const BUILD_BYTES: usize = 1 << 20;

/// A build of the gather: its input and output bindings, and the side of a node through views
/// it binds at dynamic offsets ([`GatherPipeline::with_bindings`]).
pub(crate) type BuildKey = (InputBindings, OutputBindings, Option<Direction>);

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
    pub recording: Recording,
    pub tables: Vec<wgpu::Buffer>,
}

/// The cache; a splitter's clones share it, and their settings are part of every route key.
/// With the `bench` feature it also holds the memory trace's build, compiled on first use
/// (a trace build takes SwiftShader a minute and more per program).
#[derive(Debug)]
pub(crate) struct Kept(
    Lru<Key, Value>,
    #[cfg(feature = "bench")] std::sync::Mutex<Option<GatherPipeline>>,
);

impl Default for Kept {
    fn default() -> Self {
        Self(
            Lru::new(MAX_ENTRIES, MAX_BYTES),
            #[cfg(feature = "bench")]
            std::sync::Mutex::new(None),
        )
    }
}

#[derive(Debug)]
enum Key {
    Route(OwnedRouteKey),
    Table(Vec<u8>),
    Build(BuildKey),
}

#[derive(Debug, Clone)]
enum Value {
    Route(Arc<KeptRoute>),
    Table(wgpu::Buffer),
    Build(GatherPipeline),
}

/// A [`RouteKey`], owned. The plan's chunks are shared with the caller's plan
/// ([`SplitPlan`]'s clones share them), so a repeated split's key compares at the pointer.
#[derive(Debug)]
struct OwnedRouteKey {
    direction: Direction,
    plan: SplitPlan,
    dtype: DType,
    /// `None` for the bindable placement (its alignment is `caps.offset_align`); the caller's
    /// layout otherwise.
    given: Option<Arc<PartLayout>>,
    regions: Regions,
    caps: DeviceCaps,
}

impl OwnedRouteKey {
    fn matches(&self, key: &RouteKey<'_>) -> bool {
        let layout = match (&self.given, key.layout) {
            (None, Placement::Bindable) => true,
            (Some(given), Placement::Given(layout)) => **given == *layout,
            _ => false,
        };
        // The cheap fields first: most misses differ there.
        (self.direction, self.dtype, self.regions, self.caps)
            == (key.direction, key.dtype, key.regions, key.caps)
            && self.plan.num_parts() == key.plan.num_parts()
            && layout
            && self.plan == *key.plan
    }
}

impl Kept {
    #[cfg(feature = "bench")]
    /// The memory trace's build, made by `make` on first use.
    pub(crate) fn traced_build(
        &self,
        make: impl FnOnce() -> crate::error::Result<GatherPipeline>,
    ) -> crate::error::Result<GatherPipeline> {
        let mut kept = self.1.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pipeline) = kept.as_ref() {
            return Ok(pipeline.clone());
        }
        let pipeline = make()?;
        *kept = Some(pipeline.clone());
        Ok(pipeline)
    }

    /// The route kept for `key`, if any.
    pub(crate) fn route(&self, key: &RouteKey<'_>) -> Option<Arc<KeptRoute>> {
        match self.0.get(|k| matches!(k, Key::Route(o) if o.matches(key))) {
            Some(Value::Route(route)) => Some(route),
            _ => None,
        }
    }

    /// Keeps `route` for `key`.
    pub(crate) fn keep_route(&self, key: &RouteKey<'_>, route: Arc<KeptRoute>) {
        let given = match key.layout {
            Placement::Bindable => None,
            Placement::Given(_) => Some(route.layout.clone()),
        };
        let owned = OwnedRouteKey {
            direction: key.direction,
            plan: key.plan.clone(),
            dtype: key.dtype,
            given,
            regions: key.regions,
            caps: key.caps,
        };
        let tables: u64 = route.tables.iter().map(wgpu::Buffer::size).sum();
        let parts = key.plan.num_parts().max(1);
        let bytes = parts
            .saturating_mul(PART_BYTES)
            .saturating_add(tables as usize);
        let value = Value::Route(route);
        let matches = |k: &Key| matches!(k, Key::Route(o) if o.matches(key));
        self.0.insert(Key::Route(owned), value, bytes, matches);
    }

    /// The build kept for `key`, if any.
    pub(crate) fn build(&self, key: &BuildKey) -> Option<GatherPipeline> {
        match self.0.get(|k| matches!(k, Key::Build(b) if b == key)) {
            Some(Value::Build(pipeline)) => Some(pipeline),
            _ => None,
        }
    }

    /// Keeps `pipeline` as the build of `key`.
    pub(crate) fn keep_build(&self, key: BuildKey, pipeline: GatherPipeline) {
        let matches = |k: &Key| matches!(k, Key::Build(b) if *b == key);
        self.0.insert(
            Key::Build(key),
            Value::Build(pipeline),
            BUILD_BYTES,
            matches,
        );
    }

    /// One storage buffer per table, kept where one was, uploaded and kept (up to
    /// [`MAX_TABLE_BYTES`]) where not. Buffers created here are kept only when their creation
    /// raised no device error, so a failed upload (out of memory) is not served again.
    pub(crate) async fn tables(
        &self,
        device: &wgpu::Device,
        tables: &[Vec<u8>],
    ) -> Result<Vec<wgpu::Buffer>> {
        let kept = |t: &Vec<u8>| match self.0.get(|k| matches!(k, Key::Table(b) if b == t)) {
            Some(Value::Table(buffer)) => Some(buffer),
            _ => None,
        };
        let mut found: Vec<Option<wgpu::Buffer>> = tables.iter().map(kept).collect();
        if found.iter().all(Option::is_some) {
            return Ok(found.into_iter().flatten().collect());
        }
        // Dispatches of one split can have equal tables (their windows differ): one upload each.
        let created = scoped_async(device, "uploading the split tables", || {
            let mut created: HashMap<&[u8], wgpu::Buffer> = HashMap::new();
            for (table, slot) in tables.iter().zip(&mut found) {
                if slot.is_none() {
                    let buffer = match created.get(table.as_slice()) {
                        Some(b) => b.clone(),
                        None => {
                            let usage = wgpu::BufferUsages::STORAGE;
                            let b = buffer_with(device, "split table", table, usage)?;
                            created.insert(table, b.clone());
                            b
                        }
                    };
                    *slot = Some(buffer);
                }
            }
            Ok::<_, crate::SplitError>(created)
        })
        .await??;
        for (table, buffer) in created
            .into_iter()
            .filter(|(t, _)| t.len() <= MAX_TABLE_BYTES)
        {
            let matches = |k: &Key| matches!(k, Key::Table(b) if b == table);
            let key = Key::Table(table.to_vec());
            self.0
                .insert(key, Value::Table(buffer), table.len(), matches);
        }
        Ok(found.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod kept_tests;
