//! The memory trace: the addresses the gather shader itself computes, recorded on any adapter
//! and grouped into warps ([`analysis`]).
//!
//! Every global access of the gather shader (`shaders/split_gather*.wgsl`, and of the
//! benchmark's copy kernel), and every access to the bytes it stages in workgroup memory, goes
//! through small access functions that call a `trace` hook, which the plain builds leave
//! empty. The trace build is the same WGSL with the recording hook instead (`Hook::Recording`,
//! in `gpu::gather::builds`): it appends `(kind, address, size)` to a buffer, per lane and per
//! access, for a sample of workgroups.
//! So the figures come from the addresses the real shader computed, with the host's real
//! tables, not from a model of its index math. The trace runs the kernel as it would run on a
//! GPU (coalesced lanes, see [`gpu_settings`]), whatever adapter executes it.

pub mod analysis;

use crate::error::{Result, SplitError};
use crate::gpu::device::scoped;
use crate::gpu::gather::builds::{copy_kernel_source, Hook};

use crate::gpu::gather::abi::binding_bytes;
use crate::gpu::gather::dispatches::{plan_dispatches, Dispatch};
use crate::gpu::gather::pipeline::GatherPipeline;
use crate::gpu::gather::{grid, lower_view, table_room, view_dispatches, Lowered};
use crate::gpu::planner::{choose_concat, Regions, Route};
use crate::gpu::splitter::gather_defaults;
use crate::plan::bytes::ByteRows;
use crate::plan::views::{part_runs, Access as ViewAccess};
use crate::plan::{ConcatPlan, PartView, SplitPlan};
use crate::{DType, GpuSplitter, RouteChoice, SplitOptions};
use analysis::{Access, Kind};
use wgpu::util::DeviceExt;
use wgsl_split::gather::binds::{Role, Sides};
use wgsl_split::recording::Dispatched;

/// Which workgroups record, and how many accesses each lane keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// Most workgroups traced per dispatch, spread evenly over it.
    pub workgroups: u32,
    /// Accesses kept per lane; a lane that makes more fails the trace.
    pub records_per_lane: u32,
}

impl Default for Sampling {
    fn default() -> Self {
        Self {
            workgroups: 16,
            records_per_lane: 512,
        }
    }
}

/// How a GPU runs the gather, by this crate's defaults ([`crate::GatherMode::Gpu`], 4 steps per
/// lane).
pub fn gpu_settings(gpu: &GpuSplitter) -> GpuSplitter {
    let tuning = gather_defaults(wgpu::DeviceType::DiscreteGpu);
    gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        gather_mode: Some(tuning.mode),
        max_steps_per_lane: Some(tuning.max_steps_per_lane as u32),
        ..gpu.options()
    })
}

/// Traces the gather of `plan` for `dtype` as `gpu`'s settings plan it (whatever its route
/// choice: the gather is traced), on buffers of zeros (addresses do not depend on data).
pub fn trace_split(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    dtype: DType,
    sampling: Sampling,
) -> Result<Vec<Access>> {
    let bytes = ByteRows::new(plan, dtype.size())?;
    let layout = gpu.layout(plan, dtype)?;
    let caps = gpu.caps();
    let dispatches = plan_dispatches(
        &bytes,
        &layout,
        caps.gather,
        caps.window_limit,
        caps.offset_align,
    )?;
    let (src, dst) = (binding_bytes(bytes.input_bytes()), layout.total_bytes);
    trace_dispatches(gpu, &dispatches, src, dst, sampling)
}

/// Traces the gather of the concat `plan` for `dtype` ([`crate::ops::concat()`]), its
/// inputs in one region at the storage alignment (`Inputs::Region`), as `gpu`'s settings
/// plan it, on buffers of zeros.
pub fn trace_concat(
    gpu: &GpuSplitter,
    plan: &ConcatPlan,
    dtype: DType,
    sampling: Sampling,
) -> Result<Vec<Access>> {
    let layout = gpu.layout(plan, dtype)?;
    let bytes = ByteRows::new(&plan.inverse(), dtype.size())?;
    // The gather, whatever the splitter's route choice.
    let regions = Regions {
        input_offset: 0,
        output_offset: 0,
        copies_allowed: false,
    };
    let Route::Gather(dispatches) = choose_concat(&bytes, &layout, &gpu.caps(), &regions)? else {
        return Err(SplitError::Device(
            "a concat without copies took no gather dispatch".into(),
        ));
    };
    let dst = binding_bytes(bytes.input_bytes());
    trace_dispatches(gpu, &dispatches, layout.total_bytes, dst, sampling)
}

/// Traces the gather of `plan`'s parts through `views`, each alone in a region of `sizes[k]`
/// bytes, as `gpu`'s settings plan them, on buffers of zeros: a split's outputs written
/// through them, or with `concat` a concat's inputs read through them (`plan` is then the
/// concat's inverse, [`ConcatPlan::inverse`]). Each part takes the dispatches it takes in a
/// buffer of its own ([`crate::Outputs::Views`]).
pub fn trace_views(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    dtype: DType,
    views: &[PartView],
    sizes: &[usize],
    concat: bool,
    sampling: Sampling,
) -> Result<Vec<Access>> {
    let es = dtype.size() as u64;
    let access = if concat {
        ViewAccess::Read
    } else {
        ViewAccess::Write
    };
    let whole = plan.whole_binding_size(dtype)?;
    let mut accesses: Vec<Access> = Vec::new();
    // Each part is traced in dispatches of its own.
    let room = table_room(&gpu.limits);
    for (k, (view, &size)) in views.iter().zip(sizes).enumerate() {
        let Some(runs) = part_runs(plan, k, view, es, access) else {
            continue;
        };
        let part = binding_bytes(size as u64);
        let (src, dst) = if concat { (part, whole) } else { (whole, part) };
        let tuning = gpu.caps().gather;
        // As `GpuSplitter::prepare` lowers it.
        let name = format!("part {k}");
        let dispatches =
            match lower_view(&name, &runs, !concat, (0, 0, 0), (src, dst), room, tuning)? {
                Lowered::Dispatch(d) => vec![d],
                Lowered::Entries(entries) => view_dispatches(entries, src, dst, tuning),
            };
        // Workgroups numbered on from the parts before.
        let first = accesses.iter().map(|a| a.workgroup + 1).max().unwrap_or(0);
        let traced = trace_dispatches(gpu, &dispatches, src, dst, sampling)?;
        accesses.extend(traced.into_iter().map(|mut a| {
            a.workgroup += first;
            a
        }));
    }
    Ok(accesses)
}

/// Runs `dispatches` through the trace build, reading a buffer of `src_bytes` and writing
/// one of `dst_bytes`, and returns their accesses.
fn trace_dispatches(
    gpu: &GpuSplitter,
    dispatches: &[Dispatch],
    src_bytes: u64,
    dst_bytes: u64,
    sampling: Sampling,
) -> Result<Vec<Access>> {
    let device = gpu.device();
    // Compiled once per splitter and its clones, its programs on first use.
    let pipeline = gpu.kept.traced_build(|| GatherPipeline::traced(device))?;
    let usage = wgpu::BufferUsages::STORAGE;
    let (input, output) = scoped(device, "allocating the traced gather's buffers", || {
        let buffer = |label, size: u64| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: size.max(16),
                usage,
                mapped_at_creation: false,
            })
        };
        (
            buffer("traced input", src_bytes),
            buffer("traced outputs", dst_bytes),
        )
    })?;
    let mut accesses = Vec::new();
    for (i, d) in dispatches.iter().enumerate() {
        let table = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("traced table"),
            contents: &d.table_bytes()?,
            usage,
        });
        let sides = (Sides::Region(0), Sides::Region(0));
        let recorded = Dispatched::new(pipeline.build(), d, sides, None, &gpu.limits)?;
        let buffer = |role| match role {
            Role::Input(0) => Some(&input),
            Role::Output(0) => Some(&output),
            _ => None,
        };
        let lanes = d.program.workgroup_size() as u32;
        let records = run_traced(
            gpu,
            d.params.num_blocks,
            lanes,
            sampling,
            |encoder, trace| {
                let traced = pipeline.with_trace(trace);
                pollster::block_on(traced.record(device, encoder, &recorded, &table, &buffer))
            },
        )?;
        accesses.extend(records.into_iter().map(|mut a| {
            a.workgroup += i as u32 * sampling.workgroups;
            a
        }));
    }
    Ok(accesses)
}

/// The benchmark's copy kernel, `shaders/bench_copy_vec4.wgsl`, as the suite compiles it: one
/// `vec4<u32>` per invocation, 256 invocations per workgroup, a 2-D grid of workgroups
/// (binding 0 the source, 1 the destination). Compiled without an error scope, for a caller
/// that captures errors itself (the browser page, where the suite's blocking error
/// scope cannot wait).
pub fn copy_kernel_pipeline(device: &wgpu::Device) -> wgpu::ComputePipeline {
    build_copy_kernel(device, Hook::Silent, 1)
}

/// The benchmark's copy kernel with `hook` (its plain or its trace build), `units` vec4s per
/// invocation, a device error captured.
pub(crate) fn copy_kernel(
    device: &wgpu::Device,
    hook: Hook,
    units: u32,
) -> Result<wgpu::ComputePipeline> {
    scoped(device, "compiling the copy kernel", || {
        build_copy_kernel(device, hook, units)
    })
}

/// The copy kernel with `hook` and `units` vec4s per invocation (its override constant
/// `UNITS`), with the bind group layout the shader implies.
fn build_copy_kernel(device: &wgpu::Device, hook: Hook, units: u32) -> wgpu::ComputePipeline {
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("bench_copy_vec4.wgsl"),
        source: wgpu::ShaderSource::Wgsl(copy_kernel_source(hook).into()),
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("bench_copy_vec4"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants: &[("UNITS", units as f64)],
            ..Default::default()
        },
        cache: None,
    })
}

/// Traces the benchmark's copy kernel copying `bytes` (rounded up to 16).
pub fn trace_copy_kernel(gpu: &GpuSplitter, bytes: u64, sampling: Sampling) -> Result<Vec<Access>> {
    let device = gpu.device();
    let size = bytes.next_multiple_of(16).max(16);
    let pipeline = copy_kernel(device, Hook::Recording, 1)?;
    let (src, dst) = scoped(device, "allocating the traced copy's buffers", || {
        let buffer = |label| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::STORAGE,
                mapped_at_creation: false,
            })
        };
        (
            buffer("traced copy source"),
            buffer("traced copy destination"),
        )
    })?;
    let groups = (size / 16).div_ceil(256);
    let (x, y) = grid(&gpu.limits, groups)?;
    run_traced(gpu, groups as u32, 256, sampling, |encoder, trace| {
        scoped(device, "recording the traced copy kernel", || {
            let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("traced copy kernel"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: src.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 1,
                        resource: dst.as_entire_binding(),
                    },
                    wgpu::BindGroupEntry {
                        binding: 2,
                        resource: trace.as_entire_binding(),
                    },
                ],
            });
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind_group, &[]);
            pass.dispatch_workgroups(x, y, 1);
        })
    })
}

/// Runs what `record` records for a dispatch of `blocks` workgroups of `lanes` lanes with a
/// fresh trace buffer (room for the sampled workgroups' lanes),
/// and reads the records back.
fn run_traced(
    gpu: &GpuSplitter,
    blocks: u32,
    lanes: u32,
    sampling: Sampling,
    record: impl FnOnce(&mut wgpu::CommandEncoder, &wgpu::Buffer) -> Result<()>,
) -> Result<Vec<Access>> {
    let device = gpu.device();
    let stride = blocks.div_ceil(sampling.workgroups.max(1)).max(1);
    // Workgroups stride, 2 * stride, ... record: no more than the dispatch has.
    let slots = blocks.div_ceil(stride).max(1);
    let records = sampling.records_per_lane.max(1);
    let size = 16 * (1 + slots as u64 * lanes as u64 * records as u64);
    let header: [u32; 4] = [stride, slots, records, lanes];
    let (trace, readback) = scoped(device, "allocating the trace buffers", || {
        let trace = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("trace records"),
            size,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("trace readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        (trace, readback)
    })?;
    gpu.queue()
        .write_buffer(&trace, 0, bytemuck::cast_slice(&header));
    let mut encoder = device.create_command_encoder(&Default::default());
    record(&mut encoder, &trace)?;
    scoped(device, "submitting the traced kernel", || {
        encoder.copy_buffer_to_buffer(&trace, 0, &readback, 0, size);
        gpu.queue().submit([encoder.finish()]);
    })?;
    gpu.read_back(&readback, |bytes| parse(bytes, slots, lanes, records))
}

/// The records of a read-back trace buffer.
fn parse(bytes: &[u8], slots: u32, lanes: u32, records: u32) -> Result<Vec<Access>> {
    let words: &[u32] = bytemuck::try_cast_slice(bytes)
        .map_err(|e| SplitError::Device(format!("reading the trace: {e}")))?;
    let mut accesses = Vec::new();
    for slot in 0..slots {
        for lane in 0..lanes {
            let first =
                4 * (1 + (slot as usize * lanes as usize + lane as usize) * records as usize);
            for seq in 0..records as usize {
                let r = &words[first + 4 * seq..first + 4 * seq + 4];
                if r[3] == 0 {
                    break;
                }
                if seq + 1 == records as usize {
                    return Err(SplitError::TooLarge(format!(
                        "a traced lane made more than {records} accesses; raise records_per_lane"
                    )));
                }
                let kind = match r[0] {
                    0 => Kind::Table,
                    1 => Kind::Load,
                    _ => Kind::Store,
                };
                accesses.push(Access {
                    workgroup: slot,
                    lane,
                    seq: r[3] - 1,
                    kind,
                    address: r[1] as u64,
                    size: r[2],
                });
            }
        }
    }
    Ok(accesses)
}
