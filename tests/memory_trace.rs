//! The memory trace records the addresses the shaders compute: every output byte is stored by
//! the traced workgroups when all of them are traced, loads stay inside the input, and the
//! copy kernel, traced the same way, is the reference (efficiency 1.0, 4 lines per 512 bytes).

#[macro_use]
mod common;

use std::collections::BTreeSet;
use wgpu_split::ops::Attention;
use wgpu_split::trace::analysis::{figures, Access, Kind, MemoryFigures};
use wgpu_split::trace::{
    gpu_settings, trace_concat, trace_copy_kernel, trace_split, trace_views, Sampling,
};
use wgpu_split::{
    ops, DType, GatherMode, GpuSplitter, IntTensor, PartView, RouteChoice, SplitOptions,
};

/// Every workgroup, every access.
const ALL: Sampling = Sampling {
    workgroups: 1 << 12,
    records_per_lane: 256,
};

/// The words stored, as byte offsets, and how many stores wrote them: units of 16 bytes, or
/// single words (the scatter layout), each aligned to its size.
fn stored_words(accesses: &[Access]) -> (BTreeSet<u64>, usize) {
    let mut words = BTreeSet::new();
    let mut stored = 0;
    for a in accesses.iter().filter(|a| a.kind == Kind::Store) {
        assert!(
            matches!(a.size, 4 | 16) && a.address % a.size as u64 == 0,
            "{a:?}"
        );
        words.extend((a.address..a.address + a.size as u64).step_by(4));
        stored += a.size as usize / 4;
    }
    (words, stored)
}

/// The figures of `accesses` for 32- and 64-lane warps, asserted to be a plain copy's: every
/// sector fully used, 4 lines per 512 bytes, loads and stores, nothing staged in workgroup
/// memory.
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

fn traced_stores_cover_every_output_word_once(gpu: &'static GpuSplitter) {
    // Unaligned u8 rows (shifted lanes), word rows of 4 to 12 bytes (channels, runs), u8 rows of 3
    // and 4 bytes (runs) and aligned rows (vec4 lanes), in every gather
    // mode, with empty outputs between others.
    let cases = [
        (DType::U8, vec![40, 301], vec![100, 0, 201]),
        (DType::F32, vec![600, 4], vec![1, 1, 2]),
        (DType::F32, vec![1001, 5], vec![2, 0, 3]),
        (DType::U8, vec![600, 7], vec![3, 4]),
        (DType::F32, vec![8, 512], vec![128, 384]),
    ];
    for (dtype, shape, lengths) in cases {
        let plan = ops::variadic_split(&shape, &IntTensor::scalar(1), &IntTensor::vector(lengths))
            .unwrap();
        // Every word of every output, and at most the rest of its last unit (which a unit
        // store pads with zeros).
        let layout = gpu.layout(&plan, dtype).unwrap();
        let (mut least, mut most) = (BTreeSet::new(), BTreeSet::new());
        for r in &layout.ranges {
            least.extend((r.offset..r.offset + r.size).step_by(4));
            most.extend((r.offset..r.offset + r.size.next_multiple_of(16)).step_by(4));
        }
        let input_bytes = (shape.iter().product::<usize>() * dtype.size()) as u64;
        let modes = [GatherMode::Gpu, GatherMode::Cpu];
        for mode in modes {
            let settings = gpu_settings(gpu);
            let traced = settings.clone().with_options(SplitOptions {
                gather_mode: Some(mode),
                ..settings.options()
            });
            let accesses = trace_split(&traced, &plan, dtype, ALL).unwrap();
            let (words, stored) = stored_words(&accesses);
            assert!(
                words.is_superset(&least) && words.is_subset(&most),
                "{shape:?} {mode:?}"
            );
            assert_eq!(
                stored,
                words.len(),
                "{shape:?} {mode:?}: each word stored once"
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
    let gpu = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..gpu.options()
    });
    let accesses =
        trace_split(&gpu_settings(&gpu), &plan, DType::F32, Sampling::default()).unwrap();
    // Each warp reads the header, the search's entries and its block's entry (44 bytes, its
    // binding among them): 17.6 bytes per 512 it stores.
    for f in copy_like_figures(&accesses) {
        assert!(f.table_bytes_per_512 <= 18.0, "{f:?}");
    }
}

fn narrow_parts_bring_in_a_copys_lines(gpu: &'static GpuSplitter) {
    // RGB planes: the channels, consecutive lanes taking consecutive groups of 16 pixels (48
    // bytes). A warp brings in a copy's lines, each once, and stores consecutive units; each
    // of its loads touches half of each sector (lanes 48 bytes apart, 16 bytes each), the
    // group's other loads the rest. (tiny_runs' channels, a unit of each of 4 parts a group,
    // take the same path; SwiftShader ran out of memory compiling their trace build when
    // groups were 16 rows.)
    let plan = ops::split(&[65536, 3], &IntTensor::scalar(1), 3).unwrap();
    let accesses = trace_split(&gpu_settings(gpu), &plan, DType::U8, Sampling::default()).unwrap();
    for warp in [32, 64] {
        let f = figures(&accesses, warp);
        assert_eq!(f.load_lines_once_per_512, 4.0, "{f:?}");
        assert_eq!((f.load_efficiency, f.store_efficiency), (0.5, 1.0), "{f:?}");
        // Each warp reads the header and the three parts' entries: 16.3 bytes per 512.
        assert!(f.table_bytes_per_512 <= 17.0, "{f:?}");
    }
}

fn unaligned_rows_load_about_a_copys_lines(gpu: &'static GpuSplitter) {
    // word_odd's and bytes_odd's rows (1,364 and 1,365 bytes), fewer of them. Shifted lanes:
    // each unit takes the two aligned vec4s its bytes span, so a warp's two loads read each
    // source line about twice between them, but a copy's lines once per warp, and no
    // workgroup memory.
    let gpu = gpu.clone().with_options(SplitOptions {
        route: RouteChoice::Gather,
        ..gpu.options()
    });
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
            assert_eq!(f.store_efficiency, 1.0, "{dtype} {f:?}");
            assert_eq!(f.store_lines_per_512, 4.0, "{dtype} {f:?}");
            assert!(f.load_efficiency >= 0.85, "{dtype} {f:?}");
            assert!(f.load_lines_once_per_512 <= 6.0, "{dtype} {f:?}");
            assert!(f.load_lines_per_512 <= 12.0, "{dtype} {f:?}");
        }
    }
}

fn concats_trace_like_a_copy(gpu: &'static GpuSplitter) {
    // The bench's concat cases of aligned parts, smaller: they take the split's vec4 lanes, so
    // each output word stored once, a copy's figures, and within 17 table bytes per 512
    // stored: each warp reads the header, searches the entries and reads its block's (the
    // same words for every lane of the block), 84 per 512 where each part is one block of
    // 4 KiB, as in the last case. The join's runs (parts at
    // odd offsets) are not traced here: their figures pick nothing (the H200 ran them faster
    // than forms that traced like a copy), SwiftShader's compiler runs out of memory on their
    // trace build, and tests/concat.rs checks their every byte and the bytes around them.
    let gpu = gpu_settings(gpu);
    let many: Vec<[usize; 2]> = vec![[1, 2048]; 64];
    let cases = [
        (
            ops::concat(&[[1, 4, 255, 128], [1, 4, 1, 128]], 2),
            DType::F16,
        ),
        (ops::concat(&[[1, 16, 32, 32]; 4], 1), DType::F32),
        (ops::concat(&many, 0), DType::F32),
        (ops::concat(&[[16, 64]; 64], 1), DType::F32),
    ];
    for (plan, dtype) in cases {
        let plan = plan.unwrap();
        let accesses = trace_concat(&gpu, &plan, dtype, ALL).unwrap();
        let (words, stored) = stored_words(&accesses);
        let output_words = plan.whole_shape().iter().product::<usize>() * dtype.size() / 4;
        assert_eq!(words.len(), output_words, "{plan:?}");
        assert_eq!(stored, output_words, "{plan:?}: each word stored once");
        for f in copy_like_figures(&accesses) {
            // Parts of one block (4 KiB, the last case): 92.
            let most = if plan.num_parts() == 64 && dtype == DType::F32 {
                92.0
            } else {
                18.5
            };
            assert!(f.table_bytes_per_512 <= most, "{plan:?} {f:?}");
        }
    }
}

/// The words of elements of `shape` through `view`, `es` bytes each.
fn viewed_words(shape: &[usize], view: &PartView, es: u64) -> BTreeSet<u64> {
    let mut words = BTreeSet::new();
    let mut index = vec![0; shape.len()];
    for _ in 0..shape.iter().product::<usize>() {
        let element: u64 = view.offset
            + index
                .iter()
                .zip(&view.strides)
                .map(|(&i, &s)| i as u64 * s)
                .sum::<u64>();
        words.insert(element * es / 4 * 4);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
    words
}

fn attention_views_trace_like_a_copy(gpu: &'static GpuSplitter) {
    // Q, K and V heads written through views (K and V into caches at 32), and 32 heads read
    // back through the merge's view, as a GPU runs them: each viewed word stored once, a
    // copy's figures, loads and stores, and at most 17 table bytes per 512 stored (each warp
    // reads the header, the search's entries and its block's entry).
    let gpu = gpu_settings(gpu);
    let layer = Attention {
        batch: 1,
        seq: 64,
        q_heads: 4,
        kv_heads: 2,
        head_dim: 128,
    };
    let (plan, views) = layer.split_qkv(128, 32).unwrap();
    let sizes = [4 * 64 * 128 * 2, 2 * 128 * 128 * 2, 2 * 128 * 128 * 2];
    let heads = Attention {
        seq: 16,
        q_heads: 32,
        kv_heads: 32,
        ..layer
    };
    let (merge, [merged]) = heads.merge_heads().unwrap();
    let cases = [
        (plan, views.to_vec(), sizes.to_vec(), false),
        (merge.inverse(), vec![merged], vec![32 * 16 * 128 * 2], true),
    ];
    for (plan, views, sizes, concat) in cases {
        let accesses = trace_views(&gpu, &plan, DType::F16, &views, &sizes, concat, ALL).unwrap();
        let (words, stored) = stored_words(&accesses);
        // The parts' buffers each start at address 0: their words are traced together.
        let want: usize = (0..plan.num_parts())
            .map(|k| plan.part_shape(k).iter().product::<usize>() / 2)
            .sum();
        assert_eq!(stored, want, "concat {concat}: each word stored once");
        let mut viewed = BTreeSet::new();
        for (k, view) in views.iter().enumerate() {
            match concat {
                true => viewed.extend((0..want as u64).map(|w| 4 * w)),
                false => viewed.extend(viewed_words(&plan.part_shape(k), view, 2)),
            }
        }
        assert_eq!(words, viewed, "concat {concat}");
        for f in copy_like_figures(&accesses) {
            // The merge's heads are 4 KiB each, a block's: 42 per 512.
            let most = if concat { 42.0 } else { 18.0 };
            assert!(f.table_bytes_per_512 <= most, "concat {concat}: {f:?}");
        }
    }
}

per_backend!(
    attention_views_trace_like_a_copy,
    concats_trace_like_a_copy,
    the_copy_kernel_is_the_reference,
    traced_stores_cover_every_output_word_once,
    aligned_rows_trace_like_a_copy,
    unaligned_rows_load_about_a_copys_lines,
    narrow_parts_bring_in_a_copys_lines,
);
