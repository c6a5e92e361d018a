//! The GPU path, in the order a split flows through it:
//!
//! 1. `placement`: where the outputs go (the caller's regions, and where each output lives
//!    in them).
//! 2. `planner` (pure choice, kept routes): buffer copies, the `cpu_texture` route (CPU
//!    adapters only), or the `gather` dispatch.
//! 3. `record` (`GpuSplitter::encode`): checks the caller's buffers, chooses the route and
//!    records it into the caller's encoder, into one region or one region per output
//!    ([`Outputs::Regions`]); `prepared` keeps what was recorded for the next split.
//! 4. `round_trip` ([`GpuSplitter::run`], [`GpuSplitter::run_stream`]): upload, record the
//!    split as `encode` does, into outputs packed at 16 bytes, read back.
//!
//! `device` opens devices and captures wgpu's errors. `GpuSplitter` (`splitter.rs`) owns
//! (a handle to) a device, its compiled pipeline and the caches shared by its clones; `record`
//! and `round_trip` are its methods for those steps.

mod concat;
pub(crate) mod cpu_texture;
pub(crate) mod device;
pub(crate) mod direction;
pub(crate) mod gather;
pub(crate) mod placement;
pub(crate) mod planner;
mod prepared;
mod record;
mod round_trip;
pub(crate) mod splitter;

pub use concat::Inputs;
#[cfg(feature = "bench")]
pub use device::list_adapters;
pub use device::{open_device, AdapterPick, BackendChoice, DeviceChoice};
pub use placement::{input_binding_size, BufferRegion, OutputLayout, OutputRange, Outputs};
pub use prepared::{EncodedSplit, PreparedSplit};
pub use splitter::GpuSplitter;
#[cfg(feature = "bench")]
pub use splitter::SplitOptions;
