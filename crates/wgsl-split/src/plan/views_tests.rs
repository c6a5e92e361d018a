use super::*;
use crate::reference;
use crate::{ops, DType, HostTensor, IntTensor};

fn view(offset: u64, strides: &[u64]) -> PartView {
    PartView {
        offset,
        strides: strides.to_vec(),
    }
}

fn message(r: Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(SplitError::BadView(m)) => m,
        other => panic!("expected a view error, got {other:?}"),
    }
}

#[test]
fn within_places_a_block_and_refuses_what_does_not_fit() {
    // Q [1, 4, 2, 3] (B, S, H, D) stored as [1, 2, 4, 3] (B, H, S, D).
    let q = PartView::within(&[1, 4, 2, 3], &[1, 2, 4, 3], &[0, 2, 1, 3], &[0; 4]).unwrap();
    assert_eq!(q, view(0, &[24, 3, 12, 1]));
    // A part that runs past the container's axis, a repeated axis, a wrong count.
    let m = message(PartView::within(
        &[1, 4, 2, 3],
        &[1, 2, 6, 3],
        &[0, 2, 1, 3],
        &[0, 0, 3, 0],
    ));
    assert!(
        m.contains("axis 2 of the container has length 6, but the part takes 4 from 3"),
        "{m}"
    );
    let m = message(PartView::within(&[2, 2], &[2, 2], &[0, 0], &[0, 0]));
    assert!(m.contains("not a permutation"), "{m}");
    assert!(PartView::within(&[2, 2], &[2, 2, 1], &[0, 1], &[0, 0]).is_err());
    assert_eq!(PartView::contiguous(&[2, 3, 4]), view(0, &[12, 4, 1]));
}

#[test]
fn a_written_view_keeps_inside_its_region_and_off_its_own_elements() {
    let ok = |shape: &[usize], v: PartView, n, access| check_view("output 1", shape, &v, n, access);
    assert!(ok(&[2, 3], view(0, &[3, 1]), 6, Access::Write).is_ok());
    assert!(ok(&[2, 3], view(2, &[4, 1]), 9, Access::Write).is_ok());
    let m = message(ok(&[2, 3], view(2, &[4, 1]), 8, Access::Write));
    assert!(m.contains("output 1 of shape [2, 3]"), "{m}");
    assert!(
        m.contains("its last element is element 8 of its region, which holds 8"),
        "{m}"
    );
    let m = message(ok(&[2, 3], view(0, &[2, 1]), 100, Access::Write));
    assert!(
        m.contains("axis 0's stride 2 does not step past the 3 elements"),
        "{m}"
    );
    let m = message(ok(&[2, 3], view(0, &[1]), 100, Access::Write));
    assert!(m.contains("one stride per axis, 2, not 1"), "{m}");
    // Read, elements may repeat; an empty part has no elements to place.
    assert!(ok(&[2, 3], view(0, &[0, 1]), 3, Access::Read).is_ok());
    assert!(ok(&[0, 3], view(u64::MAX, &[1, 1]), 0, Access::Write).is_ok());
    // Numbers past u64 are refused, not wrapped.
    let huge = view(u64::MAX, &[u64::MAX, u64::MAX]);
    assert!(ok(&[2, 3], huge, u64::MAX, Access::Write).is_err());
    let far = PartView::within(&[1], &[usize::MAX], &[0], &[usize::MAX - 1]).unwrap();
    assert!(ok(&[1], far, 1 << 40, Access::Read).is_err());
    // Axes of one index may take any stride.
    assert!(ok(&[1, 3], view(0, &[u64::MAX, 1]), 3, Access::Write).is_ok());
}

#[test]
fn runs_merge_what_is_contiguous_on_both_sides() {
    let plan = ops::split(&[2, 4, 6], &IntTensor::scalar(2), 2).unwrap();
    // Output 1, [2, 4, 3] f32, written contiguous: rows of 3 elements, 6 apart in the input.
    let runs = part_runs(
        &plan,
        1,
        &PartView::contiguous(&[2, 4, 3]),
        4,
        Access::Write,
    )
    .unwrap();
    let row = Level {
        extent: 8,
        src_step: 24,
        dst_step: 12,
    };
    assert_eq!((runs.run_bytes, runs.src, runs.dst), (12, 12, 0));
    assert_eq!(runs.levels, [row]);
    // Written transposed to [4, 2, 3]: the two axes no longer merge.
    let t = PartView::within(&[2, 4, 3], &[4, 2, 3], &[1, 0, 2], &[0; 3]).unwrap();
    let runs = part_runs(&plan, 1, &t, 4, Access::Write).unwrap();
    assert_eq!(runs.run_bytes, 12);
    let levels: Vec<_> = runs
        .levels
        .iter()
        .map(|l| (l.extent, l.src_step, l.dst_step))
        .collect();
    assert_eq!(levels, [(4, 24, 24), (2, 96, 12)]);
    assert_eq!(runs.dst_span(), 96);
    // A split on the first axis moves one run.
    let plan = ops::split(&[4, 6], &IntTensor::scalar(0), 2).unwrap();
    let runs = part_runs(&plan, 1, &PartView::contiguous(&[2, 6]), 2, Access::Write).unwrap();
    assert_eq!((runs.run_bytes, runs.src, runs.levels.len()), (24, 24, 0));
    // A transpose of the last axis moves single elements.
    let t = PartView::within(&[2, 6], &[6, 2], &[1, 0], &[0, 0]).unwrap();
    assert_eq!(
        part_runs(&plan, 1, &t, 2, Access::Write).unwrap().run_bytes,
        2
    );
}

#[test]
fn attention_heads_lower_to_a_run_per_head_row() {
    // Packed QKV [1, 4, 32 + 8 + 8, 128] f16; Q as [1, 32, 4, 128], K into a cache
    // [1, 8, 16, 128] at p = 5 (docs/views.md's table, with S = 4).
    let lengths = IntTensor::vector(vec![32, 8, 8]);
    let plan = ops::variadic_split(&[1, 4, 48, 128], &IntTensor::scalar(2), &lengths).unwrap();
    let q = PartView::within(&[1, 4, 32, 128], &[1, 32, 4, 128], &[0, 2, 1, 3], &[0; 4]).unwrap();
    let k = PartView::within(
        &[1, 4, 8, 128],
        &[1, 8, 16, 128],
        &[0, 2, 1, 3],
        &[0, 0, 5, 0],
    )
    .unwrap();
    let levels = |runs: Runs| -> (u64, Vec<(u64, u64, u64)>) {
        let l = runs
            .levels
            .iter()
            .map(|l| (l.extent, l.src_step, l.dst_step));
        (runs.run_bytes, l.collect())
    };
    let q = part_runs(&plan, 0, &q, 2, Access::Write).unwrap();
    assert_eq!((q.src, q.dst), (0, 0));
    assert_eq!(levels(q), (256, vec![(32, 256, 1024), (4, 12288, 256)]));
    let k = part_runs(&plan, 1, &k, 2, Access::Write).unwrap();
    assert_eq!((k.src, k.dst), (32 * 256, 5 * 256));
    assert_eq!(levels(k), (256, vec![(8, 256, 16 * 256), (4, 12288, 256)]));
}

/// A deterministic stream of small numbers.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

/// A random view of `shape`: its axes permuted inside a container padded on every axis, at a
/// random place in it, after a random offset; and the region's elements.
fn random_view(rng: &mut Rng, shape: &[usize]) -> (PartView, u64) {
    let rank = shape.len();
    let mut perm: Vec<usize> = (0..rank).collect();
    for k in (1..rank).rev() {
        perm.swap(k, rng.below(k + 1));
    }
    let at: Vec<usize> = (0..rank).map(|_| rng.below(2)).collect();
    let container: Vec<usize> = (0..rank)
        .map(|j| shape[perm[j]] + at[j] + rng.below(2))
        .collect();
    let mut v = PartView::within(shape, &container, &perm, &at).unwrap();
    let lead = rng.below(5) as u64;
    v.offset += lead;
    let elements = lead + container.iter().product::<usize>() as u64 + rng.below(3) as u64;
    (v, elements)
}

/// Bytes no part writes: each guard byte must come out as it went in.
fn guarded(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

#[test]
fn runs_move_every_random_view_as_the_reference_does() {
    let mut rng = Rng(29);
    for case in 0..400 {
        let rank = 1 + rng.below(4);
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(4)).collect();
        let axis = rng.below(rank);
        let dtype = [
            DType::U8,
            DType::F16,
            DType::F32,
            DType::F64,
            DType::Complex128,
        ][rng.below(5)];
        let es = dtype.size();
        let cut = rng.below(shape[axis] + 1);
        let lengths = IntTensor::vector(vec![cut as i64, (shape[axis] - cut) as i64]);
        let plan = ops::variadic_split(&shape, &IntTensor::scalar(axis as i64), &lengths).unwrap();
        let count: usize = shape.iter().product();
        let input = HostTensor::new(dtype, shape.clone(), guarded(count * es, 7)).unwrap();

        let picked: Vec<(PartView, u64)> = (0..2)
            .map(|i| random_view(&mut rng, &plan.part_shape(i)))
            .collect();
        let views: Vec<PartView> = picked.iter().map(|(v, _)| v.clone()).collect();
        let fresh = || -> Vec<Vec<u8>> {
            picked
                .iter()
                .map(|&(_, n)| guarded(n as usize * es, 200))
                .collect()
        };
        let mut want = fresh();
        reference::split_into_views(&input, &plan, &views, &mut want).unwrap();
        let mut got = fresh();
        for (i, v) in views.iter().enumerate() {
            if let Some(runs) = part_runs(&plan, i, v, es as u64, Access::Write) {
                assert!(
                    runs.levels.len() <= rank,
                    "case {case}: a level per axis at most"
                );
                for (s, d) in runs.starts() {
                    let (s, d, n) = (s as usize, d as usize, runs.run_bytes as usize);
                    got[i][d..d + n].copy_from_slice(&input.bytes()[s..s + n]);
                }
            }
        }
        assert_eq!(
            got, want,
            "case {case}: split {shape:?} on {axis}, views {views:?}"
        );

        // The concat reads the same views back into the input.
        let concat = plan.inverse();
        let regions: Vec<&[u8]> = want.iter().map(Vec::as_slice).collect();
        let joined = reference::concat_from_views(&concat, dtype, &views, &regions).unwrap();
        assert_eq!(joined, input, "case {case}");
        let mut out = guarded(input.bytes().len(), 3);
        for (k, v) in views.iter().enumerate() {
            if let Some(runs) = part_runs(concat.split(), k, v, es as u64, Access::Read) {
                for (s, d) in runs.starts() {
                    let (s, d, n) = (s as usize, d as usize, runs.run_bytes as usize);
                    out[d..d + n].copy_from_slice(&regions[k][s..s + n]);
                }
            }
        }
        assert_eq!(out, input.bytes(), "case {case}");
    }
}

#[test]
fn parts_in_one_buffer_may_interleave_but_not_share_a_byte() {
    // Two parts [S = 3, D = 2] f16 written as the two heads of one [S, 2, D] buffer.
    let head = |h: u64| view(2 * h, &[4, 1]);
    let plan = ops::split(&[3, 4], &IntTensor::scalar(1), 2).unwrap();
    let runs: Vec<Runs> = (0..2)
        .map(|i| part_runs(&plan, i, &head(i as u64), 2, Access::Write).unwrap())
        .collect();
    let part = |i: usize, buffer: u8, at: u64, r: usize| Written {
        name: format!("output {i}"),
        buffer,
        at,
        runs: &runs[r],
    };
    assert!(check_disjoint(&[part(0, 0, 0, 0), part(1, 0, 0, 1)]).is_ok());
    // The same head twice in one buffer shares every byte; in two buffers, none.
    let m = message(check_disjoint(&[part(0, 0, 0, 0), part(1, 0, 0, 0)]));
    assert!(
        m.contains("output 0 (bytes 0 to 4 of its buffer) and output 1 (bytes 0 to 4)"),
        "{m}"
    );
    assert!(check_disjoint(&[part(0, 0, 0, 0), part(1, 1, 0, 0)]).is_ok());
    // Shifted by one element, the heads meet; a part far away joins no group.
    let m = message(check_disjoint(&[
        part(0, 0, 0, 0),
        part(2, 0, 100, 0),
        part(1, 0, 2, 1),
    ]));
    assert!(
        m.contains("output 1 (bytes 6 to 10 of its buffer) and output 0 (bytes 8 to 12)"),
        "{m}"
    );
    assert!(check_disjoint(&[part(0, 0, 0, 0), part(2, 0, 100, 0), part(1, 0, 0, 1)]).is_ok());
}

#[test]
fn the_reference_refuses_bad_views_by_name() {
    let input = HostTensor::from_slice(&[2, 3], &[1u8, 2, 3, 4, 5, 6]).unwrap();
    let plan = ops::split(&[2, 3], &IntTensor::scalar(0), 2).unwrap();
    let views = [PartView::contiguous(&[1, 3]), view(1, &[3, 1])];
    let mut regions = vec![vec![0u8; 3], vec![0u8; 3]];
    let m = message(reference::split_into_views(
        &input,
        &plan,
        &views,
        &mut regions,
    ));
    assert!(
        m.starts_with("output 1 of shape [1, 3], viewed at offset 1"),
        "{m}"
    );
    let m = message(reference::split_into_views(
        &input,
        &plan,
        &views[..1],
        &mut regions,
    ));
    assert!(m.contains("1 views and 2 regions for 2 outputs"), "{m}");
}
