//! A paged KV write ([`PagedKvPlan`]), as the [`Plan`] of [`GpuSplitter::prepare`] and
//! [`GpuSplitter::run`]: the queries (a plain entry) and the keys and values (a scatter entry
//! each) of the rows' program, in one dispatch of the indexed build where the regions allow,
//! else one dispatch per cache.

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
/// `to` is [`Outputs::Regions`] of what it writes, in order: `&[queries, k_cache, v_cache]`,
/// or `&[k_cache, v_cache]` where no queries go out
/// ([`PagedKvPlan::writes_queries`]). Each region written, the slots and the status start at
/// a multiple of the device's storage offset alignment; a source at any multiple of 4 bytes
/// (a view into a wider tensor: the keys of a fused projection after RoPE).
///
/// The queries go out (`[tokens, q_heads * head_dim]`, or heads first as the plan says),
/// each token's keys and values into the caches (in the plan's layout) at its slot. One
/// dispatch moves everything where the sources share a buffer and the caches share one with
/// nothing else it writes between them (and each window fits a binding); otherwise the keys
/// (with the queries) take one dispatch and the values a second. Each decode step records it
/// in microseconds while the slots' contents change (the token count is fixed: padding keeps
/// it static, as CUDA graphs keep it). A slot of -1 is padding (nothing moves, nothing is
/// counted); another slot outside the caches moves no key or value and is counted in the
/// status.
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
///     sources: &[qkv.into()],
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
    /// What the plan reads ([`PagedKvPlan::source_shapes`]): `&[qkv]`, the fused projection,
    /// or `&[key, value]` after [`PagedKvPlan::with_separate_kv`] (in one buffer or two).
    pub sources: &'a [BufferRegion<'a>],
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
    queries: Option<BufferRegion<'a>>,
    k_cache: BufferRegion<'a>,
    v_cache: BufferRegion<'a>,
}

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] of the paged write of `plan`, elements of `dtype`, from `b`
    /// into `to`: `Outputs::Regions(&[queries, k_cache, v_cache])`, or `&[k_cache, v_cache]`
    /// where no queries go out.
    pub(crate) async fn prepare_paged(
        &self,
        plan: &PagedKvPlan,
        dtype: DType,
        b: &PagedKvBuffers<'_>,
        to: Outputs<'_>,
    ) -> Result<PreparedParts> {
        let to = match (plan.writes_queries(), to) {
            (true, Outputs::Regions(&[queries, k_cache, v_cache])) => Written {
                queries: Some(queries),
                k_cache,
                v_cache,
            },
            (false, Outputs::Regions(&[k_cache, v_cache])) => Written {
                queries: None,
                k_cache,
                v_cache,
            },
            (queries, _) => {
                let want = match queries {
                    true => "three regions, &[queries, k_cache, v_cache]",
                    false => "two regions, &[k_cache, v_cache] (its queries stay in place)",
                };
                return Err(SplitError::BadBuffer(format!(
                    "this paged write writes Outputs::Regions of {want}"
                )));
            }
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
        plan.conversion(dtype)?;
        let rule = index_rule(b.index_type, NegativeIndex::Padding, plan.slots() as u64)?;
        check_heads_first(&plan, dtype)?;
        let sizes = paged_sizes(&plan, dtype, rule.words);
        let (sources, one_cache_window) = check_regions(&plan, b, w, &sizes, self.offset_align())?;
        let at = PagedRegions {
            sources: sources.map(|s| s.offset),
            one_source: sources[0].buffer == sources[1].buffer,
            slots: b.slots.offset,
            queries: w.queries.map_or(0, |q| q.offset),
            caches: [w.k_cache.offset, w.v_cache.offset],
            one_cache_window,
            status: b.status.map(|s| s.offset),
        };
        let (limits, tuning) = (&self.limits, self.gather_tuning);
        let recording = record_paged(&plan, dtype, rule, at, limits, tuning)?;
        let buffer = |role| {
            Some(match role {
                Role::Input(k) => sources.get(k as usize)?.buffer,
                Role::Output(0) => w.queries?.buffer,
                Role::Indices => b.slots.buffer,
                Role::Scatter(0) => w.k_cache.buffer,
                Role::Scatter(1) => w.v_cache.buffer,
                Role::Status => b.status?.buffer,
                _ => return None,
            })
        };
        let range = |r: &BufferRegion, size| PartRange {
            offset: r.offset,
            size,
        };
        let mut written: Vec<PartRange> =
            w.queries.iter().map(|q| range(q, sizes.queries)).collect();
        written.push(range(&w.k_cache, sizes.cache));
        written.push(range(&w.v_cache, sizes.cache));
        self.bind_indexed(OP, written, &recording, &buffer).await
    }

    /// [`GpuSplitter::run_async`] of a paged write: uploads its sources (each to a buffer of
    /// its own), the slots (i32, i64 or u32) and the caches, and reads back the queries, the
    /// caches and the status, polling on this thread where `blocking`.
    async fn run_paged(
        &self,
        plan: &PagedKvPlan,
        tensors: &[HostTensor],
        blocking: bool,
    ) -> Result<PagedKvOutput> {
        let (sources, [slots, k_cache, v_cache]) = plan.host_tensors(tensors)?;
        use wgpu::BufferUsages as U;
        let dtype = k_cache.dtype();
        let align = self.offset_align();
        let bytes = PagedBytes::of(plan, dtype);
        let q_bytes = match plan.writes_queries() {
            true => bytes.tokens * bytes.q_row,
            false => 0,
        };
        let cache = bytes.cache;
        // One target buffer: the key cache, the value cache, the status, the queries.
        let v_at = binding_bytes(cache).next_multiple_of(align);
        let status_at = (v_at + binding_bytes(cache)).next_multiple_of(align);
        let q_at = (status_at + RowsStatus::BYTES).next_multiple_of(align);
        let size = q_at + binding_bytes(q_bytes);
        let mut target = vec![0u8; size as usize];
        target[..cache as usize].copy_from_slice(k_cache.bytes());
        target[v_at as usize..][..cache as usize].copy_from_slice(v_cache.bytes());
        let made = scoped_async(&self.device, "allocating the paged write's buffers", || {
            let with = |label, bytes: &[u8], usage| buffer_with(&self.device, label, bytes, usage);
            let read: Vec<wgpu::Buffer> = sources
                .iter()
                .map(|s| with("paged source", s.bytes(), U::STORAGE))
                .collect::<Result<_>>()?;
            Ok::<_, SplitError>((
                read,
                with("paged slots", slots.bytes(), U::STORAGE)?,
                with("paged target", &target, U::STORAGE | U::COPY_SRC)?,
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("paged readback"),
                    size,
                    usage: U::MAP_READ | U::COPY_DST,
                    mapped_at_creation: false,
                }),
            ))
        });
        let (read, slot_buf, out, readback) = made.await??;
        let region = |buffer, offset| BufferRegion { buffer, offset };
        let sources: Vec<BufferRegion> = read.iter().map(BufferRegion::from).collect();
        let from = PagedKvBuffers {
            sources: &sources,
            slots: BufferRegion::from(&slot_buf),
            index_type: slots.dtype(),
            status: Some(region(&out, status_at)),
        };
        let to = Written {
            queries: plan.writes_queries().then(|| region(&out, q_at)),
            k_cache: region(&out, 0),
            v_cache: region(&out, v_at),
        };
        let node = self.prepare_written(plan, dtype, &from, &to).await?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        node.encode(&mut encoder).await?;
        scoped_async(&self.device, "submitting the paged write", || {
            encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, size);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        self.map_readback(&readback, blocking).await?;
        read_mapped(&readback, |bytes| {
            let part = |at: u64, n: u64| bytes[at as usize..(at + n) as usize].to_vec();
            let at = status_at as usize;
            Ok(PagedKvOutput {
                queries: HostTensor::new(dtype, plan.q_shape(), part(q_at, q_bytes))?,
                k_cache: HostTensor::new(dtype, plan.cache_shape(), part(0, cache))?,
                v_cache: HostTensor::new(dtype, plan.cache_shape(), part(v_at, cache))?,
                status: RowsStatus::from_bytes(&bytes[at..at + 8]).unwrap_or_default(),
            })
        })
    }
}

/// Checks each region of `b` and `w` against `plan`, `sizes` and the storage offset alignment
/// `align` (a source's at 4): as many sources as the plan reads, no region written in a
/// buffer read, the regions written apart. Returns the keys' and the values' sources (a
/// fused projection's twice), and whether the caches may be bound as one window (one buffer,
/// no other region written between them).
fn check_regions<'a>(
    plan: &PagedKvPlan,
    b: &PagedKvBuffers<'a>,
    w: &Written<'a>,
    sizes: &Sizes,
    align: u64,
) -> Result<([BufferRegion<'a>; 2], bool)> {
    let storage = wgpu::BufferUsages::STORAGE;
    let sources: [BufferRegion<'a>; 2] = match (plan.source_shapes().len(), b.sources) {
        (1, &[qkv]) => [qkv, qkv],
        (2, &[key, value]) => [key, value],
        (n, given) => {
            let want = if n == 1 { "[qkv]" } else { "[key, value]" };
            return Err(SplitError::BadBuffer(format!(
                "{} sources for a paged write that reads {want}",
                given.len()
            )));
        }
    };
    let names = match b.sources.len() {
        1 => ["qkv", "qkv"],
        _ => ["key", "value"],
    };
    for ((name, r), needed) in names.iter().zip(&sources).zip(sizes.sources) {
        if !r.offset.is_multiple_of(4) {
            return Err(SplitError::BadBuffer(format!(
                "{name} offset {} is not a multiple of 4 bytes (a source may start at any word)",
                r.offset
            )));
        }
        r.check(
            name,
            needed,
            "its tokens' rows, rounded up to 4",
            storage,
            1,
        )?;
    }
    b.slots
        .check("slots", sizes.slots, "one slot per token", storage, align)?;
    let mut written = Vec::new();
    if let Some(q) = &w.queries {
        q.check(
            "queries",
            sizes.queries,
            "its tokens, rounded up to 4",
            storage,
            align,
        )?;
        written.push(("queries", q, sizes.queries));
    }
    for (name, r) in [("k_cache", &w.k_cache), ("v_cache", &w.v_cache)] {
        r.check(name, sizes.cache, "its slots", storage, align)?;
        written.push((name, r, sizes.cache));
    }
    if let Some(s) = &b.status {
        s.check(
            "status",
            RowsStatus::BYTES,
            "a count and a place",
            storage,
            align,
        )?;
        written.push(("status", s, RowsStatus::BYTES));
    }
    let reads = names.iter().zip(&sources).chain([(&"slots", &b.slots)]);
    for (i, &(name, r, bytes)) in written.iter().enumerate() {
        for (read, source) in reads.clone() {
            if r.buffer == source.buffer {
                return Err(SplitError::BadBuffer(format!(
                    "{name} is in the {read}'s buffer; wgpu binds a buffer read-only or \
                     writable in one dispatch"
                )));
            }
        }
        let (start, stop) = (r.offset, r.offset + bytes);
        for &(other, o, o_bytes) in &written[i + 1..] {
            if r.buffer == o.buffer && start < o.offset + o_bytes && o.offset < stop {
                return Err(SplitError::BadBuffer(format!(
                    "{name} (bytes {start} to {stop}) overlaps {other} (bytes {} to {})",
                    o.offset,
                    o.offset + o_bytes
                )));
            }
        }
    }
    // The caches' one window, from the lower to the end of the upper, holds no other region
    // written: writable bindings of one dispatch may not share bytes.
    let (k, v) = (&w.k_cache, &w.v_cache);
    let window = (k.offset.min(v.offset), k.offset.max(v.offset) + sizes.cache);
    let between = written.iter().any(|&(name, r, bytes)| {
        !name.ends_with("cache")
            && r.buffer == k.buffer
            && r.offset < window.1
            && window.0 < r.offset + bytes
    });
    Ok((sources, k.buffer == v.buffer && !between))
}
