//! Parts through views as the planner lowers them, without a device: a random split written
//! through views, or a concat read through them ([`ViewCase::random`]: permuted, padded, at
//! offsets, read views that repeat or overlap), its parts lowered to dispatches in a lane
//! mapping ([`check_views`]) as `GpuSplitter::prepare_views` lowers them, every table through
//! the gate, and every byte of every entry, found by the shader's u32 arithmetic
//! ([`super::shader`]), moved from and to the bytes the views' definition names: element
//! `[i0, ..]` of a part at element `offset + sum(i_k * strides[k])` of its region.

use super::routes::check_rows;
use super::shader;
use crate::gpu::gather::abi::{JoinTable, Table, UNIT_BYTES};
use crate::gpu::gather::dispatches::GatherTuning;
use crate::gpu::gather::Dispatch;
use crate::gpu::gather::{lower_view, repeat_joins, view_dispatches, Lowered};
use crate::plan::views::{check_view, part_runs, Access};
use crate::plan::{PartView, SplitPlan};
use crate::GatherMode;
use std::collections::HashMap;

/// Where each part's region lies: every region in one window, this many bytes apart.
const REGION_STEP: u64 = 1 << 20;

/// A split whose outputs are written through `views` (`split`), or a concat whose inputs are
/// read through them, of elements of `es` bytes; part `k`'s region at `k * REGION_STEP` of
/// one window.
#[derive(Debug, Clone)]
pub struct ViewCase {
    pub split: bool,
    pub es: u64,
    pub plan: SplitPlan,
    pub views: Vec<PartView>,
    pub tuning: GatherTuning,
}

/// A deterministic stream of small numbers from a seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n.max(1) as u64) as usize
    }
}

impl ViewCase {
    /// The case `seed` draws: ranks 1 to 5, elements of 1 to 16 bytes, views permuted in
    /// padded containers at offsets; read views broadcast or overlap on random axes.
    pub fn random(seed: u64) -> ViewCase {
        let mut rng = Rng(seed);
        let split = rng.below(2) == 0;
        let es = [1, 2, 4, 8, 12, 16][rng.below(6)];
        let rank = 1 + rng.below(5);
        let mut shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(4)).collect();
        if rng.below(3) == 0 {
            shape[rank - 1] = 1 + rng.below(80);
        }
        // At most a few thousand elements: every byte is checked.
        while shape.iter().product::<usize>() > 2048 {
            let k = (0..rank).max_by_key(|&k| shape[k]).unwrap_or(0);
            shape[k] /= 2;
        }
        let axis = rng.below(rank);
        let parts = 1 + rng.below(3);
        let mut lengths = vec![0usize; parts];
        for _ in 0..shape[axis] {
            lengths[rng.below(parts)] += 1;
        }
        // Parts of one index may drop the axis (SplitToSequence's keepdims = 0).
        let keep_axis = !(lengths.iter().all(|&l| l == 1) && rng.below(2) == 0);
        let plan = SplitPlan::from_lengths(&shape, axis, &lengths, keep_axis)
            .unwrap_or_else(|e| panic!("{shape:?} {lengths:?}: {e}"));
        let views = (0..parts)
            .map(|k| random_view(&mut rng, &plan.part_shape(k), !split))
            .collect();
        let mode = [GatherMode::Cpu, GatherMode::Gpu][rng.below(2)];
        let tuning = GatherTuning {
            mode,
            max_steps_per_lane: [1, 3, 4, 128][rng.below(4)],
        };
        ViewCase {
            split,
            es,
            plan,
            views,
            tuning,
        }
    }
}

/// A view of a part of `shape`: permuted in a padded container at a place, a few elements
/// on; a read view (`read`) may broadcast or overlap on random axes.
fn random_view(rng: &mut Rng, shape: &[usize], read: bool) -> PartView {
    let rank = shape.len();
    let mut perm: Vec<usize> = (0..rank).collect();
    for k in (1..rank).rev() {
        perm.swap(k, rng.below(k + 1));
    }
    let at: Vec<usize> = (0..rank).map(|_| rng.below(2)).collect();
    let container: Vec<usize> = (0..rank)
        .map(|j| shape[perm[j]] + at[j] + rng.below(2))
        .collect();
    let Ok(mut view) = PartView::within(shape, &container, &perm, &at) else {
        unreachable!("a container holds its part")
    };
    view.offset += rng.below(5) as u64;
    if read && rng.below(3) > 0 {
        if rng.below(2) == 0 {
            view.offset = 0;
        }
        for s in view.strides.iter_mut() {
            match rng.below(3) {
                0 => *s = 0,
                1 => *s = rng.below(4) as u64,
                _ => {}
            }
        }
    }
    view
}

/// Row-major strides of `shape`, in elements.
fn row_major(shape: &[usize]) -> Vec<u64> {
    let mut strides = vec![1u64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1] as u64;
    }
    strides
}

/// The bytes `case` moves, by the definition: destination byte to source byte, in the
/// window each binds (the whole tensor from byte 0, part `k`'s region from
/// `k * REGION_STEP`).
fn expected(case: &ViewCase) -> HashMap<u64, u64> {
    let plan = &case.plan;
    let whole = row_major(plan.whole_shape());
    let mut moves = HashMap::new();
    let mut start = 0;
    for (k, view) in case.views.iter().enumerate() {
        let shape = plan.part_shape(k);
        let mut index = vec![0usize; shape.len()];
        for _ in 0..shape.iter().product::<usize>() {
            // The whole tensor's index: the chunk's start on the split axis, which a part
            // that drops it does not index.
            let mut w = index.clone();
            match plan.keep_axis() {
                true => w[plan.axis()] += start,
                false => w.insert(plan.axis(), start),
            }
            let in_whole: u64 = w.iter().zip(&whole).map(|(&i, &s)| i as u64 * s).sum();
            let in_view: u64 = view.offset
                + (0..shape.len())
                    .map(|a| index[a] as u64 * view.strides[a])
                    .sum::<u64>();
            let region = k as u64 * REGION_STEP;
            for b in 0..case.es {
                let (w, v) = (in_whole * case.es + b, region + in_view * case.es + b);
                let (dst, src) = if case.split { (v, w) } else { (w, v) };
                assert!(
                    moves.insert(dst, src).is_none(),
                    "{case:?}: byte {dst} twice"
                );
            }
            for a in (0..shape.len()).rev() {
                index[a] += 1;
                if index[a] < shape[a] {
                    break;
                }
                index[a] = 0;
            }
        }
        start += plan.lengths()[k];
    }
    moves
}

/// Lowers `case` as the splitter does, checks every table against the gate, and runs every
/// entry byte by byte with the shader's arithmetic: each destination byte written once, from
/// the source byte the definition names. Panics otherwise.
pub fn check_views(case: &ViewCase) {
    let plan = &case.plan;
    let access = if case.split {
        Access::Write
    } else {
        Access::Read
    };
    let whole: u64 = plan.whole_shape().iter().product::<usize>() as u64 * case.es;
    let regions = plan.num_parts() as u64 * REGION_STEP;
    let (src_size, dst_size) = match case.split {
        true => (whole.next_multiple_of(4), regions),
        false => (regions, whole.next_multiple_of(4)),
    };
    let mut entries = Vec::new();
    let mut channels = Vec::new();
    for (k, view) in case.views.iter().enumerate() {
        let name = format!("part {k}");
        let shape = plan.part_shape(k);
        let room = REGION_STEP / case.es;
        if let Err(e) = check_view(&name, &shape, view, room, access) {
            panic!("{case:?}: a view the fuzzer makes is refused: {e}");
        }
        let Some(runs) = part_runs(plan, k, view, case.es, access) else {
            continue;
        };
        let base = k as u64 * REGION_STEP;
        let bases = if case.split {
            (0, base, 0)
        } else {
            (base, 0, 0)
        };
        let sizes = (src_size, dst_size);
        let lowered = lower_view(&name, &runs, case.split, bases, sizes, 1 << 20, case.tuning);
        match lowered {
            Ok(Lowered::Dispatch(d)) => channels.push(d),
            Ok(Lowered::Entries(e)) => entries.extend(e),
            Err(e) => panic!("{case:?}: {e}"),
        }
    }
    let mut dispatches = view_dispatches(entries, src_size, dst_size, case.tuning);
    dispatches.extend(repeat_joins(channels));
    let want = expected(case);
    let mut written: HashMap<u64, u64> = HashMap::new();
    for d in &dispatches {
        if let Err(refusal) = d.gate() {
            panic!("{case:?}: {d:?}: {refusal}");
        }
        let entries = match &d.table {
            Table::Split(entries) => entries,
            Table::Join(j) => {
                run_joins(case, d, j, &mut written);
                continue;
            }
            Table::Indexed(..) => panic!("{case:?}: a view's dispatch of indexed rows: {d:?}"),
        };
        for e in entries {
            check_rows(case, e, d.src_size);
            for b in e.first_byte + e.skip..e.first_byte + e.out_bytes {
                let at = shader::place(e, b);
                let dst = (e.dst_unit as u64 * UNIT_BYTES).wrapping_add(at.dst as u64);
                assert!(
                    written.insert(dst, at.src as u64).is_none(),
                    "{case:?}: {e:?} writes byte {dst} again"
                );
            }
        }
    }
    for (dst, src) in &want {
        assert_eq!(
            written.get(dst),
            Some(src),
            "{case:?}: destination byte {dst}"
        );
    }
    assert_eq!(written.len(), want.len(), "{case:?}: bytes past the parts");
}

/// A part written channels-last ([`lower_view`]'s own dispatch: its planes joined into rows,
/// one join an image, repeated), byte by byte into `written`: join `j`'s output byte `b`, of
/// row `b / row_bytes` and plane `c / width` at its column `c`, from that plane's row, `j`
/// joins further on in both buffers; the sums the shader's u32.
fn run_joins(case: &ViewCase, d: &Dispatch, j: &JoinTable, written: &mut HashMap<u64, u64>) {
    let (h, [s]) = (j.header, &j.segments[..]) else {
        panic!("{case:?}: a join of one segment: {d:?}");
    };
    let joins = d.params.num_blocks.div_ceil(h.repeat_blocks.max(1));
    for n in 0..joins {
        for b in 0..h.end_byte {
            let (row, c) = (b / h.row_bytes, b % h.row_bytes);
            let (k, x) = (c / s.row_bytes, c % s.row_bytes);
            let src = s
                .src_offset
                .wrapping_add(n.wrapping_mul(h.repeat_src))
                .wrapping_add(k.wrapping_mul(s.part_step))
                .wrapping_add(row.wrapping_mul(s.row_bytes))
                .wrapping_add(x);
            let unit = h.first_unit.wrapping_add(n.wrapping_mul(h.repeat_units));
            let dst = unit as u64 * UNIT_BYTES + b as u64;
            assert!(
                (src as u64) < d.src_size,
                "{case:?}: {d:?} reads byte {src}"
            );
            assert!(
                written.insert(dst, src as u64).is_none(),
                "{case:?}: {d:?} writes byte {dst} again"
            );
        }
    }
}
