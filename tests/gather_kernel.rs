//! The gather kernel in each of its layouts, on each adapter: runs (CPU adapters), coalesced
//! lanes with aligned or shifted loads, row tiles (GPUs), short word rows scattered by input,
//! and unaligned rows staged in workgroup memory. Every row length from 1 to 80
//! bytes at every offset modulo 16, outputs that span many workgroups, empty outputs between
//! non-empty ones, long unaligned rows, and 100,000 outputs; byte for byte against the CPU
//! reference.

#[macro_use]
mod common;

use wgpu_split::{
    ops, reference, DType, GatherMode, GpuSplitter, HostTensor, IntTensor, RouteChoice, SplitPlan,
};

/// The gather alone, in every layout and at two run lengths, and with the device's own runs
/// (spread over its lanes, up to 2,048 units each).
fn variants(gpu: &GpuSplitter) -> Vec<(String, GpuSplitter)> {
    let gather = gpu.clone().with_route(RouteChoice::Gather);
    let mut variants: Vec<(String, GpuSplitter)> = [
        (GatherMode::Runs, 128),
        (GatherMode::Runs, 3),
        (GatherMode::Coalesced, 4),
        (GatherMode::Coalesced, 1),
        (GatherMode::Shifted, 4),
        (GatherMode::Shifted, 1),
        (GatherMode::Tiles, 4),
    ]
    .into_iter()
    .map(|(mode, units)| {
        let variant = gather
            .clone()
            .with_gather_mode(mode)
            .with_max_units_per_lane(units);
        (format!("{} {mode:?} x{units}", common::name(gpu)), variant)
    })
    .collect();
    let runs = gather.with_gather_mode(GatherMode::Runs);
    variants.push((format!("{} runs", common::name(gpu)), runs));
    variants
}

/// A byte pattern that differs at every offset modulo 251.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i % 251) as u8).wrapping_mul(37).wrapping_add(seed))
        .collect()
}

fn check_all(variants: &[(String, GpuSplitter)], plan: &SplitPlan, input: &HostTensor) {
    let want = reference::split_tensor(input, plan).unwrap();
    for (name, gpu) in variants {
        let got = gpu
            .run(plan, input)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        common::assert_same_outputs(&format!("{name}, {plan:?}"), &got, &want);
    }
}

fn every_row_length_at_every_offset(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    // u8 rows of `m` bytes, then an empty output, then `r` bytes (the one under test), then 3:
    // output 2 starts at every residue mod 16 and has every length up to 80 bytes. 300 rows
    // make most outputs span several workgroups.
    for r in 1..=80usize {
        for m in 0..16usize {
            let cols = m + r + 3;
            let shape = [300, cols];
            let input =
                HostTensor::new(DType::U8, shape.to_vec(), pattern(300 * cols, r as u8)).unwrap();
            let lengths = IntTensor::vector(vec![m as i64, 0, r as i64, 3]);
            let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &lengths).unwrap();
            check_all(&variants, &plan, &input);
        }
    }
    // Every output's rows 64 bytes or longer, so a GPU's lanes layout takes them (shifted
    // loads, units across row ends): rows of 64 + m and of r bytes, the second starting at
    // every residue mod 16.
    for r in 64..=80usize {
        for m in 0..16usize {
            let cols = 64 + m + r;
            let shape = [300, cols];
            let input =
                HostTensor::new(DType::U8, shape.to_vec(), pattern(300 * cols, m as u8)).unwrap();
            let lengths = IntTensor::vector(vec![(64 + m) as i64, r as i64]);
            let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &lengths).unwrap();
            check_all(&variants, &plan, &input);
        }
    }
}

fn word_rows_and_long_unaligned_rows(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    // The bench's word_odd and bytes_odd shapes, smaller: 4-byte aligned rows of 1,364 bytes,
    // and rows of 1,365 bytes at odd offsets.
    let input = HostTensor::new(DType::F32, vec![97, 1023], pattern(97 * 1023 * 4, 1)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    check_all(&variants, &plan, &input);
    let input = HostTensor::new(DType::U8, vec![97, 4095], pattern(97 * 4095, 2)).unwrap();
    let lengths = IntTensor::vector(vec![1365, 1365, 1365]);
    let plan = ops::variadic_split(input.shape(), &IntTensor::scalar(1), &lengths).unwrap();
    check_all(&variants, &plan, &input);
    // Rows longer than a block (30,001 bytes at offset 100): a block's units lie in one or two
    // rows, and staged blocks start and end mid-row.
    let input = HostTensor::new(DType::U8, vec![7, 30201], pattern(7 * 30201, 12)).unwrap();
    let lengths = IntTensor::vector(vec![100, 30001, 100]);
    let plan = ops::variadic_split(input.shape(), &IntTensor::scalar(1), &lengths).unwrap();
    check_all(&variants, &plan, &input);
    // Short rows at a stride too long for a tile: lanes fall back to runs.
    let input = HostTensor::new(DType::U8, vec![9, 20000], pattern(9 * 20000, 3)).unwrap();
    let lengths = IntTensor::vector(vec![7, 19990, 3]);
    let plan = ops::variadic_split(input.shape(), &IntTensor::scalar(1), &lengths).unwrap();
    check_all(&variants, &plan, &input);
    // Tiles whose last unit reaches into the next tile's rows: 3-byte rows, 5,000 of them.
    let input = HostTensor::new(DType::U8, vec![5000, 7], pattern(5000 * 7, 4)).unwrap();
    let lengths = IntTensor::vector(vec![3, 4]);
    let plan = ops::variadic_split(input.shape(), &IntTensor::scalar(1), &lengths).unwrap();
    check_all(&variants, &plan, &input);
}

fn aligned_rows_spread_and_taken_in_turn(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    // The spec split (runs of aligned rows alone: `main_runs_vec4`): 3,840-byte rows, spread
    // over the device's lanes, whose runs end mid-row. Then 16 equal outputs of 256-byte rows,
    // taking lanes in turn, each lane's run crossing many rows.
    let input = HostTensor::new(DType::F32, vec![6, 12, 10, 24], pattern(6 * 2880 * 4, 6)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    check_all(&variants, &plan, &input);
    let input = HostTensor::new(DType::F32, vec![300, 1024], pattern(300 * 4096, 7)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 16).unwrap();
    check_all(&variants, &plan, &input);
    // Aligned and unaligned rows in one dispatch (16, 12 and 36 bytes of 64-byte rows): runs
    // take the entry point of every mode, not the vec4 one.
    let input = HostTensor::new(DType::F32, vec![300, 16], pattern(300 * 64, 8)).unwrap();
    let lengths = IntTensor::vector(vec![4, 3, 9]);
    let plan = ops::variadic_split(input.shape(), &IntTensor::scalar(1), &lengths).unwrap();
    check_all(&variants, &plan, &input);
}

fn word_rows_scattered_by_input(gpu: &'static GpuSplitter) {
    // The GPUs' mode scatters short rows of whole words.
    let scatter = [(
        format!("{} Coalesced", common::name(gpu)),
        gpu.clone()
            .with_route(RouteChoice::Gather)
            .with_gather_mode(GatherMode::Coalesced),
    )];
    // f32 rows of every length up to 16 words, cut into a words, an empty output and the
    // rest: outputs at every word offset of the stride, 1,001 rows so every output ends
    // mid-unit, over several workgroups.
    for w in 2..=16usize {
        for a in 1..w {
            let shape = [1001, w];
            let input = HostTensor::new(DType::F32, shape.to_vec(), pattern(1001 * w * 4, a as u8))
                .unwrap();
            let lengths = IntTensor::vector(vec![a as i64, 0, (w - a) as i64]);
            let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &lengths).unwrap();
            check_all(&scatter, &plan, &input);
        }
    }
    // 16 outputs (all a block keeps), f64 and i16 pairs; and a split large enough that each
    // lane takes several steps.
    let input = HostTensor::new(DType::F64, vec![333, 16], pattern(333 * 128, 9)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 16).unwrap();
    check_all(&scatter, &plan, &input);
    let input = HostTensor::new(DType::I16, vec![777, 6], pattern(777 * 12, 10)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    check_all(&scatter, &plan, &input);
    let input = HostTensor::new(DType::F32, vec![600_001, 4], pattern(600_001 * 16, 11)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 4).unwrap();
    check_all(&scatter, &plan, &input);
}

fn one_hundred_thousand_outputs(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    let input = HostTensor::new(DType::U8, vec![100_000, 5], pattern(500_000, 5)).unwrap();
    let plan = ops::split_to_sequence(input.shape(), 0, None, false).unwrap();
    check_all(&variants, &plan, &input);
}

per_backend!(
    every_row_length_at_every_offset,
    word_rows_and_long_unaligned_rows,
    aligned_rows_spread_and_taken_in_turn,
    word_rows_scattered_by_input,
    one_hundred_thousand_outputs,
);
