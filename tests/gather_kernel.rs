//! The gather kernel in each of its layouts, on each adapter: runs and channels (CPU
//! adapters), coalesced lanes with aligned or shifted loads, row tiles (GPUs), short word rows
//! scattered by input, and unaligned rows staged in workgroup memory. Every row length from 1
//! to 80 bytes at every offset modulo 16, outputs that span many workgroups, empty outputs
//! between non-empty ones, long unaligned rows, and 100,000 outputs; byte for byte against the
//! CPU reference.

#[macro_use]
mod common;

use wgpu_split::{
    ops, DType, GatherMode, GpuSplitter, HostTensor, IntTensor, RouteChoice, SplitOptions,
    SplitPlan,
};

/// The gather alone, in every layout and at two run lengths, and with the device's own runs
/// (spread over its lanes, up to 468 units each).
fn variants(gpu: &GpuSplitter) -> Vec<(String, GpuSplitter)> {
    let mut variants = common::lane_mappings(gpu);
    let runs = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        gather_mode: Some(GatherMode::Cpu),
        ..gpu.options()
    });
    variants.push((format!("{} runs", common::name(gpu)), runs));
    variants
}

/// A byte pattern that differs at every offset modulo 251.
fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i % 251) as u8).wrapping_mul(37).wrapping_add(seed))
        .collect()
}

/// A `dtype` tensor of `shape` holding `pattern(.., seed)`.
fn patterned(dtype: DType, shape: &[usize], seed: u8) -> HostTensor {
    let bytes = shape.iter().product::<usize>() * dtype.size();
    HostTensor::new(dtype, shape.to_vec(), pattern(bytes, seed)).unwrap()
}

/// [`check_all`] on a patterned `dtype` tensor of `shape` split along axis 1 into `parts`
/// equal outputs.
fn check_parts(
    variants: &[(String, GpuSplitter)],
    dtype: DType,
    shape: &[usize],
    seed: u8,
    parts: i64,
) {
    let input = patterned(dtype, shape, seed);
    let plan = ops::split(shape, &IntTensor::scalar(1), parts).unwrap();
    check_all(variants, &plan, &input);
}

/// [`check_all`] on a patterned `dtype` tensor of `shape` split along axis 1 into `lengths`.
fn check_lengths(
    variants: &[(String, GpuSplitter)],
    dtype: DType,
    shape: &[usize],
    seed: u8,
    lengths: Vec<i64>,
) {
    let input = patterned(dtype, shape, seed);
    let lengths = IntTensor::vector(lengths);
    let plan = ops::variadic_split(shape, &IntTensor::scalar(1), &lengths).unwrap();
    check_all(variants, &plan, &input);
}

fn check_all(variants: &[(String, GpuSplitter)], plan: &SplitPlan, input: &HostTensor) {
    let want = plan.reference(input).unwrap();
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
            let shape = [300, m + r + 3];
            let lengths = vec![m as i64, 0, r as i64, 3];
            check_lengths(&variants, DType::U8, &shape, r as u8, lengths);
        }
    }
    // Every output's rows 64 bytes or longer, so a GPU's lanes take them (staged or shifted,
    // units across row ends): rows of 64 + m and of r bytes, the second starting at every
    // residue mod 16.
    for r in 64..=80usize {
        for m in 0..16usize {
            let shape = [300, 64 + m + r];
            let lengths = vec![(64 + m) as i64, r as i64];
            check_lengths(&variants, DType::U8, &shape, m as u8, lengths);
        }
    }
}

fn word_rows_and_long_unaligned_rows(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    // The bench's word_odd and bytes_odd shapes, smaller: 4-byte aligned rows of 1,364 bytes,
    // and rows of 1,365 bytes at odd offsets.
    check_parts(&variants, DType::F32, &[97, 1023], 1, 3);
    check_lengths(&variants, DType::U8, &[97, 4095], 2, vec![1365; 3]);
    // Rows of 1 to 3 words (4 to 12 bytes, shorter than a unit) at every word offset of the
    // stride, and f64 elements one a row: 1,001 rows, so each output ends mid-unit.
    for w in 1..=3usize {
        for m in 0..4usize {
            let shape = [1001, m + w + 3];
            let lengths = vec![m as i64, w as i64, 3];
            check_lengths(&variants, DType::F32, &shape, (4 * w + m) as u8, lengths);
        }
    }
    check_parts(&variants, DType::F64, &[1001, 3], 5, 3);
    // Rows longer than a block (30,001 bytes at offset 100): a block's units lie in one or two
    // rows, and staged blocks start and end mid-row.
    check_lengths(&variants, DType::U8, &[7, 30201], 12, vec![100, 30001, 100]);
    // Short rows at a stride too long for a tile: lanes fall back to runs.
    check_lengths(&variants, DType::U8, &[9, 20000], 3, vec![7, 19990, 3]);
    // Tiles whose last unit reaches into the next tile's rows: 3-byte rows, 5,000 of them.
    check_lengths(&variants, DType::U8, &[5000, 7], 4, vec![3, 4]);
}

fn aligned_rows_spread_over_the_lanes(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    // The spec split (runs of aligned rows alone: `main_rows` with `VEC4_ONLY` and
    // `LANES_IN_RUNS`): 3,840-byte rows, spread over the device's lanes, whose runs end
    // mid-row. Then 16 equal outputs of 256-byte rows, each lane's run crossing many rows.
    check_parts(&variants, DType::F32, &[6, 12, 10, 24], 6, 3);
    check_parts(&variants, DType::F32, &[300, 1024], 7, 16);
    // Aligned and unaligned rows in one dispatch (16, 12 and 36 bytes of 64-byte rows): runs
    // take the entry point of every mode, not the vec4 one.
    check_lengths(&variants, DType::F32, &[300, 16], 8, vec![4, 3, 9]);
}

fn word_rows_scattered_by_input(gpu: &'static GpuSplitter) {
    // The GPUs' mode scatters short rows of whole words.
    let scatter = [(
        format!("{} Coalesced", common::name(gpu)),
        gpu.clone().with_options(SplitOptions {
            route: RouteChoice::Gather,
            gather_mode: Some(GatherMode::Gpu),
            ..gpu.options()
        }),
    )];
    // f32 rows of every length up to 16 words, cut into a words, an empty output and the
    // rest: outputs at every word offset of the stride, 1,001 rows so every output ends
    // mid-unit, over several workgroups.
    for w in 2..=16usize {
        for a in 1..w {
            let lengths = vec![a as i64, 0, (w - a) as i64];
            check_lengths(&scatter, DType::F32, &[1001, w], a as u8, lengths);
        }
    }
    // 16 outputs (all a block keeps), f64 and i16 pairs; and a split large enough that each
    // lane takes several steps.
    check_parts(&scatter, DType::F64, &[333, 16], 9, 16);
    check_parts(&scatter, DType::I16, &[777, 6], 10, 3);
    check_parts(&scatter, DType::F32, &[600_001, 4], 11, 4);
}

/// Short rows in lanes' longest runs: u8 pixels split into planes, 2 Mi rows. llvmpipe
/// leaves every loop of an invocation after 65,535 turns in all, so the host keeps each
/// lane's steps (and each block's tiles) within that: every byte arrives, in both mappings,
/// at twice the most steps per lane the CPU adapters take.
fn short_rows_in_long_runs(gpu: &'static GpuSplitter) {
    let variants =
        common::gather_mappings(gpu, &[(GatherMode::Cpu, 4096), (GatherMode::Gpu, 4096)]);
    check_lengths(&variants, DType::U8, &[1 << 21, 3], 12, vec![1, 1, 1]);
    check_lengths(&variants, DType::U8, &[1 << 21, 7], 13, vec![3, 4]);
    // Unaligned rows of 17 bytes in runs as long as their loop turns allow (3 a unit: asked
    // for 30,000 units, 17,920 a lane here; at 35,840 a lane, 1 turn a unit as the host's
    // count, llvmpipe drops units), nearly every unit crossing a row end.
    let longest = common::gather_mappings(gpu, &[(GatherMode::Cpu, 30_000)]);
    check_lengths(&longest, DType::U8, &[1 << 20, 35], 14, vec![1, 17, 17]);
}

/// Equal parts of rows of up to 16 bytes, which take the channels where they are 2 to 8
/// parts of 1, 2 or 4 bytes: every row length and
/// every part width that divides it, with row counts around a group of 16 rows (the last
/// group part full, the parts ending mid-unit), in runs of three groups and of many, and in
/// lanes; 5 to 9 parts of 4 bytes; and parts of i16 and f16 elements.
fn equal_parts_of_short_rows(gpu: &'static GpuSplitter) {
    let mappings = [
        (GatherMode::Cpu, 3),
        (GatherMode::Cpu, 2048),
        (GatherMode::Gpu, 4),
    ];
    let variants = common::gather_mappings(gpu, &mappings);
    for stride in 2..=16usize {
        for width in (1..stride).filter(|w| stride % w == 0) {
            for rows in [15, 16, 17, 333] {
                let lengths = vec![width as i64; stride / width];
                check_lengths(&variants, DType::U8, &[rows, stride], stride as u8, lengths);
            }
        }
    }
    for count in 5..=9usize {
        for rows in [3, 4, 5, 333] {
            let lengths = vec![1; count];
            check_lengths(&variants, DType::F32, &[rows, count], count as u8, lengths);
        }
    }
    check_parts(&variants, DType::F16, &[1001, 3], 21, 3);
    check_parts(&variants, DType::I16, &[1001, 5], 22, 5);
}

fn one_hundred_thousand_outputs(gpu: &'static GpuSplitter) {
    let variants = variants(gpu);
    let input = patterned(DType::U8, &[100_000, 5], 5);
    let plan = ops::split_to_sequence(input.shape(), 0, None, false).unwrap();
    check_all(&variants, &plan, &input);
}

per_backend!(
    every_row_length_at_every_offset,
    word_rows_and_long_unaligned_rows,
    aligned_rows_spread_over_the_lanes,
    word_rows_scattered_by_input,
    short_rows_in_long_runs,
    equal_parts_of_short_rows,
    one_hundred_thousand_outputs,
);
