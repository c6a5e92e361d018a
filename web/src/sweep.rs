//! The randomized sweep: splits of every operator, every dtype, negative axes, zero-length
//! outputs, up to 10,000 outputs, and an input past one storage binding, each checked byte for
//! byte against the CPU reference, concatenated back on the GPU into its input, and (the
//! smaller ones) written into random views. Deterministic from its seed, so a failure is reproduced by
//! running the same seed again.

use crate::{split_and_compare, Compared, BINDING_LIMIT};
use serde_json::{json, Value};
use wgpu_split::ops::{self, OnnxSplitParts};
use wgpu_split::{DType, GpuSplitter, HostTensor, IntTensor, Result, SplitPlan};

/// splitmix64: small, fast, and the same in every browser.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn bytes(&mut self, n: usize, dtype: DType) -> Vec<u8> {
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
const OPERATORS: [&str; 4] = ["split", "variadic_split", "split_to_sequence", "onnx_split"];

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

/// What the sweep covered and what failed.
#[derive(Default)]
struct Tally {
    cases: usize,
    per_operator: [usize; 4],
    dtypes: Vec<String>,
    negative_axes: usize,
    zero_length_outputs: usize,
    most_outputs: usize,
    past_one_binding: usize,
    /// Of those, the ones concatenated back (through the gather, in windows).
    past_one_binding_concats: usize,
    /// Splits whose outputs were concatenated back on the GPU and compared with the input.
    concats: usize,
    /// Of those, the ones also concatenated from one buffer per output, and the buffers and
    /// dispatches they took.
    from_buffers: usize,
    input_buffers: usize,
    input_dispatches: u32,
    /// Splits also written into random views, and the dispatches they took.
    views: usize,
    view_dispatches: u32,
    failures: Vec<String>,
}

impl Tally {
    async fn check(
        &mut self,
        gpu: &GpuSplitter,
        what: String,
        plan: &SplitPlan,
        input: &HostTensor,
        rng: &mut Rng,
    ) {
        self.cases += 1;
        let name = input.dtype().name();
        if !self.dtypes.contains(&name) {
            self.dtypes.push(name);
        }
        let shapes = plan.part_shapes();
        self.zero_length_outputs += shapes.iter().filter(|s| s.contains(&0)).count();
        self.most_outputs = self.most_outputs.max(shapes.len());
        self.past_one_binding += usize::from(input.bytes().len() as u64 > BINDING_LIMIT);
        let described = format!("{what}, {} {:?}", input.dtype().name(), input.shape());
        match split_and_compare(gpu, plan, input).await {
            Ok(Compared {
                outputs,
                round_trip,
                from_buffers,
            }) => {
                if let Some(k) = outputs.iter().position(|o| !o.2) {
                    self.failures.push(format!(
                        "{described}: output {k} differs from the reference"
                    ));
                }
                self.concats += usize::from(round_trip.is_some());
                if input.bytes().len() as u64 > BINDING_LIMIT {
                    self.past_one_binding_concats += usize::from(round_trip == Some(true));
                }
                if round_trip == Some(false) {
                    self.failures.push(format!(
                        "{described}: the concat of the outputs differs from the input"
                    ));
                }
                if let Some(f) = from_buffers {
                    self.from_buffers += 1;
                    self.input_buffers += f.buffers;
                    self.input_dispatches += f.dispatches;
                    if !f.same {
                        self.failures.push(format!(
                            "{described}: the concat of the outputs from their own buffers \
                             differs from the input"
                        ));
                    }
                }
            }
            Err(e) => self.failures.push(format!("{described}: {e}")),
        }
        // The same split into random views, where it is small enough to read back whole.
        if plan.num_parts() > MOST_VIEW_OUTPUTS || input.bytes().len() > MOST_VIEW_BYTES {
            return;
        }
        match crate::views::split_into_views(gpu, plan, input, &mut |n| rng.below(n)).await {
            Ok(v) => {
                self.views += 1;
                self.view_dispatches += v.dispatches;
                if !v.same {
                    self.failures.push(format!(
                        "{described}: a buffer of the split into views differs from the reference"
                    ));
                }
            }
            Err(e) => self.failures.push(format!("{described}: {e}")),
        }
    }
}

/// Splits into views take at most this many outputs and input bytes.
const MOST_VIEW_OUTPUTS: usize = 64;
const MOST_VIEW_BYTES: usize = 1 << 20;

/// Runs `count` random splits from `seed`, then one of 10,000 outputs and one whose input is
/// past one storage binding.
pub async fn run(gpu: &GpuSplitter, count: u32, seed: u64) -> Value {
    let mut rng = Rng(seed);
    let mut tally = Tally::default();
    let mut i = 0usize;
    while tally.cases < count as usize {
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
        let op = i % OPERATORS.len();
        let (what, planned) = plan(op, &shape, &mut rng);
        i += 1;
        // Only valid plans are split; the operators' refusals have their own tests.
        let Ok(plan) = planned else { continue };
        let dtype = dtype(tally.cases, &mut rng);
        let bytes = rng.bytes(shape.iter().product::<usize>() * dtype.size(), dtype);
        let Ok(input) = HostTensor::new(dtype, shape.clone(), bytes) else {
            continue;
        };
        tally.per_operator[op] += 1;
        tally.negative_axes += usize::from(what.contains("axis -"));
        tally.check(gpu, what, &plan, &input, &mut rng).await;
    }
    // 10,000 outputs of 3 floats: one dispatch for all of them.
    let shape = vec![10_000, 3];
    if let Ok(plan) = ops::split_to_sequence(&shape, 0, None, false) {
        let bytes = rng.bytes(30_000 * 4, DType::F32);
        if let Ok(input) = HostTensor::new(DType::F32, shape, bytes) {
            tally.per_operator[2] += 1;
            tally
                .check(
                    gpu,
                    "split_to_sequence axis 0, 10,000 outputs".into(),
                    &plan,
                    &input,
                    &mut rng,
                )
                .await;
        }
    }
    // An input past one storage binding, in rows of 16 KiB: the split takes more than one
    // window.
    let row = 16_384;
    let shape = vec![(BINDING_LIMIT as usize) / row + 16, row];
    if let Ok(plan) = ops::variadic_split(
        &shape,
        &IntTensor::scalar(-1),
        &IntTensor::vector(vec![-1, 7]),
    ) {
        let bytes = rng.bytes(shape[0] * row, DType::U8);
        if let Ok(input) = HostTensor::new(DType::U8, shape, bytes) {
            tally.per_operator[1] += 1;
            tally
                .check(
                    gpu,
                    "variadic_split axis -1 [-1, 7], past one binding".into(),
                    &plan,
                    &input,
                    &mut rng,
                )
                .await;
        }
    }
    let per_operator: serde_json::Map<String, Value> = OPERATORS
        .iter()
        .zip(tally.per_operator)
        .map(|(name, n)| (name.to_string(), n.into()))
        .collect();
    json!({
        "seed": seed,
        "cases": tally.cases,
        "failed": tally.failures.len(),
        "per_operator": per_operator,
        "dtypes": tally.dtypes,
        "negative_axes": tally.negative_axes,
        "zero_length_outputs": tally.zero_length_outputs,
        "most_outputs": tally.most_outputs,
        "past_one_binding": tally.past_one_binding,
        "past_one_binding_concats": tally.past_one_binding_concats,
        "concats": tally.concats,
        "from_buffers": {
            "concats": tally.from_buffers,
            "buffers": tally.input_buffers,
            "dispatches": tally.input_dispatches,
        },
        "views": {
            "splits": tally.views,
            "dispatches": tally.view_dispatches,
        },
        "failures": tally.failures,
    })
}
