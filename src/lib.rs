//! # wgpu-split
//!
//! The tensor *split* family of operators, and their inverse *concat*, as bit-exact wgpu
//! compute: OpenVINO Split-1 and VariadicSplit-1, ONNX SplitToSequence-11 and ONNX Split;
//! OpenVINO Concat-1, ONNX Concat and ConcatFromSequence-11. Every dtype comes out bit for bit.
//!
//! ## The engine's flow
//!
//! An engine plans a node once on the CPU ([`ops`]: the operator's rules, no GPU), then records
//! it into its own encoder, between its own kernels, on its own device and buffers:
//!
//! ```no_run
//! use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, IntTensor, Outputs};
//!
//! # fn engine(device: wgpu::Device, queue: wgpu::Queue, input: wgpu::Buffer)
//! #     -> Result<(), wgpu_split::SplitError> {
//! // Once: the splitter on the engine's device (it compiles the kernel).
//! let gpu = GpuSplitter::new(device.clone(), queue.clone())?;
//! // Once per node: the rules and the shapes. Split [6, 12, 10, 24] f32 on axis 1 into 3.
//! let plan = ops::split(&[6, 12, 10, 24], &IntTensor::scalar(1), 3)?;
//! let layout = gpu.layout(&plan, DType::F32)?; // each output at a bindable offset
//! let outputs = device.create_buffer(&wgpu::BufferDescriptor {
//!     label: Some("split outputs"),
//!     size: layout.total_bytes,
//!     usage: wgpu::BufferUsages::STORAGE,
//!     mapped_at_creation: false,
//! });
//! // Every run: record into the engine's encoder; nothing is submitted.
//! let mut encoder = device.create_command_encoder(&Default::default());
//! let into = Outputs::Region(BufferRegion::from(&outputs));
//! gpu.encode(&mut encoder, &plan, DType::F32, BufferRegion::from(&input), into)?;
//! // ... the engine's kernels bind output i at layout.ranges[i].offset ...
//! queue.submit([encoder.finish()]);
//! # Ok(()) }
//! ```
//!
//! - A concat ([`ops::concat()`] gives a [`ConcatPlan`]) takes the same entry points: its
//!   inputs where [`Inputs`] says, its output one region. The [`Plan`] a call gets picks the
//!   types of its arguments and of its result.
//! - A node run again and again on the same buffers is prepared once
//!   ([`GpuSplitter::prepare`]) and recorded with [`Prepared::encode`].
//! - Parts in buffers of the engine's own: [`Outputs::Regions`], [`Inputs::Regions`]; parts
//!   written (read) through strided views of them, [`PartView`]: [`Outputs::Views`],
//!   [`Inputs::Views`], and the attention layouts of [`ops::Attention`].
//! - Rows placed by indices that live on the device ([`RowsPlan`], from [`ops::gather`],
//!   [`ops::get_rows`], [`ops::scatter_nd`], [`ops::set_rows`]) and an LLM's paged KV write
//!   ([`PagedKvPlan`], [`ops::paged_kv_write`]) take the same entry points: their `from` is a
//!   [`RowsBuffers`] or a [`PagedKvBuffers`] ([`Plan`] lists what each plan takes).
//! - Every entry point that waits has an `_async` twin, the ones a browser (WebGPU) calls.
//! - Misuse is a [`SplitError`] naming the input, the rule and the numbers, never a panic;
//!   wgpu's validation errors are captured.
//!
//! ## Host data
//!
//! [`GpuSplitter::open`] opens a device of its own; [`GpuSplitter::run`] uploads a
//! [`HostTensor`] (a concat's inputs), splits it (concatenates them) and reads the result
//! back; [`Plan::verify`] checks it byte for byte against
//! [`reference`](mod@reference), the same operation on the CPU with ndarray;
//! [`GpuSplitter::run_stream`] splits data of any size window by window.
//!
//! ```no_run
//! use wgpu_split::{ops, DeviceChoice, GpuSplitter, HostTensor, IntTensor, Plan};
//!
//! let data: Vec<f32> = (0..6 * 12 * 10 * 24).map(|i| i as f32).collect();
//! let input = HostTensor::from_slice(&[6, 12, 10, 24], &data)?;
//! let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3)?;
//! let gpu = GpuSplitter::open(DeviceChoice::from_env()?)?;
//! let outputs = gpu.run(&plan, &input)?;
//! plan.verify(&input, &outputs)?;
//! assert_eq!(outputs[0].shape(), &[6, 4, 10, 24]);
//! assert_eq!(gpu.run(&plan.inverse(), &outputs)?, input); // the concat undoes it
//! # Ok::<(), wgpu_split::SplitError>(())
//! ```

#![deny(missing_docs)]
// docs.rs: each item shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "bench")]
pub mod bench;
mod cache;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod gpu;
#[cfg(feature = "npy")]
pub mod npy;
pub(crate) use wgsl_split::{error, plan, tensor, verify};
#[doc(inline)]
pub use wgsl_split::{ops, reference};
#[cfg(any(test, feature = "fuzzing", feature = "bench"))]
mod rng;
mod stream;
#[cfg(feature = "bench")]
pub mod trace;

/// The wgpu this crate is built against (version 30): use it to create the devices, buffers
/// and encoders passed to [`GpuSplitter`], so both name the same types.
pub use wgpu;

pub use gpu::{
    AdapterPick, BackendChoice, BufferRegion, DeviceChoice, Encoded, GpuSplitter, Inputs, Outputs,
    PagedKvBuffers, PartLayout, PartRange, Plan, Prepared, RowsBuffers,
};
pub use stream::{OutputSink, StreamOptions, StreamReport};
#[doc(inline)]
pub use wgsl_split::{
    CacheLayout, ConcatPlan, DType, Element, HostTensor, IntTensor, PagedKvPlan, PartView, Result,
    RowsPlan, RowsStatus, SplitError, SplitPlan,
};

/// The routes and the gather's tuning, for benchmarks and tests (feature `bench`): an engine
/// opens a splitter and encodes, and needs none of them.
#[cfg(feature = "bench")]
pub use gpu::{RegionsPerDispatch, SplitOptions};
#[cfg(feature = "bench")]
#[doc(inline)]
pub use wgsl_split::{gather::GatherMode, planner::RouteChoice};

/// The README's code, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
