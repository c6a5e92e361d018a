//! How a split's bytes move: the route, chosen once per plan, device and output placement,
//! and kept for the next split.
//!
//! Choosing is pure: it reads the plan's byte rows, the output placement, what the device can
//! do and what the caller's buffers allow, and records nothing. Copy commands replace the
//! gather dispatch where the device moves bytes faster with them (CPU adapters, where they are
//! memcpy) and the buffers allow them (COPY_SRC on the input, COPY_DST on the output): a few
//! long word-aligned runs, as each command has a fixed cost; the gather takes everything else. On GPUs the gather
//! runs at the copy kernel's speed, and copy commands are no faster (`docs/performance.md`,
//! "On a GPU"), so it takes every split there.
//!
//! Keeping: a graph runtime splits the same node again and again, with the same plan and dtype
//! and its buffers from a pool at the same offsets. The route (the byte geometry, the route,
//! the gather's dispatches and their tables) is then the same every time, so
//! a driver's `encode` keeps it (wgpu-split's `gpu::kept`). A kept route holds numbers and
//! this crate's own table buffers, never a caller's buffer: keeping it changes neither which
//! buffers stay alive nor which errors `encode` reports.
//!
//! A concat's route is the split's read the other way ([`choose_concat`]), kept the same way.
//! The planner on a driver's splitter, the one part that touches the device, is the driver's
//! (wgpu-split's `gpu/kept_route.rs`).

use crate::error::Result;
use crate::gather::binds::{Role, Sides};
use crate::gather::builds::Build;
use crate::gather::{join_parts, plan_dispatches, plan_joins, Dispatch, GatherTuning};
use crate::placement::PartLayout;
use crate::plan::bytes::{ByteRows, RowKind};
use crate::recording::{Command, Dispatched, Recording};
use crate::Limits;

/// Each copy command has a fixed cost: past this many, one dispatch wins.
pub const MAX_BUFFER_COPIES: u64 = 64;

/// Below this average copy size, one dispatch wins.
pub const MIN_AVERAGE_COPY: u64 = 1 << 10;

/// Which routes a splitter may take (wgpu-split's `SplitOptions::route`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RouteChoice {
    /// The cheapest route for the device: copy commands where they beat the gather (CPU
    /// adapters), the gather everywhere else.
    #[default]
    Auto,
    /// The gather dispatch alone, never copy commands.
    Gather,
    /// Copy commands wherever they apply (on any device), the gather only where they do
    /// not.
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
    /// Largest gather window ([`crate::gather::window_limit`]).
    pub window_limit: u64,
    /// `min_storage_buffer_offset_alignment`.
    pub offset_align: u64,
    /// Whether buffer copies may replace the gather.
    pub buffer_copies: bool,
    /// How the gather spreads a split over its lanes.
    pub gather: GatherTuning,
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
    /// Gather dispatches (windows relative to the regions); none when every output is empty.
    Gather(Vec<Dispatch>),
}

impl Route {
    /// The route as a recording: its copies from the buffer it reads (`Role::Input(0)`) to
    /// the one it writes (`Role::Output(0)`), or its dispatches of `build` between the regions
    /// at `input` and `output` (their offsets in those buffers, as the bytes move), on a device
    /// of `limits`.
    pub fn recording(
        &self,
        build: Build,
        (input, output): (u64, u64),
        limits: &Limits,
    ) -> Result<Recording> {
        let commands = match self {
            Route::BufferCopies(copies) => copies
                .iter()
                .map(|c| Command::Copy {
                    from: (Role::Input(0), c.src),
                    to: (Role::Output(0), c.dst),
                    size: c.size,
                })
                .collect(),
            Route::Gather(dispatches) => {
                let sides = (Sides::Region(input), Sides::Region(output));
                let dispatch = |d| Dispatched::new(build, d, sides, None, limits);
                let dispatched = dispatches.iter().map(dispatch);
                dispatched
                    .map(|d| d.map(Command::Dispatch))
                    .collect::<Result<_>>()?
            }
        };
        Ok(Recording { commands })
    }
}

/// Chooses the route for the outputs of `bytes`, placed by `layout`.
pub fn choose(
    bytes: &ByteRows,
    layout: &PartLayout,
    caps: &DeviceCaps,
    regions: &Regions,
) -> Result<Route> {
    if let Some(route) = copy_route(bytes, layout, caps, regions, Direction::Split) {
        return Ok(route);
    }
    Ok(Route::Gather(plan_dispatches(
        bytes,
        layout,
        caps.gather,
        caps.window_limit,
        caps.offset_align,
    )?))
}

/// The copy route between the whole tensor of `bytes` and its parts placed by `layout`,
/// where `caps` and `regions` (the split's: `input_offset` is the whole tensor's) allow
/// buffer copies and [`buffer_copies`] finds them cheaper than a dispatch. A concat's copies
/// run the other way. `None` where no copy route applies.
fn copy_route(
    bytes: &ByteRows,
    layout: &PartLayout,
    caps: &DeviceCaps,
    regions: &Regions,
    direction: Direction,
) -> Option<Route> {
    if !regions.copies_allowed || !caps.buffer_copies {
        return None;
    }
    let copies = buffer_copies(bytes, layout, regions)?;
    if direction == Direction::Split {
        return Some(Route::BufferCopies(copies));
    }
    let turned = copies.into_iter().map(|c| BufferCopy {
        src: c.dst,
        dst: c.src,
        size: c.size,
    });
    Some(Route::BufferCopies(turned.collect()))
}

/// The buffer copies that move every output, when the outputs are a few long, word-aligned
/// contiguous runs of the input: whole outputs where each is one range of the input
/// ([`RowKind::Contiguous`]; neighbouring outputs with no padding between them share one
/// copy), else one copy per output row. `None` when a dispatch is the better choice.
pub fn buffer_copies(
    bytes: &ByteRows,
    layout: &PartLayout,
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

/// Chooses the route of a concat of `bytes` whose inputs `layout` places in one region (the
/// split's outputs read the other way, `regions.input_offset` their region's offset): the
/// split's copy route between the same bytes turned around where `caps` allows it and the
/// split's rule picks it, else one join dispatch, several past one binding (none when every
/// input is empty).
pub fn choose_concat(
    bytes: &ByteRows,
    layout: &PartLayout,
    caps: &DeviceCaps,
    regions: &Regions,
) -> Result<Route> {
    let split = Regions {
        input_offset: regions.output_offset,
        output_offset: regions.input_offset,
        copies_allowed: regions.copies_allowed,
    };
    if let Some(route) = copy_route(bytes, layout, caps, &split, Direction::Concat) {
        return Ok(route);
    }
    let parts = join_parts(bytes, layout);
    Ok(Route::Gather(plan_joins(
        bytes,
        &parts,
        caps.gather,
        caps.window_limit,
        caps.offset_align,
    )?))
}

/// The route of the split ([`choose`]) or the concat ([`choose_concat`]) of `bytes`, as
/// `direction` says.
#[doc(hidden)]
pub fn choose_for(
    direction: Direction,
    bytes: &ByteRows,
    layout: &PartLayout,
    caps: &DeviceCaps,
    regions: &Regions,
) -> Result<Route> {
    match direction {
        Direction::Split => choose(bytes, layout, caps, regions),
        Direction::Concat => choose_concat(bytes, layout, caps, regions),
    }
}

#[doc(hidden)]
pub use crate::direction::Direction;

#[cfg(test)]
mod planner_tests;
