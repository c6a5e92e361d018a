//! A paged KV write as engines call it, on their own buffers, with Llama-3-8B's shapes (32
//! query heads, 8 KV heads of 128, blocks of 16, f16): vLLM's `reshape_and_cache_flash(key,
//! value, key_cache, value_cache, slot_mapping, ..)` with K and V views into the projection
//! after RoPE, each cache in a buffer of its own, no query copy; llama.cpp's `set_rows` of
//! its own K and V tensors; the queries between the caches. Byte for byte against the CPU
//! reference, the status too; then each misuse of the regions, refused by name.

#[macro_use]
mod common;

use common::Rng;
use wgpu::util::DeviceExt;
use wgpu::BufferUsages as U;
use wgpu_split::{ops, BufferRegion, CacheLayout, DType, GpuSplitter, HostTensor, Outputs};
use wgpu_split::{PagedKvBuffers, PagedKvPlan, RowsStatus, SplitError};

const TOKENS: usize = 64;
const HEADS: (usize, usize, usize) = (32, 8, 128);
/// Elements of one token's row of the fused projection.
const ROW: usize = (HEADS.0 + 2 * HEADS.1) * HEADS.2;
const KV: usize = HEADS.1 * HEADS.2;

/// Llama-3-8B's paged write of `TOKENS` into 16 blocks of 16 slots, NHD, fused.
fn fused() -> PagedKvPlan {
    let (hq, hkv, d) = HEADS;
    ops::paged_kv_write(TOKENS, hq, hkv, d, 16, 16, CacheLayout::Nhd).unwrap()
}

fn buffer(gpu: &GpuSplitter, bytes: &[u8], usage: U) -> wgpu::Buffer {
    let device = gpu.device();
    device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: bytes,
        usage: usage | U::STORAGE | U::COPY_SRC,
    })
}

/// The region of `buffer` from `offset`.
fn placed(buffer: &wgpu::Buffer, offset: u64) -> BufferRegion<'_> {
    BufferRegion { buffer, offset }
}

/// `size` bytes of `b` from `at`, read back.
fn read(gpu: &GpuSplitter, b: &wgpu::Buffer, at: u64, size: u64) -> Vec<u8> {
    let encoder = gpu.device().create_command_encoder(&Default::default());
    common::submit_and_read(gpu, encoder, b)[at as usize..(at + size) as usize].to_vec()
}

/// One step's tensors: the fused projection, the slots (64 distinct of 256 as i64, 4 padding
/// and one out of range), the caches before it.
struct Step {
    qkv: HostTensor,
    slots: HostTensor,
    k: HostTensor,
    v: HostTensor,
}

impl Step {
    fn new(rng: &mut Rng) -> Self {
        let plan = fused();
        let tensor = |rng: &mut Rng, shape: Vec<usize>| {
            let n = shape.iter().product::<usize>() * 2;
            HostTensor::new(DType::F16, shape, rng.bytes(n)).unwrap()
        };
        let mut free: Vec<i64> = (0..plan.slots() as i64).collect();
        let mut slots: Vec<i64> = (0..TOKENS)
            .map(|_| free.swap_remove(rng.below(free.len() as u64) as usize))
            .collect();
        slots[5..9].fill(-1);
        slots[40] = plan.slots() as i64 + 7;
        Step {
            qkv: tensor(rng, plan.qkv_shape()),
            slots: HostTensor::from_slice(&[TOKENS], &slots).unwrap(),
            k: tensor(rng, plan.cache_shape()),
            v: tensor(rng, plan.cache_shape()),
        }
    }

    /// What the fused write gives: the queries, the caches, the status.
    fn want(&self) -> wgpu_split::reference::PagedKvOutput {
        let tensors = [&self.qkv, &self.slots, &self.k, &self.v].map(Clone::clone);
        fused().reference(&tensors).unwrap()
    }
}

/// Runs `plan` prepared from `sources` into `to` with a status of its own; checks its
/// dispatches, then the bytes of each region `to` writes (`want`, in `to`'s order) and the
/// status.
#[allow(clippy::too_many_arguments)]
fn check(
    gpu: &GpuSplitter,
    what: &str,
    plan: &PagedKvPlan,
    sources: &[BufferRegion],
    slots: &wgpu::Buffer,
    to: &[BufferRegion],
    want: &[&HostTensor],
    status: RowsStatus,
    dispatches: u32,
) {
    let status_buf = buffer(gpu, &[0; 16], U::empty());
    let from = PagedKvBuffers {
        sources,
        slots: slots.into(),
        index_type: DType::I64,
        status: Some((&status_buf).into()),
    };
    let node = gpu
        .prepare(plan, DType::F16, from, Outputs::Regions(to))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(node.recorded().dispatches, dispatches, "{what}");
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    node.encode(&mut encoder).unwrap();
    gpu.queue().submit([encoder.finish()]);
    for (k, (r, w)) in to.iter().zip(want).enumerate() {
        let got = read(gpu, r.buffer, r.offset, w.bytes().len() as u64);
        if let Some(i) = (0..got.len()).find(|&i| got[i] != w.bytes()[i]) {
            panic!("{what}: region {k}, byte {i} of {} differs", got.len());
        }
    }
    let got = RowsStatus::from_bytes(&read(gpu, &status_buf, 0, 8)).unwrap_or_default();
    assert_eq!(got, status, "{what}");
}

/// vLLM's call: K and V views into the projection after RoPE (a token `ROW` elements on),
/// each cache in a buffer of its own, the queries left in place: a dispatch a cache. Then
/// both caches in one buffer: one dispatch.
fn vllm_call(gpu: &'static GpuSplitter) {
    let step = Step::new(&mut Rng(86));
    let want = step.want();
    let es = 2u64;
    let plan = fused().with_separate_kv(ROW, ROW).unwrap();
    let qkv = buffer(gpu, step.qkv.bytes(), U::empty());
    let slots = buffer(gpu, step.slots.bytes(), U::empty());
    let key = BufferRegion {
        buffer: &qkv,
        offset: (HEADS.0 * HEADS.2) as u64 * es,
    };
    let value = BufferRegion {
        buffer: &qkv,
        offset: ((HEADS.0 + HEADS.1) * HEADS.2) as u64 * es,
    };
    let k_cache = buffer(gpu, step.k.bytes(), U::empty());
    let v_cache = buffer(gpu, step.v.bytes(), U::empty());
    let caches = [(&k_cache).into(), (&v_cache).into()];
    let written = [&want.k_cache, &want.v_cache];
    let (sources, status) = ([key, value], want.status);
    check(
        gpu, "vLLM", &plan, &sources, &slots, &caches, &written, status, 2,
    );
    // Both caches in one buffer, the value cache one alignment past the key cache.
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    let v_at = (step.k.bytes().len() as u64).next_multiple_of(align);
    let mut both = step.k.bytes().to_vec();
    both.resize(v_at as usize, 0);
    both.extend_from_slice(step.v.bytes());
    let both = buffer(gpu, &both, U::empty());
    let v_region = BufferRegion {
        buffer: &both,
        offset: v_at,
    };
    let caches = [(&both).into(), v_region];
    check(
        gpu,
        "one buffer",
        &plan,
        &sources,
        &slots,
        &caches,
        &written,
        status,
        1,
    );
}

/// llama.cpp's: K and V tensors of their own (`[tokens, 8, 128]`, packed), the caches in
/// one buffer: a dispatch a source. And the fused projection's queries out, placed between
/// the two caches in one buffer: a dispatch a cache, nothing refused.
fn own_tensors_and_queries_between(gpu: &'static GpuSplitter) {
    let step = Step::new(&mut Rng(87));
    let want = step.want();
    let es = 2;
    let rows = |from: usize| -> Vec<u8> {
        (0..TOKENS)
            .flat_map(|t| step.qkv.bytes()[(t * ROW + from) * es..][..KV * es].to_vec())
            .collect()
    };
    let keys = buffer(gpu, &rows(HEADS.0 * HEADS.2), U::empty());
    let values = buffer(gpu, &rows((HEADS.0 + HEADS.1) * HEADS.2), U::empty());
    let slots = buffer(gpu, step.slots.bytes(), U::empty());
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    let cache = step.k.bytes().len() as u64;
    let q_bytes = want.queries.bytes().len() as u64;
    // [k_cache | queries | v_cache], each at the alignment.
    let q_at = cache.next_multiple_of(align);
    let v_at = (q_at + q_bytes).next_multiple_of(align);
    let mut bytes = vec![0u8; (v_at + cache) as usize];
    bytes[..cache as usize].copy_from_slice(step.k.bytes());
    bytes[v_at as usize..].copy_from_slice(step.v.bytes());

    let out = buffer(gpu, &bytes, U::empty());
    let plan = fused().with_separate_kv(KV, KV).unwrap();
    let sources = [(&keys).into(), (&values).into()];
    let caches = [placed(&out, 0), placed(&out, v_at)];
    let written = [&want.k_cache, &want.v_cache];
    let status = want.status;
    check(
        gpu,
        "llama.cpp",
        &plan,
        &sources,
        &slots,
        &caches,
        &written,
        status,
        2,
    );
    let out = buffer(gpu, &bytes, U::empty());
    let qkv = buffer(gpu, step.qkv.bytes(), U::empty());
    let to = [placed(&out, q_at), placed(&out, 0), placed(&out, v_at)];
    let written = [&want.queries, &want.k_cache, &want.v_cache];
    let sources = [(&qkv).into()];
    check(
        gpu,
        "queries between",
        &fused(),
        &sources,
        &slots,
        &to,
        &written,
        status,
        2,
    );
}

/// Each misuse of the regions is refused, naming the rule: the sources' count, a source not
/// at a multiple of 4, a cache in a source's buffer, caches that overlap, the regions' count.
fn misuse_is_refused(gpu: &'static GpuSplitter) {
    let plan = fused().with_separate_kv(KV, KV).unwrap();
    let [source, _, slots_bytes, _, cache] = plan.bytes(DType::F16, DType::I64).unwrap();
    let src = buffer(gpu, &vec![0; source.max(cache) as usize + 8], U::empty());
    let slots = buffer(gpu, &vec![0; slots_bytes as usize], U::empty());
    let caches = buffer(gpu, &vec![0; 3 * cache as usize], U::empty());
    let at = |b, offset| BufferRegion { buffer: b, offset };
    let refused = |sources: &[BufferRegion], to: &[BufferRegion], rule: &str| {
        let from = PagedKvBuffers {
            sources,
            slots: (&slots).into(),
            index_type: DType::I64,
            status: None,
        };
        let e = gpu
            .prepare(&plan, DType::F16, from, Outputs::Regions(to))
            .unwrap_err();
        assert!(
            matches!(e, SplitError::BadBuffer(ref m) if m.contains(rule)),
            "{rule}: {e}"
        );
    };
    let two = [at(&caches, 0), at(&caches, 2 * cache)];
    let one = [at(&src, 0)];
    refused(
        &one,
        &two,
        "1 sources for a paged write that reads [key, value]",
    );
    let odd = [at(&src, 0), at(&src, 2)];
    refused(&odd, &two, "value offset 2 is not a multiple of 4 bytes");
    let sources = [at(&src, 0), at(&src, 8)];
    refused(
        &sources,
        &[at(&caches, 0), at(&src, 0)],
        "v_cache is in the key's buffer",
    );
    let overlap = [at(&caches, 0), at(&caches, cache / 2 / 256 * 256)];
    refused(&sources, &overlap, "k_cache (bytes 0 to");
    refused(&sources, &two[..1], "two regions, &[k_cache, v_cache]");
}

per_backend!(
    vllm_call,
    own_tensors_and_queries_between,
    misuse_is_refused
);
