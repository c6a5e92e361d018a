//! The gather route: one compute dispatch of the gather shader ([`builds::GatherSource`]) for
//! every output (several only past one binding).
//!
//! - [`abi`]: the table's structs, modes, schedules, entry points and sizes, checked against the
//!   WGSL.
//! - [`builds`]: the shader's builds (one input buffer or several, one output buffer or
//!   several, the trace), assembled from named pieces.
//! - [`dispatches`]: the dispatches and their tables (pure); `blocks` numbers their entries
//!   into workgroups and lanes per schedule (`channels` for equal parts of short rows on CPU
//!   adapters, `runs` a lane's run there); `joins` makes a concat's dispatch, `join_windows` its
//!   dispatches past one binding.
//!
//! A driver (wgpu-split's `gpu::gather::pipeline`) compiles the builds, binds the dispatches
//! to its buffers and records them; it uses the gather through the names re-exported here.

#[doc(hidden)]
pub mod abi;
#[doc(hidden)]
pub mod binds;
#[doc(hidden)]
pub mod blocks;
#[doc(hidden)]
pub mod builds;
#[doc(hidden)]
pub mod channels;
#[doc(hidden)]
pub mod dispatches;
#[doc(hidden)]
pub mod gate;
#[doc(hidden)]
pub mod indexed;
#[doc(hidden)]
pub mod join_windows;
#[doc(hidden)]
pub mod joins;
#[doc(hidden)]
pub mod modes;
#[doc(hidden)]
pub mod picker;
#[cfg(all(test, feature = "bench"))]
mod portability;
#[doc(hidden)]
pub mod runs;
#[doc(hidden)]
pub mod view_entries;

pub use abi::{binding_bytes, window_limit, MAX_DST_BINDINGS, UNIT_BYTES};
pub use blocks::grid;
pub use builds::ScatterStores;
pub use dispatches::{
    fits_one_dispatch, multi_output_dispatch, plan_dispatches, Dispatch, GatherTuning,
};
pub use indexed::{gather_dispatch, scatter_dispatch, IndexRule, ScatterJob, ScatterRows};
pub use join_windows::plan_joins;
pub use joins::Band;
pub use joins::{join_dispatch, join_parts, JoinPart};
pub use modes::GatherMode;
pub use runs::MAX_LANE_STEPS;
pub use view_entries::{lower_view, repeat_joins, table_room, view_dispatches, Lowered};
