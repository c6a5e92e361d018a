//! Scale and robustness: tensors past one storage binding (split and concat), grids past
//! 65,535 workgroups, 100,000 outputs, shared devices under threads, steady memory, device
//! faults.

#[macro_use]
mod common;

use wgpu_split::{
    ops, BackendChoice, DType, Encoded, GatherMode, GpuSplitter, HostTensor, IntTensor, Outputs,
    PartLayout, SplitError, SplitOptions, SplitPlan,
};

/// A deterministic byte pattern that differs at every offset modulo 251.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i % 251) as u8).wrapping_add(seed).wrapping_mul(7))
        .collect()
}

/// Runs `plan` on `gpu`, asserts byte equality with the CPU reference, returns the gather
/// dispatches it recorded.
fn check_on(name: &str, gpu: &GpuSplitter, plan: &SplitPlan, input: &HostTensor) -> u32 {
    let layout = gpu.layout(plan, input.dtype()).unwrap();
    check_recorded(name, gpu, plan, input, &layout).dispatches
}

/// [`check_on`] with the outputs placed by `layout` in one region (`Outputs::Placed`), read
/// back; returns all that was recorded.
fn check_recorded(
    name: &str,
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    input: &HostTensor,
    layout: &PartLayout,
) -> Encoded {
    use wgpu::util::DeviceExt;
    let (device, dtype) = (gpu.device(), input.dtype());
    let mut bytes = input.bytes().to_vec();
    bytes.resize(bytes.len().next_multiple_of(4).max(4), 0);
    let from = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &bytes,
        usage: wgpu::BufferUsages::STORAGE,
    });
    let to = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: layout.total_bytes,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let encoded = gpu
        .encode(
            &mut encoder,
            plan,
            dtype,
            (&from).into(),
            Outputs::Placed((&to).into(), layout),
        )
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let data = common::submit_and_read(gpu, encoder, &to);
    let got = layout.parts_from(&data, plan, dtype).unwrap();
    let want = plan.reference(input).unwrap();
    common::assert_same_outputs(name, &got, &want);
    encoded
}

const MIB: usize = 1 << 20;

fn f32_320_mib_split_on_an_inner_axis(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // [80, 1 Mi] f32 = 320 MiB, split on axis 1: each output is cut into pieces that fit the
    // 128 MiB storage binding of the software adapters.
    let shape = [80, 1 << 20];
    let input = HostTensor::new(DType::F32, shape.to_vec(), pattern(320 * MIB, 1)).unwrap();
    let plan = ops::split(&shape, &IntTensor::scalar(-1), 2).unwrap();
    let dispatches = check_on(name, gpu, &plan, &input);
    if gpu.device().limits().max_storage_buffer_binding_size < (320 * MIB) as u64 {
        assert!(
            dispatches > 2,
            "{name}: expected pieces, got {dispatches} dispatch(es)"
        );
    }
}

fn u8_320_mib_split_on_axis_0(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // [64 Mi, 5] u8 split on axis 0 at row 3: chunk offsets are not word aligned, so the shader
    // (not a buffer copy) moves the bytes, in pieces.
    let shape = [64 << 20, 5];
    let input = HostTensor::new(DType::U8, shape.to_vec(), pattern(320 * MIB, 2)).unwrap();
    let plan = ops::variadic_split(
        &shape,
        &IntTensor::scalar(0),
        &IntTensor::vector(vec![3, -1]),
    )
    .unwrap();
    check_on(name, gpu, &plan, &input);
}

fn grids_past_65535_workgroups(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // 70,000 outputs of one unit each take a block each: 70,000 workgroups, a 2-D grid, in
    // both gather modes.
    let shape = [70_000, 3];
    let input = HostTensor::new(DType::F32, shape.to_vec(), pattern(70_000 * 12, 3)).unwrap();
    let plan = ops::split_to_sequence(&shape, 0, None, false).unwrap();
    for mode in [GatherMode::Cpu, GatherMode::Gpu] {
        let gpu = gpu.clone().with_options(SplitOptions {
            gather_mode: Some(mode),
            ..gpu.options()
        });
        assert_eq!(check_on(name, &gpu, &plan, &input), 1);
    }
}

fn one_hundred_thousand_outputs_in_one_call(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let shape = [100_000, 3];
    let data: Vec<f32> = (0..300_000).map(|i| i as f32).collect();
    let input = HostTensor::from_slice(&shape, &data).unwrap();
    let plan = ops::split_to_sequence(&shape, 0, None, true).unwrap();
    // 12-byte outputs packed at 16 bytes: memory in proportion to the data (the region ends
    // with the last output).
    let packed = PartLayout::packed(&plan, DType::F32).unwrap();
    let encoded = check_recorded(name, gpu, &plan, &input, &packed);
    assert_eq!(encoded.parts.total_bytes, 16 * 100_000 - 4);
    assert_eq!(encoded.dispatches, 1);
}

fn one_device_shared_by_eight_threads(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    std::thread::scope(|scope| {
        for t in 0..8u64 {
            scope.spawn(move || {
                let mut seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(t + 1);
                let mut next = move |m: u64| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % m
                };
                for _ in 0..500 {
                    let rank = 1 + next(3) as usize;
                    let shape: Vec<usize> = (0..rank).map(|_| next(9) as usize).collect();
                    let axis = next(rank as u64) as usize;
                    let dtype = DType::ALL_NUMERIC[next(15) as usize];
                    let len = shape[axis];
                    let first = if len == 0 {
                        0
                    } else {
                        next(len as u64 + 1) as i64
                    };
                    let plan = ops::variadic_split(
                        &shape,
                        &IntTensor::scalar(axis as i64),
                        &IntTensor::vector(vec![first, -1]),
                    )
                    .unwrap();
                    let n = shape.iter().product::<usize>() * dtype.size();
                    let input =
                        HostTensor::new(dtype, shape.clone(), pattern(n, next(256) as u8)).unwrap();
                    let got = gpu
                        .run(&plan, &input)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let want = plan.reference(&input).unwrap();
                    assert!(
                        got == want,
                        "{name}: thread {t} differs for {shape:?} on axis {axis}"
                    );
                }
            });
        }
    });
}

fn a_tensor_past_max_buffer_size_is_refused_before_any_allocation(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let max = gpu.device().limits().max_buffer_size;
    let rows = (max / 1024 + 1) as usize;
    let plan = ops::split(&[rows, 1024], &IntTensor::scalar(0), 1).unwrap();
    let e = gpu.layout(&plan, DType::U8).unwrap_err();
    assert!(matches!(e, SplitError::TooLarge(_)), "{name}: {e}");
    assert!(e.to_string().contains("max_buffer_size"), "{name}: {e}");
}

fn a_lost_device_is_an_error_not_a_panic(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // A device of its own, so the shared one stays usable.
    let backend = BackendChoice::from_backend(gpu.device().adapter_info().backend);
    let (_, device, queue) = wgpu_split::DeviceChoice::from(backend).open().unwrap();
    let lost = GpuSplitter::new(device, queue).unwrap();
    lost.device().destroy();
    let input = HostTensor::from_slice(&[4, 4], &[1.0f32; 16]).unwrap();
    let plan = ops::split(&[4, 4], &IntTensor::scalar(0), 2).unwrap();
    let e = lost.run(&plan, &input).unwrap_err();
    assert!(matches!(e, SplitError::Device(_)), "{name}: {e}");
}

/// The concat the other way past one binding: [1024, 16 Ki] and [1024, 32 Ki] f32 on axis 1,
/// a 192 MiB output from a 192 MiB region of inputs, through the gather's windows.
fn f32_192_mib_concat_through_the_gather(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let gpu = gpu.clone().with_options(SplitOptions {
        route: wgpu_split::RouteChoice::Gather,
        ..Default::default()
    });
    let shapes = [vec![1024, 16 << 10], vec![1024, 32 << 10]];
    let inputs: Vec<HostTensor> = (0..2)
        .map(|i| {
            let n = shapes[i].iter().product::<usize>() * 4;
            HostTensor::new(DType::F32, shapes[i].clone(), pattern(n, i as u8)).unwrap()
        })
        .collect();
    let plan = ops::concat(&shapes, 1).unwrap();
    let got = gpu
        .run(&plan, &inputs)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let want = plan.reference(&inputs).unwrap();
    common::assert_same_outputs(name, &[got], &[want]);
}

/// On a device whose storage bindings hold 64 KiB, parts placed at 16 bytes by the caller
/// (`Outputs::Placed`, `Inputs::Placed` with `PartLayout::packed`) past one binding are
/// refused before anything is recorded, naming the rule (the pieces bind the parts at their
/// offsets); placed at the device's alignment (`GpuSplitter::layout`) they split in pieces.
fn packed_parts_past_one_binding_are_refused_with_the_rule(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let small = common::with_limits(gpu, |limits| wgpu::Limits {
        max_storage_buffer_binding_size: 1 << 16,
        ..limits
    });
    let shape = [400, 1001];
    let input = HostTensor::new(DType::U8, shape.to_vec(), pattern(400 * 1001, 3)).unwrap();
    let plan = ops::split(&shape, &IntTensor::scalar(1), 7).unwrap();
    let packed = PartLayout::packed(&plan, DType::U8).unwrap();
    let buffer = |size: u64| {
        small.device().create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (whole, parts) = (buffer(400 * 1004), buffer(packed.total_bytes));
    let mut encoder = small.device().create_command_encoder(&Default::default());
    let into = Outputs::Placed((&parts).into(), &packed);
    let e = small
        .encode(&mut encoder, &plan, DType::U8, (&whole).into(), into)
        .unwrap_err();
    assert!(matches!(e, SplitError::BadBuffer(_)), "{name}: {e}");
    let rule = "output layout: its alignment 16 is below the device's storage offset alignment";
    assert!(e.to_string().contains(rule), "{name}: {e}");
    let concat = plan.inverse();
    let from = wgpu_split::Inputs::Placed((&parts).into(), &packed);
    let e = small
        .encode(&mut encoder, &concat, DType::U8, from, (&whole).into())
        .unwrap_err();
    let rule = "input layout: its alignment 16 is below the device's storage offset alignment";
    assert!(e.to_string().contains(rule), "{name}: {e}");
    // At the device's alignment, the same split goes through in pieces.
    let layout = small.layout(&plan, DType::U8).unwrap();
    assert!(check_recorded(&name, &small, &plan, &input, &layout).dispatches > 1);
}

per_backend!(
    packed_parts_past_one_binding_are_refused_with_the_rule,
    f32_320_mib_split_on_an_inner_axis,
    u8_320_mib_split_on_axis_0,
    f32_192_mib_concat_through_the_gather,
    grids_past_65535_workgroups,
    one_hundred_thousand_outputs_in_one_call,
    one_device_shared_by_eight_threads,
    a_tensor_past_max_buffer_size_is_refused_before_any_allocation,
    a_lost_device_is_an_error_not_a_panic,
);
