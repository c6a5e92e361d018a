//! A paged KV write from the fused QKV projection ([`PagedKvPlan`]), as the [`Plan`] of
//! [`GpuSplitter::prepare`] and [`GpuSplitter::run`]: the queries (a plain entry) and the keys
//! and values (two scatter entries) of the rows' program, in one dispatch of the indexed
//! build.

use crate::error::{Result, SplitError};
use crate::gpu::device::{self, buffer_with, scoped_async};
use crate::gpu::gather::binding_bytes;
use crate::gpu::parts::Outputs;
use crate::gpu::placement::{BufferRegion, PartRange};
use crate::gpu::plans::{Node, Plan};
use crate::gpu::prepared::PreparedParts;
use crate::gpu::round_trip::read_mapped;
use crate::gpu::GpuSplitter;
use crate::plan::{NegativeIndex, PagedKvPlan, RowsStatus};
use crate::reference::PagedKvOutput;
use crate::tensor::HostTensor;
use crate::DType;
use wgsl_split::paged::{check_heads_first, paged_sizes, record_paged, PagedBytes};
use wgsl_split::paged::{PagedRegions, Sizes};
use wgsl_split::recording::Role;
use wgsl_split::rows::index_rule;

/// What a paged KV write ([`PagedKvPlan`]) reads, and where it counts the slots out of range:
/// the `from` of [`GpuSplitter::prepare`] and [`GpuSplitter::encode`] for a paged plan, whose
/// `to` is [`Outputs::Regions`] of the three parts of the projection it writes, in its
/// order: `&[queries, k_cache, v_cache]`. Each region starts at a multiple of the device's
/// storage offset alignment; the two caches lie apart in one buffer (the indexed build binds
/// one destination).
///
/// The queries go out (`[tokens, q_heads * head_dim]`, or heads first as the plan says),
/// each token's keys and values into the caches (in the plan's layout) at its slot, in one
/// dispatch; each decode step records it in microseconds while the slots' contents change
/// (the token count is fixed: padding keeps it static, as CUDA graphs keep it). A slot of -1
/// is padding (nothing moves, nothing is counted); another slot outside the caches moves no
/// key or value and is counted in the status.
///
/// ```no_run
/// use wgpu_split::{ops, wgpu, BufferRegion, CacheLayout, DType, GpuSplitter, Outputs};
/// use wgpu_split::PagedKvBuffers;
/// # fn step(gpu: &GpuSplitter, qkv: &wgpu::Buffer, slots: &wgpu::Buffer, q: &wgpu::Buffer,
/// #     caches: &wgpu::Buffer, status: &wgpu::Buffer) -> wgpu_split::Result<()> {
/// // 4 tokens of 32 query heads and 8 KV heads of 128, into 64 blocks of 16 slots.
/// let plan = ops::paged_kv_write(4, 32, 8, 128, 64, 16, CacheLayout::Nhd)?;
/// let cache = (64 * 16 * 8 * 128 * 2) as u64; // bytes of one f16 cache
/// let from = PagedKvBuffers {
///     qkv: qkv.into(),
///     slots: slots.into(),
///     index_type: DType::I64,
///     status: Some(status.into()),
/// };
/// let to = [q.into(), caches.into(), BufferRegion { buffer: caches, offset: cache }];
/// let node = gpu.prepare(&plan, DType::F16, from, Outputs::Regions(&to))?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PagedKvBuffers<'a> {
    /// The fused projection, `[tokens, (q_heads + 2 * kv_heads) * head_dim]`.
    pub qkv: BufferRegion<'a>,
    /// The slot of each token, `index_type` each (-1: padding).
    pub slots: BufferRegion<'a>,
    /// [`DType::I32`], [`DType::I64`] or [`DType::U32`] (whose padding is `0xffffffff`).
    pub index_type: DType,
    /// Where the shader counts the slots out of range ([`RowsStatus::BYTES`]); the caller
    /// zeroes it before the dispatches it checks. `None`: nothing is recorded.
    pub status: Option<BufferRegion<'a>>,
}

impl Plan for PagedKvPlan {
    type From<'a> = PagedKvBuffers<'a>;
    type To<'a> = Outputs<'a>;
    type HostInput = [HostTensor];
    type HostOutput = PagedKvOutput;

    fn verify(&self, input: &[HostTensor], output: &PagedKvOutput) -> Result<()> {
        let want = self.reference(input)?;
        let got = [&output.queries, &output.k_cache, &output.v_cache].map(Clone::clone);
        let wanted = [want.queries, want.k_cache, want.v_cache];
        crate::verify::compare_outputs(&got, &wanted)?;
        if output.status != want.status {
            return Err(SplitError::Mismatch(format!(
                "the status of the slots out of range is {:?}; the reference's is {:?}",
                output.status, want.status
            )));
        }
        Ok(())
    }

    fn node<'p, 'a>(&'p self, from: Self::From<'a>, to: Self::To<'a>) -> Node<'p, 'a> {
        Node::Paged(self, from, to)
    }

    async fn run_on(&self, gpu: &GpuSplitter, input: &[HostTensor]) -> Result<PagedKvOutput> {
        gpu.run_paged(self, input, false).await
    }

    fn run_blocking(&self, gpu: &GpuSplitter, input: &[HostTensor]) -> Result<PagedKvOutput> {
        device::block_on("GpuSplitter::run", gpu.run_paged(self, input, true))
    }
}

/// The regions a paged write writes.
struct Written<'a> {
    queries: BufferRegion<'a>,
    k_cache: BufferRegion<'a>,
    v_cache: BufferRegion<'a>,
}

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] of the paged write of `plan`, elements of `dtype`, from `b`
    /// into `to`: `Outputs::Regions(&[queries, k_cache, v_cache])`.
    pub(crate) async fn prepare_paged(
        &self,
        plan: &PagedKvPlan,
        dtype: DType,
        b: &PagedKvBuffers<'_>,
        to: Outputs<'_>,
    ) -> Result<PreparedParts> {
        let Outputs::Regions(&[queries, k_cache, v_cache]) = to else {
            return Err(SplitError::BadBuffer(
                "a paged write writes Outputs::Regions(&[queries, k_cache, v_cache]): three \
                 regions, the parts of the projection in its order"
                    .into(),
            ));
        };
        let to = Written {
            queries,
            k_cache,
            v_cache,
        };
        self.prepare_written(plan, dtype, b, &to).await
    }

    /// [`GpuSplitter::prepare_paged`] into the regions `w`.
    async fn prepare_written(
        &self,
        plan: &PagedKvPlan,
        dtype: DType,
        b: &PagedKvBuffers<'_>,
        w: &Written<'_>,
    ) -> Result<PreparedParts> {
        const OP: &str = "paged KV write";
        self.probe.check(format_args!("preparing the {OP}"))?;
        let plan = PagedKvPlan::new(*plan)?;
        let rule = index_rule(b.index_type, NegativeIndex::Padding, plan.slots() as u64)?;
        check_heads_first(&plan, dtype)?;
        let sizes = paged_sizes(&plan, dtype, rule.words);
        let base = check_regions(b, w, &sizes, self.offset_align())?;
        let at = PagedRegions {
            qkv: b.qkv.offset,
            slots: b.slots.offset,
            queries: w.queries.offset,
            caches: base,
            k_at: w.k_cache.offset - base,
            v_at: w.v_cache.offset - base,
            status: b.status.map(|s| s.offset),
        };
        let (limits, tuning) = (&self.limits, self.gather_tuning);
        let recording = record_paged(&plan, dtype, rule, at, limits, tuning)?;
        let buffer = |role| {
            Some(match role {
                Role::Input(0) => b.qkv.buffer,
                Role::Output(0) => w.queries.buffer,
                Role::Indices => b.slots.buffer,
                Role::Scatter => w.k_cache.buffer,
                Role::Status => b.status?.buffer,
                _ => return None,
            })
        };
        let range = |r: &BufferRegion, size| PartRange {
            offset: r.offset,
            size,
        };
        let written = vec![
            range(&w.queries, sizes.queries),
            range(&w.k_cache, sizes.cache),
            range(&w.v_cache, sizes.cache),
        ];
        self.bind_indexed(OP, written, &recording, &buffer).await
    }

    /// [`GpuSplitter::run_async`] of a paged write: uploads `[qkv, slots, k_cache, v_cache]`
    /// (slots i32, i64 or u32), and reads back the queries, the caches and the status, polling on
    /// this thread where `blocking`.
    async fn run_paged(
        &self,
        plan: &PagedKvPlan,
        tensors: &[HostTensor],
        blocking: bool,
    ) -> Result<PagedKvOutput> {
        let [qkv, slots, k_cache, v_cache] = plan.host_tensors(tensors)?;
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
        let from = PagedKvBuffers {
            qkv: BufferRegion::from(&qkv_buf),
            slots: BufferRegion::from(&slot_buf),
            index_type: slots.dtype(),
            status: Some(region(&caches, status_at)),
        };
        let to = Written {
            queries: BufferRegion::from(&queries),
            k_cache: region(&caches, k_at),
            v_cache: region(&caches, v_at),
        };
        let node = self.prepare_written(plan, dtype, &from, &to).await?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        node.encode(&mut encoder).await?;
        scoped_async(&self.device, "submitting the paged write", || {
            encoder.copy_buffer_to_buffer(&caches, 0, &readback, 0, size);
            encoder.copy_buffer_to_buffer(&queries, 0, &readback, size, q_size);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        self.map_readback(&readback, blocking).await?;
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

/// Checks each region of `b` and `w` against `sizes` and the storage offset alignment
/// `align`, the caches in one buffer and apart, no region written in a buffer read, the
/// regions written apart; returns where the caches' window starts (the lower cache's offset).
fn check_regions(
    b: &PagedKvBuffers<'_>,
    w: &Written<'_>,
    sizes: &Sizes,
    align: u64,
) -> Result<u64> {
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
    w.queries.check(
        "queries",
        sizes.queries,
        "its tokens, rounded up to 4",
        storage,
        align,
    )?;
    w.k_cache
        .check("k_cache", sizes.cache, "its slots", storage, align)?;
    w.v_cache
        .check("v_cache", sizes.cache, "its slots", storage, align)?;
    if w.k_cache.buffer != w.v_cache.buffer {
        return Err(SplitError::BadBuffer(
            "the key and value caches are in two buffers; a paged write binds one destination \
             (place both caches in one buffer, apart)"
                .into(),
        ));
    }
    let cache_end = |r: &BufferRegion| r.offset + sizes.cache;
    let base = w.k_cache.offset.min(w.v_cache.offset);
    let end = cache_end(&w.k_cache).max(cache_end(&w.v_cache));
    let mut written = vec![
        ("the caches", w.k_cache.buffer, base, end),
        (
            "queries",
            w.queries.buffer,
            w.queries.offset,
            w.queries.offset + sizes.queries,
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
    if !apart(&w.k_cache, &w.v_cache) {
        return Err(SplitError::BadBuffer(format!(
            "the key cache at {} and the value cache at {} overlap ({} bytes each)",
            w.k_cache.offset, w.v_cache.offset, sizes.cache
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
