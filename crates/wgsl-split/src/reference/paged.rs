//! A paged KV write on the CPU ([`PagedKvPlan`]), element by element from the layouts'
//! definitions (nothing shared with the GPU path's records).

use crate::error::{Result, SplitError};
use crate::plan::{CacheLayout, PagedKvPlan, RowsStatus};
use crate::tensor::HostTensor;

/// What a paged write gives: the queries, both caches after the write, and the status of the
/// slots out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct PagedKvOutput {
    /// `[tokens, q_heads * head_dim]`.
    pub queries: HostTensor,
    /// The key cache, in the plan's layout.
    pub k_cache: HostTensor,
    /// The value cache, in the plan's layout.
    pub v_cache: HostTensor,
    /// The slots out of range (padding, -1, is not counted).
    pub status: RowsStatus,
}

impl PagedKvPlan {
    /// The paged write on the CPU, as the GPU gives it: `tensors` are `[qkv, slots, k_cache,
    /// v_cache]`; `qkv`'s queries go out, its keys and values into copies of the caches at
    /// each token's slot of `slots` (i32, i64 or u32; -1, a u32's `0xffffffff`, is padding).
    pub fn reference(&self, tensors: &[HostTensor]) -> Result<PagedKvOutput> {
        let [qkv, slots, k_cache, v_cache] = self.host_tensors(tensors)?;
        paged_write(self, qkv, slots, k_cache, v_cache)
    }

    /// The qkv, the slots and the two caches of `tensors`, checked against the plan.
    #[doc(hidden)]
    pub fn host_tensors<'t>(&self, tensors: &'t [HostTensor]) -> Result<[&'t HostTensor; 4]> {
        let [qkv, slots, k_cache, v_cache] = tensors else {
            return Err(SplitError::DataMismatch(format!(
                "{} tensors for a paged write: it takes [qkv, slots, k_cache, v_cache]",
                tensors.len()
            )));
        };
        check_tensors(self, qkv, slots, k_cache, v_cache)?;
        Ok([qkv, slots, k_cache, v_cache])
    }
}

/// [`PagedKvPlan::reference`].
fn paged_write(
    plan: &PagedKvPlan,
    qkv: &HostTensor,
    slots: &HostTensor,
    k_cache: &HostTensor,
    v_cache: &HostTensor,
) -> Result<PagedKvOutput> {
    let es = qkv.dtype().size();
    let (hq, hkv, d, bs) = (plan.q_heads, plan.kv_heads, plan.head_dim, plan.block_size);
    let token = (hq + 2 * hkv) * d;
    let values = super::rows::index_values(slots, true)?;
    let mut q = Vec::with_capacity(plan.tokens * hq * d * es);
    let mut caches = [k_cache.bytes().to_vec(), v_cache.bytes().to_vec()];
    let mut status = RowsStatus::default();
    let src = qkv.bytes();
    if plan.heads_first {
        // Element (h, t, 0) of `[q_heads, tokens, head_dim]`.
        for h in 0..hq {
            for t in 0..plan.tokens {
                let from = t * token + h * d;
                q.extend_from_slice(&src[from * es..(from + d) * es]);
            }
        }
    }
    for (t, &s) in values.iter().enumerate() {
        if !plan.heads_first {
            q.extend_from_slice(&src[t * token * es..(t * token + hq * d) * es]);
        }
        if s == -1 {
            continue;
        }
        if !(0..plan.slots() as i64).contains(&s) {
            status.bad_indices += 1;
            status.first_bad.get_or_insert(t as u32);
            continue;
        }
        let (block, place) = (s as usize / bs, s as usize % bs);
        for (c, cache) in caches.iter_mut().enumerate() {
            for h in 0..hkv {
                // Element (block, place, h, 0) or (block, h, place, 0) of the cache.
                let at = match plan.layout {
                    CacheLayout::Nhd => ((block * bs + place) * hkv + h) * d,
                    CacheLayout::Hnd => ((block * hkv + h) * bs + place) * d,
                };
                let from = t * token + (hq + c * hkv + h) * d;
                cache[at * es..(at + d) * es].copy_from_slice(&src[from * es..(from + d) * es]);
            }
        }
    }
    let dtype = qkv.dtype();
    let [k, v] = caches;
    Ok(PagedKvOutput {
        queries: HostTensor::new(dtype, plan.q_shape(), q)?,
        k_cache: HostTensor::new(dtype, plan.cache_shape(), k)?,
        v_cache: HostTensor::new(dtype, plan.cache_shape(), v)?,
        status,
    })
}

/// Refuses tensors other than the plan's: the fused projection and both caches of its shapes
/// and one dtype, the slots i32, i64 or u32 of shape `[tokens]`.
fn check_tensors(
    plan: &PagedKvPlan,
    qkv: &HostTensor,
    slots: &HostTensor,
    k_cache: &HostTensor,
    v_cache: &HostTensor,
) -> Result<()> {
    let want = [
        ("qkv", qkv, plan.qkv_shape()),
        ("slot_mapping", slots, vec![plan.tokens]),
        ("k_cache", k_cache, plan.cache_shape()),
        ("v_cache", v_cache, plan.cache_shape()),
    ];
    for (what, t, shape) in want {
        if t.shape() != shape {
            return Err(SplitError::DataMismatch(format!(
                "{what} has shape {:?}; the plan's is {shape:?}",
                t.shape()
            )));
        }
    }
    for (what, t) in [("k_cache", k_cache), ("v_cache", v_cache)] {
        if t.dtype() != qkv.dtype() {
            return Err(SplitError::DataMismatch(format!(
                "{what} is {}, qkv {}: a paged write moves one dtype",
                t.dtype(),
                qkv.dtype()
            )));
        }
    }
    super::rows::index_values(slots, true).map(|_| ())
}
