//! Property sweep: random shapes (zeros included), axes, lengths (0 and -1 included), scalar and
//! 1-D splits, keepdims and every dtype; the GPU result equals the CPU reference byte for byte
//! on every test adapter, and the concat of the same plan takes it back to the input.

#[macro_use]
mod common;

use common::concat::{check_regions, parts as concat_parts};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use wgpu_split::{
    ops, DType, GatherMode, GpuSplitter, HostTensor, IntTensor, Plan, RouteChoice, SplitError,
    SplitOptions, SplitPlan,
};

#[derive(Debug, Clone)]
struct Case {
    shape: Vec<usize>,
    dtype: DType,
    axis_seed: i64,
    op: u8,
    cuts: Vec<u8>,
    minus_one: bool,
    split_scalar: i64,
    seq_form: u8,
    keepdims: bool,
    seed: u8,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(prop_oneof![8 => 1usize..7, 1 => Just(0usize)], 0..6),
        prop::sample::select(DType::ALL_NUMERIC.to_vec()),
        -6i64..6,
        0u8..3,
        prop::collection::vec(any::<u8>(), 1..6),
        any::<bool>(),
        1i64..9,
        0u8..3,
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(
            |(
                shape,
                dtype,
                axis_seed,
                op,
                cuts,
                minus_one,
                split_scalar,
                seq_form,
                keepdims,
                seed,
            )| Case {
                shape,
                dtype,
                axis_seed,
                op,
                cuts,
                minus_one,
                split_scalar,
                seq_form,
                keepdims,
                seed,
            },
        )
}

/// Lengths that tile `len`, from the cut points in `cuts`.
fn partition(len: usize, cuts: &[u8]) -> Vec<i64> {
    let mut points: Vec<usize> = cuts[1..].iter().map(|&c| c as usize % (len + 1)).collect();
    points.push(0);
    points.push(len);
    points.sort_unstable();
    points.windows(2).map(|w| (w[1] - w[0]) as i64).collect()
}

fn plan_for(c: &Case) -> Result<SplitPlan, SplitError> {
    let rank = c.shape.len() as i64;
    // An axis in [-rank, rank-1], or anything when rank is 0 (which must fail).
    let axis = if rank == 0 {
        c.axis_seed
    } else {
        c.axis_seed.rem_euclid(2 * rank) - rank
    };
    let len = if rank == 0 {
        0
    } else {
        c.shape[axis.rem_euclid(rank) as usize]
    };
    match c.op {
        0 => {
            let divisors: Vec<i64> = (1..=len.max(1) as i64)
                .filter(|d| len as i64 % d == 0)
                .collect();
            let n = divisors[c.cuts[0] as usize % divisors.len()];
            ops::split(&c.shape, &IntTensor::scalar(axis), n)
        }
        1 => {
            let mut lengths = partition(len, &c.cuts);
            if c.minus_one {
                let i = c.cuts[0] as usize % lengths.len();
                lengths[i] = -1;
            }
            ops::variadic_split(
                &c.shape,
                &IntTensor::vector(vec![axis]),
                &IntTensor::vector(lengths),
            )
        }
        _ => {
            let split = match c.seq_form {
                0 => None,
                1 => Some(IntTensor::scalar(c.split_scalar)),
                _ => Some(IntTensor::vector(partition(len, &c.cuts))),
            };
            ops::split_to_sequence(&c.shape, axis, split.as_ref(), c.keepdims)
        }
    }
}

/// Runs `test` on `cases` values of `strategy`; a failure names the adapter and the
/// shrunk value.
fn sweep<S: Strategy>(
    gpu: &GpuSplitter,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    let config = ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    if let Err(e) = TestRunner::new(config).run(&strategy, test) {
        panic!("{}: {e}", common::name(gpu));
    }
}

/// One case of the sweep on `gpu`, at the device's run length and at an odd one.
fn gpu_case(gpu: &GpuSplitter, c: Case) -> Result<(), TestCaseError> {
    let name = common::name(gpu);
    let plan = match plan_for(&c) {
        Ok(plan) => plan,
        Err(e) => {
            // Only a scalar input may be refused by these generated inputs.
            prop_assert!(c.shape.is_empty(), "unexpected error {e} for {c:?}");
            prop_assert_eq!(e, SplitError::RankZero);
            return Ok(());
        }
    };
    let n_bytes = c.shape.iter().product::<usize>() * c.dtype.size();
    let bytes: Vec<u8> = (0..n_bytes)
        .map(|i| (i as u8).wrapping_mul(151).wrapping_add(c.seed))
        .collect();
    let input = HostTensor::new(c.dtype, c.shape.clone(), bytes).unwrap();
    let want = plan.reference(&input).unwrap();
    // The outputs tile the axis.
    let along: usize = (0..plan.num_parts())
        .map(|i| match plan.keep_axis() {
            true => plan.part_shape(i)[plan.axis()],
            false => 1,
        })
        .sum();
    prop_assert_eq!(along, plan.axis_len());
    // Every route and gather layout gives the same bytes: the device's defaults, and the
    // gather alone with the device's runs, in runs of an odd length, and in coalesced lanes
    // of 1 and 4 units (the GPUs' schedules: unaligned rows staged, short rows scattered or
    // in tiles).
    let gather = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..gpu.options()
    });
    let base = gather.options();
    let tuned = [
        SplitOptions {
            gather_mode: Some(GatherMode::Cpu),
            max_steps_per_lane: Some(3),
            ..base
        },
        SplitOptions {
            gather_mode: Some(GatherMode::Gpu),
            max_steps_per_lane: Some(1),
            ..base
        },
        SplitOptions {
            gather_mode: Some(GatherMode::Gpu),
            max_steps_per_lane: Some(4),
            ..base
        },
    ];
    let variants: Vec<GpuSplitter> = [gpu.clone(), gather.clone()]
        .into_iter()
        .chain(tuned.map(|o| gather.clone().with_options(o)))
        .collect();
    for gpu in &variants {
        let got = gpu
            .run(&plan, &input)
            .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(g.shape(), w.shape());
            prop_assert!(g.bytes() == w.bytes(), "{}: bytes differ for {:?}", name, c);
        }
        // And back: the concat of the same plan takes the outputs to the input, bit for bit
        // (a split into no outputs has nothing to concatenate, which is refused).
        let concat = plan.inverse();
        if want.is_empty() {
            prop_assert!(gpu.run(&concat, &want).is_err());
            continue;
        }
        let back = gpu
            .run(&concat, &want)
            .map_err(|e| TestCaseError::fail(format!("{name}: concat: {e}")))?;
        prop_assert!(back == input, "{}: concat differs for {:?}", name, c);
    }
    Ok(())
}

fn gpu_equals_cpu_reference(gpu: &'static GpuSplitter) {
    // A case that once failed, replayed first.
    let known = Case {
        shape: vec![1, 1, 2, 5],
        dtype: DType::Bool,
        axis_seed: 2,
        op: 1,
        cuts: vec![0, 145],
        minus_one: false,
        split_scalar: 1,
        seq_form: 0,
        keepdims: false,
        seed: 0,
    };
    if let Err(e) = gpu_case(gpu, known) {
        panic!("{}: {e}", common::name(gpu));
    }
    let cases = common::long_run_cases().unwrap_or(256);
    sweep(gpu, cases, case(), |c| gpu_case(gpu, c));
}

/// Rows of whole KiBs, at most 60 of them: the copy route (row copies) must give the
/// reference's bytes too, on every device.
fn copy_routes_equal_cpu_reference(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let copies = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Copies,
        ..gpu.options()
    });
    let strategy = (
        2usize..12,
        1usize..8,
        1usize..3,
        prop::sample::select(DType::ALL_NUMERIC.to_vec()),
        prop::collection::vec(any::<u8>(), 1..5),
        any::<u8>(),
    );
    sweep(
        gpu,
        64,
        strategy,
        |(outer, axis_len, row_blocks, dtype, cuts, seed)| {
            let inner = row_blocks * 1024 / dtype.size();
            let shape = vec![outer, axis_len, inner];
            let plan = ops::variadic_split(
                &shape,
                &IntTensor::scalar(1),
                &IntTensor::vector(partition(axis_len, &cuts)),
            )
            .unwrap();
            let n_bytes = outer * axis_len * inner * dtype.size();
            let bytes: Vec<u8> = (0..n_bytes)
                .map(|i| (i as u8).wrapping_mul(73).wrapping_add(seed))
                .collect();
            let input = HostTensor::new(dtype, shape.clone(), bytes).unwrap();
            let copy_usage = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let (got, how) = common::encode_and_read(&copies, &plan, &input, copy_usage);
            prop_assert_eq!(how.dispatches, 0, "{}: {:?}", name, shape);
            let same = plan.verify(&input, &got);
            prop_assert!(
                same.is_ok(),
                "{}: {:?} for {:?} {:?}",
                name,
                same,
                shape,
                dtype
            );
            Ok(())
        },
    );
}

/// Long rows of every alignment in every lane mapping: concats of 2 to 6 parts of up to 600
/// elements a row, from one region and from parts spread over 1 to 3 buffers (part `i` in
/// buffer `i % k`, so a dispatch may write every other part: bands, units it shares with
/// parts it does not write), and the split back, each against the reference.
fn long_rows_equal_cpu_reference(gpu: &'static GpuSplitter) {
    let gather = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..gpu.options()
    });
    let mut variants = common::lane_mappings(gpu);
    variants.push((format!("{} own runs", common::name(gpu)), gather));
    variants.push((common::name(gpu), gpu.clone()));
    let strategy = (
        1usize..24,
        prop::collection::vec(1usize..600, 2..7),
        prop::sample::select(vec![DType::U8, DType::F16, DType::F32, DType::F64]),
        1usize..4,
    );
    // An eighth of the main sweep's cases: each of these runs six variants, three times each.
    let cases = common::long_run_cases().map_or(32, |n| (n / 8).max(1));
    sweep(gpu, cases, strategy, |(rows, widths, dtype, k)| {
        let shapes: Vec<[usize; 2]> = widths.iter().map(|&w| [rows, w]).collect();
        let plan = ops::concat(&shapes, 1).unwrap();
        let parts = concat_parts(&plan, dtype);
        let sizes: Vec<u64> = parts.iter().map(|p| p.bytes().len() as u64).collect();
        let place = |i: usize| {
            let before = (i % k..i)
                .step_by(k)
                .map(|j| sizes[j].next_multiple_of(256));
            (i % k, before.sum())
        };
        for (name, gpu) in &variants {
            let whole = common::run_verified(gpu, &plan, &parts)
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
            check_regions(gpu, &plan, &parts, wgpu::BufferUsages::empty(), place);
            let back = common::run_verified(gpu, &plan.inverse(), &whole)
                .map_err(|e| TestCaseError::fail(format!("{name}: split: {e}")))?;
            prop_assert!(back == parts, "{}: split differs", name);
        }
        Ok(())
    });
}

per_backend!(
    gpu_equals_cpu_reference,
    copy_routes_equal_cpu_reference,
    long_rows_equal_cpu_reference
);
