//! Rows placed by indices that live on the device ([`RowsPlan`]), as the [`Plan`] of
//! [`GpuSplitter::prepare`] and [`GpuSplitter::run`]. One dispatch of the indexed build's rows
//! program; the shader checks every index, and the host proves every address of any index in
//! range.

use crate::error::{Result, SplitError};
use crate::gpu::device::{self, buffer_with, scoped_async};
use crate::gpu::gather::binding_bytes;
use crate::gpu::placement::{BufferRegion, PartRange};
use crate::gpu::plans::{Node, Plan};
use crate::gpu::prepared::PreparedParts;
use crate::gpu::round_trip::read_mapped;
use crate::gpu::GpuSplitter;
use crate::plan::{RowsKind, RowsPlan, RowsStatus};
use crate::tensor::HostTensor;
use crate::DType;
use wgsl_split::recording::Role;
use wgsl_split::rows::{record_rows, RowsRegions};

/// What rows placed by indices ([`RowsPlan`]) read, and where they count the indices out of
/// range: the `from` of [`GpuSplitter::prepare`] and [`GpuSplitter::encode`] for a rows plan,
/// whose `to` is the target's [`BufferRegion`]. Each region starts at a multiple of the
/// device's storage offset alignment.
///
/// A gather writes row `indices[i]` of the source (of every block before the axis) as the
/// target's row `i`, written whole (the rows of indices out of range are zeros); a scatter
/// writes the source's row `i` (its updates) as the target's row `indices[i]`, its other rows
/// left as they are; bit for bit. An index out of range moves nothing and is counted in the
/// status. The target is in a buffer other than the source's and the indices'. Prepared once
/// ([`GpuSplitter::prepare`]), each step of an engine records it with
/// [`Prepared::encode`](crate::Prepared::encode), in microseconds, while the indices'
/// contents change.
///
/// ```no_run
/// use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, RowsBuffers};
/// # fn engine(gpu: &GpuSplitter, table: &wgpu::Buffer, ids: &wgpu::Buffer,
/// #     out: &wgpu::Buffer, status: &wgpu::Buffer) -> Result<(), wgpu_split::SplitError> {
/// let plan = ops::get_rows(&[32000, 4096], &[512])?; // an embedding table, 512 ids
/// let from = RowsBuffers {
///     source: BufferRegion::from(table),
///     indices: BufferRegion::from(ids),
///     index_type: DType::I32,
///     status: Some(BufferRegion::from(status)),
/// };
/// let node = gpu.prepare(&plan, DType::F16, from, out.into())?; // once
/// // Every step: the ids change, the node is recorded again.
/// let mut encoder = gpu.device().create_command_encoder(&Default::default());
/// encoder.clear_buffer(status, 0, None); // the status counts from zero
/// node.encode(&mut encoder)?;
/// gpu.queue().submit([encoder.finish()]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RowsBuffers<'a> {
    /// What is read: a gather's data, a scatter's updates, rows back to back.
    pub source: BufferRegion<'a>,
    /// The indices, `index_type` each, in the plan's order.
    pub indices: BufferRegion<'a>,
    /// [`DType::I32`], [`DType::I64`] or [`DType::U32`] (never negative; docs/rows.md has
    /// the rules of each).
    pub index_type: DType,
    /// Where the shader counts the indices out of range ([`RowsStatus::BYTES`], read with
    /// [`RowsStatus::from_bytes`]): the caller zeroes it before the dispatches it checks,
    /// and reads it back when it chooses. `None`: nothing is recorded.
    pub status: Option<BufferRegion<'a>>,
}

impl Plan for RowsPlan {
    type From<'a> = RowsBuffers<'a>;
    type To<'a> = BufferRegion<'a>;
    type HostInput = [HostTensor];
    type HostOutput = (HostTensor, RowsStatus);

    fn verify(&self, input: &[HostTensor], output: &(HostTensor, RowsStatus)) -> Result<()> {
        let (want, status) = self.reference(input)?;
        crate::verify::compare_outputs(std::slice::from_ref(&output.0), &[want])?;
        if output.1 != status {
            return Err(SplitError::Mismatch(format!(
                "the status of the indices out of range is {:?}; the reference's is {status:?}",
                output.1
            )));
        }
        Ok(())
    }

    fn node<'p, 'a>(&'p self, from: Self::From<'a>, to: Self::To<'a>) -> Node<'p, 'a> {
        Node::Rows(self, from, to)
    }

    async fn run_on(&self, gpu: &GpuSplitter, input: &[HostTensor]) -> Result<Self::HostOutput> {
        gpu.run_rows(self, input, false).await
    }

    fn run_blocking(&self, gpu: &GpuSplitter, input: &[HostTensor]) -> Result<Self::HostOutput> {
        device::block_on("GpuSplitter::run", gpu.run_rows(self, input, true))
    }
}

impl GpuSplitter {
    /// [`GpuSplitter::prepare`] of rows placed by indices: the rows `plan` places, elements of
    /// `dtype`, from `b` into `target`. Regions that do not fit the plan, or a plan past one
    /// binding of this device, are errors naming the rule and the numbers.
    pub(crate) async fn prepare_rows(
        &self,
        plan: &RowsPlan,
        dtype: DType,
        b: &RowsBuffers<'_>,
        target: BufferRegion<'_>,
    ) -> Result<PreparedParts> {
        const OP: &str = "rows placed by indices";
        self.probe.check(format_args!("preparing the {OP}"))?;
        let at = RowsRegions {
            source: b.source.offset,
            indices: b.indices.offset,
            target: target.offset,
            status: b.status.map(|s| s.offset),
        };
        let (limits, tuning) = (&self.limits, self.gather_tuning);
        let (recording, sizes) = record_rows(plan, dtype, b.index_type, at, limits, tuning)?;
        let written = vec![PartRange {
            offset: target.offset,
            size: sizes.target,
        }];
        if recording.commands.is_empty() {
            return self.bind_indexed(OP, written, &recording, &|_| None).await;
        }
        let sizes = [sizes.source, sizes.indices, sizes.target];
        check_regions(b, target, sizes, self.offset_align())?;
        let buffer = |role| {
            Some(match role {
                Role::Input(0) => b.source.buffer,
                Role::Output(0) | Role::Scatter(0) => target.buffer,
                Role::Indices => b.indices.buffer,
                Role::Status => b.status?.buffer,
                _ => return None,
            })
        };
        self.bind_indexed(OP, written, &recording, &buffer).await
    }

    /// [`GpuSplitter::run_async`] of rows placed by indices: a gather's `[data, indices]`
    /// (i32, i64 or u32), a scatter's `[data, indices, updates]`; reads back the output and the
    /// status of the indices out of range, polling on this thread where `blocking`.
    async fn run_rows(
        &self,
        plan: &RowsPlan,
        tensors: &[HostTensor],
        blocking: bool,
    ) -> Result<(HostTensor, RowsStatus)> {
        let (data, indices, updates) = plan.host_tensors(tensors)?;
        let dtype = data.dtype();
        // A gather reads the data and writes a new output; a scatter reads the updates and
        // writes into the data, uploaded as the target.
        let (source, first) = match updates {
            Some(u) => (u.bytes(), data.bytes()),
            None => (data.bytes(), &[][..]),
        };
        // The output: a gather's rows in the plan's rows dtype, a scatter's data.
        let (_, out_dtype) = plan.conversion(dtype)?;
        let out_bytes = match plan.kind() {
            RowsKind::Gather => plan.rows(out_dtype)?.output_bytes()?,
            RowsKind::Scatter => data.bytes().len() as u64,
        };
        if out_bytes == 0 {
            let empty = HostTensor::new(out_dtype, plan.output_shape(), Vec::new())?;
            return Ok((empty, RowsStatus::default()));
        }
        use wgpu::BufferUsages as U;
        let status_at = binding_bytes(out_bytes).next_multiple_of(self.offset_align());
        let size = status_at + 16;
        let made = scoped_async(&self.device, "allocating the rows' buffers", || {
            let mut target = first.to_vec();
            target.resize(size as usize, 0);
            let with = |label, bytes: &[u8], usage| buffer_with(&self.device, label, bytes, usage);
            Ok::<_, SplitError>((
                with("rows source", source, U::STORAGE)?,
                with("rows indices", indices.bytes(), U::STORAGE)?,
                with("rows target", &target, U::STORAGE | U::COPY_SRC)?,
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("rows readback"),
                    size,
                    usage: U::MAP_READ | U::COPY_DST,
                    mapped_at_creation: false,
                }),
            ))
        });
        let (source, index, target, readback) = made.await??;
        let from = RowsBuffers {
            source: BufferRegion::from(&source),
            indices: BufferRegion::from(&index),
            index_type: indices.dtype(),
            status: Some(BufferRegion {
                buffer: &target,
                offset: status_at,
            }),
        };
        let node = self
            .prepare_rows(plan, dtype, &from, BufferRegion::from(&target))
            .await?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        node.encode(&mut encoder).await?;
        scoped_async(&self.device, "submitting the rows", || {
            encoder.copy_buffer_to_buffer(&target, 0, &readback, 0, size);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        self.map_readback(&readback, blocking).await?;
        read_mapped(&readback, |bytes| {
            let at = status_at as usize;
            let status = RowsStatus::from_bytes(&bytes[at..at + 8]).unwrap_or_default();
            let out = bytes[..out_bytes as usize].to_vec();
            Ok((
                HostTensor::new(out_dtype, plan.output_shape(), out)?,
                status,
            ))
        })
    }
}

/// Checks each region of `b` and `target` against the bytes the dispatch binds of it
/// (`sizes`: the source's, the indices', the target's) and the status's
/// [`RowsStatus::BYTES`], each at a multiple of `align`; the target and the status in
/// buffers other than those read, and apart from each other.
fn check_regions(
    b: &RowsBuffers<'_>,
    target: BufferRegion<'_>,
    sizes: [u64; 3],
    align: u64,
) -> Result<()> {
    let storage = wgpu::BufferUsages::STORAGE;
    let [source, index, target_size] = sizes;
    b.source.check(
        "source",
        source,
        "its rows, rounded up to 4",
        storage,
        align,
    )?;
    b.indices
        .check("indices", index, "one index per place", storage, align)?;
    target.check(
        "target",
        target_size,
        "its rows, rounded up to 4",
        storage,
        align,
    )?;
    let mut written = vec![("target", target, target_size)];
    if let Some(s) = b.status {
        s.check(
            "status",
            RowsStatus::BYTES,
            "a count and a place",
            storage,
            align,
        )?;
        written.push(("status", s, RowsStatus::BYTES));
    }
    for &(name, w, _) in &written {
        for (read, r) in [("source", &b.source), ("indices", &b.indices)] {
            if w.buffer == r.buffer {
                return Err(SplitError::BadBuffer(format!(
                    "the {name} region is in the {read}'s buffer; wgpu binds a buffer \
                     read-only or writable in one dispatch"
                )));
            }
        }
    }
    if let [(_, t, t_size), (_, s, _)] = written[..] {
        let apart = s.offset >= t.offset + t_size || t.offset >= s.offset + RowsStatus::BYTES;
        if t.buffer == s.buffer && !apart {
            return Err(SplitError::BadBuffer(format!(
                "the status region at {} overlaps the target's {} bytes at {}",
                s.offset, t_size, t.offset
            )));
        }
    }
    Ok(())
}
