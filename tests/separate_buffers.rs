//! Outputs in buffers of the caller's choosing (`Outputs::Regions`): 1, 7, 8, 64 and 10,000
//! outputs each in its own buffer (as many buffers per dispatch as the device binds, 3, and 1),
//! outputs sharing a buffer at offsets of their own, with and without copy usages; byte for
//! byte against the CPU reference, on each adapter.

#[macro_use]
mod common;

use wgpu::util::DeviceExt;
use wgpu_split::{
    ops, BufferRegion, DType, GatherMode, GpuSplitter, HostTensor, IntTensor, Outputs,
    RegionsPerDispatch, RouteChoice, SplitError, SplitOptions, SplitPlan,
};

fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| ((i * 131 + 7) % 251) as u8).collect()
}

/// Splits `input` into the regions `place(i, size)` gives (buffer index, offset), in buffers
/// of the sizes needed, reads every output back and compares with the reference. Returns the
/// dispatches and copies recorded.
fn check(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    input: &HostTensor,
    usage: wgpu::BufferUsages,
    place: impl Fn(usize) -> (usize, u64),
) -> (u32, u32) {
    let name = common::name(gpu);
    let device = gpu.device();
    let mut bytes = input.bytes().to_vec();
    bytes.resize(bytes.len().next_multiple_of(16).max(16), 0);
    let in_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &bytes,
        usage: wgpu::BufferUsages::STORAGE | usage,
    });
    let sizes: Vec<u64> = (0..plan.num_parts())
        .map(|i| plan.part_bytes(i, input.dtype()).unwrap())
        .collect();
    let places: Vec<(usize, u64)> = (0..plan.num_parts()).map(&place).collect();
    let count = places.iter().map(|p| p.0 + 1).max().unwrap_or(0);
    let mut ends = vec![16u64; count];
    for (&(b, offset), size) in places.iter().zip(&sizes) {
        ends[b] = ends[b].max(offset + size.next_multiple_of(16));
    }
    let buffers: Vec<wgpu::Buffer> = ends
        .iter()
        .map(|&size| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: None,
                size,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | usage,
                mapped_at_creation: false,
            })
        })
        .collect();
    let regions = common::regions_at(&buffers, &places);
    let mut encoder = device.create_command_encoder(&Default::default());
    let input_region = BufferRegion {
        buffer: &in_buf,
        offset: 0,
    };
    // A node prepared on the same regions says, before any encode, where each output lies in
    // its buffer and what it records.
    let told = gpu
        .prepare(
            plan,
            input.dtype(),
            input_region,
            Outputs::Regions(&regions),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .recorded();
    for (i, r) in told.parts.ranges.iter().enumerate() {
        // (An empty output lies nowhere: offset 0.)
        let offset = if sizes[i] == 0 { 0 } else { places[i].1 };
        assert_eq!((r.offset, r.size), (offset, sizes[i]), "{name}: output {i}");
    }
    let encoded = gpu
        .encode(
            &mut encoder,
            plan,
            input.dtype(),
            input_region,
            Outputs::Regions(&regions),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(told, encoded, "{name}");
    // Every output buffer back to back into one readback buffer.
    let total: u64 = ends.iter().sum();
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: total,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut starts = Vec::with_capacity(count);
    let mut at = 0;
    for (b, &size) in buffers.iter().zip(&ends) {
        encoder.copy_buffer_to_buffer(b, 0, &readback, at, size);
        starts.push(at);
        at += size;
    }
    gpu.queue().submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |r| r.unwrap());
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let data = readback.get_mapped_range(..).unwrap().to_vec();
    let got: Vec<HostTensor> = (0..plan.num_parts())
        .map(|i| {
            let (b, offset) = places[i];
            let from = (starts[b] + offset) as usize;
            let bytes = data[from..from + sizes[i] as usize].to_vec();
            HostTensor::new(input.dtype(), plan.part_shape(i), bytes).unwrap()
        })
        .collect();
    let want = plan.reference(input).unwrap();
    common::assert_same_outputs(&name, &got, &want);
    (encoded.dispatches, encoded.buffer_copies)
}

fn one_buffer_per_output(gpu: &'static GpuSplitter) {
    let copies = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    for n in [1usize, 7, 8, 64, 10_000] {
        // n outputs of 3 x 5 bytes (unaligned rows: the gather), each in a buffer of its own.
        let shape = [3, n * 5];
        let input = HostTensor::new(DType::U8, shape.to_vec(), pattern(3 * n * 5)).unwrap();
        let plan = ops::split(&shape, &IntTensor::scalar(1), n as i64).unwrap();
        // As many buffers per dispatch as the device binds (14 on lavapipe, 6 on llvmpipe GL:
        // each buffer as units and as words); then 3 and 1 per dispatch, as a device with fewer
        // bindings would take them.
        let allowed = (gpu.device().limits().max_storage_buffers_per_shader_stage - 3) / 2;
        assert_eq!(gpu.options().output_bindings.unwrap(), allowed.min(32));
        for bindings in [gpu.options().output_bindings.unwrap(), 3, 1] {
            let gpu = gpu.clone().with_options(SplitOptions {
                output_bindings: Some(bindings),
                ..gpu.options()
            });
            let empty = wgpu::BufferUsages::empty();
            let (dispatches, _) = check(&gpu, &plan, &input, empty, |i| (i, 0));
            assert_eq!(
                dispatches as usize,
                n.div_ceil(bindings as usize),
                "{bindings} buffers per dispatch"
            );
        }
        // Whole rows of 1 KiB on axis 0: copy commands write the buffers directly.
        if n <= 64 {
            let input = HostTensor::new(DType::F32, vec![n, 256], pattern(n * 1024)).unwrap();
            let plan = ops::split_to_sequence(input.shape(), 0, None, false).unwrap();
            let gpu = gpu.clone().with_options(SplitOptions {
                route: RouteChoice::Copies,
                ..gpu.options()
            });
            let (dispatches, commands) = check(&gpu, &plan, &input, copies, |i| (i, 0));
            assert_eq!((dispatches, commands as usize), (0, n));
        }
    }
}

fn outputs_sharing_buffers_at_their_own_offsets(gpu: &'static GpuSplitter) {
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    // Six outputs, one empty, in two buffers, in reverse order and with gaps between them.
    let shape = [9, 33]; // lengths 2, 7, 0, 16, 3, 5
    let lengths = IntTensor::vector(vec![2, 7, 0, 16, 3, 5]);
    let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &lengths).unwrap();
    // Outputs of one buffer 2 x 320 bytes apart or more (the largest holds 576), at the
    // alignment, all under the 4 KiB of outputs per buffer that CPU adapters bind together.
    let step = 320u64.next_multiple_of(align);
    let place = |i: usize| (i % 2, step * (6 - i as u64));
    // f16 rows of 4 to 32 bytes, and f32 rows of whole words (which a GPU's lanes gather by
    // input, or under Tiles stage in tiles).
    for dtype in [DType::F16, DType::F32] {
        let input = HostTensor::new(dtype, shape.to_vec(), pattern(9 * 33 * dtype.size())).unwrap();
        // Both buffers in one dispatch, with the CPU adapters' lanes and with a GPU's.
        for mode in [GatherMode::Cpu, GatherMode::Gpu] {
            let gpu = gpu.clone().with_options(SplitOptions {
                gather_mode: Some(mode),
                ..gpu.options()
            });
            let (dispatches, _) = check(&gpu, &plan, &input, wgpu::BufferUsages::empty(), place);
            assert_eq!(dispatches, 1, "{dtype} {mode:?}");
        }
        let copies = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
        check(gpu, &plan, &input, copies, place);
    }
    // u8 rows of 65 to 200 bytes at odd offsets, an empty output between, under 4 KiB per
    // buffer (bound together on every adapter): a GPU's lanes, shifted or staged, store to
    // both buffers.
    let shape = [10, 402];
    let lengths = IntTensor::vector(vec![65, 0, 137, 200]);
    let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &lengths).unwrap();
    let input = HostTensor::new(DType::U8, shape.to_vec(), pattern(10 * 402)).unwrap();
    let apart = |i: usize| (i % 2, 1024u64.next_multiple_of(align) * (i / 2) as u64);
    let gpu = gpu.clone().with_options(SplitOptions {
        gather_mode: Some(GatherMode::Gpu),
        ..gpu.options()
    });
    let (dispatches, _) = check(&gpu, &plan, &input, wgpu::BufferUsages::empty(), apart);
    assert_eq!(dispatches, 1);
}

fn bad_regions_are_refused(gpu: &'static GpuSplitter) {
    let device = gpu.device();
    // Outputs of 2 KiB, longer than any storage offset alignment (at most 256), so regions at
    // offsets the device allows can overlap and run past the buffer's end.
    let align = device.limits().min_storage_buffer_offset_alignment as u64;
    let plan = ops::split(&[4, 256], &IntTensor::scalar(1), 2).unwrap();
    let buffer = |size| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (input, out) = (buffer(4096), buffer(8192));
    let r = |buffer, offset| BufferRegion { buffer, offset };
    let mut encoder = device.create_command_encoder(&Default::default());
    let mut encode = |outputs: &[BufferRegion]| {
        gpu.encode(
            &mut encoder,
            &plan,
            DType::F32,
            r(&input, 0),
            Outputs::Regions(outputs),
        )
        .unwrap_err()
    };
    let e = encode(&[r(&out, 0)]);
    assert!(
        e.to_string().contains("1 output regions for 2 outputs"),
        "{e}"
    );
    let e = encode(&[r(&out, 0), r(&out, align)]);
    assert!(
        matches!(e, SplitError::BadBuffer(_)) && e.to_string().contains("overlaps"),
        "{e}"
    );
    let e = encode(&[r(&out, 0), r(&input, 0)]);
    assert!(e.to_string().contains("in the input's buffer"), "{e}");
    let e = encode(&[r(&out, 0), r(&out, 8192 - align)]);
    assert!(
        e.to_string().starts_with("output 1 needs 2048 bytes"),
        "{e}"
    );
    let e = encode(&[r(&out, 0), r(&out, 4096 + 4)]);
    assert!(e.to_string().starts_with("output 1 offset 4100"), "{e}");
}

/// The rule `Outputs::Regions` and `Inputs::Regions` document, for a device of `buffers`
/// storage buffers per shader stage: one dispatch binds the buffers less 3, halved, at least 1
/// and at most 32; 1 on a device of fewer than 5.
fn documented_buffers_per_dispatch(buffers: u32) -> u32 {
    match buffers {
        0..5 => 1,
        _ => ((buffers - 3) / 2).clamp(1, 32),
    }
}

/// What `Outputs::Regions` and `Inputs::Regions` document: 64 parts of 1 KiB, each in a buffer
/// of its own, take as many dispatches as the storage buffers the device was opened with
/// allow: 5 with 32 storage buffers a stage, 11 with 16, 22 with 10, 2 with 524,288 (a
/// datacenter GPU's Vulkan: the cap of 32 buffers a dispatch), 64 with
/// `Limits::downlevel_defaults()` and 32 with `Limits::default()`; a split's outputs and a
/// concat's inputs alike. The devices opened here take their adapter's limits or fewer; the
/// rule itself is replayed for the limits of every device measured so far.
fn dispatches_follow_the_limits_the_device_was_opened_with(gpu: &'static GpuSplitter) {
    for (buffers, device, dispatches) in [
        (524_288, "a datacenter GPU's Vulkan", 2),
        (32, "a CPU adapter's Vulkan", 5),
        (16, "a GL adapter", 11),
        (10, "the browser's adapter", 22),
        (8, "Limits::default", 32),
        (4, "Limits::downlevel_defaults", 64),
    ] {
        let limits = wgpu::Limits {
            max_storage_buffers_per_shader_stage: buffers,
            ..wgpu::Limits::default()
        };
        let b = documented_buffers_per_dispatch(buffers);
        assert_eq!(
            RegionsPerDispatch::for_limits(&limits),
            RegionsPerDispatch {
                outputs: b,
                inputs: b
            },
            "{device}: {buffers} storage buffers"
        );
        assert_eq!(64u32.div_ceil(b), dispatches, "{device}");
    }
    let split = ops::split(&[64, 256], &IntTensor::scalar(0), 64).unwrap();
    let input = HostTensor::new(DType::F32, vec![64, 256], pattern(64 * 1024)).unwrap();
    let concat = ops::concat(&vec![[1, 256]; 64], 0).unwrap();
    let parts = common::concat::parts(&concat, DType::F32);
    let empty = wgpu::BufferUsages::empty();
    let devices = [
        (gpu.clone(), "the adapter's limits"),
        (
            common::with_limits(gpu, |_| wgpu::Limits::downlevel_defaults()),
            "downlevel_defaults",
        ),
        (
            common::with_limits(gpu, |_| wgpu::Limits::default()),
            "Limits::default",
        ),
    ];
    for (gpu, limits) in devices {
        let buffers = gpu.device().limits().max_storage_buffers_per_shader_stage;
        let b = documented_buffers_per_dispatch(buffers);
        let told = RegionsPerDispatch::for_limits(&gpu.device().limits());
        assert_eq!((told.outputs, told.inputs), (b, b), "{limits}");
        let want = 64u32.div_ceil(b);
        let (dispatches, copies) = check(&gpu, &split, &input, empty, |i| (i, 0));
        assert_eq!((dispatches, copies), (want, 0), "split, {limits}");
        let encoded = common::concat::check_regions(&gpu, &concat, &parts, empty, |i| (i, 0));
        assert_eq!(encoded.dispatches, want, "concat, {limits}");
    }
}

per_backend!(
    dispatches_follow_the_limits_the_device_was_opened_with,
    one_buffer_per_output,
    outputs_sharing_buffers_at_their_own_offsets,
    bad_regions_are_refused,
);
