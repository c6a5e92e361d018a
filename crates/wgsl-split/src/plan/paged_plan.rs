//! [`PagedKvPlan`]: a paged KV cache written from the fused QKV projection (the queries
//! written out beside it, or left in place), or from keys and values in tensors of their
//! own. Pure shape arithmetic.

use crate::error::{Result, SplitError};
use crate::plan::MAX_GATHER_AXIS;

/// How a paged cache lays out one block of slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheLayout {
    /// `[blocks, block_size, kv_heads, head_dim]`: a slot's heads side by side (vLLM's
    /// `reshape_and_cache_flash`, FlashInfer's NHD).
    Nhd,
    /// `[blocks, kv_heads, block_size, head_dim]`: a head's slots side by side (FlashInfer's
    /// HND).
    Hnd,
}

/// A paged KV write ([`crate::ops::paged_kv_write`]). It reads its sources, a row per token:
/// - the fused projection `qkv` (one source): a token's queries, then its keys, then its
///   values (`q_heads`, `kv_heads` and `kv_heads` heads of `head_dim`), whose queries go out
///   packed (`[tokens, q_heads * head_dim]`, or heads first), unless
///   [`PagedKvPlan::without_queries`] leaves them in place;
/// - or, after [`PagedKvPlan::with_separate_kv`], the keys and the values (two sources),
///   each `[tokens, kv_heads, head_dim]` with a token stride of its own (vLLM's
///   `key.stride(0)`), as vLLM's `reshape_and_cache_flash` and llama.cpp's `set_rows` take
///   them after RoPE.
///
/// The keys and values go to their caches of `blocks` blocks of `block_size` slots at
/// `slot_mapping[t]`: slot `s` is block `s / block_size`, place `s % block_size`. A slot of
/// -1 is padding: no byte of that token's keys and values moves, and it is not counted. Any
/// other slot outside the caches is counted in the status and moves nothing (its queries
/// still move).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PagedKvPlan {
    #[doc(hidden)]
    pub tokens: usize,
    #[doc(hidden)]
    pub q_heads: usize,
    #[doc(hidden)]
    pub kv_heads: usize,
    #[doc(hidden)]
    pub head_dim: usize,
    #[doc(hidden)]
    pub blocks: usize,
    #[doc(hidden)]
    pub block_size: usize,
    #[doc(hidden)]
    pub layout: CacheLayout,
    #[doc(hidden)]
    pub heads_first: bool,
    /// Whether the queries go out (a fused projection's).
    #[doc(hidden)]
    pub queries: bool,
    /// The keys' and the values' token strides in elements, each in a source of its own;
    /// `None`: both in the fused projection.
    #[doc(hidden)]
    pub kv_strides: Option<[usize; 2]>,
    /// The sources' dtype where it is not the caches' (f32 into f16 or bf16 caches).
    #[doc(hidden)]
    pub rows_dtype: Option<crate::DType>,
}

impl PagedKvPlan {
    /// Checks the sizes: every count at least 1 but `tokens`, the slots (`blocks *
    /// block_size`) at most [`MAX_GATHER_AXIS`].
    #[doc(hidden)]
    pub fn new(plan: PagedKvPlan) -> Result<Self> {
        let sizes = [
            ("q_heads", plan.q_heads),
            ("kv_heads", plan.kv_heads),
            ("head_dim", plan.head_dim),
            ("blocks", plan.blocks),
            ("block_size", plan.block_size),
        ];
        for (what, n) in sizes {
            if n == 0 {
                return Err(SplitError::DataMismatch(format!(
                    "a paged write's {what} is 0; it must be at least 1"
                )));
            }
        }
        let slots = plan.blocks.checked_mul(plan.block_size);
        if slots.is_none_or(|s| s > MAX_GATHER_AXIS) {
            return Err(SplitError::TooLarge(format!(
                "{} blocks of {} slots; a paged cache takes at most {MAX_GATHER_AXIS} slots",
                plan.blocks, plan.block_size
            )));
        }
        // Every count in elements, and in bytes of the widest dtype (16), fits u64.
        let heads = plan
            .kv_heads
            .checked_mul(2)
            .and_then(|k| k.checked_add(plan.q_heads));
        let row = heads.and_then(|h| h.checked_mul(plan.head_dim));
        let whole = row.and_then(|r| r.checked_mul(plan.tokens)?.checked_mul(16));
        let head = plan.kv_heads.checked_mul(plan.head_dim);
        let cache = head.and_then(|h| slots?.checked_mul(h)?.checked_mul(16));
        let strides = plan.kv_strides.unwrap_or_default();
        let sources = strides.map(|s| s.checked_mul(plan.tokens)?.checked_mul(16));
        if whole.is_none() || cache.is_none() || sources.contains(&None) {
            return Err(SplitError::TooLarge(format!("{plan:?} overflows a count")));
        }
        let kv = plan.kv_heads * plan.head_dim;
        for (what, stride) in ["key", "value"].into_iter().zip(strides) {
            if plan.kv_strides.is_some() && stride < kv {
                return Err(SplitError::BadView(format!(
                    "a {what} token stride of {stride} elements; a token's {} heads of {} \
                     take {kv}, and the next token's start after them",
                    plan.kv_heads, plan.head_dim
                )));
            }
        }
        Ok(plan)
    }

    /// Tokens (the padded batch, fixed as CUDA graphs fix it; padding slots are -1).
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// The cache's layout.
    pub fn layout(&self) -> CacheLayout {
        self.layout
    }

    /// The slots of each cache.
    pub fn slots(&self) -> usize {
        self.blocks * self.block_size
    }

    /// The fused projection's shape: `[tokens, (q_heads + 2 * kv_heads) * head_dim]`.
    pub fn qkv_shape(&self) -> Vec<usize> {
        vec![
            self.tokens,
            (self.q_heads + 2 * self.kv_heads) * self.head_dim,
        ]
    }

    /// The shapes of the tensors it reads, in order (`[qkv]`, or `[key, value]` after
    /// [`PagedKvPlan::with_separate_kv`]), in elements: a row per token, its stride long (the
    /// keys or values its first `kv_heads * head_dim` elements).
    pub fn source_shapes(&self) -> Vec<Vec<usize>> {
        match self.kv_strides {
            None => vec![self.qkv_shape()],
            Some(strides) => strides.map(|s| vec![self.tokens, s]).to_vec(),
        }
    }

    /// The keys and values read from two tensors `[tokens, kv_heads, head_dim]` of their
    /// own, a token `key_stride` and `value_stride` elements apart (vLLM's `key.stride(0)`
    /// and `value.stride(0)`; `kv_heads * head_dim` where a tensor is packed, more where it
    /// is a view into a wider one, such as the keys of a fused projection after RoPE). No
    /// queries go out. A stride below `kv_heads * head_dim` is [`SplitError::BadView`].
    ///
    /// ```
    /// use wgsl_split::{ops, CacheLayout};
    /// // Llama-3-8B: K and V views into the fused projection [tokens, (32 + 2 * 8) * 128].
    /// let plan = ops::paged_kv_write(4, 32, 8, 128, 64, 16, CacheLayout::Nhd)?
    ///     .with_separate_kv(48 * 128, 48 * 128)?;
    /// assert_eq!(plan.source_shapes(), vec![vec![4, 6144], vec![4, 6144]]);
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn with_separate_kv(self, key_stride: usize, value_stride: usize) -> Result<Self> {
        Self::new(Self {
            kv_strides: Some([key_stride, value_stride]),
            queries: false,
            heads_first: false,
            ..self
        })
    }

    /// The fused projection's queries left where they are (an attention kernel that reads
    /// them in place): only the keys and the values move.
    pub fn without_queries(self) -> Self {
        Self {
            queries: false,
            heads_first: false,
            ..self
        }
    }

    /// The sources as `dtype`, converted into the caches' dtype (the one given to
    /// `prepare`) on the way: f32 activations into f16 or bf16 caches, rounded to nearest
    /// even (a NaN stays a NaN), as ggml's `SET_ROWS` and vLLM's `reshape_and_cache` write them.
    /// The queries stay in place ([`PagedKvPlan::without_queries`], or separate K and V):
    /// a plan whose queries go out is refused at `prepare`, as is another pair of dtypes.
    pub fn with_rows_dtype(self, dtype: crate::DType) -> Self {
        Self {
            rows_dtype: Some(dtype),
            ..self
        }
    }

    /// The sources' dtype for caches of `cache`.
    pub fn rows_dtype(&self, cache: crate::DType) -> crate::DType {
        self.rows_dtype.unwrap_or(cache)
    }

    /// Whether the queries go out.
    pub fn writes_queries(&self) -> bool {
        self.queries
    }

    /// The queries written heads-first, `[q_heads, tokens, head_dim]` (attention's layout),
    /// not packed: each head's rows then follow one another, every head's block at a
    /// multiple of 16 bytes (`tokens * head_dim * element size` a multiple of 16, checked at
    /// encode). A plan that writes no queries stays as it is.
    pub fn with_heads_first_queries(self) -> Self {
        Self {
            heads_first: self.queries,
            ..self
        }
    }

    /// Whether the queries are written heads-first.
    pub fn heads_first(&self) -> bool {
        self.heads_first
    }

    /// The queries' shape: `[tokens, q_heads * head_dim]`, or `[q_heads, tokens, head_dim]`
    /// heads-first; `[tokens, 0]` where no queries go out.
    pub fn q_shape(&self) -> Vec<usize> {
        match (self.queries, self.heads_first) {
            (false, _) => vec![self.tokens, 0],
            (true, false) => vec![self.tokens, self.q_heads * self.head_dim],
            (true, true) => vec![self.q_heads, self.tokens, self.head_dim],
        }
    }

    /// Each cache's shape, in its layout.
    pub fn cache_shape(&self) -> Vec<usize> {
        match self.layout {
            CacheLayout::Nhd => vec![self.blocks, self.block_size, self.kv_heads, self.head_dim],
            CacheLayout::Hnd => vec![self.blocks, self.kv_heads, self.block_size, self.head_dim],
        }
    }
}
