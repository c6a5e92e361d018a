//! The gather route: one compute dispatch of the gather shader ([`abi::SHADER_SOURCE`]) for
//! every output (several only past one binding).
//!
//! - [`abi`]: the table's structs, modes, layouts, entry points and sizes, checked against the
//!   WGSL.
//! - [`builds`]: the trace and multi-output builds of the shader.
//! - [`plan`]: the dispatches and their tables (pure); `blocks` numbers their entries into
//!   workgroups and lanes per layout.
//! - [`record`]: the pipeline, bind groups and dispatches.
//! - `tables`: device copies of the tables, kept for the next split of the same shapes.

pub(crate) mod abi;
mod blocks;
pub(crate) mod builds;
pub(crate) mod plan;
#[cfg(all(test, feature = "bench"))]
mod portability;
pub(crate) mod record;
pub(crate) mod tables;
