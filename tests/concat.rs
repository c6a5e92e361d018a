//! Concat on each adapter, byte for byte against the CPU reference: the split of every
//! operator undone (`concat(split(x)) == x`) for every dtype, 1 to 100,000 inputs in one
//! region (one dispatch), every route, outputs past one binding, and misuse refused. Inputs
//! in buffers of their own: `concat_buffers.rs`.

#[macro_use]
mod common;

use common::concat::{check_regions, encode_and_read, parts, tensor};
use wgpu::util::DeviceExt;
use wgpu_split::{
    ops, BufferRegion, DType, GatherMode, GpuSplitter, HostTensor, Inputs, IntTensor, RouteChoice,
    SplitError, SplitOptions, SplitPlan,
};

/// The splits of every operator, on shapes with rows of every alignment.
fn splits() -> Vec<SplitPlan> {
    let s = IntTensor::scalar;
    vec![
        ops::split(&[6, 12, 10, 24], &s(1), 3).unwrap(),
        ops::split(&[4, 6], &s(-1), 3).unwrap(),
        ops::variadic_split(&[3, 13, 5], &s(1), &IntTensor::vector(vec![1, 0, -1, 3])).unwrap(),
        ops::variadic_split(&[7, 9], &s(0), &IntTensor::vector(vec![2, 5, 0])).unwrap(),
        ops::split_to_sequence(&[5, 7, 3], 1, None, false).unwrap(),
        ops::split_to_sequence(&[5, 7, 3], 2, Some(&s(2)), true).unwrap(),
        ops::onnx_split(&[9, 11], -1, &ops::OnnxSplitParts::NumOutputs(4)).unwrap(),
        ops::onnx_split(
            &[2, 33, 2],
            1,
            &ops::OnnxSplitParts::Lengths(vec![1, 30, 2]),
        )
        .unwrap(),
    ]
}

/// `concat(split(x)) == x` for every split operator and dtype, bit for bit, through the
/// host round trip, on the gather and on the routes the device picks.
fn round_trips_every_split(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    for route in [RouteChoice::Gather, RouteChoice::Auto] {
        let gpu = gpu.clone().with_options(SplitOptions {
            route,
            ..Default::default()
        });
        for plan in splits() {
            for dtype in DType::ALL_NUMERIC.into_iter().chain([DType::Utf32(3)]) {
                let x = tensor(dtype, plan.whole_shape(), 3);
                let parts = plan.reference(&x).unwrap();
                let back = common::run_verified(&gpu, &plan.inverse(), &parts).unwrap();
                assert_eq!(
                    back,
                    x,
                    "{name}: {route:?} {dtype} {:?}",
                    plan.whole_shape()
                );
            }
        }
    }
}

/// Special values survive: NaN payloads, -0.0, denormals.
fn floats_move_as_bits(gpu: &'static GpuSplitter) {
    let values = [
        f32::from_bits(0x7fc0_1234),
        -0.0,
        f32::from_bits(1),
        1.5,
        f32::MIN,
    ];
    let a = HostTensor::from_slice(&[5, 1], &values).unwrap();
    let b = HostTensor::from_slice(&[5, 2], &[values, values].concat()).unwrap();
    let plan = ops::concat(&[[5, 1], [5, 2]], 1).unwrap();
    let out = common::run_verified(gpu, &plan, &[a, b]).unwrap();
    let bits: Vec<u32> = out
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    assert_eq!(bits[0], 0x7fc0_1234);
    assert_eq!(bits[3], (-0.0f32).to_bits());
}

/// 1 to 100,000 inputs in one region (the gather, placed at the storage alignment and
/// packed): one dispatch each time.
fn many_inputs_in_one_region_take_one_dispatch(gpu: &'static GpuSplitter) {
    let gpu = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..Default::default()
    });
    for (count, shape, dtype) in [
        (1, vec![3, 5], DType::U8),
        (7, vec![2, 3], DType::F16),
        (8, vec![1, 33], DType::F32),
        (64, vec![3, 1, 2], DType::U8),
        (10_000, vec![1, 3], DType::U8),
        (100_000, vec![1, 1], DType::F32),
    ] {
        let shapes = vec![shape.clone(); count];
        let plan = ops::concat(&shapes, 0).unwrap();
        let tensors = parts(&plan, dtype);
        for packed in [false, true] {
            let layout = if packed {
                wgpu_split::PartLayout::packed(&plan, dtype).unwrap()
            } else {
                gpu.layout(&plan, dtype).unwrap()
            };
            let mut bytes = vec![0x5A; layout.total_bytes.max(16) as usize];
            for (t, r) in tensors.iter().zip(&layout.ranges) {
                let at = r.offset as usize;
                bytes[at..at + t.bytes().len()].copy_from_slice(t.bytes());
            }
            let input = gpu
                .device()
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: None,
                    contents: &bytes,
                    usage: wgpu::BufferUsages::STORAGE,
                });
            let region = BufferRegion {
                buffer: &input,
                offset: 0,
            };
            let inputs = if packed {
                Inputs::Placed(region, &layout)
            } else {
                Inputs::Region(region)
            };
            let encoded =
                encode_and_read(&gpu, &plan, &tensors, inputs, wgpu::BufferUsages::empty());
            assert_eq!(encoded.dispatches, 1, "{count} inputs, packed {packed}");
            // Encoded again, the concat takes the route kept from the first: the same layout.
            let again = encode_and_read(&gpu, &plan, &tensors, inputs, wgpu::BufferUsages::empty());
            assert!(
                std::sync::Arc::ptr_eq(&encoded.parts, &again.parts),
                "{count} inputs, packed {packed}: the route is kept"
            );
        }
    }
}

/// Stacking with ConcatFromSequence and the KV-cache append shape, through every route.
fn stacks_and_appends(gpu: &'static GpuSplitter) {
    for route in [RouteChoice::Gather, RouteChoice::Copies, RouteChoice::Auto] {
        let gpu = gpu.clone().with_options(SplitOptions {
            route,
            ..Default::default()
        });
        let plan = ops::concat_from_sequence(&[[4, 3], [4, 3], [4, 3]], -1, 1).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::I64)).unwrap();
        let plan = ops::concat(&[[1, 4, 63, 16], [1, 4, 1, 16]], 2).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::F16)).unwrap();
        let plan = ops::concat(&[[0, 3], [2, 3], [0, 3]], 0).unwrap();
        common::run_verified(&gpu, &plan, &parts(&plan, DType::U8)).unwrap();
        let plan = ops::concat(&[[2, 0], [2, 0]], 1).unwrap();
        let out = common::run_verified(&gpu, &plan, &parts(&plan, DType::F32)).unwrap();
        assert_eq!(out.shape(), &[2, 0]);
    }
}

/// Unaligned parts in every lane mapping and in the device's own runs: u8 parts of `m` bytes,
/// then `r` (at every residue mod 16 and across a unit's worth of widths), then 3, so units
/// cross from part to part and from row to row at every column; wide parts only, whose units
/// cross straight from one part into the next; and the same parts each in a buffer of its own.
fn unaligned_parts_at_every_offset(gpu: &'static GpuSplitter) {
    let mut variants = common::lane_mappings(gpu);
    let own_runs = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..gpu.options()
    });
    variants.push((format!("{} own runs", common::name(gpu)), own_runs));
    for (name, gpu) in &variants {
        let check = |shapes: &[[usize; 2]]| {
            let plan = ops::concat(shapes, 1).unwrap();
            let tensors = parts(&plan, DType::U8);
            common::run_verified(gpu, &plan, &tensors)
                .unwrap_or_else(|e| panic!("{name} {shapes:?}: {e}"));
            check_regions(gpu, &plan, &tensors, wgpu::BufferUsages::empty(), |i| {
                (i, 0)
            });
        };
        for m in 0..16 {
            for r in [16, 17, 19, 24, 31, 32, 33, 45] {
                check(&[[97, m], [97, r], [97, 3]]);
            }
        }
        for widths in [[17, 18, 16], [20, 33, 47], [100, 29, 101]] {
            check(&widths.map(|w| [97, w]));
        }
    }
}

/// Narrow parts in lanes' longest runs: u8 planes of 1 to 3 bytes a row interleaved into
/// pixels, whose every unit is assembled from many parts. llvmpipe leaves every loop of an
/// invocation after 65,535 turns in all, so the host keeps each lane's steps within that:
/// every byte arrives, in both mappings, at the most steps per lane the CPU adapters take.
fn narrow_parts_in_long_runs(gpu: &'static GpuSplitter) {
    let mappings = [(GatherMode::Cpu, 2048), (GatherMode::Gpu, 2048)];
    for (name, gpu) in common::gather_mappings(gpu, &mappings) {
        for widths in [vec![1, 1, 1], vec![1, 2, 1, 3]] {
            let shapes: Vec<[usize; 2]> = widths.iter().map(|&w| [1 << 20, w]).collect();
            let plan = ops::concat(&shapes, 1).unwrap();
            common::run_verified(&gpu, &plan, &parts(&plan, DType::U8))
                .unwrap_or_else(|e| panic!("{name} {widths:?}: {e}"));
        }
    }
}

/// Long rows move by row copies under `RouteChoice::Copies`, the split's copies turned
/// around: each part's rows into their columns of the output, whether the parts share one
/// buffer or take turns between two.
fn rows_by_copies(gpu: &'static GpuSplitter) {
    let gpu = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Copies,
        ..Default::default()
    });
    // Four f32 parts of [16, 256]: rows of 1,024 bytes at a stride of 4,096, 64 row copies.
    let plan = ops::concat(&[[16, 256]; 4], 1).unwrap();
    let tensors = parts(&plan, DType::F32);
    let usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let part = 16 * 1024;
    let together = check_regions(&gpu, &plan, &tensors, usage, |i| (0, i as u64 * part));
    assert_eq!((together.buffer_copies, together.dispatches), (64, 0));
    let apart = check_regions(&gpu, &plan, &tensors, usage, |i| {
        (i % 2, (i / 2) as u64 * part)
    });
    assert_eq!((apart.buffer_copies, apart.dispatches), (64, 0));
    common::run_verified(&gpu, &plan, &tensors).unwrap();
}

/// Inputs whose offsets in the output fall at the storage alignment can be views of it
/// (`views` of the concat's plan): their producers write in place and nothing moves.
fn inputs_as_views_of_the_output(gpu: &'static GpuSplitter) {
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    let plan = ops::concat(&[[align as usize], [3]], 0).unwrap();
    let views = gpu.views(&plan, DType::U8).unwrap().unwrap();
    assert_eq!((views[1].offset, views[1].size), (align, 3));
    let plan = ops::concat(&[[3], [align as usize]], 0).unwrap();
    assert_eq!(gpu.views(&plan, DType::U8).unwrap(), None);
    let strided = ops::concat(&[[2, 64], [2, 64]], 1).unwrap();
    assert_eq!(gpu.views(&strided, DType::F32).unwrap(), None);
}

/// Misuse comes back as errors that name the input and the rule.
fn misuse_is_refused(gpu: &'static GpuSplitter) {
    let device = gpu.device();
    let buffer = |size: u64| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let plan = ops::concat(&[[2, 3], [2, 5]], 1).unwrap();
    // An output offset the device allows, so the check that fails is the shared buffer's.
    let align = device.limits().min_storage_buffer_offset_alignment as u64;
    let (a, b, out, small) = (buffer(256), buffer(256 + align), buffer(64), buffer(16));
    let region = |buffer, offset| BufferRegion { buffer, offset };
    let mut encoder = device.create_command_encoder(&Default::default());
    let mut encode = |inputs: Inputs<'_>, output: BufferRegion<'_>| {
        gpu.encode(&mut encoder, &plan, DType::F32, inputs, output)
            .unwrap_err()
            .to_string()
    };
    let e = encode(
        Inputs::Regions(&[region(&a, 0), region(&b, 0)]),
        region(&small, 0),
    );
    assert!(e.contains("output needs 64 bytes"), "{e}");
    let e = encode(
        Inputs::Regions(&[region(&a, 0), region(&small, 0)]),
        region(&out, 0),
    );
    assert!(e.contains("input 1 needs 40 bytes"), "{e}");
    let e = encode(
        Inputs::Regions(&[region(&a, 0), region(&b, 0)]),
        region(&b, align),
    );
    assert!(e.contains("input 1 is in the output's buffer"), "{e}");
    let e = encode(Inputs::Regions(&[region(&a, 0)]), region(&out, 0));
    assert!(
        e.contains("1 input regions for a concat of 2 inputs"),
        "{e}"
    );
    let big = buffer(1024);
    let e = encode(Inputs::Region(region(&big, 0)), region(&big, 768));
    assert!(e.contains("in one buffer; a concat reads"), "{e}");
    let e = encode(Inputs::Region(region(&a, 4)), region(&out, 0));
    assert!(e.contains("input offset 4"), "{e}");
    let shifted = wgpu_split::PartLayout::packed(&plan, DType::U8).unwrap();
    let e = encode(Inputs::Placed(region(&a, 0), &shifted), region(&out, 0));
    assert!(e.contains("input layout: input 0 has 24 bytes"), "{e}");
    let wrong = [
        HostTensor::from_slice(&[2, 3], &[0f32; 6]).unwrap(),
        HostTensor::from_slice(&[2, 5], &[0i32; 10]).unwrap(),
    ];
    assert!(matches!(
        gpu.run(&plan, &wrong[..]),
        Err(SplitError::DataMismatch(_))
    ));
}

/// On a device whose storage bindings hold 64 KiB, concats of larger outputs: rows in runs
/// that fit (f32, and the KV append), rows too long for a run cut into pieces (u8 at odd
/// offsets), from one region and from a buffer per input, through the gather and `auto`.
fn past_one_binding_in_windows(gpu: &'static GpuSplitter) {
    let small = common::with_limits(gpu, |limits| wgpu::Limits {
        max_storage_buffer_binding_size: 1 << 16,
        ..limits
    });
    let cases = [
        (vec![vec![64, 100], vec![64, 200]], 1, DType::F32),
        (vec![vec![1, 4, 255, 64], vec![1, 4, 1, 64]], 2, DType::F16),
        (
            vec![vec![40, 1000], vec![40, 1001], vec![40, 1000]],
            1,
            DType::U8,
        ),
        // Three f64 columns, each past one binding: the join's units (the words take only an
        // output read from one binding).
        (vec![vec![9000, 1]; 3], 1, DType::F64),
    ];
    for (shapes, axis, dtype) in cases {
        let plan = ops::concat(&shapes, axis).unwrap();
        let tensors = parts(&plan, dtype);
        for route in [RouteChoice::Gather, RouteChoice::Auto] {
            let what = format!("{} {shapes:?} {route:?}", common::name(gpu));
            let gpu = small.clone().with_options(SplitOptions {
                route,
                ..Default::default()
            });
            let one = check_regions(&gpu, &plan, &tensors, wgpu::BufferUsages::COPY_SRC, |i| {
                (0, [0, 1 << 17, 2 << 17][i])
            });
            let own = check_regions(&gpu, &plan, &tensors, wgpu::BufferUsages::COPY_SRC, |i| {
                (i, 256)
            });
            if route == RouteChoice::Gather {
                assert!(
                    one.dispatches > 2 && own.dispatches > 2,
                    "{what}: {one:?} {own:?}"
                );
            }
            assert_eq!(
                gpu.run(&plan, &tensors).unwrap(),
                plan.reference(&tensors).unwrap(),
                "{what}"
            );
        }
    }
}

per_backend!(
    round_trips_every_split,
    floats_move_as_bits,
    many_inputs_in_one_region_take_one_dispatch,
    stacks_and_appends,
    unaligned_parts_at_every_offset,
    narrow_parts_in_long_runs,
    rows_by_copies,
    inputs_as_views_of_the_output,
    misuse_is_refused,
    past_one_binding_in_windows,
);
