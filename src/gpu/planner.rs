//! How a split's bytes move: the route, chosen once per plan, device and output placement,
//! and kept for the next split.
//!
//! Choosing is pure: it reads the plan's byte rows, the output placement, what the device can
//! do and what the caller's buffers allow, and records nothing. Copy commands replace the
//! gather dispatch where the device moves bytes faster with them (CPU adapters, where they are
//! memcpy) and the buffers allow them (COPY_SRC on the input, COPY_DST on the output). Each
//! command has a fixed cost, a texture copy's [`texture_command_cost`] times a buffer copy's,
//! so the cheaper plan of copies wins; the gather takes everything else. On GPUs the gather
//! runs at the copy kernel's speed, and copy commands are no faster (`docs/performance.md`,
//! "On a GPU"), so it takes every split there.
//!
//! Keeping: a graph runtime splits the same node again and again, with the same plan and dtype
//! and its buffers from a pool at the same offsets. The route (the byte geometry, the route,
//! the gather's dispatches and their tables) is then the same every time, so
//! [`crate::GpuSplitter::encode`] keeps it ([`RouteCache`]). A kept route holds numbers and
//! this crate's own table buffers, never a caller's buffer: keeping it changes neither which
//! buffers stay alive nor which errors `encode` reports.
//!
//! The last section is the planner on a [`GpuSplitter`], the one part that touches the device:
//! what it offers ([`GpuSplitter::caps`]), the kept routes with their uploaded tables
//! ([`GpuSplitter::kept_route`]), and the texture route's scratch, with the one fallback to
//! the other routes where the device cannot give it ([`GpuSplitter::with_scratch`]).

use crate::cache::Lru;
use crate::error::Result;
use crate::gpu::cpu_texture::{texture_plan, TexturePlan};
use crate::gpu::gather::{plan_dispatches, window_limit, Dispatch, GatherTuning};
use crate::gpu::placement::{BufferRegion, OutputLayout, Placement};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::bytes::{ByteRows, RowKind};
use crate::plan::SplitPlan;
use crate::DType;
use std::sync::Arc;

pub use crate::gpu::cpu_texture::texture_command_cost;

/// Each copy command has a fixed cost: past this many, one dispatch wins.
pub const MAX_BUFFER_COPIES: u64 = 64;

/// Below this average copy size, one dispatch wins.
pub const MIN_AVERAGE_COPY: u64 = 1 << 10;

/// Which routes a splitter may take ([`SplitOptions::route`](crate::SplitOptions)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteChoice {
    /// The cheapest route for the device: copy commands where they beat the gather (CPU
    /// adapters), the gather everywhere else.
    #[default]
    Auto,
    /// The gather dispatch alone, never copy commands.
    Gather,
    /// Copy commands wherever a copy route applies (the texture route on any device), the
    /// gather only where none does.
    Copies,
}

impl std::str::FromStr for RouteChoice {
    type Err = crate::SplitError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Self::Auto),
            "gather" => Ok(Self::Gather),
            "copies" => Ok(Self::Copies),
            other => Err(crate::SplitError::ConflictingInputs(format!(
                "route {other:?} is not one of auto, gather, copies"
            ))),
        }
    }
}

/// What the device offers a split, read once from the device and the splitter's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceCaps {
    /// Largest gather window ([`crate::gpu::gather::window_limit`]).
    pub window_limit: u64,
    /// `min_storage_buffer_offset_alignment`.
    pub offset_align: u64,
    /// `max_texture_dimension_2d`.
    pub max_texture_dimension: u32,
    /// Whether buffer copies may replace the gather.
    pub buffer_copies: bool,
    /// Whether the texture route may be used.
    pub texture_copies: bool,
    /// What one texture copy costs, in buffer copies.
    pub texture_command_cost: u64,
    /// How the gather spreads a split over its lanes.
    pub gather: GatherTuning,
}

impl DeviceCaps {
    /// These caps without the texture route: where the device cannot give a scratch texture.
    pub fn without_textures(self) -> Self {
        DeviceCaps {
            texture_copies: false,
            ..self
        }
    }
}

/// What the caller's buffers allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// Byte offset of the input region in its buffer.
    pub input_offset: u64,
    /// Byte offset of the output region in its buffer.
    pub output_offset: u64,
    /// COPY_SRC on the input buffer and COPY_DST on the output buffer.
    pub copies_allowed: bool,
}

/// One `copy_buffer_to_buffer`, at byte offsets of the caller's buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferCopy {
    /// Offset in the input buffer.
    pub src: u64,
    /// Offset in the output buffer.
    pub dst: u64,
    /// Bytes, a multiple of 4.
    pub size: u64,
}

/// How a split's bytes move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Buffer-to-buffer copies of a few long contiguous runs.
    BufferCopies(Vec<BufferCopy>),
    /// Bands of rows through a scratch texture (offsets in the caller's buffers).
    Texture(TexturePlan),
    /// Gather dispatches (windows relative to the regions); none when every output is empty.
    Gather(Vec<Dispatch>),
}

/// Chooses the route for the outputs of `bytes`, placed by `layout`.
pub fn choose(
    bytes: &ByteRows,
    layout: &OutputLayout,
    caps: &DeviceCaps,
    regions: &Regions,
) -> Result<Route> {
    if regions.copies_allowed {
        let copies = if caps.buffer_copies {
            buffer_copies(bytes, layout, regions)
        } else {
            None
        };
        let texture = if caps.texture_copies {
            texture_plan(
                bytes,
                layout,
                regions.input_offset,
                regions.output_offset,
                caps.max_texture_dimension,
            )
        } else {
            None
        };
        let texture = texture.filter(|t| {
            copies
                .as_ref()
                .is_none_or(|c| t.commands() * caps.texture_command_cost < c.len() as u64)
        });
        if let Some(t) = texture {
            return Ok(Route::Texture(t));
        }
        if let Some(c) = copies {
            return Ok(Route::BufferCopies(c));
        }
    }
    Ok(Route::Gather(plan_dispatches(
        bytes,
        layout,
        caps.gather,
        caps.window_limit,
        caps.offset_align,
    )?))
}

/// The buffer copies that move every output, when the outputs are a few long, word-aligned
/// contiguous runs of the input: whole outputs where each is one range of the input
/// ([`RowKind::Contiguous`]; neighbouring outputs with no padding between them share one
/// copy), else one copy per output row. `None` when a dispatch is the better choice.
pub fn buffer_copies(
    bytes: &ByteRows,
    layout: &OutputLayout,
    regions: &Regions,
) -> Option<Vec<BufferCopy>> {
    let (src_base, dst_base) = (regions.input_offset, regions.output_offset);
    if !src_base.is_multiple_of(4) || !dst_base.is_multiple_of(4) || bytes.outputs.is_empty() {
        return None;
    }
    let copies: Vec<BufferCopy> = match bytes.kind {
        // Runs of whole words only (checked below): a copy writes no byte past its outputs.
        RowKind::Contiguous => layout
            .contiguous_runs(bytes)
            .into_iter()
            .map(|r| BufferCopy {
                src: src_base + r.src,
                dst: dst_base + r.dst,
                size: r.len,
            })
            .collect(),
        RowKind::Strided => {
            // One copy per output row; count before building.
            if bytes.outputs.len() as u64 * bytes.rows > MAX_BUFFER_COPIES {
                return None;
            }
            bytes
                .outputs
                .iter()
                .flat_map(|o| {
                    (0..bytes.rows).map(move |i| BufferCopy {
                        src: src_base + o.offset + i * bytes.stride,
                        dst: dst_base + layout.ranges[o.output].offset + i * o.row_bytes,
                        size: o.row_bytes,
                    })
                })
                .collect()
        }
    };
    let count = copies.len() as u64;
    let total: u64 = bytes.outputs.iter().map(|o| bytes.size(o)).sum();
    if count > MAX_BUFFER_COPIES || total / count < MIN_AVERAGE_COPY {
        return None;
    }
    let aligned = copies
        .iter()
        .all(|c| c.src.is_multiple_of(4) && c.size.is_multiple_of(4));
    aligned.then_some(copies)
}

/// Routes kept at most; the least recently used goes first.
const MAX_ROUTES: usize = 32;

/// Outputs of all kept routes together at most: a kept route holds its plan, layout and
/// tables, in proportion to its outputs. A plan of any size up to this is kept, so a repeated
/// split of thousands of outputs is not planned again.
const MAX_KEPT_OUTPUTS: usize = 1 << 19;

/// Everything a route depends on, borrowed from the split at hand.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteKey<'a> {
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
    pub layout: Arc<OutputLayout>,
    pub route: Route,
    pub tables: Vec<wgpu::Buffer>,
}

impl AsRef<Route> for Route {
    fn as_ref(&self) -> &Route {
        self
    }
}

impl AsRef<Route> for Arc<KeptRoute> {
    fn as_ref(&self) -> &Route {
        &self.route
    }
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
    plan: SplitPlan,
    dtype: DType,
    /// `None` for the bindable placement (its alignment is `caps.offset_align`); the caller's
    /// layout otherwise.
    given: Option<Arc<OutputLayout>>,
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
        (self.dtype, self.regions, self.caps) == (key.dtype, key.regions, key.caps)
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

#[cfg(test)]
mod planner_tests;

/// The planner on a splitter: what its device and settings offer, the routes it keeps, their
/// tables, and the texture route's scratch, with the one fallback where the device cannot
/// give it.
impl GpuSplitter {
    /// What `choose` picks with this device's caps, with the scratch texture its route needs
    /// (none for the routes that need none). Where the device cannot give that texture (out of
    /// memory), what `choose` picks without textures: the one place a split leaves the texture
    /// route for the others.
    pub(crate) async fn with_scratch<C, F, Fut>(
        &self,
        choose: F,
    ) -> Result<(C, Option<wgpu::Texture>)>
    where
        C: AsRef<Route>,
        F: Fn(DeviceCaps) -> Fut,
        Fut: std::future::Future<Output = Result<C>>,
    {
        let caps = self.caps();
        let chosen = choose(caps).await?;
        match self.scratch_for(chosen.as_ref()).await {
            Ok(scratch) => Ok((chosen, scratch)),
            Err(_) => Ok((choose(caps.without_textures()).await?, None)),
        }
    }

    /// The scratch texture `route` needs, none for the other routes; an error where the device
    /// cannot give it.
    async fn scratch_for(&self, route: &Route) -> Result<Option<wgpu::Texture>> {
        match route {
            Route::Texture(t) => {
                let (width, height) = t.scratch;
                Ok(Some(self.scratch.get(&self.device, width, height).await?))
            }
            _ => Ok(None),
        }
    }

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
            max_texture_dimension: self.limits.max_texture_dimension_2d,
            buffer_copies: match self.route {
                RouteChoice::Auto => cpu,
                RouteChoice::Gather => false,
                RouteChoice::Copies => true,
            },
            texture_copies: match self.route {
                RouteChoice::Auto => self.texture_copies.unwrap_or(cpu),
                RouteChoice::Gather => false,
                RouteChoice::Copies => self.texture_copies.unwrap_or(true),
            },
            texture_command_cost: texture_command_cost(self.info.backend),
            gather: self.gather_tuning,
        }
    }

    /// The route of `key`, with the regions checked against its layout: kept from an earlier
    /// split ([`crate::gpu::planner`]), or placed and chosen now, its gather tables uploaded,
    /// and kept. A kept route's layout passed the checks that placing makes, so a repeated
    /// split places nothing and costs the same whatever its number of outputs.
    pub(crate) async fn kept_route(
        &self,
        key: &RouteKey<'_>,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> Result<Arc<KeptRoute>> {
        if let Some(kept) = self.routes.get(key) {
            self.check_regions(key.plan, key.dtype, input, output, &kept.layout)?;
            return Ok(kept);
        }
        let layout = match key.layout {
            Placement::Bindable => self.output_layout(key.plan, key.dtype)?,
            Placement::Given(layout) => layout.clone(),
        };
        self.check_regions(key.plan, key.dtype, input, output, &layout)?;
        let bytes = ByteRows::new(key.plan, key.dtype.size())?;
        let route = choose(&bytes, &layout, &key.caps, &key.regions)?;
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
