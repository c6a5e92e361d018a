//! The GPU path, in the order a split (or a concat, its bytes moving the other way) flows
//! through it:
//!
//! 1. `plans`: [`Plan`], what each entry point takes and gives for each kind of plan;
//!    `parts`: where the caller's parts are ([`Outputs`], [`Inputs`]), both as one `Job`.
//!    Rows placed by indices (`rows`) and the paged write (`paged`) are plans beside them,
//!    recorded by the core and bound by `indexed`.
//! 2. `placement`: where each part lives in its region ([`PartLayout`]).
//! 3. `planner` (pure choice, kept routes): buffer copies or the `gather` dispatch.
//! 4. `prepared` ([`GpuSplitter::encode`], [`GpuSplitter::prepare`]): checks the caller's
//!    buffers, chooses the route and records it into the caller's encoder; `record` checks
//!    regions and prepares parts in regions of their own.
//! 5. `round_trip` ([`GpuSplitter::run`]): upload, record as `encode` does with the parts
//!    packed at 16 bytes, read back; and one window of a stream (`crate::stream`).
//!
//! `device` opens devices and captures wgpu's errors. `GpuSplitter` (`splitter.rs`) owns
//! (a handle to) a device, its compiled pipeline and the caches shared by its clones.

pub(crate) mod device;
pub(crate) use wgsl_split::direction;
pub(crate) mod gather;
mod indexed;
pub(crate) mod kept;
pub(crate) mod moving;
pub(crate) mod paged;
pub(crate) mod parts;
pub(crate) mod placement;
pub(crate) use wgsl_split::planner;
mod kept_route;
pub(crate) mod plans;
pub(crate) mod prepared;
mod record;
pub(crate) mod round_trip;
pub(crate) mod rows;
pub(crate) mod splitter;
mod views;
mod views_round_trip;

#[cfg(feature = "bench")]
pub use device::list_adapters;
pub use device::{AdapterPick, BackendChoice, DeviceChoice};
pub use paged::PagedKvBuffers;
pub use parts::{Inputs, Outputs};
pub use placement::{BufferRegion, PartLayout, PartRange};
pub use plans::{Encoded, Plan};
pub use prepared::Prepared;
pub use rows::RowsBuffers;
pub use splitter::GpuSplitter;
#[cfg(feature = "bench")]
pub use splitter::{RegionsPerDispatch, SplitOptions};
