//! Rows placed by indices that live on the device ([`RowsPlan`]): prepared for the
//! caller's buffers ([`GpuSplitter::prepare_rows`]) or run on host tensors
//! ([`GpuSplitter::run_rows`]). One dispatch of the indexed build's rows program; the shader
//! checks every index, and the host proves every address of any index in range.

use crate::error::{Result, SplitError};
use crate::gpu::device::{self, buffer_with, scoped_async};
use crate::gpu::gather::binding_bytes;
use crate::gpu::gather::{BufferOf, GatherPipeline, ScatterStores};
use crate::gpu::placement::BufferRegion;
use crate::gpu::prepared_rows::PreparedRows;
use crate::gpu::round_trip::{map_read, read_mapped};
use crate::gpu::GpuSplitter;
use crate::plan::{RowsKind, RowsPlan, RowsStatus};
use crate::tensor::HostTensor;
use crate::DType;
use wgsl_split::recording::{Command, Recording, Role};
use wgsl_split::rows::{record_rows, RowsRegions};

/// Where rows placed by indices read and write ([`GpuSplitter::prepare_rows`]). Each region
/// starts at a multiple of the device's storage offset alignment.
#[derive(Debug, Clone, Copy)]
pub struct RowsBuffers<'a> {
    /// What is read: a gather's data, a scatter's updates, rows back to back.
    pub source: BufferRegion<'a>,
    /// The indices, `index_type` each, in the plan's order.
    pub indices: BufferRegion<'a>,
    /// [`DType::I32`] or [`DType::I64`].
    pub index_type: DType,
    /// What is written: a gather's output, written whole (the rows of indices out of range
    /// are zeros); a scatter's data, its named rows written in place. In a buffer other than
    /// the source's and the indices'.
    pub target: BufferRegion<'a>,
    /// Where the shader counts the indices out of range ([`RowsStatus::BYTES`], read with
    /// [`RowsStatus::from_bytes`]): the caller zeroes it before the dispatches it checks,
    /// and reads it back when it chooses. `None`: nothing is recorded.
    pub status: Option<BufferRegion<'a>>,
}

impl GpuSplitter {
    /// Prepares the rows `plan` places, elements of `dtype`, with `buffers` ([`PreparedRows`]):
    /// each step of an engine records them with [`PreparedRows::encode`], in microseconds,
    /// while the indices' contents change. A gather writes row `indices[i]` of the source (of
    /// every block before the axis) as the target's row `i`; a scatter writes the source's row
    /// `i` (its updates) as the target's row `indices[i]`; bit for bit. An index out of range
    /// moves nothing and is counted in the status. Regions that do not fit the plan, or a plan
    /// past one binding of this device, are errors naming the rule and the numbers.
    ///
    /// ```no_run
    /// use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, RowsBuffers};
    /// # fn engine(gpu: &GpuSplitter, table: &wgpu::Buffer, ids: &wgpu::Buffer,
    /// #     out: &wgpu::Buffer, status: &wgpu::Buffer) -> Result<(), wgpu_split::SplitError> {
    /// let plan = ops::get_rows(&[32000, 4096], &[512])?; // an embedding table, 512 ids
    /// let buffers = RowsBuffers {
    ///     source: BufferRegion::from(table),
    ///     indices: BufferRegion::from(ids),
    ///     index_type: DType::I32,
    ///     target: BufferRegion::from(out),
    ///     status: Some(BufferRegion::from(status)),
    /// };
    /// let node = gpu.prepare_rows(&plan, DType::F16, &buffers)?; // once
    /// // Every step: the ids change, the node is recorded again.
    /// let mut encoder = gpu.device().create_command_encoder(&Default::default());
    /// encoder.clear_buffer(status, 0, None); // the status counts from zero
    /// node.encode(&mut encoder)?;
    /// gpu.queue().submit([encoder.finish()]);
    /// # Ok(()) }
    /// ```
    pub fn prepare_rows(
        &self,
        plan: &RowsPlan,
        dtype: DType,
        buffers: &RowsBuffers<'_>,
    ) -> Result<PreparedRows> {
        device::block_on(
            "GpuSplitter::prepare_rows",
            self.prepare_rows_async(plan, dtype, buffers),
        )
    }

    /// [`GpuSplitter::prepare_rows`] for async callers, and the one for WebGPU.
    pub async fn prepare_rows_async(
        &self,
        plan: &RowsPlan,
        dtype: DType,
        buffers: &RowsBuffers<'_>,
    ) -> Result<PreparedRows> {
        self.probe.check("preparing rows placed by indices")?;
        let at = RowsRegions {
            source: buffers.source.offset,
            indices: buffers.indices.offset,
            target: buffers.target.offset,
            status: buffers.status.map(|s| s.offset),
        };
        let (limits, tuning) = (&self.limits, self.gather_tuning);
        let (recording, sizes) = record_rows(plan, dtype, buffers.index_type, at, limits, tuning)?;
        if recording.commands.is_empty() {
            return Ok(self.prepared_rows(Vec::new()));
        }
        let sizes = [sizes.source, sizes.indices, sizes.target];
        check_regions(buffers, sizes, self.offset_align())?;
        let buffer = |role| {
            Some(match role {
                Role::Input(0) => buffers.source.buffer,
                Role::Output(0) | Role::Scatter => buffers.target.buffer,
                Role::Indices => buffers.indices.buffer,
                Role::Status => buffers.status?.buffer,
                _ => return None,
            })
        };
        self.execute_rows(&recording, &buffer).await
    }

    /// Executes `recording`, dispatches of the indexed build (rows placed by indices, a paged
    /// write), on this device: the build's pipeline, each table uploaded, each dispatch bound
    /// to `buffer(role)`.
    pub(crate) async fn execute_rows<'b>(
        &self,
        recording: &Recording,
        buffer: &BufferOf<'_, 'b>,
    ) -> Result<PreparedRows> {
        let mut bound = Vec::new();
        for command in &recording.commands {
            let Command::Dispatch(d) = command else {
                return Err(SplitError::Device(
                    "a copy command in a recording of rows: rows are dispatched".into(),
                ));
            };
            let Some(stores) = d.build.indexed else {
                return Err(SplitError::Device(format!(
                    "a dispatch of {} in a recording of rows: its build binds no indices",
                    d.program
                )));
            };
            let pipeline = self.indexed_pipeline(stores).await?;
            let table = std::slice::from_ref(&d.table);
            let tables = self.kept.tables(&self.device, table).await?;
            bound.push(
                pipeline
                    .bind_recorded(&self.device, d, &tables[0], buffer)
                    .await?,
            );
        }
        Ok(self.prepared_rows(bound))
    }

    /// Places the rows `plan` names on the device, from host tensors: a gather's of `data`
    /// by `indices` (i32 or i64), a scatter's `updates` into `data` by `indices`; reads back
    /// the output and the status of the indices out of range. [`RowsPlan::verify`] checks
    /// the result.
    pub fn run_rows(
        &self,
        plan: &RowsPlan,
        data: &HostTensor,
        indices: &HostTensor,
        updates: Option<&HostTensor>,
    ) -> Result<(HostTensor, RowsStatus)> {
        device::block_on(
            "GpuSplitter::run_rows",
            self.run_rows_async(plan, data, indices, updates),
        )
    }

    /// [`GpuSplitter::run_rows`] for async callers, and the one for WebGPU.
    pub async fn run_rows_async(
        &self,
        plan: &RowsPlan,
        data: &HostTensor,
        indices: &HostTensor,
        updates: Option<&HostTensor>,
    ) -> Result<(HostTensor, RowsStatus)> {
        crate::reference::check_rows_tensors(plan, data, indices, updates)?;
        let dtype = data.dtype();
        // A gather reads the data and writes a new output; a scatter reads the updates and
        // writes into the data, uploaded as the target.
        let (source, first) = match updates {
            Some(u) => (u.bytes(), data.bytes()),
            None => (data.bytes(), &[][..]),
        };
        let out_bytes = match plan.kind() {
            RowsKind::Gather => plan.rows(dtype)?.output_bytes()?,
            RowsKind::Scatter => data.bytes().len() as u64,
        };
        if out_bytes == 0 {
            let empty = HostTensor::new(dtype, plan.output_shape(), Vec::new())?;
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
        let buffers = RowsBuffers {
            source: BufferRegion::from(&source),
            indices: BufferRegion::from(&index),
            index_type: indices.dtype(),
            target: BufferRegion::from(&target),
            status: Some(BufferRegion {
                buffer: &target,
                offset: status_at,
            }),
        };
        let node = self.prepare_rows_async(plan, dtype, &buffers).await?;
        let mut encoder = self.device.create_command_encoder(&Default::default());
        node.encode_async(&mut encoder).await?;
        scoped_async(&self.device, "submitting the rows", || {
            encoder.copy_buffer_to_buffer(&target, 0, &readback, 0, size);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |bytes| {
            let at = status_at as usize;
            let status = RowsStatus::from_bytes(&bytes[at..at + 8]).unwrap_or_default();
            let out = bytes[..out_bytes as usize].to_vec();
            Ok((HostTensor::new(dtype, plan.output_shape(), out)?, status))
        })
    }

    /// The indexed build whose scatter stores as `stores` says, compiled on first use and
    /// shared by clones.
    async fn indexed_pipeline(&self, stores: ScatterStores) -> Result<GatherPipeline> {
        let cell = &self.indexed[stores as usize];
        if let Some(p) = cell.get() {
            return Ok(p.clone());
        }
        let made = GatherPipeline::indexed(&self.device, stores)
            .await?
            .with_cache(self.gather.cache());
        Ok(cell.get_or_init(|| made).clone())
    }
}

/// Checks each region of `b` against the bytes the dispatch binds of it (`sizes`: the
/// source's, the indices', the target's) and the status's [`RowsStatus::BYTES`], each at a
/// multiple of `align`; the target and the status in buffers other than those read, and
/// apart from each other.
fn check_regions(b: &RowsBuffers<'_>, sizes: [u64; 3], align: u64) -> Result<()> {
    let storage = wgpu::BufferUsages::STORAGE;
    let [source, index, target] = sizes;
    b.source.check(
        "source",
        source,
        "its rows, rounded up to 4",
        storage,
        align,
    )?;
    b.indices
        .check("indices", index, "one index per place", storage, align)?;
    b.target.check(
        "target",
        target,
        "its rows, rounded up to 4",
        storage,
        align,
    )?;
    let mut written = vec![("target", b.target, target)];
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
