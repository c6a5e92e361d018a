//! The operators' rules. Each function validates its inputs as its specification says and
//! returns a [`SplitPlan`](crate::SplitPlan); none of them touches data or a device.
//!
//! | operator | function | lengths come from |
//! | --- | --- | --- |
//! | OpenVINO Split-1 | [`split()`] | `num_splits` equal parts |
//! | OpenVINO VariadicSplit-1 | [`variadic_split`] | `split_lengths`, one `-1` takes the rest |
//! | ONNX SplitToSequence-11 | [`split_to_sequence`] | none (chunks of 1), a scalar, or a list |
//! | ONNX Split-1/2/11/13/18 | [`onnx_split()`] ([`OnnxSplitParts::at_opset`] for a model's opset) | a list, or a number of outputs |
//!
//! The concat operators, the split's inverse, return a [`ConcatPlan`](crate::ConcatPlan):
//!
//! | operator | function |
//! | --- | --- |
//! | OpenVINO Concat-1 | [`concat()`] |
//! | ONNX Concat-1/4/11/13 | [`onnx_concat`] |
//! | ONNX ConcatFromSequence-11 | [`concat_from_sequence`] (`new_axis = 1` stacks) |
//!
//! Rows placed by indices that live on the device give a [`RowsPlan`](crate::RowsPlan):
//!
//! | operator | function | a negative index |
//! | --- | --- | --- |
//! | ONNX Gather-1/11/13 | [`gather()`] | counts from the end |
//! | get rows (ggml `GET_ROWS`, PyTorch `index_select` on dim 0, `embedding`) | [`get_rows`] | is out of range |
//! | ONNX ScatterND-11/13/16/18, indices `[.., 1]`, no reduction | [`scatter_nd`] | counts from the end |
//! | set rows (ggml `SET_ROWS`, PyTorch `index_copy_` on dim 0) | [`set_rows`] | is out of range |
//!
//! [`paged_kv_write`] gives a [`PagedKvPlan`](crate::PagedKvPlan): the fused QKV projection's
//! queries out, its keys and values into a paged cache at each token's slot (-1: padding).
//!
//! [`Attention`] gives an attention layer's split of packed QKV into Q and into KV caches at
//! a position, and its merge of heads, as plans with views ([`PartView`](crate::PartView)).
//!
//! With the feature `bench`, `Operator` names any split with its parameters, for code that
//! handles every operator alike (the command, the benchmark suite, the fuzzers), and
//! `spec_examples` are the specifications' own examples.

mod attention;
#[doc(hidden)]
pub mod concat;
#[cfg(feature = "bench")]
mod examples;
mod inputs;
mod onnx_split;
#[cfg(any(test, feature = "bench", feature = "fuzzing"))]
mod operator;
mod rows;
mod sequence;
mod split;
mod variadic;

pub use attention::Attention;
pub use concat::{concat, concat_from_sequence, onnx_concat};
#[cfg(feature = "bench")]
pub use examples::{spec_examples, SpecExample};
#[doc(hidden)]
pub use onnx_split::onnx_split_version;
pub use onnx_split::{onnx_split, OnnxSplitParts};
#[cfg(any(test, feature = "bench", feature = "fuzzing"))]
pub use operator::Operator;
pub use rows::{gather, get_rows, paged_kv_write, scatter_nd, set_rows};
pub use sequence::split_to_sequence;
pub use split::split;
pub use variadic::variadic_split;
