//! The GPU path, in the order a split flows through it:
//!
//! 1. `output_layout`: where each output lives in the output region.
//! 2. `route` (pure): buffer copies, the `texture` route, or the `gather` dispatch.
//! 3. `record` (`GpuSplitter::encode`): checks the caller's buffers (`region`), chooses the
//!    route and records it into the caller's encoder.
//!    `separate` ([`Outputs::Regions`]) does the same for outputs in buffers of
//!    the caller's choosing.
//! 4. `run` ([`GpuSplitter::run`]): the host round trip (upload, record the split as `encode`
//!    does, into outputs packed at 16 bytes, read back).
//!
//! `device` opens devices and captures wgpu's errors. `GpuSplitter` (`splitter.rs`) owns
//! (a handle to) a device, its compiled pipeline and the caches shared by its clones; `record`
//! and `run` are its methods for those two steps.

mod cache;
pub(crate) mod device;
pub(crate) mod gather;
pub(crate) mod output_layout;
mod prepared;
mod record;
pub(crate) mod region;
pub(crate) mod route;
mod route_cache;
mod run;
mod separate;
pub(crate) mod splitter;
mod stream;
pub(crate) mod texture;

pub use device::{list_adapters, open_device, AdapterPick, BackendChoice, DeviceChoice};
pub use output_layout::{OutputLayout, OutputRange};
pub use prepared::PreparedSplit;
pub use record::{input_binding_size, EncodedSplit};
pub use region::{BufferRegion, Outputs};
pub use splitter::{GpuSplitter, SplitOptions};
