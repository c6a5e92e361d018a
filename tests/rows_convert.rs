//! Rows converted on the way: f32 updates and paged-write sources rounded into f16 and bf16
//! data, f16 and bf16 data gathered into f32, byte for byte against the CPU reference (whose
//! conversions are checked against the `half` crate and numpy's edges in the core). The
//! values hold every edge of the conversions: signed zeros, infinities, NaNs with payloads,
//! overflow to infinity, ties, subnormals of both widths, and random bits.

#[macro_use]
mod common;

use common::Rng;
use wgpu_split::{ops, CacheLayout, DType, GpuSplitter, HostTensor, RowsPlan, SplitError};

/// f32 values: the edges, then random bits.
const F32_EDGES: [u32; 24] = [
    0x0000_0000,
    0x8000_0000,
    0x3f80_0000,
    0xbf80_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0xffc0_0001,
    0x7f80_0001,
    0x7fbf_ffff,
    0x477f_e000,
    0x477f_efff,
    0x477f_f000,
    0x5f80_0000,
    0x3380_0000,
    0x3300_0000,
    0x3300_0001,
    0x33c0_0000,
    0x0000_0001,
    0x3f80_1000,
    0x3f80_3000,
    0x3f80_8000,
    0x3f81_8000,
    0x7f7f_ffff,
];

/// A tensor of `shape` in `dtype`: f32 in runs of 8, every other run values an f16 holds
/// as a normal (and zeros), the others the
/// edges among random bits; anything else random bits (f16 and bf16 random bits hold NaNs,
/// infinities and subnormals of their own).
fn tensor(rng: &mut Rng, dtype: DType, shape: &[usize]) -> HostTensor {
    let n: usize = shape.iter().product();
    let mut bytes = rng.bytes(n * dtype.size());
    if dtype == DType::F32 {
        for (k, chunk) in bytes.chunks_exact_mut(4).enumerate() {
            let bits = u32::from_le_bytes(chunk.try_into().unwrap());
            let value = match ((k / 8) % 2, k % 3) {
                (0, 0) => bits & 0x8000_0000,
                // A tie: the bits a half drops exactly half its last place.
                (0, 1) => (bits & 0x807f_e000) | 0x1000 | ((113 + (bits >> 23) % 30) << 23),
                (0, _) => (bits & 0x807f_ffff) | ((113 + (bits >> 23) % 30) << 23),
                (_, 0) => F32_EDGES[(k / 3) % F32_EDGES.len()],
                _ => bits,
            };
            chunk.copy_from_slice(&value.to_le_bytes());
        }
    }
    HostTensor::new(dtype, shape.to_vec(), bytes).unwrap()
}

/// Ids of `count` rows of `len`, one out of range, one negative.
fn ids(rng: &mut Rng, count: usize, len: usize) -> HostTensor {
    let mut v: Vec<i64> = (0..count).map(|_| rng.below(len as u64) as i64).collect();
    if count > 2 {
        v[1] = len as i64 + 3;
        v[2] = -1;
    }
    HostTensor::from_slice(&[count], &v).unwrap()
}

fn same(gpu: &GpuSplitter, plan: &RowsPlan, tensors: &[HostTensor], what: &str) {
    let want = plan.reference(tensors).unwrap();
    let got = gpu
        .run(plan, tensors)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.0.dtype(), want.0.dtype(), "{what}");
    let (g, w) = (got.0.bytes(), want.0.bytes());
    if let Some(i) = (0..w.len()).find(|&i| g[i] != w[i]) {
        panic!("{what}: byte {i} of {} differs", w.len());
    }
    assert_eq!(got.1, want.1, "{what}");
}

/// f16 and bf16 data gathered into f32: rows of whole vec4s, of single elements (ONNX
/// Gather on a last axis), of odd widths; get rows and gather, in each lane mapping.
fn gathers_widen(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0xc0_47e7);
    let mappings = common::lane_mappings(gpu);
    let mut case = 0;
    for data in [DType::F16, DType::BF16] {
        for (shape, count, axis) in [
            (vec![64, 24], 9, 0),
            (vec![33, 5], 7, 0),
            (vec![16, 64], 16, 1),
            (vec![3, 40, 3], 5, 1),
        ] {
            let plan = ops::gather(&shape, &[count], axis).unwrap();
            let plan = plan.with_rows_dtype(DType::F32);
            let tensors = [
                tensor(&mut rng, data, &shape),
                ids(&mut rng, count, shape[axis as usize]),
            ];
            let (_, mapped) = &mappings[case % mappings.len()];
            same(
                mapped,
                &plan,
                &tensors,
                &format!("gather {data} {shape:?} axis {axis}"),
            );
            case += 1;
        }
        let plan = ops::get_rows(&[100, 36], &[11])
            .unwrap()
            .with_rows_dtype(DType::F32);
        let tensors = [tensor(&mut rng, data, &[100, 36]), ids(&mut rng, 11, 100)];
        same(gpu, &plan, &tensors, &format!("get rows {data}"));
    }
}

/// f32 updates rounded into f16 and bf16 data: rows of whole vec4s (a vec4 a chunk), of odd
/// widths (words shared by two rows), set rows and ScatterND.
fn scatters_narrow(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0x5e7_0f16);
    for data in [DType::F16, DType::BF16] {
        for (rows, width, count) in [(64, 32, 9), (50, 3, 13), (20, 1, 8), (4096, 8, 5)] {
            let plan = ops::set_rows(&[rows, width], &[count]).unwrap();
            let plan = plan.with_rows_dtype(DType::F32);
            let tensors = [
                tensor(&mut rng, data, &[rows, width]),
                ids(&mut rng, count, rows),
                tensor(&mut rng, DType::F32, &[count, width]),
            ];
            let what = format!("set rows {data} [{rows}, {width}]");
            same(gpu, &plan, &tensors, &what);
        }
        let plan = ops::scatter_nd(&[30, 6], &[4, 1], &[4, 6]).unwrap();
        let plan = plan.with_rows_dtype(DType::F32);
        let slots = HostTensor::from_slice(&[4, 1], &[-1i64, 3, 30, 7]).unwrap();
        let tensors = [
            tensor(&mut rng, data, &[30, 6]),
            slots,
            tensor(&mut rng, DType::F32, &[4, 6]),
        ];
        same(gpu, &plan, &tensors, &format!("ScatterND {data}"));
    }
}

/// A paged write of f32 activations into f16 and bf16 caches: the fused projection (its
/// queries left in place) and keys and values of their own, each layout. A fused plan whose
/// queries go out is refused, naming the rule.
fn paged_writes_narrow(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0x9a9e_df16);
    for cache in [DType::F16, DType::BF16] {
        for layout in [CacheLayout::Nhd, CacheLayout::Hnd] {
            let fused = ops::paged_kv_write(6, 4, 2, 12, 4, 5, layout).unwrap();
            for plan in [
                fused.without_queries(),
                fused.with_separate_kv(30, 24).unwrap(),
            ] {
                let plan = plan.with_rows_dtype(DType::F32);
                let mut tensors: Vec<HostTensor> = (plan.source_shapes().iter())
                    .map(|shape| tensor(&mut rng, DType::F32, shape))
                    .collect();
                let slots = HostTensor::from_slice(&[6], &[3i32, -1, 19, 20, 0, 7]).unwrap();
                tensors.push(slots);
                tensors.push(tensor(&mut rng, cache, &plan.cache_shape()));
                tensors.push(tensor(&mut rng, cache, &plan.cache_shape()));
                if !plan.writes_queries() && plan.source_shapes().len() == 1 {
                    let out = fused.with_rows_dtype(DType::F32);
                    let refused = gpu.run(&out, &tensors).unwrap_err();
                    assert!(
                        matches!(refused, SplitError::ConflictingInputs(ref m) if m.contains("without_queries")),
                        "{refused}"
                    );
                }
                let want = plan.reference(&tensors).unwrap();
                let got = gpu.run(&plan, &tensors).unwrap();
                assert_eq!(got, want, "{cache} {layout:?} {plan:?}");
            }
        }
    }
}

/// Pairs it does not convert are refused, naming them: f32 into i32, f16 into bf16, and
/// updates of a dtype other than the plan's.
fn other_pairs_are_refused(gpu: &'static GpuSplitter) {
    let mut rng = Rng(3);
    let plan = ops::get_rows(&[8, 4], &[2])
        .unwrap()
        .with_rows_dtype(DType::F32);
    for data in [DType::I32, DType::BF16] {
        let data = if data == DType::BF16 {
            DType::U16
        } else {
            data
        };
        let tensors = [tensor(&mut rng, data, &[8, 4]), ids(&mut rng, 2, 8)];
        let e = gpu.run(&plan, &tensors).unwrap_err();
        assert!(
            matches!(e, SplitError::DataMismatch(ref m) if m.contains("the conversions are")),
            "{e}"
        );
    }
    let plan = ops::set_rows(&[8, 4], &[2])
        .unwrap()
        .with_rows_dtype(DType::F32);
    let tensors = [
        tensor(&mut rng, DType::F16, &[8, 4]),
        ids(&mut rng, 2, 8),
        tensor(&mut rng, DType::F16, &[2, 4]),
    ];
    let e = gpu.run(&plan, &tensors).unwrap_err();
    assert!(
        matches!(e, SplitError::DataMismatch(ref m) if m.contains("the plan's updates are f32")),
        "{e}"
    );
}

per_backend!(
    gathers_widen,
    scatters_narrow,
    paged_writes_narrow,
    other_pairs_are_refused
);
