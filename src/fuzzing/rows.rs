//! Rows placed by indices as the host plans them ([`check_rows`]): a seed draws a gather, a
//! set rows or a paged KV write of random sizes (some past the windows, which must be
//! refused), of one dtype or converting f32 rows into f16 or bf16 data. Every dispatch made passes the gate; then every address the shader computes
//! from any index in range (the first and the last of each block and slot within a block,
//! for the first and the last token, head and chunk) is taken with the shader's own u32
//! arithmetic and must lie inside its window.

use crate::gpu::gather::abi::{Entry, IndexRows, Mode, Table, MAX_WINDOW};
use crate::gpu::gather::dispatches::{Dispatch, GatherTuning};
use crate::gpu::gather::{gather_dispatch, scatter_dispatch, IndexRule};
use crate::plan::CacheLayout;
use crate::rng::XorShift;
use crate::{ops, DType, GatherMode};
use wgsl_split::paged::{paged_jobs, PagedJob, PagedRegions};
use wgsl_split::rows::set_rows_job;

/// The case's draws, from its seed.
impl XorShift {
    /// A size: mostly small, sometimes large enough to pass a window.
    fn size(&mut self) -> usize {
        match self.next() % 8 {
            0 => (self.next() % (1 << 20)) as usize,
            1 => (self.next() % (1 << 31)) as usize,
            _ => 1 + (self.next() % 9) as usize,
        }
    }

    /// `plan` as it is, or (half the time, for data of f16 or bf16) with f32 rows converted.
    fn converted(&mut self, plan: crate::RowsPlan, data: DType) -> crate::RowsPlan {
        match data {
            DType::F16 | DType::BF16 if self.next().is_multiple_of(2) => {
                plan.with_rows_dtype(DType::F32)
            }
            _ => plan,
        }
    }
}

/// Checks one seed's case; panics if an invariant breaks.
pub fn check_rows(seed: u64) {
    let mut d = XorShift(seed | 1);
    let dtype = DType::ALL_NUMERIC[(d.next() % 15) as usize];
    let tuning = GatherTuning {
        mode: [GatherMode::Cpu, GatherMode::Gpu][(d.next() % 2) as usize],
        max_steps_per_lane: 1 + d.next() % 500,
    };
    let rule = IndexRule {
        words: 1 + (d.next() % 2) as u32,
        negative: (d.next() % 3) as u32,
    };
    // The dispatch, and the bytes of the scatter's destination window (0: no scatter).
    let (dispatch, dst_bytes) = match d.next() % 3 {
        0 => {
            let rank = 1 + (d.next() % 4) as usize;
            let shape: Vec<usize> = (0..rank).map(|_| d.size()).collect();
            let ids: Vec<usize> = (0..(d.next() % 3) as usize).map(|_| d.size()).collect();
            let axis = (d.next() % rank as u64) as i64;
            let Ok(plan) = ops::gather(&shape, &ids, axis) else {
                return;
            };
            // Through a conversion, the tables are the written dtype's (the view's).
            let plan = d.converted(plan, dtype);
            let Ok(rows) = plan.conversion(dtype).and_then(|(_, w)| plan.rows(w)) else {
                return;
            };
            (gather_dispatch(rows, rule, MAX_WINDOW, tuning), 0)
        }
        1 => {
            let shape = [d.size(), d.size()];
            let Ok(plan) = ops::set_rows(&shape, &[d.size()]) else {
                return;
            };
            let plan = d.converted(plan, dtype);
            let rows = plan.conversion(dtype).and_then(|(_, w)| plan.rows(w));
            let Ok(job) = rows.and_then(|rows| set_rows_job(rows, rule)) else {
                return;
            };
            (scatter_dispatch(&job, MAX_WINDOW, tuning), job.dst_bytes)
        }
        _ => {
            let layout = [CacheLayout::Nhd, CacheLayout::Hnd][(d.next() % 2) as usize];
            let sizes = [d.size(), d.size(), d.size(), d.size(), d.size(), d.size()];
            let [tokens, q, kv, dim, blocks, block] = sizes;
            let Ok(fused) = ops::paged_kv_write(tokens, q, kv, dim, blocks, block, layout) else {
                return;
            };
            // The fused projection with its queries or without; or keys and values of their
            // own, a token a stride of their own apart.
            let kv_row = kv.saturating_mul(dim);
            let plan = match d.next() % 3 {
                0 => fused,
                1 => fused.without_queries(),
                _ => match fused.with_separate_kv(kv_row + d.size() % 7, kv_row + d.size()) {
                    Ok(plan) => plan,
                    Err(_) => return,
                },
            };
            // f32 sources rounded into f16 or bf16 caches: the sources' addresses are the
            // view's, half the bytes.
            let plan = match dtype {
                DType::F16 | DType::BF16 if d.next().is_multiple_of(2) => {
                    plan.with_rows_dtype(DType::F32).without_queries()
                }
                _ => plan,
            };
            let rule = IndexRule {
                negative: 2,
                ..rule
            };
            let cache = (plan.slots() as u64)
                .saturating_mul(kv_row as u64)
                .saturating_mul(dtype.size() as u64);
            // The value cache after the key cache, or before it, or each in a buffer of its
            // own; the sources in one buffer or two, each at a multiple of 4.
            let apart = cache.next_multiple_of(256);
            let (k_at, v_at) = [(0, apart), (apart, 0)][(d.next() % 2) as usize];
            let at = PagedRegions {
                sources: [4 * (d.next() % 100), 4 * (d.next() % 100)],
                one_source: d.next().is_multiple_of(2),
                slots: 0,
                queries: 0,
                caches: [k_at, v_at],
                one_cache_window: d.next().is_multiple_of(2),
                status: Some(0),
            };
            let limits = wgsl_split::Limits {
                max_storage_buffer_binding_size: MAX_WINDOW,
                min_storage_buffer_offset_alignment: 256,
                ..wgsl_split::Limits::default()
            };
            for PagedJob { job, src_size, .. } in paged_jobs(&plan, dtype, rule, at, &limits) {
                // The view of a source window holds what the window does, converted.
                let view = match plan.rows_dtype(dtype) == dtype {
                    true => src_size,
                    false => src_size / 2,
                };
                assert_eq!(job.src_bytes, view, "seed {seed}: {plan:?}");
                if let Ok(Some(dispatch)) = scatter_dispatch(&job, MAX_WINDOW, tuning) {
                    if let Err(refusal) = dispatch.gate() {
                        panic!("seed {seed}: {dispatch:?}: {refusal}");
                    }
                    check_addresses(seed, &dispatch, job.dst_bytes);
                }
            }
            return;
        }
    };
    // A plan past the windows is refused; a dispatch made keeps every precondition.
    let Ok(Some(dispatch)) = dispatch else { return };
    if let Err(refusal) = dispatch.gate() {
        panic!("seed {seed}: {dispatch:?}: {refusal}");
    }
    check_addresses(seed, &dispatch, dst_bytes);
}

/// Every address an extreme index can reach, in the shader's u32 arithmetic, inside its
/// window: a gather's source rows, a scatter's sources and slots.
fn check_addresses(seed: u64, d: &Dispatch, dst_bytes: u64) {
    let Table::Indexed(entries, index) = &d.table else {
        panic!("seed {seed}: not an indexed table: {d:?}");
    };
    for (e, x) in entries.iter().zip(index) {
        match e.mode {
            m if m == Mode::Indexed as u32 => gather_addresses(seed, d, e, x),
            m if m == Mode::Scatter as u32 => scatter_addresses(seed, d, e, x, dst_bytes),
            _ => {}
        }
    }
}

fn gather_addresses(seed: u64, d: &Dispatch, e: &Entry, x: &IndexRows) {
    let rows = e.out_bytes / e.row_bytes;
    let blocks = rows / x.count;
    // A gather of elements (`gather_elements`) divides by a block's units and takes a row's
    // address as its block's base plus its place: its units a block at least 1 (the product
    // in u32), and the same address in the shader's u32 arithmetic.
    let w = e.row_bytes;
    let elements = [1, 2, 4, 8].contains(&w)
        && (e.src_offset | e.src_stride).is_multiple_of(w)
        && (x.count as u64 * w as u64).is_multiple_of(16);
    if elements {
        let block_bytes = x.count as u64 * w as u64;
        assert!(
            (16..=e.out_bytes as u64).contains(&block_bytes),
            "seed {seed}: a gather of elements with blocks of {block_bytes} bytes"
        );
    }
    for block in [0, blocks - 1] {
        for r in [0, x.capacity.max(1) - 1] {
            let src = e.src_offset.wrapping_add(
                block
                    .wrapping_mul(x.capacity)
                    .wrapping_add(r)
                    .wrapping_mul(e.src_stride),
            );
            let end = src as u64 + e.row_bytes as u64;
            assert!(
                end <= d.src_size,
                "seed {seed}: a gather's row {r} of block {block} ends at {end}, past {}",
                d.src_size
            );
            let base = e
                .src_offset
                .wrapping_add(block.wrapping_mul(x.capacity.wrapping_mul(e.src_stride)));
            let place = base.wrapping_add(r.wrapping_mul(e.src_stride));
            assert!(
                !elements || place == src,
                "seed {seed}: an element's address {place} where its row's is {src}"
            );
        }
    }
}

fn scatter_addresses(seed: u64, d: &Dispatch, e: &Entry, x: &IndexRows, dst_bytes: u64) {
    let last_chunk = (e.row_bytes - 1) / 16;
    let last_slot = x.capacity.max(1) - 1;
    // The largest block and the largest place within a block, and slot 0.
    let slots = [
        0,
        last_slot,
        last_slot.min(x.block_size - 1),
        (last_slot / x.block_size) * x.block_size,
    ];
    for t in [0, x.count - 1] {
        for h in [0, x.heads - 1] {
            for k in [0, last_chunk] {
                let n = (e.row_bytes - 16 * k).min(16) as u64;
                let src = e
                    .src_offset
                    .wrapping_add(t.wrapping_mul(e.src_stride))
                    .wrapping_add(h.wrapping_mul(x.src_head_step))
                    .wrapping_add(k * 16);
                assert!(
                    src as u64 + n <= d.src_size,
                    "seed {seed}: a scatter reads past its source: {src} + {n} > {}",
                    d.src_size
                );
                for s in slots {
                    let block = s / x.block_size;
                    let at = x
                        .dst_offset
                        .wrapping_add(block.wrapping_mul(x.dst_block_stride))
                        .wrapping_add((s - block * x.block_size).wrapping_mul(x.dst_slot_stride))
                        .wrapping_add(h.wrapping_mul(x.dst_head_stride))
                        .wrapping_add(k * 16);
                    let end = at as u64 + n;
                    assert!(
                        end <= dst_bytes,
                        "seed {seed}: slot {s} writes to {end}, past {dst_bytes}"
                    );
                }
            }
        }
    }
}
