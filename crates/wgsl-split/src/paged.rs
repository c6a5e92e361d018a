//! A paged KV write from the fused QKV projection ([`PagedKvPlan`]) as a [`Recording`]
//! ([`record_paged`]): the queries (a plain entry) and the keys and values (two scatter
//! entries) of the rows' program, in one dispatch of the indexed build.

use crate::error::{Result, SplitError};
use crate::gather::abi::{Entry, Mode};
use crate::gather::binds::{IndexSides, Sides};
use crate::gather::builds::{single_output, Build, InputBindings};
use crate::gather::{binding_bytes, scatter_dispatch, window_limit};
use crate::gather::{GatherTuning, IndexRule, ScatterJob, ScatterRows};
use crate::plan::{CacheLayout, NegativeIndex, PagedKvPlan};
use crate::recording::{Command, Dispatched, Recording};
use crate::{DType, Limits};

/// Where a paged write's regions lie in the host's buffers, as byte offsets: the fused
/// projection (`Role::Input(0)`), the slots (`Role::Indices`), the queries
/// (`Role::Output(0)`), the caches' window (`Role::Scatter`: from the lower cache's offset,
/// the key cache `k_at` and the value cache `v_at` bytes into it), and the status
/// (`Role::Status`) where the host keeps one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedRegions {
    pub qkv: u64,
    pub slots: u64,
    pub queries: u64,
    pub caches: u64,
    pub k_at: u64,
    pub v_at: u64,
    pub status: Option<u64>,
}

/// The recording of a paged write of `plan` in `dtype`, its slots read by `rule`, in the
/// host's regions `at` (which the host checks against [`paged_sizes`]), on a device of
/// `limits` whose lanes map as `tuning` says. The plan is checked again here
/// (`PagedKvPlan::new`, [`check_heads_first`]), so that no host records a plan the shader
/// cannot take. No command where nothing moves.
pub fn record_paged(
    plan: &PagedKvPlan,
    dtype: DType,
    rule: IndexRule,
    at: PagedRegions,
    limits: &Limits,
    tuning: GatherTuning,
) -> Result<Recording> {
    let plan = &PagedKvPlan::new(*plan)?;
    check_heads_first(plan, dtype)?;
    let sizes = paged_sizes(plan, dtype, rule.words);
    let job = paged_job(plan, dtype, rule, at.k_at, at.v_at);
    let Some(dispatch) = scatter_dispatch(&job, window_limit(limits), tuning)? else {
        return Ok(Recording::default());
    };
    let build = Build {
        indexed: Some(job.stores()),
        ..Build::plain(InputBindings::ONE, single_output(limits), None)
    };
    let index = IndexSides {
        indices: (at.slots, sizes.slots),
        status: at.status,
        scatter: Some((at.caches, binding_bytes(job.dst_bytes))),
    };
    let sides = (Sides::Region(at.qkv), Sides::Region(at.queries));
    let dispatched = Dispatched::new(build, &dispatch, sides, Some(index), limits)?;
    Ok(Recording {
        commands: vec![Command::Dispatch(dispatched)],
    })
}

/// A paged write's rows in bytes, for one dtype (`PagedKvPlan::new` keeps every product in
/// u64).
pub struct PagedBytes {
    pub tokens: u64,
    /// One head's row.
    pub head: u64,
    /// A token's queries, its keys (or values), and its whole row of the fused projection.
    pub q_row: u64,
    pub kv_row: u64,
    pub token: u64,
    /// Each cache.
    pub cache: u64,
}

impl PagedBytes {
    pub fn of(plan: &PagedKvPlan, dtype: DType) -> Self {
        let head = (plan.head_dim * dtype.size()) as u64;
        let (q_row, kv_row) = (plan.q_heads as u64 * head, plan.kv_heads as u64 * head);
        PagedBytes {
            tokens: plan.tokens as u64,
            head,
            q_row,
            kv_row,
            token: q_row + 2 * kv_row,
            cache: plan.slots() as u64 * kv_row,
        }
    }
}

impl PagedKvPlan {
    /// The bytes each region binds from its offset for a paged write of `dtype` whose slots
    /// are `index_type`, `[qkv, slots, queries, cache]` (each cache's), the first and the
    /// third rounded up to 4. A host's region holds at least so many; the status takes
    /// `RowsStatus::BYTES`.
    ///
    /// ```
    /// use wgsl_split::{ops, CacheLayout, DType};
    /// // 4 tokens of 32 query heads and 8 KV heads of 128, into 64 blocks of 16 slots.
    /// let plan = ops::paged_kv_write(4, 32, 8, 128, 64, 16, CacheLayout::Nhd)?;
    /// let [qkv, slots, queries, cache] = plan.bytes(DType::F16, DType::I64)?;
    /// assert_eq!((qkv, slots), (4 * 48 * 128 * 2, 4 * 8));
    /// assert_eq!((queries, cache), (4 * 32 * 128 * 2, 64 * 16 * 8 * 128 * 2));
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn bytes(&self, dtype: DType, index_type: DType) -> Result<[u64; 4]> {
        let plan = PagedKvPlan::new(*self)?;
        let capacity = plan.slots() as u64;
        let rule = crate::rows::index_rule(index_type, NegativeIndex::Padding, capacity)?;
        let s = paged_sizes(&plan, dtype, rule.words);
        Ok([s.qkv, s.slots, s.queries, s.cache])
    }
}

/// The bytes a paged write of `plan` in `dtype` binds of each region, its slots of `words`.
pub fn paged_sizes(plan: &PagedKvPlan, dtype: DType, words: u32) -> Sizes {
    let b = PagedBytes::of(plan, dtype);
    Sizes {
        qkv: binding_bytes(b.tokens * b.token),
        slots: b.tokens * 4 * words as u64,
        queries: binding_bytes(b.tokens * b.q_row),
        cache: b.cache,
    }
}

/// The scatter of a paged write of `plan` in `dtype`, its slots read by `rule`, its caches at
/// `k_at` and `v_at` of one window: the queries a plain entry, the keys and the values a
/// part each. Pure.
pub fn paged_job(
    plan: &PagedKvPlan,
    dtype: DType,
    rule: IndexRule,
    k_at: u64,
    v_at: u64,
) -> ScatterJob {
    let PagedBytes {
        tokens: t,
        head,
        q_row,
        kv_row: row,
        token,
        cache,
    } = PagedBytes::of(plan, dtype);
    let (hq, hkv) = (plan.q_heads as u64, plan.kv_heads as u64);
    let bs = plan.block_size as u64;
    let part = |src_offset: u64, dst_offset: u64| match plan.layout {
        CacheLayout::Nhd => ScatterRows {
            src_offset,
            src_stride: token,
            src_head_step: 0,
            heads: 1,
            row_bytes: row,
            dst_offset,
            block_size: bs,
            dst_block_stride: bs * row,
            dst_slot_stride: row,
            dst_head_stride: 0,
        },
        CacheLayout::Hnd => ScatterRows {
            src_offset,
            src_stride: token,
            src_head_step: head,
            heads: hkv,
            row_bytes: head,
            dst_offset,
            block_size: bs,
            dst_block_stride: bs * row,
            dst_slot_stride: head,
            dst_head_stride: bs * head,
        },
    };
    // The queries: packed, one entry of rows of all heads; heads-first, an entry a head, of
    // rows of one head, each head's block after the last (`check_heads_first`). Every count
    // fits u32 where the dispatch is made: `scatter_dispatch` refuses the rest.
    let queries: Vec<Entry> = match plan.heads_first {
        false => vec![Entry {
            out_bytes: (t * q_row) as u32,
            row_bytes: q_row as u32,
            src_stride: token as u32,
            mode: Mode::of(q_row | token) as u32,
            dst_stride: q_row as u32,
            ..Entry::default()
        }],
        true => (0..hq)
            .map(|h| Entry {
                dst_unit: (h * t * head / 16) as u32,
                out_bytes: (t * head) as u32,
                row_bytes: head as u32,
                src_stride: token as u32,
                src_offset: (h * head) as u32,
                mode: Mode::of(head | token | (h * head)) as u32,
                dst_stride: head as u32,
                ..Entry::default()
            })
            .collect(),
    };
    ScatterJob {
        tokens: t,
        capacity: plan.slots() as u64,
        rule,
        src_bytes: t * token,
        dst_bytes: k_at.max(v_at) + cache,
        parts: vec![part(q_row, k_at), part(q_row + row, v_at)],
        copy: queries,
    }
}

/// Refuses heads-first queries whose heads' blocks do not start at multiples of 16 bytes
/// (each is an entry of its own, and entries start on whole units).
pub fn check_heads_first(plan: &PagedKvPlan, dtype: DType) -> Result<()> {
    let block = plan.tokens * plan.head_dim * dtype.size();
    if plan.heads_first && !block.is_multiple_of(16) {
        return Err(SplitError::BadView(format!(
            "heads-first queries of {} tokens of {} {dtype} elements a head: each head's block \
             of {block} bytes must be a multiple of 16 (pad the tokens)",
            plan.tokens, plan.head_dim
        )));
    }
    Ok(())
}

/// The bytes a paged write binds of each region.
pub struct Sizes {
    pub qkv: u64,
    pub slots: u64,
    pub queries: u64,
    pub cache: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::GatherMode;
    use crate::plan::NegativeIndex;
    use crate::rows::index_rule;

    /// A host that records a plan without checking it first gets the core's refusal, not a
    /// dispatch: heads-first queries whose heads' blocks are not whole units, and a plan
    /// whose products `PagedKvPlan::new` refuses.
    #[test]
    fn a_recording_refuses_what_the_shader_cannot_take() {
        let rule = index_rule(DType::I32, NegativeIndex::Padding, 64).unwrap();
        let at = PagedRegions {
            qkv: 0,
            slots: 0,
            queries: 0,
            caches: 0,
            k_at: 0,
            v_at: 1 << 20,
            status: None,
        };
        let tuning = GatherTuning::of(GatherMode::Gpu);
        let record = |plan: &PagedKvPlan| {
            record_paged(plan, DType::F16, rule, at, &Limits::default(), tuning)
        };
        // 3 tokens of 6 f16 elements a head: blocks of 36 bytes.
        let mut plan = crate::ops::paged_kv_write(3, 4, 2, 6, 4, 5, CacheLayout::Nhd).unwrap();
        assert!(record(&plan).is_ok());
        plan.heads_first = true;
        let refused = record(&plan).unwrap_err().to_string();
        assert!(refused.contains("multiple of 16"), "{refused}");
        let mut huge = plan;
        huge.heads_first = false;
        huge.tokens = usize::MAX / 2;
        assert!(record(&huge).is_err());
    }
}
