//! Rows placed by indices on the device (ONNX Gather, get rows, ScatterND, set rows): every
//! width, both index types and every rule of an index, byte for byte against the CPU
//! reference, in each lane mapping; the status of the indices out of range; guard bytes
//! around the output; regions that do not fit refused. The random sweeps run 48 cases each;
//! `WGPU_SPLIT_GPU_CASES` runs them long.

#[macro_use]
mod common;

use common::Rng;
use wgpu_split::{
    ops, BufferRegion, DType, GpuSplitter, HostTensor, Plan, RowsBuffers, RowsPlan, RowsStatus,
    SplitError,
};

/// Indices of every kind for an axis of `len` rows: in range, the last, negatives from -1
/// to -len and past it, the capacity and one past it, the extremes of i32, and (as i64)
/// 2^32 + k, which must not land on row k, and a large negative; as `ty` (i32, i64 or u32)
/// takes each (a u32 takes a negative's bits: -1 is 2^32 - 1, out of range).
fn indices(rng: &mut Rng, count: usize, len: usize, ty: DType) -> Vec<i64> {
    let len = len as i64;
    let special = [
        len,
        len + 1,
        -1,
        -len,
        -len - 1,
        i32::MIN as i64,
        i32::MAX as i64,
        u32::MAX as i64,
        (1i64 << 32) + 1,
        i64::MIN,
    ];
    (0..count)
        .map(|_| match rng.below(4) {
            0 => special[rng.below(special.len() as u64) as usize],
            _ => rng.below(len.max(1) as u64) as i64,
        })
        // i32 indices take the i32 value of each (2^32 + 1 is then 1, in range).
        .map(|v| match ty {
            DType::I64 => v,
            DType::I32 => v as i32 as i64,
            _ => v as u32 as i64,
        })
        .collect()
}

fn index_tensor(shape: &[usize], values: &[i64], ty: DType) -> HostTensor {
    match ty {
        DType::I64 => HostTensor::from_slice(shape, values).unwrap(),
        DType::I32 => {
            let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
            HostTensor::from_slice(shape, &narrow).unwrap()
        }
        _ => {
            let unsigned: Vec<u32> = values.iter().map(|&v| v as u32).collect();
            HostTensor::from_slice(shape, &unsigned).unwrap()
        }
    }
}

/// The index types, by case.
const INDEX_TYPES: [DType; 3] = [DType::I32, DType::I64, DType::U32];

/// Runs `plan` on `gpu` and checks output and status against the reference.
fn check(gpu: &GpuSplitter, plan: &RowsPlan, data: &HostTensor, ids: &HostTensor, what: &str) {
    let (want, want_status) = plan.reference(&[data.clone(), ids.clone()]).unwrap();
    let (got, status) = gpu
        .run(plan, &[data.clone(), ids.clone()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(got.shape(), want.shape(), "{what}");
    if let Some(i) = (0..want.bytes().len()).find(|&i| got.bytes()[i] != want.bytes()[i]) {
        panic!("{what}: byte {i} of {} differs", want.bytes().len());
    }
    assert_eq!(status, want_status, "{what}");
}

/// Random plans: ranks 1 to 4, every axis, rows of 1 byte up (every dtype width), indices of
/// rank 0 to 2, i32 and i64, each rule of a negative index; in each lane mapping.
fn gathers_match_the_reference(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let dtypes = [
        DType::U8,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::Complex128,
    ];
    let mappings = common::lane_mappings(gpu);
    for case in 0..common::long_run_cases().unwrap_or(48) as usize {
        let rank = 1 + rng.below(4) as usize;
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(9) as usize).collect();
        let axis = rng.below(rank as u64) as usize;
        let ids_rank = rng.below(3) as usize;
        let ids_shape: Vec<usize> = (0..ids_rank).map(|_| 1 + rng.below(7) as usize).collect();
        let dtype = dtypes[case % dtypes.len()];
        let ty = INDEX_TYPES[(case / 3) % 3];
        let plan = match case % 3 {
            0 if axis == 0 => ops::get_rows(&shape, &ids_shape).unwrap(),
            _ => ops::gather(
                &shape,
                &ids_shape,
                axis as i64 - rank as i64 * (case as i64 % 2),
            )
            .unwrap(),
        };
        let n = shape.iter().product::<usize>() * dtype.size();
        let data = HostTensor::new(dtype, shape.clone(), rng.bytes(n)).unwrap();
        let values = indices(&mut rng, plan.index_count(), shape[axis], ty);
        let ids = index_tensor(&ids_shape, &values, ty);
        let (_, mapped) = &mappings[case % mappings.len()];
        let what =
            format!("case {case}: {dtype} {shape:?} axis {axis} by {ty} {ids_shape:?} {values:?}");
        check(mapped, &plan, &data, &ids, &what);
    }
}

/// Gathers of elements (rows of 1, 2, 4 and 8 bytes, whose blocks' rows are whole units:
/// `shaders/split_gather_indexed.wgsl`'s `gather_elements`) on the last axis and on a middle
/// one, in each lane mapping: blocks of one unit and of several, runs that start and end
/// mid-block, indices all in range (one unit from each index's row) and with some out of
/// range or negative in a few units (those written again, zeros and counted), i32 and i64;
/// and counts one element short of whole units (the general gather beside them).
fn element_gathers_match_the_reference(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0xe1e_3e47);
    let mappings = common::lane_mappings(gpu);
    let dtypes = [DType::U8, DType::F16, DType::F32, DType::F64];
    for (case, dtype) in (0..32).map(|c| (c, dtypes[c % dtypes.len()])) {
        let per = 16 / dtype.size();
        // Whole units of rows a block, or one short of them.
        let units = 1 + rng.below(5) as usize;
        let count = units * per - usize::from(case % 8 == 7);
        let len = 1 + rng.below(300) as usize;
        let blocks = 1 + rng.below(40) as usize;
        let (shape, ids_shape, axis) = match case % 3 {
            0 => (vec![blocks, len], vec![count], -1),
            1 => (vec![2, blocks, len], vec![count], 2),
            _ if count == units * per => (vec![blocks, len], vec![units, per], 1),
            _ => (vec![blocks, len], vec![count], 1),
        };
        let plan = ops::gather(&shape, &ids_shape, axis).unwrap();
        let n = shape.iter().product::<usize>() * dtype.size();
        let data = HostTensor::new(dtype, shape.clone(), rng.bytes(n)).unwrap();
        let ty = INDEX_TYPES[(case / 4) % 3];
        let values: Vec<i64> = match case % 4 {
            // Out of range, negative from the end, and past 2^32 among the rows.
            0 => indices(&mut rng, plan.index_count(), len, ty),
            _ => (0..plan.index_count())
                .map(|_| rng.below(len as u64) as i64)
                .collect(),
        };
        let ids = index_tensor(&ids_shape, &values, ty);
        let (_, mapped) = &mappings[case % mappings.len()];
        let what = format!("case {case}: {dtype} {shape:?} axis {axis} by {ids_shape:?}");
        check(mapped, &plan, &data, &ids, &what);
    }
}

/// The shapes of an engine: an embedding's rows (f16, 4096 wide) by i32 ids; ONNX Gather on
/// the last axis of u8 (rows of one byte); a 1-D gather; a block of a bigger tensor.
fn engine_shapes_match_the_reference(gpu: &'static GpuSplitter) {
    let mut rng = Rng(7);
    let cases: [(&[usize], &[usize], i64, DType); 4] = [
        (&[300, 4096], &[65], 0, DType::F16),
        (&[37, 50], &[3, 11], -1, DType::U8),
        (&[1000], &[257], 0, DType::I64),
        (&[6, 129, 5], &[2, 2], 1, DType::BF16),
    ];
    for (shape, ids_shape, axis, dtype) in cases {
        let plan = ops::gather(shape, ids_shape, axis).unwrap();
        let n = shape.iter().product::<usize>() * dtype.size();
        let data = HostTensor::new(dtype, shape.to_vec(), rng.bytes(n)).unwrap();
        let len = shape[plan.axis()];
        for ty in INDEX_TYPES {
            let values = indices(&mut rng, plan.index_count(), len, ty);
            let ids = index_tensor(ids_shape, &values, ty);
            check(
                gpu,
                &plan,
                &data,
                &ids,
                &format!("{shape:?} by {ids_shape:?} {ty}"),
            );
        }
    }
}

/// i32, i64 and u32 indices of the same values give the same bytes; an i64 of 2^32 + k
/// lands nowhere, the i32 of it (k) on row k; a u32 is never negative.
fn i32_and_i64_indices_agree(gpu: &'static GpuSplitter) {
    let data = HostTensor::from_slice(&[4, 3], &(0..12u8).collect::<Vec<_>>()).unwrap();
    let plan = ops::get_rows(&[4, 3], &[4]).unwrap();
    let narrow = HostTensor::from_slice(&[4], &[3i32, 0, 2, 1]).unwrap();
    let wide = HostTensor::from_slice(&[4], &[3i64, 0, 2, 1]).unwrap();
    let e = gpu.run(&plan, std::slice::from_ref(&data)).unwrap_err();
    assert!(
        matches!(e, SplitError::DataMismatch(ref m) if m.contains("a gather takes [data, indices]")),
        "{e}"
    );
    let a = gpu.run(&plan, &[data.clone(), narrow.clone()]).unwrap();
    let b = gpu.run(&plan, &[data.clone(), wide.clone()]).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.0.bytes(), &[9, 10, 11, 0, 1, 2, 6, 7, 8, 3, 4, 5]);
    let far = HostTensor::from_slice(&[4], &[(1i64 << 32) + 1, 1, -1, 4]).unwrap();
    let (rows, status) = gpu.run(&plan, &[data.clone(), far.clone()]).unwrap();
    assert_eq!(rows.bytes(), &[0, 0, 0, 3, 4, 5, 0, 0, 0, 0, 0, 0]);
    let want = RowsStatus {
        bad_indices: 3,
        first_bad: Some(0),
    };
    assert_eq!(status, want);
    // u32 ids: never negative. The same rows as i32's in range; 2^31 (an i32's minimum) and
    // 2^32 - 1 (an i32's -1, the last row from the end) are out of range.
    let unsigned = HostTensor::from_slice(&[4], &[3u32, 0, 2, 1]).unwrap();
    assert_eq!(gpu.run(&plan, &[data.clone(), unsigned]).unwrap(), a);
    // ONNX Gather counts an i32's -1 from the end; a u32's 2^32 - 1 is still out of range.
    let onnx = ops::gather(&[4, 3], &[4], 0).unwrap();
    let far = HostTensor::from_slice(&[4], &[1u32 << 31, 1, u32::MAX, 3]).unwrap();
    let (rows, status) = gpu.run(&onnx, &[data.clone(), far]).unwrap();
    assert_eq!(rows.bytes(), &[0, 0, 0, 3, 4, 5, 0, 0, 0, 9, 10, 11]);
    let want = RowsStatus {
        bad_indices: 2,
        first_bad: Some(0),
    };
    assert_eq!(status, want);
}

/// Rows prepared into a region inside a bigger buffer write the output's bytes alone: the
/// guard bytes before and after it, and past its last partial word, keep their values; the
/// status lands where the caller keeps it.
fn prepared_rows_keep_guard_bytes(gpu: &'static GpuSplitter) {
    use wgpu::util::DeviceExt;
    use wgpu::BufferUsages as U;
    let device = gpu.device();
    let align = device.limits().min_storage_buffer_offset_alignment as u64;
    let data = HostTensor::from_slice(&[5, 7], &(0..35u8).collect::<Vec<_>>()).unwrap();
    let plan = ops::gather(&[5, 7], &[3], 0).unwrap();
    let ids = [4i32, -2, 9];
    let out_bytes = 21u64;
    let guard = 0xa5u8;
    let size = 3 * align;
    let make = |bytes: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytes,
            usage,
        })
    };
    let data_buf = make(data.bytes(), U::STORAGE);
    let id_buf = make(bytemuck::cast_slice(&ids), U::STORAGE);
    let out = make(&vec![guard; size as usize], U::STORAGE | U::COPY_SRC);
    let status_at = 2 * align;
    let mut zeros = vec![guard; size as usize];
    zeros[status_at as usize..status_at as usize + 8].fill(0);
    let out2 = make(&zeros, U::STORAGE | U::COPY_SRC);
    let from = RowsBuffers {
        source: BufferRegion::from(&data_buf),
        indices: BufferRegion::from(&id_buf),
        index_type: DType::I32,
        status: Some(BufferRegion {
            buffer: &out2,
            offset: status_at,
        }),
    };
    let target = BufferRegion {
        buffer: &out,
        offset: align,
    };
    let mut encoder = device.create_command_encoder(&Default::default());
    let node = gpu.prepare(&plan, DType::U8, from, target).unwrap();
    node.encode(&mut encoder).unwrap();
    gpu.queue().submit([encoder.finish()]);
    let read = |b: &wgpu::Buffer| {
        common::submit_and_read(gpu, device.create_command_encoder(&Default::default()), b)
    };
    let got = read(&out);
    let at = align as usize;
    let want: Vec<u8> = (28..35).chain(21..28).chain([0; 7]).collect();
    assert_eq!(&got[at..at + out_bytes as usize], &want[..]);
    assert!(got[..at].iter().all(|&b| b == guard), "before the output");
    assert!(
        got[at + out_bytes as usize..].iter().all(|&b| b == guard),
        "after the output"
    );
    let status = read(&out2);
    let s = status_at as usize;
    let want = RowsStatus {
        bad_indices: 1,
        first_bad: Some(2),
    };
    assert_eq!(RowsStatus::from_bytes(&status[s..s + 8]), Some(want));
    assert!(status[..s]
        .iter()
        .chain(&status[s + 8..])
        .all(|&b| b == guard));
}

/// Regions that do not fit are refused before anything is recorded, naming the rule.
fn bad_regions_are_refused(gpu: &'static GpuSplitter) {
    use wgpu::BufferUsages as U;
    let device = gpu.device();
    let buffer = |size| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: U::STORAGE,
            mapped_at_creation: false,
        })
    };
    let (data, ids, out) = (buffer(64), buffer(16), buffer(64));
    let plan = ops::get_rows(&[4, 16], &[4]).unwrap();
    // What each region needs, as the plan says: these buffers hold exactly that.
    assert_eq!(plan.bytes(DType::U8, DType::I32).unwrap(), [64, 16, 64]);
    assert_eq!(plan.bytes(DType::U8, DType::I64).unwrap(), [64, 32, 64]);
    let region = BufferRegion::from;
    let base = RowsBuffers {
        source: region(&data),
        indices: region(&ids),
        index_type: DType::I32,
        status: None,
    };
    let into = |b: RowsBuffers<'_>, plan: &RowsPlan, target| {
        gpu.prepare(plan, DType::U8, b, target).unwrap_err()
    };
    let refused = |b: RowsBuffers<'_>, plan: &RowsPlan| into(b, plan, region(&out));
    let f32_ids = refused(
        RowsBuffers {
            index_type: DType::F32,
            ..base
        },
        &plan,
    );
    assert!(
        matches!(f32_ids, SplitError::DataMismatch(ref m) if m.contains("i32, i64 or u32")),
        "{f32_ids}"
    );
    let wide = refused(
        RowsBuffers {
            index_type: DType::I64,
            ..base
        },
        &plan,
    );
    assert!(
        matches!(wide, SplitError::BadBuffer(ref m) if m.contains("indices needs 32")),
        "{wide}"
    );
    let same = into(base, &plan, region(&data));
    assert!(
        matches!(same, SplitError::BadBuffer(ref m) if m.contains("source's buffer")),
        "{same}"
    );
    let overlap = RowsBuffers {
        status: Some(BufferRegion {
            buffer: &out,
            offset: 0,
        }),
        ..base
    };
    let overlap = refused(overlap, &plan);
    assert!(
        matches!(overlap, SplitError::BadBuffer(ref m) if m.contains("overlaps")),
        "{overlap}"
    );
    let big = ops::get_rows(&[4, 32], &[4]).unwrap();
    assert_eq!(big.bytes(DType::U8, DType::I32).unwrap()[0], 128);
    let short = refused(base, &big);
    assert!(
        matches!(short, SplitError::BadBuffer(ref m) if m.contains("source needs 128")),
        "{short}"
    );
}

/// Runs the scatter `plan` on `gpu` and checks the data and the status against the reference.
fn check_scatter(
    gpu: &GpuSplitter,
    plan: &RowsPlan,
    data: &HostTensor,
    ids: &HostTensor,
    updates: &HostTensor,
    what: &str,
) {
    let (want, want_status) = plan
        .reference(&[data.clone(), ids.clone(), updates.clone()])
        .unwrap();
    let got = gpu
        .run(plan, &[data.clone(), ids.clone(), updates.clone()])
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    if let Some(i) = (0..want.bytes().len()).find(|&i| got.0.bytes()[i] != want.bytes()[i]) {
        panic!("{what}: byte {i} of {} differs", want.bytes().len());
    }
    assert_eq!(got.1, want_status, "{what}");
    plan.verify(&[data.clone(), ids.clone(), updates.clone()], &got)
        .unwrap();
}

/// Indices of every kind for `len` slots, `count` of them, no two naming one slot (negatives
/// counting from the end where `from_end`): which update a slot named twice holds is
/// unspecified.
fn distinct(rng: &mut Rng, count: usize, len: usize, ty: DType, from_end: bool) -> Vec<i64> {
    let mut used = std::collections::HashSet::new();
    let slot = |v: i64| {
        let v = if from_end && v < 0 { v + len as i64 } else { v };
        (0..len as i64).contains(&v).then_some(v)
    };
    (0..count)
        .map(|_| {
            let v = indices(rng, 1, len, ty)[0];
            match slot(v) {
                Some(s) if !used.insert(s) => len as i64,
                _ => v,
            }
        })
        .collect()
}

/// Random scatters: rows of 1 byte up (a one-byte row shares its word with three others),
/// every rule of an index, ScatterND's tuples and set rows' plain indices, i32 and i64; rows
/// no index names keep their bytes; in each lane mapping.
fn scatters_match_the_reference(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0xfeed_0000_0077);
    let dtypes = [
        DType::U8,
        DType::F16,
        DType::F32,
        DType::BF16,
        DType::Complex128,
    ];
    let mappings = common::lane_mappings(gpu);
    for case in 0..common::long_run_cases().unwrap_or(48) as usize {
        let rank = 1 + rng.below(3) as usize;
        let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(9) as usize).collect();
        let count = rng.below(2 * shape[0] as u64 + 2) as usize;
        let dtype = dtypes[case % dtypes.len()];
        let ty = INDEX_TYPES[(case / 3) % 3];
        let onnx = case % 3 != 0;
        let ids_shape = if onnx { vec![count, 1] } else { vec![count] };
        let plan = match onnx {
            true => {
                let mut updates = vec![count];
                updates.extend_from_slice(&shape[1..]);
                ops::scatter_nd(&shape, &ids_shape, &updates).unwrap()
            }
            false => ops::set_rows(&shape, &ids_shape).unwrap(),
        };
        let n = shape.iter().product::<usize>() * dtype.size();
        let data = HostTensor::new(dtype, shape.clone(), rng.bytes(n)).unwrap();
        let u = plan.updates_shape();
        let un = u.iter().product::<usize>() * dtype.size();
        let updates = HostTensor::new(dtype, u, rng.bytes(un)).unwrap();
        let values = distinct(&mut rng, count, shape[0], ty, onnx);
        let ids = index_tensor(&ids_shape, &values, ty);
        let (_, mapped) = &mappings[case % mappings.len()];
        let what = format!("case {case}: {dtype} {shape:?} by {ids_shape:?} {values:?}");
        check_scatter(mapped, &plan, &data, &ids, &updates, &what);
    }
}

/// A scatter's rows of one byte and of three: neighbouring slots written by different lanes
/// share words, and every byte lands; a row named twice holds one of its updates whole.
fn narrow_rows_share_words_exactly(gpu: &'static GpuSplitter) {
    let mut rng = Rng(99);
    for (row, count) in [(1usize, 4096usize), (3, 2000), (2, 777)] {
        let shape = [count + 5, row];
        let plan = ops::set_rows(&shape, &[count]).unwrap();
        let data =
            HostTensor::new(DType::U8, shape.to_vec(), rng.bytes((count + 5) * row)).unwrap();
        let updates = HostTensor::new(DType::U8, vec![count, row], rng.bytes(count * row)).unwrap();
        // Every slot but five, in a shuffled order.
        let mut slots: Vec<i32> = (0..(count + 5) as i32).collect();
        for i in (1..slots.len()).rev() {
            slots.swap(i, rng.below(i as u64 + 1) as usize);
        }
        slots.truncate(count);
        let ids = HostTensor::from_slice(&[count], &slots).unwrap();
        for (_, mapped) in common::lane_mappings(gpu) {
            check_scatter(
                &mapped,
                &plan,
                &data,
                &ids,
                &updates,
                &format!("rows of {row}"),
            );
        }
    }
    // Duplicates: slot 1 named by updates 0 and 2; it holds one of them whole.
    let plan = ops::set_rows(&[4, 4], &[3]).unwrap();
    let data = HostTensor::from_slice(&[4, 4], &[0u8; 16]).unwrap();
    let updates = HostTensor::from_slice(&[3, 4], &[1u8, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]).unwrap();
    let ids = HostTensor::from_slice(&[3], &[1i64, 3, 1]).unwrap();
    let (out, status) = gpu
        .run(&plan, &[data.clone(), ids.clone(), updates.clone()])
        .unwrap();
    assert!(status.is_clean());
    let b = out.bytes();
    assert!(b[4..8] == [1; 4] || b[4..8] == [3; 4], "{b:?}");
    assert_eq!(
        (&b[..4], &b[8..12], &b[12..]),
        (&[0u8; 4][..], &[0u8; 4][..], &[2u8; 4][..])
    );
}

/// A device whose shader stage holds fewer storage buffers than the indexed build binds is
/// refused as the device's limit, naming the build's count and the device's.
fn too_few_storage_buffers_are_named(gpu: &'static GpuSplitter) {
    let small = common::with_limits(gpu, |_| wgpu::Limits::downlevel_defaults());
    let plan = ops::get_rows(&[4, 4], &[2]).unwrap();
    let data = HostTensor::from_slice(&[4, 4], &[0u8; 16]).unwrap();
    let ids = HostTensor::from_slice(&[2], &[0i32, 1]).unwrap();
    let e = small.run(&plan, &[data, ids]).unwrap_err();
    assert!(
        matches!(e, SplitError::Device(ref m)
            if m.contains("bind 7 storage buffers") && m.contains("allows 4")),
        "{e}"
    );
}

per_backend!(
    too_few_storage_buffers_are_named,
    scatters_match_the_reference,
    narrow_rows_share_words_exactly,
    gathers_match_the_reference,
    element_gathers_match_the_reference,
    engine_shapes_match_the_reference,
    i32_and_i64_indices_agree,
    prepared_rows_keep_guard_bytes,
    bad_regions_are_refused,
);
