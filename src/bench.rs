//! The benchmark suite: each case's split timed against the device's own copies, in one run.
//!
//! Used by `wgpu-split bench` and by the criterion benches. Every rate is
//! `input bytes / median time` over at least five timed runs after a warm-up (more for short
//! cases: timing goes on for at least a second). A case's split, an empty round trip, a
//! `copy_buffer_to_buffer` and the copy kernel are timed in turn in one loop, so their ratios
//! compare the same stretch of time on a shared machine.

mod attention;
mod buffers;
mod memory;
mod timing;

pub use attention::Layout;
use buffers::wait;
pub use buffers::CaseBuffers;
pub use memory::{memory_report, MemoryReport, WARPS};
pub use timing::{gbps, median};

/// The pieces the command builds on besides the engine's API: every adapter of a backend, the
/// windows a streamed split or concat takes, the CPU reference streamed, and a tensor's bytes.
pub use crate::gpu::list_adapters;
pub use crate::plan::windows::{windows, Window};
pub use crate::stream::run_reference_stream;
pub use crate::tensor::byte_count;
use timing::{time_interleaved_ms, time_ms};

use crate::error::Result;
use crate::gpu::device::{block_on, scoped};
use crate::gpu::gather::grid;
use crate::ops::{Attention, Operator};
use crate::plan::SplitPlan;
use crate::reference;
use crate::tensor::IntTensor;
use crate::DType;
use crate::GpuSplitter;

/// One benchmark case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name (`qkv`, `glu`, ...).
    pub name: &'static str,
    /// Element type.
    pub dtype: DType,
    /// Input shape.
    pub shape: Vec<usize>,
    /// The operator and its parameters.
    pub op: Operator,
    /// A concat: the split read the other way, from its outputs (the concat's inputs, placed
    /// at the storage alignment in one region, `Inputs::Region`) back into `shape`.
    pub concat: bool,
    /// Where the parts lie: packed in one region, or through views in buffers of their own
    /// (the attention cases, timed against the unfused way too).
    pub layout: Layout,
}

impl Case {
    /// Validates and plans the case, once per case, as an engine plans a node once.
    pub fn plan(&self) -> Result<SplitPlan> {
        self.op.plan(&self.shape)
    }

    /// The operator's name, `concat` for a concat case.
    pub fn op_name(&self) -> &'static str {
        if self.concat {
            "concat"
        } else {
            self.op.name()
        }
    }

    /// Bytes of the whole tensor: a split's input, a concat's output.
    pub fn bytes(&self) -> Result<usize> {
        byte_count(&self.shape, self.dtype)
    }
}

/// The standard suite of the results tables in `docs/performance.md`.
pub fn standard_suite() -> Vec<Case> {
    let case = |name, dtype, shape: &[usize], op| Case {
        name,
        dtype,
        shape: shape.to_vec(),
        op,
        concat: false,
        layout: Layout::Packed,
    };

    let split = |axis, num_splits| Operator::Split {
        axis: IntTensor::scalar(axis),
        num_splits,
    };
    let variadic = |axis, lengths: &[i64]| Operator::VariadicSplit {
        axis: IntTensor::scalar(axis),
        split_lengths: IntTensor::vector(lengths.to_vec()),
    };
    // A concat of inputs of `lengths` along `axis` into `shape`, its output.
    let concat = |name, dtype, shape: &[usize], axis, lengths: &[i64]| Case {
        concat: true,
        ..case(name, dtype, shape, variadic(axis, lengths))
    };
    // Packed QKV [1, S, Hq + 2 Hkv, 128] f16 through views into Q and K, V caches; and the
    // heads [1, 32, 2048, 128] merged into [1, 2048, 32 * 128].
    let layer = |seq, q_heads, kv_heads| Attention {
        batch: 1,
        seq,
        q_heads,
        kv_heads,
        head_dim: 128,
    };
    let qkv = |name, layer: Attention, cache_len, position| Case {
        layout: Layout::Qkv {
            layer,
            cache_len,
            position,
        },
        ..case(
            name,
            DType::F16,
            &[1, layer.seq, layer.q_heads + 2 * layer.kv_heads, 128],
            variadic(
                2,
                &[
                    layer.q_heads as i64,
                    layer.kv_heads as i64,
                    layer.kv_heads as i64,
                ],
            ),
        )
    };
    let merge = Case {
        layout: Layout::MergeHeads(layer(2048, 32, 32)),
        ..concat("merge_heads", DType::F16, &[1, 2048, 32, 128], 2, &[32])
    };
    vec![
        case("spec_split", DType::F32, &[6, 12, 10, 24], split(1, 3)),
        case("qkv", DType::F32, &[4, 512, 3072], split(-1, 3)),
        case("glu", DType::F16, &[8, 1024, 8192], split(-1, 2)),
        case(
            "batch0",
            DType::F32,
            &[64, 256, 1024],
            variadic(0, &[16, 16, 32]),
        ),
        case("heads64", DType::F32, &[512, 4096], split(1, 64)),
        case(
            "bytes_odd",
            DType::U8,
            &[16384, 4095],
            variadic(1, &[1365, 1365, 1365]),
        ),
        case(
            "seq_many",
            DType::F32,
            &[4096, 2048],
            Operator::SplitToSequence {
                axis: 0,
                split: None,
                keepdims: false,
            },
        ),
        case("tiny_runs", DType::F32, &[4194304, 4], split(1, 4)),
        // Four 1080p RGB frames into their planes: rows of one byte.
        case("rgb_planes", DType::U8, &[4, 1080, 1920, 3], split(3, 3)),
        case(
            "word_odd",
            DType::F32,
            &[16384, 1023],
            variadic(1, &[341, 341, 341]),
        ),
        // The concat cases: a KV cache's append of one token, YOLOv8's C2f block, a sequence
        // of 4,096 rows, heads64 read back, the RGB planes read back, and u8 rows at odd
        // offsets.
        concat(
            "concat_kv_append",
            DType::F16,
            &[1, 32, 4096, 128],
            2,
            &[4095, 1],
        ),
        concat("concat_c2f", DType::F32, &[1, 256, 80, 80], 1, &[64; 4]),
        concat("concat_many", DType::F32, &[4096, 2048], 0, &[1; 4096]),
        concat("concat_heads64", DType::F32, &[512, 4096], 1, &[64; 64]),
        concat("concat_rgb", DType::U8, &[4, 1080, 1920, 3], 3, &[1, 1, 1]),
        concat(
            "concat_bytes_odd",
            DType::U8,
            &[16384, 4095],
            1,
            &[1365, 1365, 1365],
        ),
        qkv("qkv_heads", layer(2048, 32, 32), 2048, 0),
        qkv("gqa_prefill", layer(2048, 32, 8), 4096, 1024),
        qkv("decode_step", layer(1, 32, 8), 4096, 4095),
        merge,
    ]
}

/// Measurements of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case.
    pub case: Case,
    /// Number of outputs.
    pub outputs: usize,
    /// Input bytes.
    pub bytes: usize,
    /// Median device-resident split time (encode, submit, wait), ms; with a batch
    /// ([`Bencher::with_batch`]), a submission's time over its splits.
    pub split_ms: f64,
    /// Median of the same split prepared once ([`crate::Prepared`]): encode, submit,
    /// wait, ms. What a runtime that prepares its split nodes pays per run.
    pub prepared_ms: f64,
    /// Median empty submit and wait, ms: the device's fixed cost per submission.
    pub roundtrip_ms: f64,
    /// Median host part of the split alone (encode, no submit; the plan made once), ms.
    pub host_ms: f64,
    /// Median `copy_buffer_to_buffer` of the same bytes, ms.
    pub copy_ms: f64,
    /// Median vec4 copy kernel over the same bytes, ms.
    pub shader_copy_ms: f64,
    /// Median CPU reference split, ms.
    pub cpu_reference_ms: f64,
    /// Median of the unfused way of an attention case (the split, a transpose kernel per
    /// part, the copies into the caches), ms; `None` for the others.
    pub unfused_ms: Option<f64>,
    /// Median host time of the prepared split recorded with its K and V views one position
    /// on ([`crate::Prepared::encode_with_views`], alternating between two positions), ms;
    /// `None` but for an attention case whose caches have a position to move to.
    pub moved_host_ms: Option<f64>,
    /// What the split recorded: gather dispatches and buffer copies.
    pub recorded: Recorded,
    /// Whether every output can be a view of the input (no bytes moved).
    pub zero_copy: bool,
}

/// The commands one split or concat recorded, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Gather dispatches.
    pub dispatches: u32,
    /// `copy_buffer_to_buffer` commands.
    pub buffer_copies: u32,
}

impl From<&crate::gpu::plans::Recorded> for Recorded {
    fn from(e: &crate::gpu::plans::Recorded) -> Self {
        Self {
            dispatches: e.dispatches,
            buffer_copies: e.buffer_copies,
        }
    }
}

/// Runs cases on one device.
pub struct Bencher<'a> {
    gpu: &'a GpuSplitter,
    runs: usize,
    batch: usize,
    copy_layout: wgpu::BindGroupLayout,
    copy_pipeline: wgpu::ComputePipeline,
}

impl<'a> Bencher<'a> {
    /// Prepares the baseline copy kernel on `gpu`'s device; `runs` >= 5 timed runs per figure.
    pub fn new(gpu: &'a GpuSplitter, runs: usize) -> Result<Self> {
        let copy_pipeline =
            crate::trace::copy_kernel(gpu.device(), crate::gpu::gather::builds::Hook::Silent)?;
        let copy_layout = copy_pipeline.get_bind_group_layout(0);
        Ok(Self {
            gpu,
            runs: runs.max(5),
            batch: 1,
            copy_layout,
            copy_pipeline,
        })
    }

    /// Records `batch` splits (and `batch` of each yardstick) into each timed submission and
    /// reports the time per split (1 by default). A submission's fixed cost, tens of
    /// microseconds on a GPU, then weighs 1/`batch` in each figure, which approach the
    /// device's own time; the round trip stays one empty submission.
    pub fn with_batch(mut self, batch: usize) -> Self {
        self.batch = batch.max(1);
        self
    }

    /// Records with `record`, submits, and waits for the device.
    fn submit(&self, record: impl FnOnce(&mut wgpu::CommandEncoder)) -> Result<()> {
        self.submit_checked(|encoder| {
            record(encoder);
            Ok(())
        })
    }

    /// [`Bencher::submit`] for a recording that can fail.
    fn submit_checked(
        &self,
        record: impl FnOnce(&mut wgpu::CommandEncoder) -> Result<()>,
    ) -> Result<()> {
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        record(&mut encoder)?;
        self.gpu.queue().submit([encoder.finish()]);
        wait(self.gpu)
    }

    /// Measures one case.
    pub fn run_case(&self, case: &Case) -> Result<CaseResult> {
        let device = self.gpu.device();
        let bytes = case.bytes()?;
        let buffers = CaseBuffers::new(self.gpu, case)?;
        let plan = &buffers.plan;
        // The yardsticks move the same bytes the same way: a concat's from its inputs' region.
        let (input, output) = match case.concat {
            false => (&buffers.input, &buffers.output),
            true => (&buffers.output, &buffers.input),
        };
        let in_size = buffers.input.size();

        let binding = |buffer| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: 0,
                size: std::num::NonZeroU64::new(in_size),
            })
        };
        let bind_group = scoped(device, "binding the copy kernel", || {
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bench copy"),
                layout: &self.copy_layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: binding(input),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: binding(output),
                    },
                ],
            })
        })?;
        let (x, y) = grid(&self.gpu.limits, (in_size / 16).div_ceil(256))?;

        // The split and its three yardsticks, timed in turn so every ratio of two of them
        // compares the same stretch of time.
        let mut recorded = Recorded::default();
        let prepared = buffers.prepare(self.gpu, case)?;
        let unfused = buffers.unfused(self.gpu, case)?;
        let batch = self.batch;
        let [split_ms, prepared_ms, roundtrip_ms, copy_ms, shader_copy_ms, unfused_ms] =
            time_interleaved_ms(
                self.runs,
                [
                    &mut || {
                        recorded = buffers.split(self.gpu, case, batch)?;
                        Ok(())
                    },
                    &mut || {
                        self.submit_checked(|encoder| {
                            (0..batch).try_for_each(|_| {
                                block_on("encode", prepared.encode(encoder)).map(|_| ())
                            })
                        })
                    },
                    &mut || self.submit(|_| {}),
                    &mut || {
                        self.submit(|encoder| {
                            for _ in 0..batch {
                                encoder.copy_buffer_to_buffer(input, 0, output, 0, in_size)
                            }
                        })
                    },
                    &mut || {
                        self.submit(|encoder| {
                            for _ in 0..batch {
                                let mut pass = encoder.begin_compute_pass(&Default::default());
                                pass.set_pipeline(&self.copy_pipeline);
                                pass.set_bind_group(0, &bind_group, &[]);
                                pass.dispatch_workgroups(x, y, 1);
                            }
                        })
                    },
                    &mut || match &unfused {
                        Some(u) => self.submit_checked(|encoder| {
                            (0..batch).try_for_each(|_| u.record(encoder))
                        }),
                        None => Ok(()),
                    },
                ],
            )?;
        // Per split; the round trip is one empty submission whatever the batch.
        let per_split = |ms: f64| ms / batch as f64;
        let [split_ms, prepared_ms, copy_ms, shader_copy_ms, unfused_ms] =
            [split_ms, prepared_ms, copy_ms, shader_copy_ms, unfused_ms].map(per_split);

        // The timed split's bytes, once the copies above have overwritten its outputs.
        buffers.check(self.gpu, case)?;

        let host_ms = time_ms(self.runs, || {
            let mut encoder = device.create_command_encoder(&Default::default());
            buffers.encode(self.gpu, case, &mut encoder).map(|_| ())
        })?;

        let moved_host_ms = attention::moved_host_ms(self.runs, self.gpu, &prepared, case.layout)?;

        let concat = plan.inverse();
        let cpu_reference_ms = time_ms(self.runs, || match (&buffers.views, case.concat) {
            (Some(v), true) => {
                let inputs: Vec<&[u8]> = v.initial.iter().map(Vec::as_slice).collect();
                reference::concat_from_views(&concat, case.dtype, &v.views, &inputs).map(|_| ())
            }
            (Some(v), false) => {
                let mut parts = v.initial.clone();
                reference::split_into_views(&buffers.host, plan, &v.views, &mut parts)
            }
            (None, true) => reference::concat_tensors(&buffers.parts, &concat).map(|_| ()),
            (None, false) => reference::split_tensor(&buffers.host, plan).map(|_| ()),
        })?;

        Ok(CaseResult {
            case: case.clone(),
            outputs: plan.num_outputs(),
            bytes,
            split_ms,
            prepared_ms,
            roundtrip_ms,
            host_ms,
            copy_ms,
            shader_copy_ms,
            cpu_reference_ms,
            unfused_ms: unfused.map(|_| unfused_ms),
            moved_host_ms,
            recorded,
            zero_copy: case.layout == Layout::Packed && self.gpu.views(plan, case.dtype)?.is_some(),
        })
    }
}
