//! The gather route on wgpu: the core's programs and tables (`wgsl_split::gather`,
//! re-exported here) and [`pipeline`], which compiles them, binds the dispatches to the
//! caller's buffers and records them (the device copies of the tables are kept with the
//! splitter's routes and builds, `gpu::kept`).

pub(crate) mod pipeline;

pub(crate) use pipeline::BufferOf;

pub use pipeline::{record_bound, BoundDispatch, GatherPipeline};
pub(crate) use wgsl_split::gather::*;
