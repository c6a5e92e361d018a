//! The attention cases: parts through views ([`Attention`](crate::ops::Attention)) on buffers
//! of their own, and the unfused way an engine takes without views (the split, a plain
//! transpose kernel per part, then the copies into the caches), recorded on the same buffers
//! for the suite to time beside the split.

use crate::error::Result;
use crate::gpu::device::{block_on, scoped};
use crate::gpu::direction::Direction;
use crate::gpu::gather::grid;
use crate::gpu::parts::{Job, Parts};
use crate::gpu::prepared::PreparedParts;
use crate::plan::{PartView, SplitPlan};
use crate::{BufferRegion, DType, GpuSplitter};
use wgpu::util::DeviceExt;
use wgsl_split::suite::Layout;

/// The bench's transpose kernel, `shaders/bench_transpose_vec4.wgsl`.
const TRANSPOSE_WGSL: &str = include_str!("../../shaders/bench_transpose_vec4.wgsl");

/// A view case's parts: one buffer per part, as the views address them, and the bytes each
/// held before the first split (the caches' other positions, a concat's input).
pub struct ViewBuffers {
    /// One buffer per part.
    pub buffers: Vec<wgpu::Buffer>,
    /// Each part's view of its buffer.
    pub views: Vec<PartView>,
    /// What each buffer held first.
    pub initial: Vec<Vec<u8>>,
}

impl ViewBuffers {
    /// The parts' buffers of `layout` with `dtype` elements, each filled by `fill(part, bytes)`;
    /// `None` for [`Layout::Packed`].
    pub(super) fn new(
        gpu: &GpuSplitter,
        layout: Layout,
        plan: &SplitPlan,
        dtype: DType,
        fill: impl Fn(usize, usize) -> Vec<u8>,
    ) -> Result<Option<Self>> {
        let Some((views, sizes)) = layout.views(plan, dtype.size())? else {
            return Ok(None);
        };
        let initial: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(k, &n)| fill(k, n)).collect();
        let buffers = scoped(gpu.device(), "allocating the view case's buffers", || {
            initial
                .iter()
                .map(|bytes| {
                    let mut padded = bytes.clone();
                    padded.resize(bytes.len().next_multiple_of(16).max(16), 0);
                    gpu.device()
                        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                            label: Some("bench part"),
                            contents: &padded,
                            usage: wgpu::BufferUsages::STORAGE
                                | wgpu::BufferUsages::COPY_SRC
                                | wgpu::BufferUsages::COPY_DST,
                        })
                })
                .collect()
        })?;
        Ok(Some(Self {
            buffers,
            views,
            initial,
        }))
    }

    /// `f` on the job that reads `whole` and writes (or reads, a concat) the parts through
    /// their views.
    pub(super) fn with_job<T>(
        &self,
        direction: Direction,
        whole: &wgpu::Buffer,
        f: impl FnOnce(Job<'_>) -> T,
    ) -> T {
        let regions: Vec<BufferRegion<'_>> = self.buffers.iter().map(Into::into).collect();
        f(Job {
            direction,
            whole: whole.into(),
            parts: Parts::Views(&regions, &self.views),
        })
    }
}

/// One command of the unfused way.
enum Step {
    /// The plain split into the packed region.
    Split(PreparedParts),
    /// The transpose kernel.
    Transpose {
        bind_group: wgpu::BindGroup,
        grid: (u32, u32),
    },
    /// A `copy_buffer_to_buffer`: source, offset, destination, offset, bytes.
    Copy(wgpu::Buffer, u64, wgpu::Buffer, u64, u64),
}

/// The unfused way of a view case, recorded as often as wanted.
pub struct Unfused {
    pipeline: wgpu::ComputePipeline,
    steps: Vec<Step>,
}

/// `[B, seq, heads, D]` rows of `row_bytes` transposed to `[B, heads, dst_seq, D]` from
/// position `pos`: the kernel's uniform.
struct Transpose {
    batch: usize,
    seq: usize,
    heads: usize,
    row_bytes: usize,
    dst_seq: usize,
    pos: usize,
}

impl Unfused {
    /// The unfused way of `layout` (a view case with rows of whole vec4s), reading `whole`
    /// (a split's input) and writing `parts`; `packed` is the plain split's output region.
    /// `None` for a packed case or rows the kernel cannot move.
    pub(super) fn new(
        gpu: &GpuSplitter,
        layout: Layout,
        plan: &SplitPlan,
        dtype: DType,
        whole: &wgpu::Buffer,
        packed: &wgpu::Buffer,
        parts: &ViewBuffers,
    ) -> Result<Option<Self>> {
        let es = dtype.size();
        let device = gpu.device();
        let pipeline = scoped(device, "compiling the bench's transpose kernel", || {
            let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("bench transpose"),
                source: wgpu::ShaderSource::Wgsl(TRANSPOSE_WGSL.into()),
            });
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("bench transpose"),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        })?;
        let mut unfused = Self {
            pipeline,
            steps: Vec::new(),
        };
        let temp = |bytes: usize| {
            scoped(device, "allocating the unfused way's buffer", || {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("bench unfused"),
                    size: bytes.next_multiple_of(16) as u64,
                    usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                })
            })
        };
        match layout {
            Layout::Packed | Layout::Transposed(_) => return Ok(None),
            Layout::Qkv {
                layer: a,
                cache_len,
                position,
            } => {
                if !(a.head_dim * es).is_multiple_of(16) {
                    return Ok(None);
                }
                let job = Job {
                    direction: Direction::Split,
                    whole: whole.into(),
                    parts: Parts::Region(packed.into()),
                };
                let split = block_on("prepare", gpu.prepare_job(plan, dtype, job))?;
                unfused.steps.push(Step::Split(split));
                let ranges = gpu.layout(plan, dtype)?.ranges;
                let row_bytes = a.head_dim * es;
                let (b, s) = (a.batch, a.seq);
                let q = Transpose {
                    batch: b,
                    seq: s,
                    heads: a.q_heads,
                    row_bytes,
                    dst_seq: s,
                    pos: 0,
                };
                unfused.transpose(gpu, &q, (packed, ranges[0].offset), &parts.buffers[0])?;
                for (k, range) in ranges.iter().enumerate().skip(1) {
                    let t = Transpose {
                        heads: a.kv_heads,
                        ..q
                    };
                    let heads = temp(b * a.kv_heads * s * row_bytes)?;
                    unfused.transpose(gpu, &t, (packed, range.offset), &heads)?;
                    for head in 0..(b * a.kv_heads) as u64 {
                        let (run, at) = ((s * row_bytes) as u64, (cache_len * row_bytes) as u64);
                        let to = head * at + (position * row_bytes) as u64;
                        let cache = parts.buffers[k].clone();
                        unfused
                            .steps
                            .push(Step::Copy(heads.clone(), head * run, cache, to, run));
                    }
                }
            }
            Layout::MergeHeads(a) => {
                if !(a.head_dim * es).is_multiple_of(16) {
                    return Ok(None);
                }
                // [B, H, S, D] is [B, seq = H, heads = S, D] to the kernel.
                let t = Transpose {
                    batch: a.batch,
                    seq: a.q_heads,
                    heads: a.seq,
                    row_bytes: a.head_dim * es,
                    dst_seq: a.q_heads,
                    pos: 0,
                };
                let bytes = a.batch * a.q_heads * a.seq * a.head_dim * es;
                let merged = temp(bytes)?;
                unfused.transpose(gpu, &t, (&parts.buffers[0], 0), &merged)?;
                unfused
                    .steps
                    .push(Step::Copy(merged, 0, whole.clone(), 0, bytes as u64));
            }
        }
        Ok(Some(unfused))
    }

    /// Adds the transpose `t` from `src` (a buffer and an offset) into `dst`.
    fn transpose(
        &mut self,
        gpu: &GpuSplitter,
        t: &Transpose,
        (src, offset): (&wgpu::Buffer, u64),
        dst: &wgpu::Buffer,
    ) -> Result<()> {
        let device = gpu.device();
        let vec4s = t.row_bytes / 16;
        let total = t.batch * t.seq * t.heads * vec4s;
        let shape = [t.seq, t.heads, vec4s, t.dst_seq, t.pos, total, 0, 0].map(|x| x as u32);
        let bind_group = scoped(device, "binding the bench's transpose kernel", || {
            let uniform = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("bench transpose shape"),
                contents: bytemuck::cast_slice(&shape),
                usage: wgpu::BufferUsages::UNIFORM,
            });
            let source = wgpu::BufferBinding {
                buffer: src,
                offset,
                size: std::num::NonZeroU64::new((total * 16) as u64),
            };
            device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("bench transpose"),
                layout: &self.pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(source),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: dst.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: uniform.as_entire_binding(),
                    },
                ],
            })
        })?;
        let grid = grid(&gpu.limits, (total as u64).div_ceil(256))?;
        self.steps.push(Step::Transpose { bind_group, grid });
        Ok(())
    }

    /// Records the unfused way into `encoder`.
    pub(super) fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        for step in &self.steps {
            match step {
                Step::Split(prepared) => {
                    block_on("encode", prepared.encode(encoder))?;
                }
                Step::Transpose { bind_group, grid } => {
                    let mut pass = encoder.begin_compute_pass(&Default::default());
                    pass.set_pipeline(&self.pipeline);
                    pass.set_bind_group(0, bind_group, &[]);
                    pass.dispatch_workgroups(grid.0, grid.1, 1);
                }
                Step::Copy(src, from, dst, to, size) => {
                    encoder.copy_buffer_to_buffer(src, *from, dst, *to, *size);
                }
            }
        }
        Ok(())
    }
}

/// The median host time, ms, of `prepared` (a [`Layout::Qkv`] case's split) recorded into an
/// encoder with its views one position on and back, in turn
/// ([`crate::Prepared::set_views`], then its encode); `None` for other layouts and for caches with no
/// position to move to.
pub(super) fn moved_host_ms(
    runs: usize,
    gpu: &GpuSplitter,
    prepared: &PreparedParts,
    layout: Layout,
) -> Result<Option<f64>> {
    let Layout::Qkv {
        layer,
        cache_len,
        position,
    } = layout
    else {
        return Ok(None);
    };
    let other = match position {
        0 => 1,
        p => p - 1,
    };
    if other + layer.seq > cache_len {
        return Ok(None);
    }
    let at = [
        layer.split_qkv(cache_len, position)?.1,
        layer.split_qkv(cache_len, other)?.1,
    ];
    // One encoder takes every run's commands (never submitted): the time is the encode's.
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let mut turn = 0;
    let mut node = prepared.clone();
    let ms = super::timing::time_ms(runs, || {
        turn ^= 1;
        node.set_views(&at[turn])?;
        block_on("encode", node.encode(&mut encoder)).map(|_| ())
    })?;
    Ok(Some(ms))
}
