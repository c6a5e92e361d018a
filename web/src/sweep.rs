//! The randomized sweep: splits of every operator, every dtype, negative axes, zero-length
//! outputs, up to 10,000 outputs, and an input past one storage binding, each checked byte for
//! byte against the CPU reference, concatenated back on the GPU into its input, and (the
//! smaller ones) written into random views. Deterministic from its seed, so a failure is reproduced by
//! running the same seed again.

use crate::cases::{random_case, Rng, OPERATORS};
use crate::{split_and_compare, Compared, BINDING_LIMIT};
use serde_json::{json, Value};
use wgpu_split::{ops, DType, GpuSplitter, HostTensor, IntTensor, SplitPlan};

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
        let op = i % OPERATORS.len();
        i += 1;
        let Some((what, plan, input)) = random_case(op, tally.cases, &mut rng) else {
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
