//! The random splits both of the page's hosts run (wgpu-split in `sweep`, the JavaScript
//! driver through `web/core`): every operator, every dtype, negative axes and zero-length
//! outputs, deterministic from a seed; and random views of a split's outputs. Each crate names the library it takes the operators
//! from `split`.

use crate::split::ops::{self, OnnxSplitParts};
use crate::split::{DType, HostTensor, IntTensor, PartView, Result, SplitPlan};

/// splitmix64: small, fast, and the same in every browser.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    pub(crate) fn bytes(&mut self, n: usize, dtype: DType) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(n);
        if dtype == DType::Bool {
            out.iter_mut().for_each(|b| *b &= 1);
        }
        out
    }
}

/// The operators, in the order cases cycle through them.
pub(crate) const OPERATORS: [&str; 4] =
    ["split", "variadic_split", "split_to_sequence", "onnx_split"];

/// Every dtype: the numeric ones, then strings of 1 to 3 code points.
fn dtype(i: usize, rng: &mut Rng) -> DType {
    match DType::ALL_NUMERIC.get(i % 16) {
        Some(&d) => d,
        None => DType::Utf32(1 + rng.below(3)),
    }
}

/// `len` cut into `parts` random lengths (some 0).
fn partition(len: usize, parts: usize, rng: &mut Rng) -> Vec<i64> {
    let mut cuts: Vec<usize> = (1..parts).map(|_| rng.below(len + 1)).collect();
    cuts.push(0);
    cuts.push(len);
    cuts.sort_unstable();
    cuts.windows(2).map(|w| (w[1] - w[0]) as i64).collect()
}

/// One random plan of operator `op` over `shape` along `axis` (negative half the time).
fn plan(op: usize, shape: &[usize], rng: &mut Rng) -> (String, Result<SplitPlan>) {
    let rank = shape.len();
    let axis = rng.below(rank);
    let len = shape[axis];
    let axis = if rng.below(2) == 0 {
        axis as i64
    } else {
        axis as i64 - rank as i64
    };
    let parts = 1 + rng.below(5);
    match op {
        0 => {
            let divisors: Vec<usize> = (1..=6).filter(|d| len.is_multiple_of(*d)).collect();
            let n = divisors[rng.below(divisors.len())] as i64;
            let p = ops::split(shape, &IntTensor::scalar(axis), n);
            (format!("split axis {axis} num_splits {n}"), p)
        }
        1 => {
            let mut lengths = partition(len, parts, rng);
            if rng.below(2) == 0 {
                let k = rng.below(lengths.len());
                lengths[k] = -1;
            }
            let p = ops::variadic_split(
                shape,
                &IntTensor::scalar(axis),
                &IntTensor::vector(lengths.clone()),
            );
            (format!("variadic_split axis {axis} lengths {lengths:?}"), p)
        }
        2 => {
            let keepdims = rng.below(2) == 0;
            match rng.below(3) {
                0 => (
                    format!("split_to_sequence axis {axis} no split keepdims {keepdims}"),
                    ops::split_to_sequence(shape, axis, None, keepdims),
                ),
                1 => {
                    let s = 1 + rng.below(len.max(1)) as i64;
                    (
                        format!("split_to_sequence axis {axis} split {s}"),
                        ops::split_to_sequence(shape, axis, Some(&IntTensor::scalar(s)), true),
                    )
                }
                _ => {
                    let lengths = partition(len, parts, rng);
                    let split = IntTensor::vector(lengths.clone());
                    (
                        format!("split_to_sequence axis {axis} split {lengths:?}"),
                        ops::split_to_sequence(shape, axis, Some(&split), true),
                    )
                }
            }
        }
        _ => {
            let (what, parts) = if rng.below(2) == 0 {
                let lengths = partition(len, parts, rng);
                (
                    format!("split {lengths:?}"),
                    OnnxSplitParts::at_opset(13, Some(lengths), None),
                )
            } else {
                let n = 1 + rng.below(len.clamp(1, 4)) as i64;
                (
                    format!("num_outputs {n}"),
                    OnnxSplitParts::at_opset(18, None, Some(n)),
                )
            };
            let p = parts.and_then(|parts| ops::onnx_split(shape, axis, &parts));
            (format!("onnx_split axis {axis} {what}"), p)
        }
    }
}

/// Case `case` of the sweep, of operator `op`: its description, its plan and a random input
/// over a random shape of rank 1 to 4 (dimensions 0 to 6); `None` where the operator refuses
/// the shape (the refusals have their own tests).
pub(crate) fn random_case(
    op: usize,
    case: usize,
    rng: &mut Rng,
) -> Option<(String, SplitPlan, HostTensor)> {
    let rank = 1 + rng.below(4);
    let shape: Vec<usize> = (0..rank)
        .map(|_| {
            if rng.below(8) == 0 {
                0
            } else {
                1 + rng.below(6)
            }
        })
        .collect();
    let (what, planned) = plan(op, &shape, rng);
    let plan = planned.ok()?;
    let dtype = dtype(case, rng);
    let bytes = rng.bytes(shape.iter().product::<usize>() * dtype.size(), dtype);
    let input = HostTensor::new(dtype, shape, bytes).ok()?;
    Some((what, plan, input))
}

/// A random view of each output of `plan`, from `below` (a number in `0..n`), and the bytes
/// of the region each one needs.
pub(crate) fn random_views(
    plan: &SplitPlan,
    es: usize,
    below: &mut dyn FnMut(usize) -> usize,
) -> Vec<(PartView, usize)> {
    plan.part_shapes()
        .iter()
        .map(|part| {
            let rank = part.len();
            let mut perm: Vec<usize> = (0..rank).collect();
            for k in (1..rank).rev() {
                perm.swap(k, below(k + 1));
            }
            let at: Vec<usize> = (0..rank).map(|_| below(2)).collect();
            let container: Vec<usize> = (0..rank)
                .map(|j| part[perm[j]] + at[j] + below(2))
                .collect();
            // A permutation inside a container that holds it: always a valid view.
            let mut view = PartView::within(part, &container, &perm, &at)
                .unwrap_or_else(|_| PartView::contiguous(part));
            view.offset += below(5) as u64;
            let bytes = (view.offset as usize + container.iter().product::<usize>()) * es;
            (view, bytes)
        })
        .collect()
}
