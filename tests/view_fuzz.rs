//! The views fuzzer: random splits written through views and random concats read through
//! views, on each adapter and in every lane mapping, every buffer read back whole (guard
//! bytes included) and compared with a reference that shares no code with the library's
//! planner, runs or CPU reference: element `(i0, i1, ..)` of a part lies at element
//! `offset + i0 * strides[0] + ..` of its region, and at its row-major place in the whole
//! tensor, nothing else.
//!
//! The cases: ranks 1 to 5, every dtype width (1, 2, 4, 8, 12 and 16 bytes), parts of any
//! length (0 too) and dropped split axes; views permuted, as blocks of bigger padded
//! tensors, at element offsets; read views that broadcast (strides of 0) and that overlap
//! (sliding windows, strides smaller than what the axes inside reach); parts in one buffer,
//! each in its own, or spread, regions at the storage offset alignment; read regions that
//! share bytes. A fixed-seed sample runs in the suite; `WGPU_SPLIT_GPU_CASES=N` runs N cases
//! (the long run of 100,000 on lavapipe: docs/views.md).

#[macro_use]
mod common;

use common::views::{buffer, pattern, read_all, Rng};
use wgpu_split::{
    BufferRegion, DType, GatherMode, GpuSplitter, Inputs, Outputs, PartView, SplitPlan,
};

/// The dtypes of every width the fuzzer draws from.
const DTYPES: [DType; 6] = [
    DType::U8,
    DType::F16,
    DType::F32,
    DType::F64,
    DType::Utf32(3),
    DType::Complex128,
];

/// One random case: a split writing its outputs through `views`, or a concat reading its
/// inputs through them, part `k` in buffer `places[k].0` from byte `places[k].1`.
#[derive(Debug)]
struct Case {
    split: bool,
    dtype: DType,
    plan: SplitPlan,
    views: Vec<PartView>,
    places: Vec<(usize, u64)>,
    sizes: Vec<usize>,
}

/// Row-major strides of `shape`, in elements.
fn row_major(shape: &[usize]) -> Vec<u64> {
    let mut strides = vec![1u64; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        strides[k] = strides[k + 1] * shape[k + 1] as u64;
    }
    strides
}

/// A random view of a part of `shape`: its axes permuted, inside a padded container at a
/// place, a few elements on; read views (`read`) may instead broadcast or overlap on random
/// axes.
fn random_view(rng: &mut Rng, shape: &[usize], read: bool) -> PartView {
    let rank = shape.len();
    let mut perm: Vec<usize> = (0..rank).collect();
    if rng.below(3) > 0 {
        for k in (1..rank).rev() {
            perm.swap(k, rng.below(k + 1));
        }
    }
    let pad = |rng: &mut Rng| {
        if rng.below(2) == 0 {
            0
        } else {
            1 + rng.below(3)
        }
    };
    let at: Vec<usize> = (0..rank).map(|_| pad(rng)).collect();
    let container: Vec<usize> = (0..rank)
        .map(|j| shape[perm[j]] + at[j] + pad(rng))
        .collect();
    let mut view = PartView::within(shape, &container, &perm, &at).unwrap();
    view.offset += rng.below(6) as u64;
    if read && rng.below(3) > 0 {
        // Reads may start at the region's first element, where a row that repeats or
        // overlaps starts before the last one ends.
        if rng.below(2) == 0 {
            view.offset = rng.below(2) as u64;
        }
        let last = rank.saturating_sub(1);
        let rows = rng.below(2) == 0 && shape.get(last).is_some_and(|&n| n > 1);
        for k in 0..rank {
            match rng.below(3) {
                // Rows of the last axis kept whole, each other axis stepping less than a
                // row: rows that repeat or overlap (a sliding window, strides [1, 1]).
                _ if rows && k == last => view.strides[k] = 1,
                _ if rows && rng.below(2) == 0 => view.strides[k] = rng.below(3) as u64,
                _ if rows => view.strides[k] = rng.below(shape[last]) as u64,
                // A broadcast.
                0 => view.strides[k] = 0,
                // Elements that overlap: a stride below what the axes inside reach.
                1 => view.strides[k] = rng.below(3) as u64,
                _ => {}
            }
        }
    }
    view
}

/// Views of every part of `plan` as blocks of one container: the whole tensor with its axes
/// permuted, padded, a few elements on; part `k` from its chunk's start on the split axis.
/// Read views (`read`) may broadcast an axis of them all. The views and the elements the
/// container's region holds.
fn interleaved(rng: &mut Rng, plan: &SplitPlan, read: bool) -> (Vec<PartView>, usize) {
    let whole = plan.whole_shape();
    let rank = whole.len();
    let mut perm: Vec<usize> = (0..rank).collect();
    for k in (1..rank).rev() {
        perm.swap(k, rng.below(k + 1));
    }
    let pad: Vec<usize> = (0..rank).map(|_| rng.below(2)).collect();
    let container: Vec<usize> = (0..rank).map(|j| whole[perm[j]] + pad[j]).collect();
    let offset = rng.below(4) as u64;
    let broadcast = (read && rng.below(2) == 0).then(|| rng.below(rank));
    let mut start = 0;
    let views = (0..plan.num_parts())
        .map(|k| {
            let shape = plan.part_shape(k);
            let at: Vec<usize> = (0..rank)
                .map(|j| if perm[j] == plan.axis() { start } else { 0 })
                .collect();
            start += shape[plan.axis()];
            let mut view = PartView::within(&shape, &container, &perm, &at).unwrap();
            view.offset += offset;
            if let Some(a) = broadcast {
                view.strides[a] = 0;
            }
            view
        })
        .collect();
    (views, container.iter().product::<usize>() + offset as usize)
}

/// Elements of a region that `view` of a part of `shape` reaches.
fn reach(shape: &[usize], view: &PartView) -> u64 {
    if shape.contains(&0) {
        return 0;
    }
    let steps: u64 = shape
        .iter()
        .zip(&view.strides)
        .map(|(&n, &s)| (n as u64 - 1) * s)
        .sum();
    view.offset + steps + 1
}

/// A random case, its regions at multiples of `align`.
fn random_case(rng: &mut Rng, align: u64) -> Case {
    let split = rng.below(2) == 0;
    let dtype = DTYPES[rng.below(DTYPES.len())];
    let es = dtype.size();
    let rank = 1 + rng.below(5);
    // Mostly small tensors; one in four with an axis long enough for several lanes' units.
    let mut shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
    if rng.below(4) == 0 {
        // Most often the last: long rows.
        let k = if rng.below(2) == 0 {
            rank - 1
        } else {
            rng.below(rank)
        };
        shape[k] = 1 + rng.below(300);
    }
    let axis = rng.below(rank);
    let parts = 1 + rng.below(4);
    let keep_axis = !(shape[axis] == parts && rng.below(3) == 0);
    let mut lengths = vec![0usize; parts];
    for _ in 0..shape[axis] {
        lengths[rng.below(parts)] += 1;
    }
    if !keep_axis {
        lengths = vec![1; parts];
    }
    let plan = SplitPlan::from_lengths(&shape, axis, &lengths, keep_axis).unwrap();
    // One in four: every part a block of one tensor, the whole permuted and padded (heads
    // written or read interleaved, their spans meeting); else a view each.
    if keep_axis && rng.below(4) == 0 {
        let (views, size) = interleaved(rng, &plan, !split);
        let sizes = vec![(size * es).max(16)];
        let places = vec![(0, 0); parts];
        return Case {
            split,
            dtype,
            plan,
            views,
            places,
            sizes,
        };
    }
    let views: Vec<PartView> = (0..parts)
        .map(|k| random_view(rng, &plan.part_shape(k), !split))
        .collect();
    // One buffer for every part, a buffer each, or parts spread over two.
    let layout = rng.below(3);
    let mut places = Vec::new();
    let mut sizes: Vec<usize> = Vec::new();
    for (k, view) in views.iter().enumerate() {
        let bytes = (reach(&plan.part_shape(k), view) as usize * es + rng.below(40)).max(1);
        let b = match layout {
            0 => 0,
            1 => k,
            _ => rng.below(2),
        };
        while sizes.len() <= b {
            sizes.push(0);
        }
        // Read regions may share bytes with the one before in their buffer.
        let at = if !split && sizes[b] > 0 && rng.below(3) == 0 {
            (sizes[b] as u64 - 1) / align * align
        } else {
            (sizes[b] as u64).next_multiple_of(align)
        };
        places.push((b, at));
        sizes[b] = sizes[b].max(at as usize + bytes);
    }
    // Every buffer holds at least a unit (a buffer no part takes included).
    let sizes = sizes.iter().map(|&s| s.max(16)).collect();
    Case {
        split,
        dtype,
        plan,
        views,
        places,
        sizes,
    }
}

/// Where each element of part `k` lies: its byte in the whole tensor, and its byte in its
/// region, by the definitions alone.
fn element_places(case: &Case, k: usize) -> Vec<(usize, usize)> {
    let plan = &case.plan;
    let es = case.dtype.size();
    let shape = plan.part_shape(k);
    let whole = row_major(plan.whole_shape());
    let start: usize = plan.lengths()[..k].iter().sum();
    let view = &case.views[k];
    let count: usize = shape.iter().product();
    let mut places = Vec::with_capacity(count);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..count {
        // The whole tensor's index: the part's, its split axis moved to the chunk (or, where
        // the parts drop it, the chunk's index put back).
        let mut w: Vec<usize> = index.clone();
        if plan.keep_axis() {
            w[plan.axis()] += start;
        } else {
            w.insert(plan.axis(), start);
        }
        let at_whole: u64 = w.iter().zip(&whole).map(|(&i, &s)| i as u64 * s).sum();
        let at_view: u64 = view.offset
            + index
                .iter()
                .zip(&view.strides)
                .map(|(&i, &s)| i as u64 * s)
                .sum::<u64>();
        places.push((at_whole as usize * es, at_view as usize * es));
        for a in (0..shape.len()).rev() {
            index[a] += 1;
            if index[a] < shape[a] {
                break;
            }
            index[a] = 0;
        }
    }
    places
}

/// Runs `case` on `gpu`; an error message naming the first wrong byte, or the error the
/// library returned.
fn run_case(gpu: &GpuSplitter, case: &Case) -> Result<(), String> {
    let es = case.dtype.size();
    let whole_bytes = case.plan.whole_shape().iter().product::<usize>() * es;
    // The whole tensor, with 32 guard bytes past it.
    let whole_initial = pattern(whole_bytes + 32, 7 + whole_bytes);
    let initial: Vec<Vec<u8>> = case
        .sizes
        .iter()
        .enumerate()
        .map(|(b, &n)| pattern(n.next_multiple_of(16), 100 + b))
        .collect();
    let mut buffers: Vec<wgpu::Buffer> = initial.iter().map(|b| buffer(gpu, b)).collect();
    let whole = buffer(gpu, &whole_initial);
    let regions: Vec<BufferRegion<'_>> = case
        .places
        .iter()
        .map(|&(b, offset)| BufferRegion {
            buffer: &buffers[b],
            offset,
        })
        .collect();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let dtype = case.dtype;
    let encoded = if case.split {
        let outputs = Outputs::Views(&regions, &case.views);
        gpu.encode(&mut encoder, &case.plan, dtype, (&whole).into(), outputs)
    } else {
        let inputs = Inputs::Views(&regions, &case.views);
        let plan = case.plan.inverse();
        gpu.encode(&mut encoder, &plan, dtype, inputs, (&whole).into())
    };
    encoded.map_err(|e| format!("refused: {e}"))?;
    buffers.push(whole);
    let got = read_all(gpu, encoder, &buffers);
    let mut want = initial.clone();
    want.push(whole_initial.clone());
    let w = want.len() - 1;
    for k in 0..case.plan.num_parts() {
        let (b, at) = case.places[k];
        for (in_whole, in_view) in element_places(case, k) {
            let (whole, view) = (in_whole..in_whole + es, at as usize + in_view..);
            if case.split {
                let bytes = &whole_initial[whole];
                want[b][view.start..view.start + es].copy_from_slice(bytes);
            } else {
                let bytes = &initial[b][view.start..view.start + es];
                want[w][whole].copy_from_slice(bytes);
            }
        }
    }
    for (b, (g, w)) in got.iter().zip(&want).enumerate() {
        if let Some(j) = g.iter().zip(w).position(|(x, y)| x != y) {
            let name = if b == buffers.len() - 1 {
                "the whole tensor's buffer".to_string()
            } else {
                format!("part buffer {b}")
            };
            let wrong = g.iter().zip(w).filter(|(x, y)| x != y).count();
            return Err(format!(
                "{name} differs at byte {j} ({wrong} bytes in all): {} for {}",
                g[j], w[j]
            ));
        }
    }
    Ok(())
}

/// Cases that once failed, run in every lane mapping before the random ones.
fn known_cases() -> Vec<Case> {
    let plan = |shape: &[usize], axis, lengths: &[usize], keep| {
        SplitPlan::from_lengths(shape, axis, lengths, keep).unwrap()
    };
    vec![
        // Rows of one f32 element, transposed in a padded container, in the GPU mapping.
        Case {
            split: true,
            dtype: DType::F32,
            plan: plan(&[5, 1, 2, 1, 110], 1, &[1], false),
            views: vec![PartView {
                offset: 1720,
                strides: vec![1, 2280, 570, 5],
            }],
            places: vec![(0, 0)],
            sizes: vec![18207],
        },
    ]
}

/// Random cases in every lane mapping: the runs (a run of 128 and of 3 units a lane) and
/// the lanes GPUs take (4 and 1 steps a lane), as the adapter runs them.
fn views_move_the_bytes_their_definition_names(gpu: &'static GpuSplitter) {
    let mut mappings = common::gather_mappings(
        gpu,
        &[
            (GatherMode::Cpu, 128),
            (GatherMode::Cpu, 3),
            (GatherMode::Gpu, 4),
            (GatherMode::Gpu, 1),
        ],
    );
    mappings.push((common::name(gpu), gpu.clone()));
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    let cases = common::long_run_cases().unwrap_or(2000);
    let mut rng = Rng(75);
    let mut failures = Vec::new();
    for (n, case) in known_cases().iter().enumerate() {
        for (mapping, gpu) in &mappings {
            if let Err(e) = run_case(gpu, case) {
                failures.push(format!("known case {n} ({mapping}): {e}\n  {case:?}"));
            }
        }
    }
    for n in 0..cases as usize {
        let case = random_case(&mut rng, align);
        let (mapping, gpu) = &mappings[n % mappings.len()];
        if let Err(e) = run_case(gpu, &case) {
            failures.push(format!("case {n} ({mapping}): {e}\n  {case:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

per_backend!(views_move_the_bytes_their_definition_names);
