//! Prepared splits (`GpuSplitter::prepare`): made once and recorded again and again, on the
//! gather, and the buffer copies, they give the bytes and the commands that
//! `encode` gives and read the input as it is when recorded; they keep their buffers alive;
//! misuse is refused at `prepare` as at `encode`; a buffer destroyed after `prepare` is
//! reported by wgpu when the work is submitted; a route kept by the splitter serves the same
//! plan on other buffers, and no other setting. Byte for byte against the CPU reference, on
//! each adapter.

#[macro_use]
mod common;

use wgpu_split::{
    ops, BufferRegion, DType, Encoded, GpuSplitter, HostTensor, IntTensor, Outputs, PartLayout,
    Prepared, RouteChoice, SplitError, SplitOptions, SplitPlan,
};

const COPIES: wgpu::BufferUsages = wgpu::BufferUsages::COPY_SRC.union(wgpu::BufferUsages::COPY_DST);

/// The input and output buffers of a split, the input writable by the queue.
struct Buffers {
    input: wgpu::Buffer,
    output: wgpu::Buffer,
}

impl Buffers {
    /// Buffers for `plan`; `copies` adds the usages that let copy commands move the outputs.
    fn new(gpu: &GpuSplitter, plan: &SplitPlan, dtype: DType, copies: bool) -> Self {
        let extra = if copies {
            COPIES
        } else {
            wgpu::BufferUsages::empty()
        };
        let device = gpu.device();
        let in_size = plan.whole_binding_size(dtype).unwrap().max(16);
        let input = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("prepared input"),
            size: in_size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | extra,
            mapped_at_creation: false,
        });
        let out_size = gpu.layout(plan, dtype).unwrap().total_bytes.max(16);
        let output = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("prepared output"),
            size: out_size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | extra,
            mapped_at_creation: false,
        });
        Self { input, output }
    }

    fn regions(&self) -> (BufferRegion<'_>, BufferRegion<'_>) {
        let region = |buffer| BufferRegion { buffer, offset: 0 };
        (region(&self.input), region(&self.output))
    }
}

/// Writes `input` into `buffers`' input, records `prepared`, submits, reads the outputs back
/// and checks them against the CPU reference, byte for byte (`label` names the case). Returns
/// what was recorded.
fn run_and_check(
    gpu: &GpuSplitter,
    prepared: &Prepared<SplitPlan>,
    buffers: &Buffers,
    plan: &SplitPlan,
    input: &HostTensor,
    label: &str,
) -> Encoded {
    write_input(gpu, &buffers.input, input);
    let (got, encoded) = record_and_read(gpu, prepared, &buffers.output, plan, input.dtype());
    let want = plan.reference(input).unwrap();
    common::assert_same_outputs(label, &got, &want);
    encoded
}

/// What `prepared` records, into an encoder that is dropped unsubmitted.
fn recorded(gpu: &GpuSplitter, prepared: &Prepared<SplitPlan>) -> Encoded {
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    prepared.encode(&mut encoder).unwrap()
}

/// Writes `input` into `buffer`, padded to whole words.
fn write_input(gpu: &GpuSplitter, buffer: &wgpu::Buffer, input: &HostTensor) {
    let mut bytes = input.bytes().to_vec();
    bytes.resize(bytes.len().next_multiple_of(4), 0);
    gpu.queue().write_buffer(buffer, 0, &bytes);
}

/// Records `prepared`, submits, and reads its outputs back from `output_buffer`.
fn record_and_read(
    gpu: &GpuSplitter,
    prepared: &Prepared<SplitPlan>,
    output_buffer: &wgpu::Buffer,
    plan: &SplitPlan,
    dtype: DType,
) -> (Vec<HostTensor>, Encoded) {
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let encoded = prepared.encode(&mut encoder).unwrap();
    let data = common::submit_and_read(gpu, encoder, output_buffer);
    let outputs = encoded.parts.parts_from(&data, plan, dtype).unwrap();
    (outputs, encoded)
}

fn tensor(dtype: DType, shape: &[usize], seed: u8) -> HostTensor {
    let n = shape.iter().product::<usize>() * dtype.size();
    let data = (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect();
    HostTensor::new(dtype, shape.to_vec(), data).unwrap()
}

/// Prepares `plan` once, then records it for two different inputs; each time the bytes match
/// the reference and the commands match `encode`'s. Returns the commands.
fn prepare_and_run_twice(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    shape: &[usize],
    copies: bool,
) -> Encoded {
    let name = common::name(gpu);
    let buffers = Buffers::new(gpu, plan, DType::F32, copies);
    let (input, output) = buffers.regions();
    let prepared = gpu
        .prepare(plan, DType::F32, input, Outputs::Region(output))
        .unwrap();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let direct = gpu
        .encode(
            &mut encoder,
            plan,
            DType::F32,
            input,
            Outputs::Region(output),
        )
        .unwrap();
    drop(encoder);
    // What it will record is known before its first encode.
    assert_eq!(prepared.recorded(), direct, "{name}: {plan:?}");
    assert_eq!(recorded(gpu, &prepared), direct, "{name}: {plan:?}");
    for seed in [1, 2] {
        let host = tensor(DType::F32, shape, seed);
        let label = format!("{name}, {plan:?}, input {seed}");
        let encoded = run_and_check(gpu, &prepared, &buffers, plan, &host, &label);
        assert_eq!(encoded, direct, "{name}: {plan:?}");
    }
    direct
}

/// The spec split's shape, its plan, and gather-only buffers for it.
fn spec_split(gpu: &GpuSplitter) -> ([usize; 4], SplitPlan, Buffers) {
    let shape = [6, 12, 10, 24];
    let plan = ops::split(&shape, &IntTensor::scalar(1), 3).unwrap();
    let buffers = Buffers::new(gpu, &plan, DType::F32, false);
    (shape, plan, buffers)
}

fn every_route_records_again_and_again(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    // Rows of 3,840 bytes: the gather without copy usages; with them, row copies on CPU
    // adapters, the gather on GPUs.
    let shape = [6, 12, 10, 24];
    let plan = ops::split(&shape, &IntTensor::scalar(1), 3).unwrap();
    let gathered = prepare_and_run_twice(gpu, &plan, &shape, false);
    assert_eq!(gathered.dispatches, 1, "{name}");
    let copied = prepare_and_run_twice(gpu, &plan, &shape, true);
    let cpu = gpu.device().adapter_info().device_type == wgpu::DeviceType::Cpu;
    assert_eq!(copied.dispatches == 0, cpu, "{name}: {copied:?}");
    if cpu {
        assert_eq!(copied.buffer_copies, 18, "{name}: {copied:?}");
    }
    // Whole outputs along axis 0: buffer copies (on GPUs, when told to take copies).
    let shape = [4, 64];
    let plan = ops::variadic_split(
        &shape,
        &IntTensor::scalar(0),
        &IntTensor::vector(vec![1, 3]),
    )
    .unwrap();
    let copies = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Copies,
        ..gpu.options()
    });
    let copied = prepare_and_run_twice(&copies, &plan, &shape, true);
    assert!(copied.buffer_copies > 0, "{name}: {copied:?}");
    let auto = prepare_and_run_twice(gpu, &plan, &shape, true);
    assert_eq!(auto.dispatches == 0, cpu, "{name}: {auto:?}");
    // Every output empty: nothing to record.
    let shape = [4, 0];
    let plan = ops::split(&shape, &IntTensor::scalar(0), 2).unwrap();
    let nothing = prepare_and_run_twice(gpu, &plan, &shape, false);
    assert_eq!(
        (nothing.dispatches, nothing.buffer_copies),
        (0, 0),
        "{name}"
    );
}

fn a_prepared_split_keeps_its_buffers(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let (shape, plan, buffers) = spec_split(gpu);
    let (input, output) = buffers.regions();
    let prepared = gpu
        .prepare(&plan, DType::F32, input, Outputs::Region(output))
        .unwrap();
    let host = tensor(DType::F32, &shape, 9);
    write_input(gpu, &buffers.input, &host);
    let Buffers { input, output } = buffers;
    drop(input);
    // The caller's handle to the input is gone; the prepared split still reads it.
    let (got, _) = record_and_read(gpu, &prepared, &output, &plan, DType::F32);
    let want = plan.reference(&host).unwrap();
    common::assert_same_outputs(&name, &got, &want);
}

fn misuse_is_refused_at_prepare(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let (_, plan, buffers) = spec_split(gpu);
    let (input, _) = buffers.regions();
    let e = gpu
        .prepare(&plan, DType::F32, input, Outputs::Region(input))
        .unwrap_err();
    assert!(matches!(e, SplitError::BadBuffer(_)), "{name}: {e}");
    let small = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 64,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let region = BufferRegion {
        buffer: &small,
        offset: 0,
    };
    let e = gpu
        .prepare(&plan, DType::F32, input, Outputs::Region(region))
        .unwrap_err();
    assert!(matches!(e, SplitError::BadBuffer(_)), "{name}: {e}");
    assert!(e.to_string().contains("output"), "{name}: {e}");
    // A layout built by hand is checked: outputs on top of each other are refused.
    let (_, output) = buffers.regions();
    let mut overlapping = PartLayout::packed(&plan, DType::F32).unwrap();
    overlapping.ranges[1].offset = 0;
    let e = gpu
        .prepare(
            &plan,
            DType::F32,
            input,
            Outputs::Placed(output, &overlapping),
        )
        .unwrap_err();
    assert!(matches!(e, SplitError::BadBuffer(_)), "{name}: {e}");
    assert!(
        e.to_string().contains("output layout: output 1"),
        "{name}: {e}"
    );
}

fn a_packed_layout_is_prepared_as_given(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let (shape, plan, buffers) = spec_split(gpu);
    let (input, output) = buffers.regions();
    let packed = PartLayout::packed(&plan, DType::F32).unwrap();
    let prepared = gpu
        .prepare(&plan, DType::F32, input, Outputs::Placed(output, &packed))
        .unwrap();
    assert_eq!(*recorded(gpu, &prepared).parts, packed, "{name}");
    let host = tensor(DType::F32, &shape, 5);
    run_and_check(gpu, &prepared, &buffers, &plan, &host, &name);
}

fn a_buffer_destroyed_after_prepare_is_reported_by_wgpu(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let (_, plan, buffers) = spec_split(gpu);
    let (input, output) = buffers.regions();
    let prepared = gpu
        .prepare(&plan, DType::F32, input, Outputs::Region(output))
        .unwrap();
    buffers.output.destroy();
    let device = gpu.device();
    let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
    let mut encoder = device.create_command_encoder(&Default::default());
    // Recording names no buffer wgpu would check here; the error comes at finish or submit.
    let recorded = prepared.encode(&mut encoder);
    gpu.queue().submit([encoder.finish()]);
    let error = pollster::block_on(scope.pop());
    assert!(
        recorded.is_err() || error.is_some(),
        "{name}: a destroyed output went unreported"
    );
}

fn a_kept_route_serves_other_buffers_and_no_other_setting(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let shape = [6, 12, 10, 24];
    let plan = ops::split(&shape, &IntTensor::scalar(1), 3).unwrap();
    let host = tensor(DType::F32, &shape, 5);
    // The splitter keeps the route of the first; the second, on other buffers at the same
    // offsets, takes it and writes its own buffers.
    let first = Buffers::new(gpu, &plan, DType::F32, true);
    let (input, output) = first.regions();
    let kept = gpu
        .prepare(&plan, DType::F32, input, Outputs::Region(output))
        .unwrap();
    let second = Buffers::new(gpu, &plan, DType::F32, true);
    let (input, output) = second.regions();
    let prepared = gpu
        .prepare(&plan, DType::F32, input, Outputs::Region(output))
        .unwrap();
    assert_eq!(recorded(gpu, &prepared), recorded(gpu, &kept), "{name}");
    run_and_check(
        gpu,
        &prepared,
        &second,
        &plan,
        &host,
        &format!("{name}, other buffers"),
    );
    // A clone with other settings shares the kept routes, but not under the same key: the
    // gather alone, where the default took copies on a CPU adapter.
    let gather = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..gpu.options()
    });
    let prepared = gather
        .prepare(&plan, DType::F32, input, Outputs::Region(output))
        .unwrap();
    assert_eq!(recorded(&gather, &prepared).dispatches, 1, "{name}");
    run_and_check(
        gpu,
        &prepared,
        &second,
        &plan,
        &host,
        &format!("{name}, gather"),
    );
    // A kept route holds no buffer: one destroyed since is still an error of `encode`.
    second.output.destroy();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let destroyed = gather.encode(
        &mut encoder,
        &plan,
        DType::F32,
        input,
        Outputs::Region(output),
    );
    assert!(
        matches!(destroyed, Err(SplitError::Device(_))),
        "{name}: {destroyed:?}"
    );
}

/// A splitter given a pipeline cache of its device makes its pipelines through it: the
/// splits and concats come out right and the cache holds data to save. A cache of another
/// device is refused at the first dispatch that makes a pipeline, with a typed error.
fn a_pipeline_cache_serves_every_pipeline(gpu: &GpuSplitter) {
    let device = gpu.device();
    if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
        // Only Vulkan keeps pipelines; the GL adapter has no cache to pass.
        assert_eq!(device.adapter_info().backend, wgpu::Backend::Gl);
        return;
    }
    let new_cache = |device: &wgpu::Device| {
        // SAFETY: no data, so nothing to trust.
        unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: None,
                data: None,
                fallback: true,
            })
        }
    };
    let cache = new_cache(device);
    let cached = GpuSplitter::new(device.clone(), gpu.queue().clone())
        .unwrap()
        .with_pipeline_cache(cache.clone());
    let data: Vec<u8> = (0..4 * 6 * 7).map(|i| (i * 37 + 1) as u8).collect();
    let input = HostTensor::new(DType::U8, vec![4, 6, 7], data).unwrap();
    for plan in [
        ops::split(&[4, 6, 7], &IntTensor::scalar(1), 3).unwrap(),
        ops::split(&[4, 6, 7], &IntTensor::scalar(2), 7).unwrap(),
    ] {
        let parts = common::run_verified(&cached, &plan, &input).unwrap();
        common::run_verified(&cached, &plan.inverse(), &parts).unwrap();
    }
    assert!(cache.get_data().is_some_and(|d| !d.is_empty()));
    // Two devices of one adapter (in one wgpu instance, as resources of another instance are
    // not told apart): a cache of the one does not serve the other.
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::VULKAN;
    let adapter =
        pollster::block_on(wgpu::Instance::new(desc).request_adapter(&Default::default())).unwrap();
    let [(mine, queue), (other, _)] = [(); 2].map(|_| {
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            required_features: wgpu::Features::PIPELINE_CACHE,
            ..Default::default()
        }))
        .unwrap()
    });
    let foreign = GpuSplitter::new(mine, queue)
        .unwrap()
        .with_options(SplitOptions {
            route: RouteChoice::Gather,
            ..Default::default()
        })
        .with_pipeline_cache(new_cache(&other));
    let plan = ops::split(&[4, 6, 7], &IntTensor::scalar(1), 3).unwrap();
    match foreign.run(&plan, &input) {
        Err(SplitError::Device(m)) => assert!(m.contains("pipeline"), "{m}"),
        other => panic!("a foreign cache: {other:?}"),
    }
    // A build compiled later (the indexed rows') takes the splitter's cache too.
    let rows = wgpu_split::ops::get_rows(&[4, 6, 7], &[2]).unwrap();
    let indices = HostTensor::from_slice(&[2], &[3i32, 0]).unwrap();
    match foreign.run(&rows, &[input.clone(), indices.clone()]) {
        Err(SplitError::Device(m)) => assert!(m.contains("pipeline"), "{m}"),
        other => panic!("a foreign cache, rows: {other:?}"),
    }
}

per_backend!(
    every_route_records_again_and_again,
    a_kept_route_serves_other_buffers_and_no_other_setting,
    a_prepared_split_keeps_its_buffers,
    misuse_is_refused_at_prepare,
    a_packed_layout_is_prepared_as_given,
    a_buffer_destroyed_after_prepare_is_reported_by_wgpu,
    a_pipeline_cache_serves_every_pipeline,
);
