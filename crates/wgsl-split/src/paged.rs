//! A paged KV write ([`PagedKvPlan`]) as a [`Recording`] ([`record_paged`]): the queries (a
//! plain entry) and the keys and values (a scatter entry each) of the rows' program, in one
//! dispatch of the indexed build where its windows allow, else one dispatch per cache.

use crate::error::{Result, SplitError};
use crate::gather::abi::{Entry, Mode};
use crate::gather::binds::{IndexSides, Sides};
use crate::gather::builds::{Build, Convert};
use crate::gather::{binding_bytes, scatter_dispatch, window_limit};
use crate::gather::{GatherTuning, IndexRule, ScatterJob, ScatterRows};
use crate::plan::{CacheLayout, NegativeIndex, PagedKvPlan};
use crate::recording::{Command, Dispatched, Recording, Role};
use crate::{DType, Limits};

/// Where a paged write's regions lie in the host's buffers, as byte offsets: its sources
/// (`Role::Input(0)` and `Role::Input(1)`: the keys' and the values', both the fused
/// projection's where the plan reads one), the slots (`Role::Indices`), the queries
/// (`Role::Output(0)`, where they go out), each cache (`Role::Scatter(0)` and
/// `Role::Scatter(1)`), and the status (`Role::Status`) where the host keeps one.
///
/// One dispatch moves everything where `one_source` (both sources in one buffer),
/// `one_cache_window` (both caches in one buffer, no other region the write writes between
/// them) and each window fits a binding; it then binds `Role::Input(0)` and
/// `Role::Scatter(0)` over both. Otherwise the keys (and the queries) take one dispatch and
/// the values a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedRegions {
    pub sources: [u64; 2],
    pub one_source: bool,
    pub slots: u64,
    pub queries: u64,
    pub caches: [u64; 2],
    pub one_cache_window: bool,
    pub status: Option<u64>,
}

/// The recording of a paged write of `plan` in `dtype`, its slots read by `rule`, in the
/// host's regions `at` (which the host checks against [`paged_sizes`]), on a device of
/// `limits` whose lanes map as `tuning` says: a dispatch of each of [`paged_jobs`]. The
/// plan is checked again here (`PagedKvPlan::new`, [`check_heads_first`]), so that no host
/// records a plan the shader cannot take. No command where nothing moves.
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
    let convert = plan.conversion(dtype)?;
    let sizes = paged_sizes(plan, dtype, rule.words);
    let mut commands = Vec::new();
    for PagedJob {
        job,
        src_base,
        src_size,
        dst_base,
        values,
    } in paged_jobs(plan, dtype, rule, at, limits)
    {
        let Some(mut d) = scatter_dispatch(&job, window_limit(limits), tuning)? else {
            continue;
        };
        // The window's bytes as they are (a conversion's view takes more or fewer).
        d.src_size = binding_bytes(src_size).max(4);
        let build = Build::indexed(job.stores(), convert, limits);
        let index = IndexSides {
            indices: (at.slots, sizes.slots),
            status: at.status,
            scatter: Some((dst_base, binding_bytes(job.dst_bytes))),
        };
        let sides = (Sides::Region(src_base), Sides::Region(at.queries));
        let mut dispatched = Dispatched::new(build, &d, sides, Some(index), limits)?;
        if values {
            // The values' own dispatch binds the second source and the second cache.
            for bind in &mut dispatched.binds.list {
                bind.role = match bind.role {
                    Role::Input(0) => Role::Input(1),
                    Role::Scatter(0) => Role::Scatter(1),
                    role => role,
                };
            }
        }
        commands.push(Command::Dispatch(dispatched));
    }
    Ok(Recording { commands })
}

/// One dispatch of a paged write: its scatter (in the caches' dtype: through a conversion,
/// its source addresses are the view's), the offset its source window starts from and its
/// bytes, the offset its destination window starts from, and whether it is the values' own
/// (binding the second source and cache).
#[derive(Debug, Clone)]
pub struct PagedJob {
    pub job: ScatterJob,
    pub src_base: u64,
    pub src_size: u64,
    pub dst_base: u64,
    pub values: bool,
}

/// The dispatches of a paged write of `plan` in `dtype`, its slots read by `rule`, in the
/// regions `at`, on a device of `limits` (as [`PagedRegions`] says): one where its windows
/// allow, else the keys' (with the queries) and the values'. Each source window starts at
/// the storage offset alignment at or below its source. Pure.
pub fn paged_jobs(
    plan: &PagedKvPlan,
    dtype: DType,
    rule: IndexRule,
    at: PagedRegions,
    limits: &Limits,
) -> Vec<PagedJob> {
    let sizes = paged_sizes(plan, dtype, rule.words);
    let align = (limits.min_storage_buffer_offset_alignment as u64).max(4);
    let limit = window_limit(limits);
    let reads = reads(plan, dtype);
    // A source's bytes as the shader addresses them (the view, through a conversion).
    let convert = plan.conversion(dtype).ok().flatten();
    let view = |bytes: u64| convert.map_or(bytes, |c| c.view_bytes(bytes));
    // The window of `sources`: from the alignment below the first to the end of the last.
    let window = |sources: &[usize]| {
        let base = sources.iter().map(|&s| at.sources[s] / align * align).min();
        let end = sources
            .iter()
            .map(|&s| at.sources[s] + sizes.sources[s])
            .max();
        let base = base.unwrap_or(0);
        (base, end.unwrap_or(base) - base)
    };
    // The scatter of the parts `kv` (0 keys, 1 values), each cache `dst[p]` bytes into the
    // destination window of `dst_bytes`, the queries where `queries`.
    let job = |kv: &[usize], src: (u64, u64), dst: [u64; 2], dst_bytes, queries: bool| {
        let (src_base, src_bytes) = src;
        let from = |p: usize| view(at.sources[reads[p].source] - src_base) + reads[p].offset;
        ScatterJob {
            tokens: plan.tokens as u64,
            capacity: plan.slots() as u64,
            rule,
            src_bytes: view(src_bytes),
            dst_bytes,
            parts: kv
                .iter()
                .map(|&p| scatter_part(plan, dtype, from(p), reads[p].stride, dst[p]))
                .collect(),
            copy: match queries && plan.queries {
                true => query_entries(plan, dtype, view(at.sources[0] - src_base), reads[0].stride),
                false => Vec::new(),
            },
            counts: kv[0] == 0,
        }
    };
    let both = window(&[0, 1]);
    let dst_base = at.caches[0].min(at.caches[1]);
    let dst = at.caches.map(|c| c - dst_base);
    let dst_bytes = dst[0].max(dst[1]) + sizes.cache;
    if at.one_source && at.one_cache_window && both.1 <= limit && dst_bytes <= limit {
        return vec![PagedJob {
            job: job(&[0, 1], both, dst, dst_bytes, true),
            src_base: both.0,
            src_size: both.1,
            dst_base,
            values: false,
        }];
    }
    (0..2)
        .map(|p| {
            let src = window(&[p]);
            PagedJob {
                job: job(&[p], src, [0, 0], sizes.cache, p == 0),
                src_base: src.0,
                src_size: src.1,
                dst_base: at.caches[p],
                values: p == 1,
            }
        })
        .collect()
}

/// Where a paged write reads the keys (`[0]`) or the values (`[1]`): its source, the bytes
/// from that source's start to its first token's, and its token stride in bytes.
#[derive(Debug, Clone, Copy)]
struct Read {
    source: usize,
    offset: u64,
    stride: u64,
}

/// The keys' and the values' reads of `plan` in `dtype`.
fn reads(plan: &PagedKvPlan, dtype: DType) -> [Read; 2] {
    let b = PagedBytes::of(plan, dtype);
    let es = dtype.size() as u64;
    match plan.kv_strides {
        None => [
            Read {
                source: 0,
                offset: b.q_row,
                stride: b.token,
            },
            Read {
                source: 1,
                offset: b.q_row + b.kv_row,
                stride: b.token,
            },
        ],
        Some([k, v]) => [
            Read {
                source: 0,
                offset: 0,
                stride: k as u64 * es,
            },
            Read {
                source: 1,
                offset: 0,
                stride: v as u64 * es,
            },
        ],
    }
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
    /// The conversion the shader reads the sources through into caches of `dtype` (`None`:
    /// one dtype); a pair it does not convert is [`SplitError::DataMismatch`], queries going
    /// out through a conversion [`SplitError::ConflictingInputs`].
    #[doc(hidden)]
    pub fn conversion(&self, dtype: DType) -> Result<Option<Convert>> {
        let convert = Convert::of(self.rows_dtype(dtype), dtype)?;
        if let (Some(_), true) = (convert, self.queries) {
            return Err(SplitError::ConflictingInputs(format!(
                "a paged write of {} sources into {dtype} caches leaves the queries in place \
                 (PagedKvPlan::without_queries): only the keys and the values convert",
                self.rows_dtype(dtype)
            )));
        }
        Ok(convert)
    }

    /// The bytes each region binds from its offset for a paged write of `dtype` whose slots
    /// are `index_type`: `[first source, second source, slots, queries, cache]` (each
    /// cache's; the second source 0 where the plan reads one, the queries 0 where none go
    /// out), each source and the queries rounded up to 4. A host's region holds at least so
    /// many; the status takes `RowsStatus::BYTES`.
    ///
    /// ```
    /// use wgsl_split::{ops, CacheLayout, DType};
    /// // 4 tokens of 32 query heads and 8 KV heads of 128, into 64 blocks of 16 slots.
    /// let plan = ops::paged_kv_write(4, 32, 8, 128, 64, 16, CacheLayout::Nhd)?;
    /// let [qkv, none, slots, queries, cache] = plan.bytes(DType::F16, DType::I64)?;
    /// assert_eq!((qkv, none, slots), (4 * 48 * 128 * 2, 0, 4 * 8));
    /// assert_eq!((queries, cache), (4 * 32 * 128 * 2, 64 * 16 * 8 * 128 * 2));
    /// // K and V of their own, K a view into a wider tensor: its last token's row ends early.
    /// let plan = plan.with_separate_kv(2048, 1024)?;
    /// let [key, value, _, queries, _] = plan.bytes(DType::F16, DType::I64)?;
    /// assert_eq!((key, value, queries), ((3 * 2048 + 1024) * 2, 4 * 1024 * 2, 0));
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn bytes(&self, dtype: DType, index_type: DType) -> Result<[u64; 5]> {
        let plan = PagedKvPlan::new(*self)?;
        plan.conversion(dtype)?;
        let capacity = plan.slots() as u64;
        let rule = crate::rows::index_rule(index_type, NegativeIndex::Padding, capacity)?;
        let s = paged_sizes(&plan, dtype, rule.words);
        let second = if plan.kv_strides.is_some() {
            s.sources[1]
        } else {
            0
        };
        Ok([s.sources[0], second, s.slots, s.queries, s.cache])
    }
}

/// The bytes a paged write of `plan` in `dtype` binds of each region, its slots of `words`
/// (a fused projection's twice, as both sources).
pub fn paged_sizes(plan: &PagedKvPlan, dtype: DType, words: u32) -> Sizes {
    let b = PagedBytes::of(plan, dtype);
    let es = dtype.size() as u64;
    // A source's bytes behind the view the shader reads (the caches' dtype).
    let convert = plan.conversion(dtype).ok().flatten();
    let input = |view: u64| binding_bytes(convert.map_or(view, |c| c.input_bytes(view)));
    let strided = |stride: usize| match b.tokens {
        0 => 0,
        t => input((t - 1) * stride as u64 * es + b.kv_row),
    };
    let queries = match plan.queries {
        true => binding_bytes(b.tokens * b.q_row),
        false => 0,
    };
    Sizes {
        sources: match plan.kv_strides {
            None => [input(b.tokens * b.token); 2],
            Some([k, v]) => [strided(k), strided(v)],
        },
        slots: b.tokens * 4 * words as u64,
        queries,
        cache: b.cache,
    }
}

/// The keys' or the values' rows of `plan` in `dtype`, read from `src_offset` of the source
/// window a token `src_stride` bytes on, placed from `dst_offset` of the destination window.
fn scatter_part(
    plan: &PagedKvPlan,
    dtype: DType,
    src_offset: u64,
    src_stride: u64,
    dst_offset: u64,
) -> ScatterRows {
    let PagedBytes {
        head, kv_row: row, ..
    } = PagedBytes::of(plan, dtype);
    let bs = plan.block_size as u64;
    match plan.layout {
        CacheLayout::Nhd => ScatterRows {
            src_offset,
            src_stride,
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
            src_stride,
            src_head_step: head,
            heads: plan.kv_heads as u64,
            row_bytes: head,
            dst_offset,
            block_size: bs,
            dst_block_stride: bs * row,
            dst_slot_stride: head,
            dst_head_stride: bs * head,
        },
    }
}

/// The queries' entries of `plan` in `dtype`, read from `src` of the source window a token
/// `token` bytes on: packed, one entry of rows of all heads; heads-first, an entry a head, of
/// rows of one head, each head's block after the last (`check_heads_first`). Every count
/// fits u32 where the dispatch is made: `scatter_dispatch` refuses the rest.
fn query_entries(plan: &PagedKvPlan, dtype: DType, src: u64, token: u64) -> Vec<Entry> {
    let PagedBytes {
        tokens: t,
        head,
        q_row,
        ..
    } = PagedBytes::of(plan, dtype);
    match plan.heads_first {
        false => vec![Entry {
            out_bytes: (t * q_row) as u32,
            row_bytes: q_row as u32,
            src_stride: token as u32,
            src_offset: src as u32,
            mode: Mode::of(q_row | token | src) as u32,
            dst_stride: q_row as u32,
            ..Entry::default()
        }],
        true => (0..plan.q_heads as u64)
            .map(|h| Entry {
                dst_unit: (h * t * head / 16) as u32,
                out_bytes: (t * head) as u32,
                row_bytes: head as u32,
                src_stride: token as u32,
                src_offset: (src + h * head) as u32,
                mode: Mode::of(head | token | (src + h * head)) as u32,
                dst_stride: head as u32,
                ..Entry::default()
            })
            .collect(),
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
    /// Each source's (a fused projection's in both).
    pub sources: [u64; 2],
    pub slots: u64,
    pub queries: u64,
    pub cache: u64,
}

#[cfg(test)]
#[path = "paged_tests.rs"]
mod tests;
