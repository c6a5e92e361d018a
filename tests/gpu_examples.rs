//! The spec examples and the hard cases, on every test adapter, byte for byte.

#[macro_use]
mod common;

use wgpu_split::{
    ops, DType, GpuSplitter, HostTensor, IntTensor, RouteChoice, SplitOptions, SplitPlan,
};

/// Runs `plan` on `gpu` and asserts the outputs equal the CPU reference exactly.
fn check(gpu: &GpuSplitter, plan: &SplitPlan, input: &HostTensor) -> Vec<HostTensor> {
    let want = plan.reference(input).unwrap();
    let name = common::name(gpu);
    let got = gpu
        .run(plan, input)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    common::assert_same_outputs(&name, &got, &want);
    want
}

/// Gather dispatches and buffer copies recorded.
fn counts(how: &wgpu_split::Encoded) -> (u32, u32) {
    (how.dispatches, how.buffer_copies)
}

/// `gpu` taking copy commands wherever a copy route applies, on any device.
fn copies_only(gpu: &GpuSplitter) -> GpuSplitter {
    gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Copies,
        ..gpu.options()
    })
}

/// Whether `gpu` is a CPU adapter, where the default route takes copy commands.
fn cpu(gpu: &GpuSplitter) -> bool {
    gpu.device().adapter_info().device_type == wgpu::DeviceType::Cpu
}

fn iota_f32(shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    HostTensor::from_slice(shape, &(0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
}

fn spec_split_example(gpu: &'static GpuSplitter) {
    let input = iota_f32(&[6, 12, 10, 24]);
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    let out = check(gpu, &plan, &input);
    assert_eq!(
        out.iter().map(|t| t.shape().to_vec()).collect::<Vec<_>>(),
        vec![vec![6, 4, 10, 24]; 3]
    );
    // Output 1 starts at axis index 4 of the first outer row: element 4 * 240.
    assert_eq!(out[1].to_vec::<f32>().unwrap()[0], 960.0);
}

fn spec_variadic_split_examples(gpu: &'static GpuSplitter) {
    let input = iota_f32(&[6, 12, 10, 24]);
    let plan = ops::variadic_split(
        input.shape(),
        &IntTensor::scalar(0),
        &IntTensor::vector(vec![1, 2, 3]),
    )
    .unwrap();
    let shapes: Vec<_> = check(gpu, &plan, &input)
        .iter()
        .map(|t| t.shape()[0])
        .collect();
    assert_eq!(shapes, vec![1, 2, 3]);
    let plan = ops::variadic_split(
        input.shape(),
        &IntTensor::vector(vec![0]),
        &IntTensor::vector(vec![-1, 2]),
    )
    .unwrap();
    let shapes: Vec<_> = check(gpu, &plan, &input)
        .iter()
        .map(|t| t.shape()[0])
        .collect();
    assert_eq!(shapes, vec![4, 2]);
}

fn split_to_sequence_forms(gpu: &'static GpuSplitter) {
    let input = iota_f32(&[5, 3]);
    let plan = ops::split_to_sequence(input.shape(), 0, Some(&IntTensor::scalar(2)), true).unwrap();
    assert_eq!(
        check(gpu, &plan, &input)[2].to_vec::<f32>().unwrap(),
        vec![12.0, 13.0, 14.0]
    );
    let plan = ops::split_to_sequence(
        input.shape(),
        1,
        Some(&IntTensor::vector(vec![2, 0, 1])),
        false,
    )
    .unwrap();
    assert_eq!(check(gpu, &plan, &input)[1].shape(), &[5, 0]);
    let plan = ops::split_to_sequence(input.shape(), 1, None, false).unwrap();
    assert_eq!(
        check(gpu, &plan, &input)[2].to_vec::<f32>().unwrap(),
        vec![2.0, 5.0, 8.0, 11.0, 14.0]
    );
}

fn special_floats_survive_bit_for_bit(gpu: &'static GpuSplitter) {
    let specials32 = [
        f32::from_bits(0x7fc0_0001), // quiet NaN with payload
        f32::from_bits(0x7f80_0001), // signalling NaN
        f32::from_bits(0xffc1_2345), // negative NaN with payload
        -0.0,
        f32::from_bits(1),           // smallest denormal
        f32::from_bits(0x807f_ffff), // largest negative denormal
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    let input = HostTensor::from_slice(&[2, 4], &specials32).unwrap();
    let plan = ops::split(&[2, 4], &IntTensor::scalar(1), 2).unwrap();
    let out = check(gpu, &plan, &input);
    assert_eq!(out[0].to_vec::<f32>().unwrap()[0].to_bits(), 0x7fc0_0001);

    let specials64 = [
        f64::from_bits(0x7ff0_0000_0000_0001),
        -0.0,
        f64::from_bits(1),
        f64::from_bits(0xfff8_dead_beef_0001),
    ];
    let input = HostTensor::from_slice(&[4], &specials64).unwrap();
    let plan = ops::split_to_sequence(&[4], 0, None, false).unwrap();
    assert_eq!(
        check(gpu, &plan, &input)[3].to_vec::<f64>().unwrap()[0].to_bits(),
        0xfff8_dead_beef_0001
    );

    let halves: Vec<half::f16> = [0x7c01u16, 0xfe01, 0x8000, 0x0001, 0x03ff, 0x7e00, 0xffff]
        .into_iter()
        .map(half::f16::from_bits)
        .collect();
    let input = HostTensor::from_slice(&[7], &halves).unwrap();
    let plan = ops::variadic_split(
        &[7],
        &IntTensor::scalar(0),
        &IntTensor::vector(vec![3, -1, 1]),
    )
    .unwrap();
    assert_eq!(
        check(gpu, &plan, &input)[1].to_vec::<half::f16>().unwrap()[0].to_bits(),
        0x0001
    );
}

fn odd_byte_boundaries(gpu: &'static GpuSplitter) {
    // u8 rows of 5, 7 and 13 bytes, split into pieces that start and end mid-word.
    for (rows, cols) in [(3usize, 5usize), (7, 7), (5, 13), (33, 1)] {
        let data: Vec<u8> = (0..rows * cols).map(|i| (i * 37 + 11) as u8).collect();
        let input = HostTensor::from_slice(&[rows, cols], &data).unwrap();
        let plan = ops::split_to_sequence(&[rows, cols], 1, None, false).unwrap();
        check(gpu, &plan, &input);
        let plan =
            ops::split_to_sequence(&[rows, cols], 0, Some(&IntTensor::scalar(2)), true).unwrap();
        check(gpu, &plan, &input);
        let bools: Vec<bool> = data.iter().map(|b| b % 3 == 0).collect();
        let input = HostTensor::from_bools(&[rows, cols], &bools).unwrap();
        let lengths = vec![1, (cols as i64) - 1];
        let plan = ops::variadic_split(
            &[rows, cols],
            &IntTensor::scalar(1),
            &IntTensor::vector(lengths),
        )
        .unwrap();
        check(gpu, &plan, &input);
    }
    let halves: Vec<half::f16> = (0..3 * 5)
        .map(|i| half::f16::from_bits(0x3c00 + i))
        .collect();
    let input = HostTensor::from_slice(&[3, 5], &halves).unwrap();
    let plan = ops::variadic_split(
        &[3, 5],
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![1, 3, 1]),
    )
    .unwrap();
    check(gpu, &plan, &input);
}

fn three_thousand_outputs_in_one_dispatch(gpu: &'static GpuSplitter) {
    let input = iota_f32(&[3000, 3]);
    let plan = ops::split(&[3000, 3], &IntTensor::scalar(0), 3000).unwrap();
    let out = check(gpu, &plan, &input);
    assert_eq!(
        out[2999].to_vec::<f32>().unwrap(),
        vec![8997.0, 8998.0, 8999.0]
    );
    let bytes: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
    let input = HostTensor::from_slice(&[1, 3000], &bytes).unwrap();
    let plan = ops::split_to_sequence(&[1, 3000], 1, None, true).unwrap();
    assert_eq!(check(gpu, &plan, &input)[2999].bytes(), &[(2999u32 as u8)]);
}

fn every_dtype_round_trips(gpu: &'static GpuSplitter) {
    for dtype in DType::ALL_NUMERIC.into_iter().chain([DType::Utf32(3)]) {
        let shape = [3, 7, 2];
        let n = 3 * 7 * 2 * dtype.size();
        let bytes: Vec<u8> = (0..n).map(|i| (i * 131 + 7) as u8).collect();
        let input = HostTensor::new(dtype, shape.to_vec(), bytes).unwrap();
        let plan = ops::variadic_split(
            &shape,
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![2, -1, 0, 3]),
        )
        .unwrap();
        check(gpu, &plan, &input);
    }
}

fn empty_outputs_and_empty_inputs(gpu: &'static GpuSplitter) {
    let input = HostTensor::from_slice::<f32>(&[0, 4], &[]).unwrap();
    let plan = ops::split(&[0, 4], &IntTensor::scalar(1), 2).unwrap();
    assert_eq!(check(gpu, &plan, &input)[1].shape(), &[0, 2]);
    let input = iota_f32(&[2, 0, 3]);
    let plan = ops::split(&[2, 0, 3], &IntTensor::scalar(1), 4).unwrap();
    assert_eq!(check(gpu, &plan, &input).len(), 4);
}

/// The async path gives the same bytes: `run_async` and `encode_async`, driven by an
/// executor (pollster here; any other works, nothing inside blocks on wgpu).
fn async_run_and_encode(gpu: &'static GpuSplitter) {
    let input = iota_f32(&[6, 12, 10, 24]);
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    let want = plan.reference(&input).unwrap();
    let got = pollster::block_on(gpu.run_async(&plan, &input)).unwrap();
    common::assert_same_outputs(&common::name(gpu), &got, &want);
    // encode_async on buffers with copies allowed and without.
    for usage in [
        wgpu::BufferUsages::empty(),
        wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    ] {
        let (got, _) = common::encode_and_read_with(gpu, &plan, &input, usage, true);
        common::assert_same_outputs(&common::name(gpu), &got, &want);
    }
}

/// Each stamped test runs on the adapter its name says.
fn the_adapter_is_the_named_backend(gpu: &'static GpuSplitter) {
    let backend = gpu.device().adapter_info().backend;
    eprintln!("GPU tests run on: {}", common::name(gpu));
    assert!(
        matches!(backend, wgpu::Backend::Vulkan | wgpu::Backend::Gl),
        "{backend:?}"
    );
}

fn one_word_rows_with_partial_units(gpu: &'static GpuSplitter) {
    // Rows of one 32-bit word (the strided-gather path), outputs of 5 and 7 words.
    for rows in [5usize, 7, 1] {
        let input = iota_f32(&[rows, 4]);
        let plan = ops::split(&[rows, 4], &IntTensor::scalar(1), 4).unwrap();
        let out = check(gpu, &plan, &input);
        assert_eq!(out[3].to_vec::<f32>().unwrap()[0], 3.0);
        let halves: Vec<u16> = (0..rows as u16 * 6).collect();
        let input = HostTensor::from_slice(&[rows, 6], &halves).unwrap();
        let plan = ops::variadic_split(
            &[rows, 6],
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![2, 2, 2]),
        )
        .unwrap();
        check(gpu, &plan, &input);
    }
}

fn row_copies_and_the_dispatch_give_the_same_bytes(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // 32 rows of 2,048 bytes per output at a stride of 4,096: 64 row copies, and the gather
    // dispatch where the buffers allow no copies. The default route takes the copies on CPU
    // adapters and the gather on GPUs.
    let input = iota_f32(&[32, 2, 512]);
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 2).unwrap();
    let want = plan.reference(&input).unwrap();
    let copy_usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let copies = copies_only(gpu);
    let (copied, how) = common::encode_and_read(&copies, &plan, &input, copy_usage);
    assert_eq!(counts(&how), (0, 64), "{name}");
    common::assert_same_outputs(name, &copied, &want);
    let (gathered, how) = common::encode_and_read(gpu, &plan, &input, wgpu::BufferUsages::empty());
    assert_eq!(counts(&how), (1, 0), "{name}");
    common::assert_same_outputs(name, &gathered, &want);
    let (auto, how) = common::encode_and_read(gpu, &plan, &input, copy_usage);
    let expected = if cpu(gpu) { (0, 64) } else { (1, 0) };
    assert_eq!(counts(&how), expected, "{name}");
    common::assert_same_outputs(name, &auto, &want);
}

fn few_long_rows_take_the_cheaper_copy_route(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // The spec example: 18 row copies of 3,840 bytes on CPU adapters. GPUs take the gather
    // (faster than copy commands on an H100), and copies only when told to.
    let input = iota_f32(&[6, 12, 10, 24]);
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    let want = plan.reference(&input).unwrap();
    let copy_usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let by_copies = (0, 18);
    let expected = if cpu(gpu) { by_copies } else { (1, 0) };
    let (got, how) = common::encode_and_read(gpu, &plan, &input, copy_usage);
    assert_eq!(counts(&how), expected, "{name}");
    common::assert_same_outputs(name, &got, &want);
    let (got, how) = common::encode_and_read(&copies_only(gpu), &plan, &input, copy_usage);
    assert_eq!(counts(&how), by_copies, "{name}");
    common::assert_same_outputs(name, &got, &want);
}

fn row_copies_keep_every_bit_at_offsets(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let copy_usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    // Arbitrary bytes (NaN payloads, -0.0 and denormals among them) as f64, with an empty
    // output, at non-zero offsets of both buffers: 24 rows of 1,024 and 2,560 bytes at a
    // stride of 3,584, one copy per output row.
    let shape = [24usize, 7, 64];
    let bytes: Vec<u8> = (0..24 * 7 * 64 * 8u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let input = HostTensor::new(DType::F64, shape.to_vec(), bytes).unwrap();
    let plan = ops::variadic_split(
        &shape,
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![2, 0, 5]),
    )
    .unwrap();
    let want = plan.reference(&input).unwrap();
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    let gpu = &copies_only(gpu);
    let (got, how) = common::encode_and_read_at(gpu, &plan, &input, copy_usage, (align * 3, align));
    assert_eq!(counts(&how), (0, 48), "{name}");
    common::assert_same_outputs(name, &got, &want);
}

fn repeated_splits_find_their_own_tables(gpu: &'static GpuSplitter) {
    // Later rounds find their tables in each splitter's cache; the two plans have tables of
    // the same size, so serving one's table for the other would show in the bytes.
    let shape = [5, 9, 7];
    let axis = IntTensor::scalar(1);
    let plans = [
        ops::variadic_split(&shape, &axis, &IntTensor::vector(vec![2, -1, 3])).unwrap(),
        ops::variadic_split(&shape, &axis, &IntTensor::vector(vec![3, 4, 2])).unwrap(),
    ];
    for round in 0..4u8 {
        let bytes: Vec<u8> = (0..5 * 9 * 7 * 2)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(round))
            .collect();
        let input = HostTensor::new(DType::F16, shape.to_vec(), bytes).unwrap();
        check(gpu, &plans[round as usize % 2], &input);
    }
}

fn neighbouring_contiguous_outputs_share_one_copy(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let copy_usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    // 64 slices of 1 KiB along axis 0 lie back to back in the output region as in the input.
    let gpu = &copies_only(gpu);
    let input = iota_f32(&[64, 256]);
    let plan = ops::split_to_sequence(input.shape(), 0, None, false).unwrap();
    let want = plan.reference(&input).unwrap();
    let (got, how) = common::encode_and_read(gpu, &plan, &input, copy_usage);
    assert_eq!(counts(&how), (0, 1), "{name}");
    common::assert_same_outputs(name, &got, &want);
    // Slices of 2,000 bytes: each output is padded to the storage alignment, so one copy each.
    let bytes: Vec<u8> = (0..5 * 2000u32).map(|i| (i % 251) as u8).collect();
    let input = HostTensor::new(DType::U8, vec![5, 2000], bytes).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(0), 5).unwrap();
    let want = plan.reference(&input).unwrap();
    let (got, how) = common::encode_and_read(gpu, &plan, &input, copy_usage);
    assert_eq!(counts(&how), (0, 5), "{name}");
    common::assert_same_outputs(name, &got, &want);
}

per_backend!(
    the_adapter_is_the_named_backend,
    async_run_and_encode,
    spec_split_example,
    spec_variadic_split_examples,
    split_to_sequence_forms,
    special_floats_survive_bit_for_bit,
    odd_byte_boundaries,
    three_thousand_outputs_in_one_dispatch,
    every_dtype_round_trips,
    empty_outputs_and_empty_inputs,
    one_word_rows_with_partial_units,
    row_copies_and_the_dispatch_give_the_same_bytes,
    few_long_rows_take_the_cheaper_copy_route,
    row_copies_keep_every_bit_at_offsets,
    repeated_splits_find_their_own_tables,
    neighbouring_contiguous_outputs_share_one_copy,
);
