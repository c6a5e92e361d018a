//! The memory trace records the addresses the shaders compute: every output byte is stored by
//! the traced workgroups when all of them are traced, loads stay inside the input, and the
//! copy kernel, traced the same way, is the reference (efficiency 1.0, 4 lines per 512 bytes).

#[macro_use]
mod common;

use std::collections::BTreeSet;
use wgpu_split::trace::analysis::{figures, Access, Kind, MemoryFigures};
use wgpu_split::trace::{gpu_settings, trace_copy_kernel, trace_split, Sampling};
use wgpu_split::{ops, DType, GatherMode, GpuSplitter, IntTensor, RouteChoice};

/// Every workgroup, every access.
const ALL: Sampling = Sampling {
    workgroups: 1 << 12,
    records_per_lane: 256,
};

/// The 16-byte units stored, as byte offsets.
fn stored_units(accesses: &[Access]) -> BTreeSet<u64> {
    accesses
        .iter()
        .filter(|a| a.kind == Kind::Store)
        .inspect(|a| assert_eq!((a.size, a.address % 16), (16, 0)))
        .map(|a| a.address)
        .collect()
}

/// The figures of `accesses` for 32- and 64-lane warps, asserted to be a plain copy's: every
/// sector fully used, 4 lines per 512 bytes, loads and stores.
fn copy_like_figures(accesses: &[Access]) -> Vec<MemoryFigures> {
    let all = [32, 64].map(|warp| figures(accesses, warp));
    for f in &all {
        assert_eq!((f.load_efficiency, f.store_efficiency), (1.0, 1.0), "{f:?}");
        assert_eq!(
            (f.load_lines_per_512, f.store_lines_per_512),
            (4.0, 4.0),
            "{f:?}"
        );
        assert_eq!(f.load_lines_once_per_512, 4.0, "{f:?}");
    }
    all.to_vec()
}

fn the_copy_kernel_is_the_reference(gpu: &'static GpuSplitter) {
    let accesses = trace_copy_kernel(gpu, 1 << 20, Sampling::default()).unwrap();
    for f in copy_like_figures(&accesses) {
        assert_eq!(f.table_bytes_per_512, 0.0);
    }
}

fn traced_stores_cover_every_output_unit_once(gpu: &'static GpuSplitter) {
    // Unaligned u8 rows (shifted or staged lanes), 4-byte rows (tiles) and aligned rows (vec4
    // lanes), in every gather mode.
    let cases = [
        (DType::U8, vec![40, 301], vec![100, 0, 201]),
        (DType::F32, vec![600, 4], vec![1, 1, 2]),
        (DType::F32, vec![8, 512], vec![128, 384]),
    ];
    for (dtype, shape, lengths) in cases {
        let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &IntTensor::vector(lengths))
            .unwrap();
        let layout = gpu.output_layout(&plan, dtype).unwrap();
        let mut want = BTreeSet::new();
        for r in &layout.ranges {
            want.extend((r.offset..r.offset + r.size).step_by(16));
        }
        let input_bytes = (shape.iter().product::<usize>() * dtype.size()) as u64;
        for mode in [GatherMode::Coalesced, GatherMode::Staged, GatherMode::Runs] {
            let traced = gpu_settings(gpu).with_gather_mode(mode);
            let accesses = trace_split(&traced, &plan, dtype, ALL).unwrap();
            assert_eq!(stored_units(&accesses), want, "{shape:?} {mode:?}");
            let stores = accesses.iter().filter(|a| a.kind == Kind::Store).count();
            assert_eq!(
                stores,
                want.len(),
                "{shape:?} {mode:?}: each unit stored once"
            );
            for a in accesses.iter().filter(|a| a.kind == Kind::Load) {
                assert!(a.address + a.size as u64 <= input_bytes.next_multiple_of(16));
            }
        }
    }
}

fn aligned_rows_trace_like_a_copy(gpu: &'static GpuSplitter) {
    // qkv's shape, smaller: rows of 4,096 bytes.
    let plan = ops::split(&[4, 64, 3072], &IntTensor::scalar(-1), 3).unwrap();
    let gpu = gpu.clone().with_route(RouteChoice::Gather);
    let accesses =
        trace_split(&gpu_settings(&gpu), &plan, DType::F32, Sampling::default()).unwrap();
    for f in copy_like_figures(&accesses) {
        assert!(f.table_bytes_per_512 <= 4.0, "{f:?}");
    }
}

fn scattered_word_rows_trace_like_a_copy(gpu: &'static GpuSplitter) {
    let scatter = gpu_settings(&gpu.clone().with_gather_mode(GatherMode::Scatter));
    // Every output word stored once, by a 4-byte store: rows of 8 and 12 bytes with an empty
    // output between, 1,001 rows.
    let plan = ops::variadic_split(
        &[1001, 5],
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![2, 0, 3]),
    )
    .unwrap();
    let layout = scatter.output_layout(&plan, DType::F32).unwrap();
    let mut want = BTreeSet::new();
    for r in &layout.ranges {
        want.extend((r.offset..r.offset + r.size).step_by(4));
    }
    let accesses = trace_split(&scatter, &plan, DType::F32, ALL).unwrap();
    let stores: Vec<&Access> = accesses.iter().filter(|a| a.kind == Kind::Store).collect();
    assert!(stores.iter().all(|a| a.size == 4 && a.address % 4 == 0));
    let stored: BTreeSet<u64> = stores.iter().map(|a| a.address).collect();
    assert_eq!((stored, stores.len()), (want.clone(), want.len()));
    // tiny_runs' 4-byte rows: a copy's figures, loads and stores.
    let plan = ops::split(&[65536, 4], &IntTensor::scalar(1), 4).unwrap();
    let accesses = trace_split(&scatter, &plan, DType::F32, Sampling::default()).unwrap();
    copy_like_figures(&accesses);
}

fn unaligned_rows_load_each_line_once_per_warp(gpu: &'static GpuSplitter) {
    // word_odd's and bytes_odd's rows (1,364 and 1,365 bytes), fewer of them. Each lane loads
    // two aligned units, the second its neighbour's first, so load instructions touch about
    // twice a copy's lines; counted once per warp, the lines are about a copy's. Staged, each
    // unit is loaded once: about a copy's lines per instruction as well.
    let gpu = gpu.clone().with_route(RouteChoice::Gather);
    let staged = gpu_settings(&gpu.clone().with_gather_mode(GatherMode::Staged));
    for (dtype, width) in [(DType::F32, 1023usize), (DType::U8, 4095)] {
        let third = width as i64 / 3;
        let plan = ops::variadic_split(
            &[256, width],
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![third; 3]),
        )
        .unwrap();
        let accesses = trace_split(&gpu_settings(&gpu), &plan, dtype, Sampling::default()).unwrap();
        for warp in [32, 64] {
            let f = figures(&accesses, warp);
            assert_eq!(f.store_lines_per_512, 4.0, "{dtype} {f:?}");
            assert!(f.load_lines_per_512 > 8.0, "{dtype} {f:?}");
            assert!(f.load_lines_once_per_512 <= 6.0, "{dtype} {f:?}");
        }
        let accesses = trace_split(&staged, &plan, dtype, Sampling::default()).unwrap();
        for warp in [32, 64] {
            let f = figures(&accesses, warp);
            assert_eq!(f.store_efficiency, 1.0, "{dtype} {f:?}");
            assert_eq!(f.store_lines_per_512, 4.0, "{dtype} {f:?}");
            assert!(f.load_efficiency >= 0.85, "{dtype} {f:?}");
            assert!(f.load_lines_per_512 <= 6.0, "{dtype} {f:?}");
        }
    }
}

per_backend!(
    the_copy_kernel_is_the_reference,
    traced_stores_cover_every_output_unit_once,
    aligned_rows_trace_like_a_copy,
    unaligned_rows_load_each_line_once_per_warp,
    scattered_word_rows_trace_like_a_copy,
);
