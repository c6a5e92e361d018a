//! The split plan: pure shape arithmetic, no GPU.
//!
//! Every operator in this crate reduces to the same picture. View the input of shape
//! `[d0, …, d(r-1)]` split on `axis` as a 3-D array `[outer, axis_len, inner]`, where `outer` is
//! the product of the dimensions before the axis and `inner` the product of those after it.
//! Output `i` takes the slab `[.., start_i .. start_i + len_i, ..]` of that view, and the chunks
//! tile the axis in order. The operators differ only in how they choose the lengths.
//!
//! [`bytes`] turns a plan into byte rows for one element size: the geometry every copy route
//! and the CPU reference work from; [`windows`] cuts the input into pieces that split one at a
//! time, for inputs larger than memory or than one device buffer.

#[doc(hidden)]
pub mod bytes;
mod concat_plan;
mod paged_plan;
mod rows_plan;
mod split_plan;
#[doc(hidden)]
pub mod views;
#[doc(hidden)]
pub mod windows;

pub use concat_plan::ConcatPlan;
pub use paged_plan::{CacheLayout, PagedKvPlan};
#[doc(hidden)]
pub use rows_plan::GatherRows;
#[doc(hidden)]
pub use rows_plan::{NegativeIndex, RowsKind, MAX_GATHER_AXIS};
pub use rows_plan::{RowsPlan, RowsStatus};
pub use split_plan::SplitPlan;
#[doc(hidden)]
pub use split_plan::{check_output_count, normalize_axis};
pub use views::PartView;
