//! Coverage-guided fuzzing of the planner: every operator, arbitrary shapes, axes, lengths,
//! split values and dtypes; see `wgpu_split::fuzzing::check_planner` for the invariants.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use wgpu_split::fuzzing::{check_planner, PlannerInput};

#[derive(Debug, Arbitrary)]
struct Input {
    shape: Vec<u64>,
    axis: i64,
    axis_form: u8,
    op: u8,
    scalar: i64,
    lengths: Vec<i64>,
    keepdims: bool,
    dtype: u8,
}

fuzz_target!(|input: Input| {
    // Ranks above 8 and lists above 64 entries add nothing but time.
    if input.shape.len() > 8 || input.lengths.len() > 64 {
        return;
    }
    check_planner(&PlannerInput {
        shape: input.shape,
        axis: input.axis,
        axis_form: input.axis_form,
        op: input.op,
        scalar: input.scalar,
        lengths: input.lengths,
        keepdims: input.keepdims,
        dtype: input.dtype,
    });
});
