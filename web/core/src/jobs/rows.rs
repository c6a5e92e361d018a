//! The page's jobs of rows placed by indices and paged writes: each region at the start of
//! its buffer, the target and the status zeroed or holding the data first, and the bytes the
//! reference leaves in each after the job.

use super::{placed, roles, Buffer, Jobs, GUARD, GUARD_BYTE};
use crate::{recording_json, Device};
use serde_json::Value;
use wgsl_split::paged::{paged_sizes, record_paged, PagedRegions};
use wgsl_split::plan::NegativeIndex;
use wgsl_split::recording::Role;
use wgsl_split::rows::{index_rule, record_rows, RowsRegions};
use wgsl_split::{ops, CacheLayout, DType, HostTensor, RowsPlan, RowsStatus};

impl Jobs {
    /// Rows placed by indices: a gather of one-byte rows on the last axis, an embedding's
    /// rows by i64 ids, a set rows of one-byte rows sharing words and a ScatterND, indices
    /// out of range in each.
    pub(super) fn rows(&mut self, device: &Device) {
        let tensor = |shape: &[usize], dtype: DType, seed: usize| {
            let n = shape.iter().product::<usize>() * dtype.size();
            let bytes = (0..n)
                .map(|i| ((i * 37 + seed * 11 + 5) % 251) as u8)
                .collect();
            HostTensor::new(dtype, shape.to_vec(), bytes)
        };
        let slots: Vec<i32> = (0..1000).map(|i| (i * 7 + 3) % 1002).collect();
        let cases = [
            (
                "gather of bytes",
                ops::gather(&[37, 50], &[3, 2], -1),
                tensor(&[37, 50], DType::U8, 1),
                HostTensor::from_slice(&[3, 2], &[0i32, 49, -1, -50, 50, 7]),
                None,
            ),
            (
                "get rows",
                ops::get_rows(&[300, 256], &[4]),
                tensor(&[300, 256], DType::F16, 2),
                HostTensor::from_slice(&[4], &[299i64, (1 << 32) + 1, 0, -1]),
                None,
            ),
            (
                "set rows of bytes",
                ops::set_rows(&[1002, 1], &[1000]),
                tensor(&[1002, 1], DType::U8, 3),
                HostTensor::from_slice(&[1000], &slots),
                Some(tensor(&[1000, 1], DType::U8, 4)),
            ),
            (
                "ScatterND",
                ops::scatter_nd(&[64, 24], &[3, 1], &[3, 24]),
                tensor(&[64, 24], DType::F32, 5),
                HostTensor::from_slice(&[3, 1], &[-1i64, 5, 64]),
                Some(tensor(&[3, 24], DType::F32, 6)),
            ),
        ];
        for (name, plan, data, ids, updates) in cases {
            let job = (|| {
                let updates = updates.transpose()?;
                rows_job(&plan?, &data?, &ids?, updates.as_ref(), device)
            })();
            let named = roles(&[
                (Role::Input(0), "source"),
                (Role::Indices, "indices"),
                (Role::Output(0), "target"),
                (Role::Scatter(0), "target"),
                (Role::Status, "status"),
            ]);
            self.add(name.into(), "rows", job.map(|(r, b)| (r, b, named)));
        }
    }

    /// A paged write in each cache layout: NHD from the fused projection into caches in one
    /// buffer (one dispatch), HND from keys and values of their own into caches of their own
    /// (a dispatch a cache).
    pub(super) fn paged(&mut self, device: &Device) {
        for layout in [CacheLayout::Nhd, CacheLayout::Hnd] {
            let named = roles(&[
                (Role::Input(0), "source0"),
                (Role::Input(1), "source1"),
                (Role::Indices, "slots"),
                (Role::Output(0), "queries"),
                (Role::Scatter(0), "k_cache"),
                (Role::Scatter(1), "v_cache"),
                (Role::Status, "status"),
            ]);
            let job = paged_job(layout, device).map(|(r, b)| (r, b, named));
            self.add(format!("paged write {layout:?}"), "paged", job);
        }
    }
}

/// `bytes` then zeros to `size` bytes (rounded up to 4), then the guard.
fn padded(bytes: &[u8], size: u64) -> Vec<u8> {
    let mut out = bytes.to_vec();
    out.resize((size as usize).max(bytes.len()).next_multiple_of(4), 0);
    out.extend([GUARD_BYTE; GUARD]);
    out
}

/// The rows `plan` places of `data` by `ids` (and a scatter's `updates`), each region at the
/// start of its buffer, and the status in a buffer of its own.
fn rows_job(
    plan: &RowsPlan,
    data: &HostTensor,
    ids: &HostTensor,
    updates: Option<&HostTensor>,
    device: &Device,
) -> wgsl_split::Result<(Value, Vec<Buffer>)> {
    let limits = &device.limits;
    let at = RowsRegions {
        source: 0,
        indices: 0,
        target: 0,
        status: Some(0),
    };
    let tuning = device.tuning();
    let (recording, sizes) = record_rows(plan, data.dtype(), ids.dtype(), at, limits, tuning)?;
    let ((want, status), source, first) = match updates {
        Some(u) => (
            plan.reference(&[data.clone(), ids.clone(), u.clone()])?,
            u.bytes(),
            data.bytes(),
        ),
        None => (
            plan.reference(&[data.clone(), ids.clone()])?,
            data.bytes(),
            &[][..],
        ),
    };
    let same = |name: &str, bytes: Vec<u8>| Buffer {
        name: name.into(),
        start: bytes.clone(),
        end: bytes,
    };
    let buffers = vec![
        same("source", padded(source, sizes.source)),
        same("indices", padded(ids.bytes(), sizes.indices)),
        Buffer {
            name: "target".into(),
            start: padded(first, sizes.target),
            end: padded(want.bytes(), sizes.target),
        },
        status_buffer(status),
    ];
    Ok((recording_json(&recording, limits)?, buffers))
}

/// A status buffer, zeroed before the job, that must hold `status` after it (two words), and
/// zeros to 16 bytes, then the guard.
fn status_buffer(status: RowsStatus) -> Buffer {
    let first_bad = status.first_bad.map_or(0, |k| !k);
    let words = [status.bad_indices, first_bad, 0, 0]
        .map(u32::to_le_bytes)
        .concat();
    Buffer {
        name: "status".into(),
        start: padded(&[0; 16], 16),
        end: padded(&words, 16),
    }
}

/// A paged write of 6 tokens of 4 query heads and 2 KV heads of 64 f16 elements into caches
/// of 5 blocks of 4 slots in `layout`: NHD from the fused projection, both caches in one
/// buffer (the value cache one alignment past the key cache's end; `k_cache` names it);
/// HND from keys and values of their own (the keys at a stride of 160 elements, a view of a
/// wider tensor), each cache in a buffer of its own.
fn paged_job(layout: CacheLayout, device: &Device) -> wgsl_split::Result<(Value, Vec<Buffer>)> {
    let limits = &device.limits;
    let fused = ops::paged_kv_write(6, 4, 2, 64, 4, 5, layout)?;
    let separate = layout == CacheLayout::Hnd;
    let plan = match separate {
        true => fused.with_separate_kv(160, 128)?,
        false => fused,
    };
    let tensor = |shape: Vec<usize>, seed: usize| {
        let n = shape.iter().product::<usize>() * 2;
        let bytes = (0..n)
            .map(|i| ((i * 37 + seed * 11 + 5) % 251) as u8)
            .collect();
        HostTensor::new(DType::F16, shape, bytes)
    };
    let sources: Vec<HostTensor> = (7..)
        .zip(plan.source_shapes())
        .map(|(seed, shape)| tensor(shape, seed))
        .collect::<wgsl_split::Result<_>>()?;
    let (k, v) = (
        tensor(plan.cache_shape(), 8)?,
        tensor(plan.cache_shape(), 9)?,
    );
    let slots = HostTensor::from_slice(&[6], &[3i32, -1, 19, 20, 0, 7])?;
    let mut tensors = sources.clone();
    tensors.extend([slots.clone(), k.clone(), v.clone()]);
    let want = plan.reference(&tensors)?;
    let rule = index_rule(DType::I32, NegativeIndex::Padding, plan.slots() as u64)?;
    let sizes = paged_sizes(&plan, DType::F16, rule.words);
    let align = limits.min_storage_buffer_offset_alignment as u64;
    let v_at = match separate {
        true => 0,
        false => sizes.cache.next_multiple_of(align),
    };
    let at = PagedRegions {
        sources: [0, 0],
        one_source: !separate,
        slots: 0,
        queries: 0,
        caches: [0, v_at],
        one_cache_window: !separate,
        status: Some(0),
    };
    let tuning = device.tuning();
    let recording = record_paged(&plan, DType::F16, rule, at, limits, tuning)?;
    let same = |name: &str, bytes: Vec<u8>| Buffer {
        name: name.into(),
        start: bytes.clone(),
        end: bytes,
    };
    let mut buffers = vec![same("slots", padded(slots.bytes(), sizes.slots))];
    for (k, s) in sources.iter().enumerate() {
        buffers.push(same(
            &format!("source{k}"),
            padded(s.bytes(), sizes.sources[k]),
        ));
    }
    let written = |name: &str, start: Vec<u8>, end: Vec<u8>| Buffer {
        name: name.into(),
        start,
        end,
    };
    match separate {
        true => {
            let cache = |c: &[u8]| padded(c, sizes.cache);
            buffers.push(written(
                "k_cache",
                cache(k.bytes()),
                cache(want.k_cache.bytes()),
            ));
            buffers.push(written(
                "v_cache",
                cache(v.bytes()),
                cache(want.v_cache.bytes()),
            ));
        }
        false => {
            let caches = |k: &[u8], v: &[u8]| placed(0, v_at + sizes.cache, [(0, k), (v_at, v)]);
            let (start, end) = (
                caches(k.bytes(), v.bytes()),
                caches(want.k_cache.bytes(), want.v_cache.bytes()),
            );
            buffers.push(written("k_cache", start, end));
            let q = |bytes: &[u8]| padded(bytes, sizes.queries);
            buffers.push(written("queries", q(&[]), q(want.queries.bytes())));
        }
    }
    buffers.push(status_buffer(want.status));
    Ok((recording_json(&recording, limits)?, buffers))
}
