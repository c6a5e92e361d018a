//! A paged KV write on the CPU ([`PagedKvPlan`]), element by element from the layouts'
//! definitions (nothing shared with the GPU path's records).

use crate::error::{Result, SplitError};
use crate::plan::{CacheLayout, PagedKvPlan, RowsStatus};
use crate::tensor::HostTensor;

/// What a paged write gives: the queries, both caches after the write, and the status of the
/// slots out of range.
#[derive(Debug, Clone, PartialEq)]
pub struct PagedKvOutput {
    /// The queries ([`PagedKvPlan::q_shape`]; `[tokens, 0]` where none go out).
    pub queries: HostTensor,
    /// The key cache, in the plan's layout.
    pub k_cache: HostTensor,
    /// The value cache, in the plan's layout.
    pub v_cache: HostTensor,
    /// The slots out of range (padding, -1, is not counted).
    pub status: RowsStatus,
}

impl PagedKvPlan {
    /// The paged write on the CPU, as the GPU gives it: `tensors` are its sources (`[qkv]`,
    /// or `[key, value]` after [`PagedKvPlan::with_separate_kv`], of
    /// [`PagedKvPlan::source_shapes`] and [`PagedKvPlan::rows_dtype`]), then `slots`,
    /// `k_cache` and `v_cache`. The queries
    /// go out where the plan says; the keys and values into copies of the caches at each
    /// token's slot of `slots` (i32, i64 or u32; -1, a u32's `0xffffffff`, is padding).
    pub fn reference(&self, tensors: &[HostTensor]) -> Result<PagedKvOutput> {
        let (sources, [slots, k_cache, v_cache]) = self.host_tensors(tensors)?;
        // Through a conversion, the sources as the caches' dtype first.
        let sources: Vec<HostTensor> = (sources.iter())
            .map(|s| super::convert::convert_tensor(s, k_cache.dtype()))
            .collect::<Result<_>>()?;
        paged_write(self, &sources, slots, [k_cache, v_cache])
    }

    /// The sources, the slots and the two caches of `tensors`, checked against the plan.
    #[doc(hidden)]
    pub fn host_tensors<'t>(
        &self,
        tensors: &'t [HostTensor],
    ) -> Result<(&'t [HostTensor], [&'t HostTensor; 3])> {
        let n = self.source_shapes().len();
        let names = match n {
            1 => "[qkv, slots, k_cache, v_cache]",
            _ => "[key, value, slots, k_cache, v_cache]",
        };
        let (sources, [slots, k_cache, v_cache]) = match tensors.split_at_checked(n) {
            Some((sources, [slots, k, v])) => (sources, [slots, k, v]),
            _ => {
                return Err(SplitError::DataMismatch(format!(
                    "{} tensors for a paged write: it takes {names}",
                    tensors.len()
                )))
            }
        };
        check_tensors(self, sources, slots, [k_cache, v_cache])?;
        Ok((sources, [slots, k_cache, v_cache]))
    }
}

/// [`PagedKvPlan::reference`].
fn paged_write(
    plan: &PagedKvPlan,
    sources: &[HostTensor],
    slots: &HostTensor,
    caches: [&HostTensor; 2],
) -> Result<PagedKvOutput> {
    let dtype = sources[0].dtype();
    let es = dtype.size();
    let (hq, hkv, d, bs) = (plan.q_heads, plan.kv_heads, plan.head_dim, plan.block_size);
    let token = (hq + 2 * hkv) * d;
    // Element (t, h, 0) of the keys (`c` 0) or the values (1): its source's bytes, and
    // where it starts there.
    let kv = |c: usize, t: usize, h: usize| match plan.kv_strides {
        None => (sources[0].bytes(), t * token + (hq + c * hkv + h) * d),
        Some(strides) => (sources[c].bytes(), t * strides[c] + h * d),
    };
    let values = super::rows::index_values(slots, true)?;
    let mut q = Vec::new();
    let mut caches = caches.map(|c| c.bytes().to_vec());
    let mut status = RowsStatus::default();
    let src = sources[0].bytes();
    if plan.queries {
        // Element (h, t, 0) of `[q_heads, tokens, head_dim]`, or (t, 0) of `[tokens, q_heads
        // * head_dim]`.
        let rows: Vec<(usize, usize)> = match plan.heads_first {
            true => (0..hq)
                .flat_map(|h| (0..plan.tokens).map(move |t| (t * token + h * d, d)))
                .collect(),
            false => (0..plan.tokens).map(|t| (t * token, hq * d)).collect(),
        };
        for (from, n) in rows {
            q.extend_from_slice(&src[from * es..(from + n) * es]);
        }
    }
    for (t, &s) in values.iter().enumerate() {
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
                let (src, from) = kv(c, t, h);
                cache[at * es..(at + d) * es].copy_from_slice(&src[from * es..(from + d) * es]);
            }
        }
    }
    let [k, v] = caches;
    Ok(PagedKvOutput {
        queries: HostTensor::new(dtype, plan.q_shape(), q)?,
        k_cache: HostTensor::new(dtype, plan.cache_shape(), k)?,
        v_cache: HostTensor::new(dtype, plan.cache_shape(), v)?,
        status,
    })
}

/// Refuses tensors other than the plan's: its sources and both caches of their shapes and
/// one dtype, the slots i32, i64 or u32 of shape `[tokens]`.
fn check_tensors(
    plan: &PagedKvPlan,
    sources: &[HostTensor],
    slots: &HostTensor,
    caches: [&HostTensor; 2],
) -> Result<()> {
    let names: &[&str] = match sources.len() {
        1 => &["qkv"],
        _ => &["key", "value"],
    };
    let mut want: Vec<(&str, &HostTensor, Vec<usize>)> = names
        .iter()
        .zip(sources)
        .zip(plan.source_shapes())
        .map(|((&name, t), shape)| (name, t, shape))
        .collect();
    want.push(("slot_mapping", slots, vec![plan.tokens]));
    want.push(("k_cache", caches[0], plan.cache_shape()));
    want.push(("v_cache", caches[1], plan.cache_shape()));
    let cache = caches[0].dtype();
    let source = plan.rows_dtype(cache);
    for (what, t, shape) in want {
        if t.shape() != shape {
            return Err(SplitError::DataMismatch(format!(
                "{what} has shape {:?}; the plan's is {shape:?}",
                t.shape()
            )));
        }
        let dtype = if what.ends_with("cache") {
            cache
        } else {
            source
        };
        if what != "slot_mapping" && t.dtype() != dtype {
            return Err(SplitError::DataMismatch(format!(
                "{what} is {}; the plan's sources are {source} and its caches {cache}",
                t.dtype()
            )));
        }
    }
    plan.conversion(cache)?;
    super::rows::index_values(slots, true).map(|_| ())
}
