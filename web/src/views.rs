//! A split into random views (`Outputs::Views`): each output permuted inside a padded
//! container at a random place, in a buffer of its own filled with a pattern, read back whole
//! and compared byte for byte with the CPU reference's views, so a byte written outside a
//! view fails too.

use crate::cases::random_views;
use wgpu_split::{reference, GpuSplitter, HostTensor, PartView, SplitPlan};

/// What a split into views gave: whether every buffer came out as the reference's, and the
/// dispatches it took.
pub(crate) struct IntoViews {
    pub same: bool,
    pub dispatches: u32,
}

/// Splits `input` as `plan` says into random views (`GpuSplitter::run_into_views_async`,
/// every region read back whole) and compares each region with the reference's.
pub(crate) async fn split_into_views(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    input: &HostTensor,
    below: &mut dyn FnMut(usize) -> usize,
) -> Result<IntoViews, String> {
    let es = input.dtype().size();
    let (views, sizes): (Vec<PartView>, Vec<usize>) =
        random_views(plan, es, below).into_iter().unzip();
    let initial: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| {
            let padded = n.next_multiple_of(16).max(16);
            (0..padded).map(|i| (i * 131 + k * 7 + 3) as u8).collect()
        })
        .collect();
    let mut got = initial.clone();
    let encoded = gpu
        .run_into_views_async(plan, input, &views, &mut got)
        .await
        .map_err(|e| format!("the split into views {views:?}: {e}"))?;
    let mut want = initial;
    reference::split_into_views(input, plan, &views, &mut want).map_err(|e| e.to_string())?;
    Ok(IntoViews {
        same: got == want,
        dispatches: encoded.dispatches,
    })
}
