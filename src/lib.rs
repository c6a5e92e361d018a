//! # wgpu-split
//!
//! The tensor *split* family of operators as one bit-exact wgpu gather dispatch:
//! OpenVINO Split-1 and VariadicSplit-1, ONNX SplitToSequence-11 and ONNX Split.
//!
//! Data flows through the crate in this order:
//!
//! 1. [`ops`]: each operator's rules; validate the inputs and produce a [`SplitPlan`].
//! 2. [`plan`]: output shapes and chunk offsets over the view `[outer, axis_len, inner]`.
//! 3. [`gpu`]: a [`GpuSplitter`] holds a device and the compiled pipeline, lays the outputs out
//!    in one buffer and dispatches the gather shader once for all of them, or records copy
//!    commands where the device copies faster (contiguous outputs; strided rows through a
//!    texture on CPU adapters).
//! 4. [`reference`](mod@reference): the same split on the CPU with ndarray, to check the GPU against.
//!
//! ```no_run
//! use wgpu_split::{ops, GpuSplitter, HostTensor, IntTensor};
//!
//! let data: Vec<f32> = (0..6 * 12 * 10 * 24).map(|i| i as f32).collect();
//! let input = HostTensor::from_slice(&[6, 12, 10, 24], &data)?;
//! let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3)?;
//! let gpu = GpuSplitter::open_from_env()?;
//! let outputs = gpu.run_verified(&plan, &input)?; // checked against the CPU reference
//! assert_eq!(outputs[0].shape(), &[6, 4, 10, 24]);
//! # Ok::<(), wgpu_split::SplitError>(())
//! ```

#![deny(missing_docs)]

pub mod bench;
pub mod dtype;
pub mod error;
#[doc(hidden)]
pub mod fuzzing;
pub mod gpu;
pub mod npy;
pub mod ops;
pub mod plan;
pub mod reference;
pub mod tensor;

pub use dtype::DType;
pub use error::{Result, SplitError};
pub use gpu::adapter::BackendChoice;
pub use gpu::layout::{OutputLayout, OutputRange};
pub use gpu::{BufferRegion, EncodedSplit, GpuSplitter};
pub use plan::{Chunk, SplitPlan};
pub use tensor::{HostTensor, IntTensor};
