//! # wgpu-split
//!
//! The tensor *split* family of operators as one bit-exact wgpu gather dispatch:
//! OpenVINO Split-1 and VariadicSplit-1, ONNX SplitToSequence-11 and ONNX Split.
//!
//! Data flows through the crate in this order:
//!
//! 1. [`ops`]: each operator's rules; validate the inputs and produce a [`SplitPlan`].
//! 2. [`plan`]: output shapes and chunks over the view `[outer, axis_len, inner]`, and
//!    ([`plan::bytes`]) the byte rows of each output in the input.
//! 3. [`gpu`]: a [`GpuSplitter`] holds a device and the compiled pipeline. It places the
//!    outputs (`gpu::placement`), chooses a route (`gpu::planner`: buffer copies, the
//!    texture route on CPU adapters, or one gather dispatch for all outputs), records it into
//!    an encoder ([`GpuSplitter::encode`]) and runs host round trips ([`GpuSplitter::run`]).
//! 4. [`verify`]: GPU outputs against [`reference`](mod@reference), the same split on the CPU
//!    with ndarray.
//!
//! ```no_run
//! use wgpu_split::{ops, DeviceChoice, GpuSplitter, HostTensor, IntTensor};
//!
//! let data: Vec<f32> = (0..6 * 12 * 10 * 24).map(|i| i as f32).collect();
//! let input = HostTensor::from_slice(&[6, 12, 10, 24], &data)?;
//! let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3)?;
//! let gpu = GpuSplitter::open(DeviceChoice::from_env()?)?;
//! let outputs = gpu.run_verified(&plan, &input)?; // checked against the CPU reference
//! assert_eq!(outputs[0].shape(), &[6, 4, 10, 24]);
//! # Ok::<(), wgpu_split::SplitError>(())
//! ```

#![deny(missing_docs)]

#[cfg(feature = "bench")]
pub mod bench;
mod cache;
pub mod dtype;
pub mod error;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod gpu;
#[cfg(feature = "npy")]
pub mod npy;
pub mod ops;
pub mod plan;
pub mod reference;
pub mod stream;
pub mod tensor;
#[cfg(feature = "bench")]
pub mod trace;
pub mod verify;

/// The wgpu this crate is built against (version 30): use it to create the devices, buffers
/// and encoders passed to [`GpuSplitter`], so both name the same types.
pub use wgpu;

pub use dtype::DType;
pub use error::{Result, SplitError};
pub use gpu::gather::{GatherExperiment, GatherMode};
pub use gpu::planner::RouteChoice;
pub use gpu::{
    input_binding_size, AdapterPick, BackendChoice, BufferRegion, DeviceChoice, EncodedSplit,
    GpuSplitter, Inputs, OutputLayout, OutputRange, Outputs, PreparedSplit, SplitOptions,
};
pub use ops::Operator;
pub use plan::{Chunk, SplitPlan};
pub use stream::{OutputSink, StreamOptions, StreamReport};
pub use tensor::{HostTensor, IntTensor};

/// The README's code, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
