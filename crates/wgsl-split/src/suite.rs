//! The benchmark suite's cases (`bench` feature): [`Case`] and [`standard_suite`], the cases
//! of the results tables in `docs/performance.md`, and how each case's parts lie
//! ([`Layout`]); the cases of rows placed by indices ([`RowsCase`], [`rows_suite`]). Every
//! host times the same cases: `wgpu-split bench`, the page through
//! wgpu-split in wasm, and the page through the JavaScript driver.

use crate::error::Result;
use crate::ops::{self, Attention, Operator};
use crate::plan::{CacheLayout, PagedKvPlan, PartView, RowsPlan, SplitPlan};
use crate::tensor::{byte_count, IntTensor};
use crate::DType;

/// How a case's parts lie.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Every part in one region at the storage offset alignment (`Outputs::Region`,
    /// `Inputs::Region`).
    Packed,
    /// Packed QKV split into Q `[B, Hq, S, D]` and into K and V caches of `cache_len`
    /// positions from `position` on ([`Attention::split_qkv`]).
    Qkv {
        /// The layer's shapes.
        layer: Attention,
        /// Positions of each cache.
        cache_len: usize,
        /// Where this step's tokens go.
        position: usize,
    },
    /// The heads `[B, H, S, D]` read as `[B, S, H, D]` ([`Attention::merge_heads`]).
    MergeHeads(Attention),
    /// Each part written with its axes permuted (numpy's transpose; `run --transpose`), in a
    /// buffer of its own: `[0, 2, 3, 1]` writes an image's channels channels-last.
    Transposed(&'static [usize]),
}

impl Layout {
    /// The parts' views of `plan`'s parts and their regions' bytes; `None` for
    /// [`Layout::Packed`].
    pub fn views(
        &self,
        plan: &SplitPlan,
        es: usize,
    ) -> Result<Option<(Vec<PartView>, Vec<usize>)>> {
        Ok(match *self {
            Layout::Packed => None,
            Layout::Qkv {
                layer: a,
                cache_len,
                position,
            } => {
                let (_, views) = a.split_qkv(cache_len, position)?;
                let cache = a.batch * a.kv_heads * cache_len * a.head_dim * es;
                let q = a.batch * a.q_heads * a.seq * a.head_dim * es;
                Some((views.to_vec(), vec![q, cache, cache]))
            }
            Layout::MergeHeads(a) => {
                let (_, [view]) = a.merge_heads()?;
                Some((
                    vec![view],
                    vec![a.batch * a.q_heads * a.seq * a.head_dim * es],
                ))
            }
            Layout::Transposed(perm) => {
                let (mut views, mut sizes) = (Vec::new(), Vec::new());
                for shape in plan.part_shapes() {
                    let stored: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
                    views.push(PartView::within(
                        &shape,
                        &stored,
                        perm,
                        &vec![0; shape.len()],
                    )?);
                    sizes.push(shape.iter().product::<usize>() * es);
                }
                Some((views, sizes))
            }
        })
    }
}

/// One benchmark case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Short name (`qkv`, `glu`, ...).
    pub name: &'static str,
    /// Element type.
    pub dtype: DType,
    /// Input shape.
    pub shape: Vec<usize>,
    /// The operator and its parameters.
    pub op: Operator,
    /// A concat: the split read the other way, from its outputs (the concat's inputs, placed
    /// at the storage alignment in one region, `Inputs::Region`) back into `shape`.
    pub concat: bool,
    /// Where the parts lie: packed in one region, or through views in buffers of their own
    /// (the attention cases, timed against the unfused way too).
    pub layout: Layout,
}

impl Case {
    /// Validates and plans the case, once per case, as an engine plans a node once.
    pub fn plan(&self) -> Result<SplitPlan> {
        self.op.plan(&self.shape)
    }

    /// The operator's name, `concat` for a concat case.
    pub fn op_name(&self) -> &'static str {
        if self.concat {
            "concat"
        } else {
            self.op.name()
        }
    }

    /// Bytes of the whole tensor: a split's input, a concat's output.
    pub fn bytes(&self) -> Result<usize> {
        byte_count(&self.shape, self.dtype)
    }
}

/// The standard suite of the results tables in `docs/performance.md`.
pub fn standard_suite() -> Vec<Case> {
    let case = |name, dtype, shape: &[usize], op| Case {
        name,
        dtype,
        shape: shape.to_vec(),
        op,
        concat: false,
        layout: Layout::Packed,
    };

    let split = |axis, num_splits| Operator::Split {
        axis: IntTensor::scalar(axis),
        num_splits,
    };
    let variadic = |axis, lengths: &[i64]| Operator::VariadicSplit {
        axis: IntTensor::scalar(axis),
        split_lengths: IntTensor::vector(lengths.to_vec()),
    };
    // A concat of inputs of `lengths` along `axis` into `shape`, its output.
    let concat = |name, dtype, shape: &[usize], axis, lengths: &[i64]| Case {
        concat: true,
        ..case(name, dtype, shape, variadic(axis, lengths))
    };
    // Packed QKV [1, S, Hq + 2 Hkv, 128] f16 through views into Q and K, V caches; and the
    // heads [1, 32, 2048, 128] merged into [1, 2048, 32 * 128].
    let layer = |seq, q_heads, kv_heads| Attention {
        batch: 1,
        seq,
        q_heads,
        kv_heads,
        head_dim: 128,
    };
    let qkv = |name, layer: Attention, cache_len, position| Case {
        layout: Layout::Qkv {
            layer,
            cache_len,
            position,
        },
        ..case(
            name,
            DType::F16,
            &[1, layer.seq, layer.q_heads + 2 * layer.kv_heads, 128],
            variadic(
                2,
                &[
                    layer.q_heads as i64,
                    layer.kv_heads as i64,
                    layer.kv_heads as i64,
                ],
            ),
        )
    };
    let merge = Case {
        layout: Layout::MergeHeads(layer(2048, 32, 32)),
        ..concat("merge_heads", DType::F16, &[1, 2048, 32, 128], 2, &[32])
    };
    vec![
        case("spec_split", DType::F32, &[6, 12, 10, 24], split(1, 3)),
        case("qkv", DType::F32, &[4, 512, 3072], split(-1, 3)),
        case("glu", DType::F16, &[8, 1024, 8192], split(-1, 2)),
        case(
            "batch0",
            DType::F32,
            &[64, 256, 1024],
            variadic(0, &[16, 16, 32]),
        ),
        case("heads64", DType::F32, &[512, 4096], split(1, 64)),
        case(
            "bytes_odd",
            DType::U8,
            &[16384, 4095],
            variadic(1, &[1365, 1365, 1365]),
        ),
        case(
            "seq_many",
            DType::F32,
            &[4096, 2048],
            Operator::SplitToSequence {
                axis: 0,
                split: None,
                keepdims: false,
            },
        ),
        case("tiny_runs", DType::F32, &[4194304, 4], split(1, 4)),
        // Eight f32 feature columns split apart (`concat_columns` read the other way).
        case("columns", DType::F32, &[2097152, 8], split(1, 8)),
        // Four 1080p RGB frames into their planes: rows of one byte.
        case("rgb_planes", DType::U8, &[4, 1080, 1920, 3], split(3, 3)),
        case(
            "word_odd",
            DType::F32,
            &[16384, 1023],
            variadic(1, &[341, 341, 341]),
        ),
        // The concat cases: a KV cache's append of one token, YOLOv8's C2f block, a sequence
        // of 4,096 rows, heads64, the RGB planes and tiny_runs read back, eight f32 columns
        // side by side, and u8 rows at odd offsets.
        concat(
            "concat_kv_append",
            DType::F16,
            &[1, 32, 4096, 128],
            2,
            &[4095, 1],
        ),
        concat("concat_c2f", DType::F32, &[1, 256, 80, 80], 1, &[64; 4]),
        concat("concat_many", DType::F32, &[4096, 2048], 0, &[1; 4096]),
        concat("concat_heads64", DType::F32, &[512, 4096], 1, &[64; 64]),
        concat("concat_rgb", DType::U8, &[4, 1080, 1920, 3], 3, &[1, 1, 1]),
        concat("concat_tiny_runs", DType::F32, &[4194304, 4], 1, &[1; 4]),
        concat("concat_columns", DType::F32, &[2097152, 8], 1, &[1; 8]),
        concat(
            "concat_bytes_odd",
            DType::U8,
            &[16384, 4095],
            1,
            &[1365, 1365, 1365],
        ),
        // An image's 8 channels split in two, into packed parts and each part written
        // channels-last.
        case("channels", DType::F32, &[1, 8, 1024, 1024], split(1, 2)),
        Case {
            layout: Layout::Transposed(&[0, 2, 3, 1]),
            ..case(
                "channels_last",
                DType::F32,
                &[1, 8, 1024, 1024],
                split(1, 2),
            )
        },
        // A batch of 16 RGB images written channels-last ([N, C, H, W] as [N, H, W, C]): one
        // join repeated, an image a join.
        Case {
            layout: Layout::Transposed(&[0, 2, 3, 1]),
            ..case("images_last", DType::F32, &[16, 3, 512, 512], split(1, 1))
        },
        qkv("qkv_heads", layer(2048, 32, 32), 2048, 0),
        qkv("gqa_prefill", layer(2048, 32, 8), 4096, 1024),
        qkv("decode_step", layer(1, 32, 8), 4096, 4095),
        merge,
    ]
}

/// A case of rows placed by indices.
#[derive(Debug, Clone)]
pub struct RowsCase {
    /// Short name (`embedding`, `paged_decode`, ...).
    pub name: &'static str,
    /// Element type.
    pub dtype: DType,
    /// What moves.
    pub kind: RowsCaseKind,
}

/// What a case of rows placed by indices moves.
#[derive(Debug, Clone)]
pub enum RowsCaseKind {
    /// A gather or a scatter ([`RowsPlan`]), by indices of `index_type` at random distinct
    /// places.
    Rows {
        /// The plan.
        plan: RowsPlan,
        /// [`DType::I32`] or [`DType::I64`].
        index_type: DType,
    },
    /// A paged KV write, `padding` of its tokens' slots -1, the others random and distinct.
    Paged {
        /// The plan.
        plan: PagedKvPlan,
        /// Padding tokens.
        padding: usize,
    },
}

/// The cases of rows placed by indices, Llama-3-8B's shapes (32 query heads, 8 KV heads of
/// 128, blocks of 16 slots, f16): `embedding` (512 i32 ids into a `[32000, 4096]` table),
/// `gather_last` and `gather_last_u8` (ONNX Gather of 512 i64 ids on the last axis of
/// `[8000, 4096]`, f32 and u8: rows of one element), `set_rows` (512 rows of `[4096, 4096]`
/// f32 by i64 indices), `set_rows_f16` (the same rows, f32, rounded into an f16
/// `[4096, 4096]`), `get_rows_f32` (512 rows of an f16 `[8000, 4096]` read into f32),
/// `paged_decode` (64 tokens, 4
/// of them padding) and `paged_prefill` (2,048 tokens) in NHD, `paged_prefill_hnd`, and
/// `paged_prefill_kv`: 2,048 tokens' keys and values from tensors of their own (as vLLM
/// passes them after RoPE: the keys packed, the values a view into the fused projection),
/// each cache in a buffer of its own, no queries. The caches have 2,048 blocks each, so
/// both lie in one binding of 128 MiB (the CPU adapters'): the bytes moved are the
/// tokens', whatever the caches' size.
pub fn rows_suite() -> Vec<RowsCase> {
    let llama = |tokens, layout| ops::paged_kv_write(tokens, 32, 8, 128, 2048, 16, layout);
    let rows = |name, dtype, plan: Result<RowsPlan>, index_type| RowsCase {
        name,
        dtype,
        kind: RowsCaseKind::Rows {
            plan: plan.expect("the suite's plans are valid"),
            index_type,
        },
    };
    let paged = |name, plan: Result<PagedKvPlan>, padding| RowsCase {
        name,
        dtype: DType::F16,
        kind: RowsCaseKind::Paged {
            plan: plan.expect("the suite's plans are valid"),
            padding,
        },
    };
    vec![
        rows(
            "embedding",
            DType::F16,
            ops::get_rows(&[32000, 4096], &[512]),
            DType::I32,
        ),
        // ONNX Gather on the last axis: 512 columns of each of 8,000 rows picked by i64
        // ids, elements of 4 bytes and of 1 (the rows every embedding lookup is not).
        rows(
            "gather_last",
            DType::F32,
            ops::gather(&[8000, 4096], &[512], 1),
            DType::I64,
        ),
        rows(
            "gather_last_u8",
            DType::U8,
            ops::gather(&[8000, 4096], &[512], 1),
            DType::I64,
        ),
        rows(
            "set_rows",
            DType::F32,
            ops::set_rows(&[4096, 4096], &[512]),
            DType::I64,
        ),
        // ggml's SET_ROWS as llama.cpp calls it: f32 activations into an f16 cache.
        rows(
            "set_rows_f16",
            DType::F16,
            ops::set_rows(&[4096, 4096], &[512]).map(|p| p.with_rows_dtype(DType::F32)),
            DType::I64,
        ),
        // An f16 table's rows read into f32 activations.
        rows(
            "get_rows_f32",
            DType::F16,
            ops::get_rows(&[8000, 4096], &[512]).map(|p| p.with_rows_dtype(DType::F32)),
            DType::I64,
        ),
        paged("paged_decode", llama(64, CacheLayout::Nhd), 4),
        paged("paged_prefill", llama(2048, CacheLayout::Nhd), 0),
        paged("paged_prefill_hnd", llama(2048, CacheLayout::Hnd), 0),
        paged(
            "paged_prefill_kv",
            llama(2048, CacheLayout::Nhd).and_then(|p| p.with_separate_kv(8 * 128, 48 * 128)),
            0,
        ),
    ]
}
