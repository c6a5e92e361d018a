//! The memory figures of a case: its gather traced as a GPU runs it, beside the copy kernel
//! traced the same way over the same bytes ([`crate::trace`]).

use super::Case;
use crate::error::Result;
use crate::trace::analysis::{figures, MemoryFigures};
use crate::trace::{
    gpu_settings, trace_concat, trace_copy_kernel, trace_split, trace_views, Sampling,
};
use crate::GpuSplitter;

/// Warp widths the figures are given for: NVIDIA's 32 lanes and AMD's 64.
pub const WARPS: [u32; 2] = [32, 64];

/// A case's memory figures, one per warp width of [`WARPS`].
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryReport {
    /// The split's (or concat's) gather, as a GPU runs it (coalesced lanes, whatever the
    /// adapter).
    pub split: [MemoryFigures; 2],
    /// The vec4 copy kernel over the case's input bytes: the reference.
    pub copy_kernel: [MemoryFigures; 2],
}

/// Traces `case` on `gpu`'s adapter and computes its figures.
pub fn memory_report(gpu: &GpuSplitter, case: &Case) -> Result<MemoryReport> {
    let sampling = Sampling::default();
    let plan = case.plan()?;
    let gpu = gpu_settings(gpu);
    let split = match (case.layout.views(&plan, case.dtype.size())?, case.concat) {
        (Some((views, sizes)), concat) => {
            trace_views(&gpu, &plan, case.dtype, &views, &sizes, concat, sampling)?
        }
        (None, true) => trace_concat(&gpu, &plan.inverse(), case.dtype, sampling)?,
        (None, false) => trace_split(&gpu, &plan, case.dtype, sampling)?,
    };
    let copy = trace_copy_kernel(&gpu, case.bytes()? as u64, sampling)?;
    Ok(MemoryReport {
        split: WARPS.map(|w| figures(&split, w)),
        copy_kernel: WARPS.map(|w| figures(&copy, w)),
    })
}
