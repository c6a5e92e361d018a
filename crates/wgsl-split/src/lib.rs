//! # wgsl-split
//!
//! The core of [wgpu-split](https://docs.rs/wgpu-split) without a GPU API: the operators'
//! rules ([`ops`]: OpenVINO Split-1, VariadicSplit-1 and Concat-1; ONNX Split, Concat,
//! SplitToSequence-11 and ConcatFromSequence-11; rows placed by indices and the paged KV
//! write), the plans they give ([`SplitPlan`], [`ConcatPlan`], [`RowsPlan`],
//! [`PagedKvPlan`]), the host tensors and the CPU [`reference`](mod@reference) that every GPU result is
//! checked against, byte for byte. It builds for any target, `wasm32-unknown-unknown`
//! included, and depends on no wgpu: a driver (wgpu-split's, on wgpu 30) executes the plans.
//!
//! Beside them, hidden from these docs until a second host settles them, are what a driver
//! executes: the gather's WGSL and its builds (`gather::builds::Build`: the source, the bind
//! group layout), the tables and the gate that checks every precondition of the trusted
//! module, each dispatch's bindings by role (`gather::binds`), the route of a split or a
//! concat (`planner`), and recordings (`recording::Recording`: the commands a plan asks of a
//! host, in order; `rows::record_rows`, `paged::record_paged`, `planner::Route::recording`).
//!
//! ```
//! use wgsl_split::{ops, HostTensor, IntTensor};
//! let plan = ops::split(&[2, 4], &IntTensor::scalar(1), 2)?;
//! let input = HostTensor::from_slice(&[2, 4], &[1u8, 2, 3, 4, 5, 6, 7, 8])?;
//! let parts = plan.reference(&input)?;
//! assert_eq!(parts[1].bytes(), [3, 4, 7, 8]);
//! # Ok::<(), wgsl_split::SplitError>(())
//! ```

#![deny(missing_docs)]
// The internals a driver uses are public but hidden (`#[doc(hidden)]`); their docs, read with
// `--document-private-items`, link to the private items beside them.
#![allow(rustdoc::private_intra_doc_links)]
// docs.rs: each item shows the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[doc(hidden)]
pub mod direction;
#[doc(hidden)]
pub mod dtype;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod gather;
mod limits;
pub mod ops;
#[doc(hidden)]
pub mod paged;
#[doc(hidden)]
pub mod placement;
#[doc(hidden)]
pub mod plan;
#[doc(hidden)]
pub mod planner;
#[doc(hidden)]
pub mod recording;
pub mod reference;
#[doc(hidden)]
pub mod rows;
#[cfg(feature = "bench")]
#[doc(hidden)]
pub mod suite;
#[doc(hidden)]
pub mod tensor;
#[doc(hidden)]
pub mod verify;
#[doc(hidden)]
pub mod views;

pub use dtype::DType;
pub use error::{Result, SplitError};
pub use limits::Limits;
pub use placement::{PartLayout, PartRange};
pub use plan::{CacheLayout, ConcatPlan, PagedKvPlan, PartView, RowsPlan, RowsStatus, SplitPlan};
pub use tensor::{Element, HostTensor, IntTensor};
