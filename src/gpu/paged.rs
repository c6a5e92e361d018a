//! A paged KV write from the fused QKV projection ([`PagedKvPlan`]), prepared for the
//! caller's buffers ([`GpuSplitter::prepare_paged_kv`]) or run on host tensors
//! ([`GpuSplitter::run_paged_kv`]): the queries (a plain entry) and the keys and values (two
//! scatter entries) of the rows' program, in one dispatch of the indexed build.

use crate::error::{Result, SplitError};
use crate::gpu::device::{self, buffer_with, scoped_async};
use crate::gpu::gather::binding_bytes;
use crate::gpu::placement::BufferRegion;
use crate::gpu::prepared_rows::PreparedRows;
use crate::gpu::round_trip::{map_read, read_mapped};
use crate::gpu::GpuSplitter;
use crate::plan::{NegativeIndex, PagedKvPlan, RowsStatus};
use crate::reference::PagedKvOutput;
use crate::tensor::HostTensor;
use crate::DType;
use wgsl_split::paged::{check_heads_first, paged_sizes, record_paged, PagedBytes};
use wgsl_split::paged::{PagedRegions, Sizes};
use wgsl_split::recording::Role;
use wgsl_split::rows::index_rule;

/// Where a paged KV write reads and writes ([`GpuSplitter::prepare_paged_kv`]). Each region
/// starts at a multiple of the device's storage offset alignment.
#[derive(Debug, Clone, Copy)]
pub struct PagedKvBuffers<'a> {
    /// The fused projection, `[tokens, (q_heads + 2 * kv_heads) * head_dim]`.
    pub qkv: BufferRegion<'a>,
    /// The slot of each token, `index_type` each (-1: padding).
    pub slots: BufferRegion<'a>,
    /// [`DType::I32`] or [`DType::I64`].
    pub index_type: DType,
    /// The queries out, `[tokens, q_heads * head_dim]`.
    pub queries: BufferRegion<'a>,
    /// The key cache, in the plan's layout.
    pub k_cache: BufferRegion<'a>,
    /// The value cache: in the key cache's buffer (the indexed build binds one destination),
    /// apart from it.
    pub v_cache: BufferRegion<'a>,
    /// Where the shader counts the slots out of range ([`RowsStatus::BYTES`]); the caller
    /// zeroes it before the dispatches it checks. `None`: nothing is recorded.
    pub status: Option<BufferRegion<'a>>,
}

impl GpuSplitter {
    /// Prepares the paged write of `plan`, elements of `dtype`, with `buffers`
    /// ([`PreparedRows`]): each decode step records it in microseconds, in one dispatch,
    /// while the slots' contents change (the token count is fixed: padding keeps it static,
    /// as CUDA graphs keep it). The queries go out, each token's keys and values into the
    /// caches at its slot. A slot of -1 is padding (nothing moves, nothing is counted);
    /// another slot outside the caches moves no key or value and is counted in the status.
    pub fn prepare_paged_kv(
        &self,
        plan: &PagedKvPlan,
        dtype: DType,
        buffers: &PagedKvBuffers<'_>,
    ) -> Result<PreparedRows> {
        device::block_on(
            "GpuSplitter::prepare_paged_kv",
            self.prepare_paged_kv_async(plan, dtype, buffers),
        )
    }

    /// [`GpuSplitter::prepare_paged_kv`] for async callers, and the one for WebGPU.
    pub async fn prepare_paged_kv_async(
        &self,
        plan: &PagedKvPlan,
        dtype: DType,
        buffers: &PagedKvBuffers<'_>,
    ) -> Result<PreparedRows> {
        self.probe.check("preparing a paged KV write")?;
        let plan = PagedKvPlan::new(*plan)?;
        let rule = index_rule(buffers.index_type, NegativeIndex::Padding)?;
        let b = buffers;
        check_heads_first(&plan, dtype)?;
        let sizes = paged_sizes(&plan, dtype, rule.words);
        let base = check_regions(b, &sizes, self.offset_align())?;
        let at = PagedRegions {
            qkv: b.qkv.offset,
            slots: b.slots.offset,
            queries: b.queries.offset,
            caches: base,
            k_at: b.k_cache.offset - base,
            v_at: b.v_cache.offset - base,
            status: b.status.map(|s| s.offset),
        };
        let (limits, tuning) = (&self.limits, self.gather_tuning);
        let recording = record_paged(&plan, dtype, rule, at, limits, tuning)?;
        let buffer = |role| {
            Some(match role {
                Role::Input(0) => b.qkv.buffer,
                Role::Output(0) => b.queries.buffer,
                Role::Indices => b.slots.buffer,
                Role::Scatter => b.k_cache.buffer,
                Role::Status => b.status?.buffer,
                _ => return None,
            })
        };
        self.execute_rows(&recording, &buffer).await
    }

    /// Runs the paged write of `plan` on host tensors: uploads `qkv`, the `slots` (i32 or
    /// i64) and both caches, and reads back the queries, the caches and the status. Check it
    /// with [`crate::reference::paged_write`].
    pub fn run_paged_kv(
        &self,
        plan: &PagedKvPlan,
        qkv: &HostTensor,
        slots: &HostTensor,
        k_cache: &HostTensor,
        v_cache: &HostTensor,
    ) -> Result<PagedKvOutput> {
        device::block_on(
            "GpuSplitter::run_paged_kv",
            self.run_paged_kv_async(plan, qkv, slots, k_cache, v_cache),
        )
    }

    /// [`GpuSplitter::run_paged_kv`] for async callers, and the one for WebGPU.
    pub async fn run_paged_kv_async(
        &self,
        plan: &PagedKvPlan,
        qkv: &HostTensor,
        slots: &HostTensor,
        k_cache: &HostTensor,
        v_cache: &HostTensor,
    ) -> Result<PagedKvOutput> {
        crate::reference::check_paged_tensors(plan, qkv, slots, k_cache, v_cache)?;
        use wgpu::BufferUsages as U;
        let dtype = qkv.dtype();
        let align = self.offset_align();
        let bytes = PagedBytes::of(plan, dtype);
        let (q_bytes, cache) = (bytes.tokens * bytes.q_row, bytes.cache);
        // One target buffer: the queries, the key cache, the value cache, the status.
        let k_at = binding_bytes(q_bytes).next_multiple_of(align);
        let v_at = (k_at + binding_bytes(cache)).next_multiple_of(align);
        let status_at = (v_at + binding_bytes(cache)).next_multiple_of(align);
        let size = status_at + 16;
        let mut target = vec![0u8; size as usize];
        target[k_at as usize..][..cache as usize].copy_from_slice(k_cache.bytes());
        target[v_at as usize..][..cache as usize].copy_from_slice(v_cache.bytes());
        let made = scoped_async(&self.device, "allocating the paged write's buffers", || {
            let with = |label, bytes: &[u8], usage| buffer_with(&self.device, label, bytes, usage);
            Ok::<_, SplitError>((
                with("paged qkv", qkv.bytes(), U::STORAGE)?,
                with("paged slots", slots.bytes(), U::STORAGE)?,
                with("paged caches", &target, U::STORAGE | U::COPY_SRC)?,
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("paged readback"),
                    size: size + binding_bytes(q_bytes).max(16),
                    usage: U::MAP_READ | U::COPY_DST,
                    mapped_at_creation: false,
                }),
            ))
        });
        let (qkv_buf, slot_buf, caches, readback) = made.await??;
        let q_size = binding_bytes(q_bytes).max(16);
        let queries = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("paged queries"),
            size: q_size,
            usage: U::STORAGE | U::COPY_SRC,
            mapped_at_creation: false,
        });
        let region = |buffer, offset| BufferRegion { buffer, offset };
        let buffers = PagedKvBuffers {
            qkv: BufferRegion::from(&qkv_buf),
            slots: BufferRegion::from(&slot_buf),
            index_type: slots.dtype(),
            queries: BufferRegion::from(&queries),
            k_cache: region(&caches, k_at),
            v_cache: region(&caches, v_at),
            status: Some(region(&caches, status_at)),
        };
        let node = self.prepare_paged_kv_async(plan, dtype, &buffers).await?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        node.encode_async(&mut encoder).await?;
        scoped_async(&self.device, "submitting the paged write", || {
            encoder.copy_buffer_to_buffer(&caches, 0, &readback, 0, size);
            encoder.copy_buffer_to_buffer(&queries, 0, &readback, size, q_size);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |bytes| {
            let part = |at: u64, n: u64| bytes[at as usize..(at + n) as usize].to_vec();
            let at = status_at as usize;
            Ok(PagedKvOutput {
                queries: HostTensor::new(dtype, plan.q_shape(), part(size, q_bytes))?,
                k_cache: HostTensor::new(dtype, plan.cache_shape(), part(k_at, cache))?,
                v_cache: HostTensor::new(dtype, plan.cache_shape(), part(v_at, cache))?,
                status: RowsStatus::from_bytes(&bytes[at..at + 8]).unwrap_or_default(),
            })
        })
    }
}

/// Checks each region of `b` against `sizes` and the storage offset alignment `align`, the
/// caches in one buffer and apart, no region written in a buffer read, the regions written
/// apart; returns where the caches' window starts (the lower cache's offset).
fn check_regions(b: &PagedKvBuffers<'_>, sizes: &Sizes, align: u64) -> Result<u64> {
    let storage = wgpu::BufferUsages::STORAGE;
    b.qkv.check(
        "qkv",
        sizes.qkv,
        "its tokens, rounded up to 4",
        storage,
        align,
    )?;
    b.slots
        .check("slots", sizes.slots, "one slot per token", storage, align)?;
    b.queries.check(
        "queries",
        sizes.queries,
        "its tokens, rounded up to 4",
        storage,
        align,
    )?;
    b.k_cache
        .check("k_cache", sizes.cache, "its slots", storage, align)?;
    b.v_cache
        .check("v_cache", sizes.cache, "its slots", storage, align)?;
    if b.k_cache.buffer != b.v_cache.buffer {
        return Err(SplitError::BadBuffer(
            "the key and value caches are in two buffers; a paged write binds one destination \
             (place both caches in one buffer, apart)"
                .into(),
        ));
    }
    let cache_end = |r: &BufferRegion| r.offset + sizes.cache;
    let base = b.k_cache.offset.min(b.v_cache.offset);
    let end = cache_end(&b.k_cache).max(cache_end(&b.v_cache));
    let mut written = vec![
        ("the caches", b.k_cache.buffer, base, end),
        (
            "queries",
            b.queries.buffer,
            b.queries.offset,
            b.queries.offset + sizes.queries,
        ),
    ];
    if let Some(s) = b.status {
        s.check(
            "status",
            RowsStatus::BYTES,
            "a count and a place",
            storage,
            align,
        )?;
        written.push(("status", s.buffer, s.offset, s.offset + RowsStatus::BYTES));
    }
    let apart =
        |a: &BufferRegion, b: &BufferRegion| a.offset >= cache_end(b) || b.offset >= cache_end(a);
    if !apart(&b.k_cache, &b.v_cache) {
        return Err(SplitError::BadBuffer(format!(
            "the key cache at {} and the value cache at {} overlap ({} bytes each)",
            b.k_cache.offset, b.v_cache.offset, sizes.cache
        )));
    }
    for (i, &(name, buffer, start, stop)) in written.iter().enumerate() {
        for (read, r) in [("qkv", &b.qkv), ("slots", &b.slots)] {
            if buffer == r.buffer {
                return Err(SplitError::BadBuffer(format!(
                    "{name} are in the {read}'s buffer; wgpu binds a buffer read-only or \
                     writable in one dispatch"
                )));
            }
        }
        for &(other, o_buffer, o_start, o_stop) in &written[i + 1..] {
            if buffer == o_buffer && start < o_stop && o_start < stop {
                return Err(SplitError::BadBuffer(format!(
                    "{name} (bytes {start} to {stop}) overlap {other} (bytes {o_start} to \
                     {o_stop})"
                )));
            }
        }
    }
    Ok(base)
}
