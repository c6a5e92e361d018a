//! Parts through strided views: where each element of a part lies in its buffer region, the
//! rules a view must keep, and its elements as byte runs (pure; see `docs/views.md`).
//!
//! A split's output (a concat's input) is a tensor of the shape its plan gives. Written
//! through a view, element `[i0, .., i(r-1)]` lies at element `offset + i0 * strides[0] + ..`
//! of the part's region: a permutation (attention heads `[B, H, S, D]`), a place inside a
//! bigger tensor (a KV cache at position `p`) and padded rows are all views. The kernel moves
//! the part as [`Runs`]: runs of bytes contiguous on both sides, repeated over a few levels,
//! walked in the destination's address order.

use crate::error::{Result, SplitError};
use crate::plan::SplitPlan;

/// Where a part's elements lie in its region, counted in elements of the dtype: element
/// `[i0, .., i(r-1)]` of the part (its shape as the plan gives it) at element
/// `offset + i0 * strides[0] + .. + i(r-1) * strides[r-1]` of the region.
///
/// ```
/// use wgsl_split::PartView;
/// // K of shape [1, S, 8, 128] (a split of packed QKV) stored into a cache
/// // [1, 8, 4096, 128] at position p = 1024: its axes 1 and 2 swap places.
/// let k = PartView::within(&[1, 2048, 8, 128], &[1, 8, 4096, 128], &[0, 2, 1, 3], &[0, 0, 1024, 0])?;
/// assert_eq!(k.offset, 1024 * 128);
/// assert_eq!(k.strides, vec![8 * 4096 * 128, 128, 4096 * 128, 1]);
/// # Ok::<(), wgsl_split::SplitError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PartView {
    /// The element of the region that holds the part's first element.
    pub offset: u64,
    /// Elements of the region between neighbours on each axis of the part.
    pub strides: Vec<u64>,
}

impl PartView {
    /// The part as a plain row-major tensor at the region's start: the view every part had
    /// before views.
    pub fn contiguous(shape: &[usize]) -> Self {
        Self {
            offset: 0,
            strides: row_major(shape),
        }
    }

    /// The part of `shape` as a block of a row-major tensor of shape `container`: axis `j` of
    /// the container holds axis `perm[j]` of the part, from index `at[j]` on. A transpose is
    /// `at` all zeros with the container the permuted shape; a KV cache write is a position
    /// `at` on the cache's sequence axis.
    pub fn within(
        shape: &[usize],
        container: &[usize],
        perm: &[usize],
        at: &[usize],
    ) -> Result<Self> {
        let bad = |rule: String| {
            SplitError::BadView(format!(
                "a part of shape {shape:?} within {container:?} (perm {perm:?}, at {at:?}): {rule}"
            ))
        };
        let rank = shape.len();
        if container.len() != rank || perm.len() != rank || at.len() != rank {
            return Err(bad(format!(
                "container, perm and at need {rank} values each"
            )));
        }
        let mut seen = vec![false; rank];
        for &p in perm {
            if p >= rank || std::mem::replace(&mut seen[p], true) {
                return Err(bad("perm is not a permutation of the part's axes".into()));
            }
        }
        let outer = row_major(container);
        let mut strides = vec![0u64; rank];
        let mut offset = 0u64;
        for j in 0..rank {
            let len = shape[perm[j]];
            if at[j].checked_add(len).is_none_or(|end| end > container[j]) {
                return Err(bad(format!(
                    "axis {j} of the container has length {}, but the part takes {len} from {}",
                    container[j], at[j]
                )));
            }
            strides[perm[j]] = outer[j];
            offset = offset.saturating_add((at[j] as u64).saturating_mul(outer[j]));
        }
        Ok(Self { offset, strides })
    }
}

/// Row-major strides of `shape`, in elements (saturating: a shape whose elements overflow is
/// refused by its checks).
fn row_major(shape: &[usize]) -> Vec<u64> {
    let mut strides = vec![1u64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1].saturating_mul(shape[k + 1] as u64);
    }
    strides
}

/// Whether the view's elements may repeat: a concat reads its inputs, so an input's view may
/// read an element twice (a stride of 0 broadcasts); a split's output view is written, so no
/// two of its elements may share a byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum Access {
    Read,
    Write,
}

/// Checks the view of `part` (its name in messages, such as "output 2"), of shape `shape`,
/// in a region of `region_elements` elements: one stride per axis; every element inside the
/// region; and, written, each axis's stride past every element the axes of smaller strides
/// reach (a permutation, a slice and padded rows all keep it; it lets the kernel walk the
/// view in address order, and no two elements overlap). Returns the elements of the region
/// the view reaches: its last element's, plus one (0 for an empty part).
#[doc(hidden)]
pub fn check_view(
    part: &str,
    shape: &[usize],
    view: &PartView,
    region_elements: u64,
    access: Access,
) -> Result<u64> {
    let bad = |rule: String| {
        SplitError::BadView(format!(
            "{part} of shape {shape:?}, viewed at offset {} with strides {:?}: {rule}",
            view.offset, view.strides
        ))
    };
    if view.strides.len() != shape.len() {
        return Err(bad(format!(
            "it needs one stride per axis, {}, not {}",
            shape.len(),
            view.strides.len()
        )));
    }
    if shape.contains(&0) {
        return Ok(0);
    }
    let mut last = view.offset as u128;
    for (&n, &s) in shape.iter().zip(&view.strides) {
        last = last.saturating_add((n as u128 - 1) * s as u128);
    }
    if last >= region_elements as u128 {
        return Err(bad(format!(
            "its last element is element {last} of its region, which holds {region_elements}"
        )));
    }
    if access == Access::Write {
        let mut axes: Vec<usize> = (0..shape.len()).filter(|&k| shape[k] > 1).collect();
        axes.sort_by_key(|&k| view.strides[k]);
        let mut reach = 0u128;
        for k in axes {
            let s = view.strides[k] as u128;
            if s <= reach {
                return Err(bad(format!(
                    "axis {k}'s stride {s} does not step past the {} elements its axes of \
                     smaller strides reach, so elements would overlap",
                    reach + 1
                )));
            }
            reach = reach.saturating_add((shape[k] as u128 - 1) * s);
        }
    }
    // Below `region_elements`, a u64.
    Ok(last as u64 + 1)
}

/// One level of a part's runs: `extent` runs (or blocks of runs), `src_step` bytes apart in
/// the source and `dst_step` bytes apart in the destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub struct Level {
    pub extent: u64,
    pub src_step: u64,
    pub dst_step: u64,
}

/// A non-empty part's elements as byte runs: `run_bytes` contiguous in both buffers, from
/// `src` and `dst` (bytes into the source and the destination regions) on, repeated over
/// `levels`, outermost first. Levels go by destination step, largest first, and each steps
/// past all the levels inside it: walking them in order writes the destination in address
/// order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[doc(hidden)]
pub struct Runs {
    pub run_bytes: u64,
    pub levels: Vec<Level>,
    pub src: u64,
    pub dst: u64,
}

impl Runs {
    /// A part of `shape` whose element `i` lies at `src.offset + i . src.strides` of the
    /// source and `dst.offset + i . dst.strides` of the destination; `None` when it is empty.
    /// The views were checked, so every byte offset fits the regions, and the destination's
    /// strides nest (no two of its axes with more than one index share a stride).
    #[doc(hidden)]
    pub fn new(shape: &[usize], src: &PartView, dst: &PartView, elem: u64) -> Option<Runs> {
        if shape.contains(&0) {
            return None;
        }
        let mut axes: Vec<Level> = (0..shape.len())
            .filter(|&k| shape[k] > 1)
            .map(|k| Level {
                extent: shape[k] as u64,
                src_step: src.strides[k],
                dst_step: dst.strides[k],
            })
            .collect();
        axes.sort_by_key(|l| std::cmp::Reverse(l.dst_step));
        // Neighbouring levels that step as one level does merge: a row-major block stays one.
        let mut levels: Vec<Level> = Vec::with_capacity(axes.len());
        for inner in axes {
            match levels.last_mut() {
                Some(outer)
                    if inner.extent.checked_mul(inner.dst_step) == Some(outer.dst_step)
                        && inner.extent.checked_mul(inner.src_step) == Some(outer.src_step) =>
                {
                    *outer = Level {
                        extent: outer.extent * inner.extent,
                        ..inner
                    };
                }
                _ => levels.push(inner),
            }
        }
        // The innermost level is the run where it is contiguous on both sides.
        let run = match levels.last() {
            Some(l) if l.src_step == 1 && l.dst_step == 1 => levels.pop().map_or(1, |l| l.extent),
            _ => 1,
        };
        let bytes = |l: Level| Level {
            extent: l.extent,
            src_step: l.src_step * elem,
            dst_step: l.dst_step * elem,
        };
        Some(Runs {
            run_bytes: run * elem,
            levels: levels.into_iter().map(bytes).collect(),
            src: src.offset * elem,
            dst: dst.offset * elem,
        })
    }

    /// Runs in all.
    #[doc(hidden)]
    pub fn count(&self) -> u64 {
        self.levels.iter().map(|l| l.extent).product()
    }

    /// Bytes from the first run's start to the last run's end in the destination.
    #[doc(hidden)]
    pub fn dst_span(&self) -> u64 {
        let steps: u64 = self
            .levels
            .iter()
            .map(|l| (l.extent - 1) * l.dst_step)
            .sum();
        steps + self.run_bytes
    }

    /// Each run's start in the source and in the destination, in the destination's order.
    #[doc(hidden)]
    pub fn starts(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        (0..self.count()).map(move |mut r| {
            let (mut s, mut d) = (self.src, self.dst);
            for l in self.levels.iter().rev() {
                let i = r % l.extent;
                r /= l.extent;
                s += i * l.src_step;
                d += i * l.dst_step;
            }
            (s, d)
        })
    }
}

/// The row-major view of a split's input (a concat's output) that holds `part`'s elements:
/// the whole tensor's strides, less the split axis where the parts drop it, from the chunk's
/// first index on.
fn slab(plan: &SplitPlan, part: usize) -> PartView {
    let whole = row_major(plan.whole_shape());
    let offset = plan.chunks()[part].start as u64 * whole[plan.axis()];
    let mut strides = whole;
    if !plan.keep_axis() {
        strides.remove(plan.axis());
    }
    PartView { offset, strides }
}

/// Part `k` of the split geometry `plan` through `view`, as runs (`None` when it is empty):
/// a split's output written through it (`Access::Write`: from the input's bytes to the
/// view's), or a concat's input read through it (`Access::Read`: from the view's bytes to
/// the output's).
#[doc(hidden)]
pub fn part_runs(
    plan: &SplitPlan,
    k: usize,
    view: &PartView,
    elem: u64,
    access: Access,
) -> Option<Runs> {
    let (shape, whole) = (plan.part_shape(k), slab(plan, k));
    match access {
        Access::Write => Runs::new(&shape, &whole, view, elem),
        Access::Read => Runs::new(&shape, view, &whole, elem),
    }
}

/// Runs checked one by one for overlaps at most (past it, parts whose spans meet are
/// refused).
const MAX_CHECKED_RUNS: u64 = 1 << 22;

/// A written part as [`check_disjoint`] takes it: its name in messages, its buffer (any key),
/// its region's byte offset in that buffer, and its runs.
#[doc(hidden)]
pub struct Written<'a, K> {
    pub name: String,
    pub buffer: K,
    pub at: u64,
    pub runs: &'a Runs,
}

impl<K> Written<'_, K> {
    /// Bytes of its buffer from its first run's start to its last run's end.
    fn span(&self) -> (u64, u64) {
        let start = self.at + self.runs.dst;
        (start, start + self.runs.dst_span())
    }
}

/// Checks that no two written parts share a byte. Parts whose spans in their buffer meet no
/// other's pass at once; each group of parts whose spans meet (heads interleaved in one
/// buffer) is checked run by run.
#[doc(hidden)]
pub fn check_disjoint<K: Ord + Copy>(parts: &[Written<'_, K>]) -> Result<()> {
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| (parts[i].buffer, parts[i].span()));
    let mut group: Vec<usize> = Vec::new();
    let mut group_end = 0;
    for &i in &order {
        let (start, end) = parts[i].span();
        let joins = group
            .last()
            .is_some_and(|&g| parts[g].buffer == parts[i].buffer && start < group_end);
        if !joins {
            check_runs_apart(parts, &group)?;
            group.clear();
            group_end = 0;
        }
        group.push(i);
        group_end = group_end.max(end);
    }
    check_runs_apart(parts, &group)
}

/// Checks, run by run, that the parts of `group` (spans that meet in one buffer) share no
/// byte.
fn check_runs_apart<K>(parts: &[Written<'_, K>], group: &[usize]) -> Result<()> {
    if group.len() < 2 {
        return Ok(());
    }
    let names = || {
        group
            .iter()
            .map(|&i| parts[i].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if group.iter().map(|&i| parts[i].runs.count()).sum::<u64>() > MAX_CHECKED_RUNS {
        return Err(SplitError::BadView(format!(
            "{} lie in one buffer with spans that meet, and have more than {MAX_CHECKED_RUNS} \
             runs to check one by one: give them buffers (or spans) of their own",
            names()
        )));
    }
    let mut runs: Vec<(u64, u64, usize)> = Vec::new();
    for &i in group {
        let (at, r) = (parts[i].at, parts[i].runs);
        runs.extend(r.starts().map(|(_, d)| (at + d, at + d + r.run_bytes, i)));
    }
    runs.sort_unstable();
    match runs.windows(2).find(|w| w[1].0 < w[0].1) {
        None => Ok(()),
        Some(w) => Err(SplitError::BadView(format!(
            "{} (bytes {} to {} of its buffer) and {} (bytes {} to {}) write the same bytes",
            parts[w[0].2].name, w[0].0, w[0].1, parts[w[1].2].name, w[1].0, w[1].1
        ))),
    }
}

#[cfg(test)]
#[path = "views_tests.rs"]
mod tests;
