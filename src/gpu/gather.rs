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
//! - [`pipeline`]: the pipeline, bind groups and dispatches (the device copies of the tables
//!   are kept with the splitter's routes and builds, `gpu::kept`).
//!
//! The rest of `gpu` uses the gather through the names re-exported here.

pub(crate) mod abi;
mod blocks;
pub(crate) mod builds;
mod channels;
pub(crate) mod dispatches;
pub(crate) mod gate;
mod indexed;
mod join_windows;
mod joins;
mod modes;
mod picker;
pub(crate) mod pipeline;
#[cfg(all(test, feature = "bench"))]
mod portability;
mod runs;
mod view_entries;

pub use abi::{binding_bytes, window_limit, MAX_DST_BINDINGS, UNIT_BYTES};
#[cfg(feature = "bench")]
pub use blocks::grid;
pub use builds::ScatterStores;
pub use dispatches::{
    fits_one_dispatch, multi_output_dispatch, plan_dispatches, Dispatch, GatherTuning,
};
pub use indexed::{gather_dispatch, scatter_dispatch, IndexRule, ScatterJob, ScatterRows};
pub use join_windows::plan_joins;
#[cfg(any(test, feature = "fuzzing"))]
pub use joins::Band;
pub use joins::{join_dispatch, join_parts, JoinPart};
pub use modes::GatherMode;
pub use pipeline::{record_bound, BoundDispatch, GatherPipeline, IndexWindows, Windows};
pub use runs::MAX_LANE_STEPS;
pub use view_entries::{lower_view, repeat_joins, table_room, view_dispatches, Lowered};
