//! Rows placed by indices that live on the device ([`RowsPlan`]): recorded into the
//! caller's encoder ([`GpuSplitter::encode_rows`]) or run on host tensors
//! ([`GpuSplitter::run_rows`]). One dispatch of the indexed build's rows program; the shader
//! checks every index, and the host proves every address of any index in range.

use crate::error::{Result, SplitError};
use crate::gpu::device::{self, buffer_with, scoped_async};
use crate::gpu::gather::{
    binding_bytes, indexed_dispatch, record_bound, window_limit, GatherPipeline, IndexWindows,
    Windows,
};
use crate::gpu::placement::BufferRegion;
use crate::gpu::round_trip::{map_read, read_mapped};
use crate::gpu::GpuSplitter;
use crate::plan::{NegativeIndex, RowsPlan, RowsStatus};
use crate::tensor::HostTensor;
use crate::DType;

/// Where rows placed by indices read and write ([`GpuSplitter::encode_rows`]). Each region
/// starts at a multiple of the device's storage offset alignment.
#[derive(Debug, Clone, Copy)]
pub struct RowsBuffers<'a> {
    /// The data tensor, its rows back to back.
    pub data: BufferRegion<'a>,
    /// The indices, `index_type` each, in the plan's order.
    pub indices: BufferRegion<'a>,
    /// [`DType::I32`] or [`DType::I64`].
    pub index_type: DType,
    /// The output, written whole: the rows of indices out of range are zeros. In a buffer
    /// other than the data's and the indices'.
    pub output: BufferRegion<'a>,
    /// Where the shader counts the indices out of range ([`RowsStatus::BYTES`], read with
    /// [`RowsStatus::from_bytes`]): the caller zeroes it before the dispatches it checks,
    /// and reads it back when it chooses. `None`: nothing is recorded.
    pub status: Option<BufferRegion<'a>>,
}

impl GpuSplitter {
    /// Records the rows `plan` places into `encoder`: `buffers.output` gets row `indices[i]`
    /// of `buffers.data` for each index `i` (of every block before the axis), elements of
    /// `dtype`, bit for bit; an index out of range writes zeros and is counted in the status.
    /// Nothing is submitted, and nothing is read back. Regions that do not fit the plan, or
    /// a plan past one binding of this device, are errors naming the rule and the numbers.
    ///
    /// ```no_run
    /// use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, RowsBuffers};
    /// # fn engine(gpu: &GpuSplitter, table: &wgpu::Buffer, ids: &wgpu::Buffer,
    /// #     out: &wgpu::Buffer, status: &wgpu::Buffer) -> Result<(), wgpu_split::SplitError> {
    /// let plan = ops::get_rows(&[32000, 4096], &[512])?; // an embedding table, 512 ids
    /// let mut encoder = gpu.device().create_command_encoder(&Default::default());
    /// encoder.clear_buffer(status, 0, None); // the status counts from zero
    /// let buffers = RowsBuffers {
    ///     data: BufferRegion::from(table),
    ///     indices: BufferRegion::from(ids),
    ///     index_type: DType::I32,
    ///     output: BufferRegion::from(out),
    ///     status: Some(BufferRegion::from(status)),
    /// };
    /// gpu.encode_rows(&mut encoder, &plan, DType::F16, &buffers)?;
    /// gpu.queue().submit([encoder.finish()]);
    /// # Ok(()) }
    /// ```
    pub fn encode_rows(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &RowsPlan,
        dtype: DType,
        buffers: &RowsBuffers<'_>,
    ) -> Result<()> {
        device::block_on(
            "GpuSplitter::encode_rows",
            self.encode_rows_async(encoder, plan, dtype, buffers),
        )
    }

    /// [`GpuSplitter::encode_rows`] for async callers, and the one for WebGPU.
    pub async fn encode_rows_async(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        plan: &RowsPlan,
        dtype: DType,
        buffers: &RowsBuffers<'_>,
    ) -> Result<()> {
        self.probe.check("encoding rows placed by indices")?;
        let rows = plan.rows(dtype)?;
        let index_words = match buffers.index_type {
            DType::I32 => 1,
            DType::I64 => 2,
            other => {
                return Err(SplitError::DataMismatch(format!(
                    "indices of {other}: indices are i32 or i64"
                )))
            }
        };
        let from_end = plan.negative() == NegativeIndex::FromEnd;
        let tuning = self.gather_tuning;
        let limit = window_limit(&self.limits);
        let Some(dispatch) = indexed_dispatch(rows, index_words, from_end, limit, tuning)? else {
            return Ok(());
        };
        let index_bytes = rows.count * 4 * index_words as u64;
        check_regions(
            buffers,
            dispatch.src_size,
            index_bytes,
            dispatch.dst_size,
            self.offset_align(),
        )?;
        let pipeline = self.indexed_pipeline().await?;
        let tables = self
            .kept
            .tables(&self.device, &[dispatch.table_bytes()?])
            .await?;
        let index = IndexWindows {
            indices: (buffers.indices.buffer, buffers.indices.offset, index_bytes),
            status: buffers.status.map(|s| (s.buffer, s.offset)),
        };
        let bound = pipeline
            .bind_indexed(
                &self.device,
                &[dispatch],
                &tables,
                Windows::Region(&buffers.data),
                Windows::Region(&buffers.output),
                index,
            )
            .await?;
        record_bound(&self.device, encoder, &bound).await
    }

    /// Places the rows `plan` names of `data` by `indices` (i32 or i64) on the device and
    /// reads back the output and the status of the indices out of range. Check the result
    /// with [`crate::reference::gather_rows`].
    pub fn run_rows(
        &self,
        plan: &RowsPlan,
        data: &HostTensor,
        indices: &HostTensor,
    ) -> Result<(HostTensor, RowsStatus)> {
        device::block_on(
            "GpuSplitter::run_rows",
            self.run_rows_async(plan, data, indices),
        )
    }

    /// [`GpuSplitter::run_rows`] for async callers, and the one for WebGPU.
    pub async fn run_rows_async(
        &self,
        plan: &RowsPlan,
        data: &HostTensor,
        indices: &HostTensor,
    ) -> Result<(HostTensor, RowsStatus)> {
        crate::reference::check_rows_tensors(plan, data, indices)?;
        let dtype = data.dtype();
        let out_bytes = plan.rows(dtype)?.output_bytes()?;
        if out_bytes == 0 {
            let empty = HostTensor::new(dtype, plan.output_shape(), Vec::new())?;
            return Ok((empty, RowsStatus::default()));
        }
        use wgpu::BufferUsages as U;
        let out_size = binding_bytes(out_bytes);
        let status_at = out_size.next_multiple_of(self.offset_align());
        let (data_buf, index_buf, out, readback) =
            scoped_async(&self.device, "allocating the rows' buffers", || {
                let made = |label, size, usage| {
                    self.device.create_buffer(&wgpu::BufferDescriptor {
                        label: Some(label),
                        size,
                        usage,
                        mapped_at_creation: false,
                    })
                };
                let data_buf = buffer_with(&self.device, "rows data", data.bytes(), U::STORAGE)?;
                let index_buf =
                    buffer_with(&self.device, "rows indices", indices.bytes(), U::STORAGE)?;
                let out = made("rows output", status_at + 16, U::STORAGE | U::COPY_SRC);
                let readback = made("rows readback", status_at + 16, U::MAP_READ | U::COPY_DST);
                Ok::<_, SplitError>((data_buf, index_buf, out, readback))
            })
            .await??;
        let buffers = RowsBuffers {
            data: BufferRegion::from(&data_buf),
            indices: BufferRegion::from(&index_buf),
            index_type: indices.dtype(),
            output: BufferRegion {
                buffer: &out,
                offset: 0,
            },
            status: Some(BufferRegion {
                buffer: &out,
                offset: status_at,
            }),
        };
        let mut encoder = self.device.create_command_encoder(&Default::default());
        self.encode_rows_async(&mut encoder, plan, dtype, &buffers)
            .await?;
        scoped_async(&self.device, "submitting the rows", || {
            encoder.copy_buffer_to_buffer(&out, 0, &readback, 0, status_at + 16);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |bytes| {
            let at = status_at as usize;
            let status = RowsStatus::from_bytes(&bytes[at..at + 8]).unwrap_or_default();
            let rows = HostTensor::new(
                dtype,
                plan.output_shape(),
                bytes[..out_bytes as usize].to_vec(),
            )?;
            Ok((rows, status))
        })
    }

    /// The indexed build, compiled on first use and shared by clones.
    async fn indexed_pipeline(&self) -> Result<GatherPipeline> {
        if let Some(p) = self.indexed.get() {
            return Ok(p.clone());
        }
        let made = GatherPipeline::indexed(&self.device).await?;
        Ok(self.indexed.get_or_init(|| made).clone())
    }
}

/// Checks each region of `buffers` against what the dispatch binds of it: the data's
/// `data_bytes`, the indices' `index_bytes`, the output's `out_bytes`, the status's
/// [`RowsStatus::BYTES`], each at a multiple of `align`; the output and the status in buffers
/// other than those read, and apart from each other.
fn check_regions(
    b: &RowsBuffers<'_>,
    data_bytes: u64,
    index_bytes: u64,
    out_bytes: u64,
    align: u64,
) -> Result<()> {
    let storage = wgpu::BufferUsages::STORAGE;
    b.data.check(
        "data",
        data_bytes,
        "its rows, rounded up to 4",
        storage,
        align,
    )?;
    b.indices.check(
        "indices",
        index_bytes,
        "one index per place",
        storage,
        align,
    )?;
    b.output.check(
        "output",
        out_bytes,
        "its rows, rounded up to 4",
        storage,
        align,
    )?;
    let mut written = vec![("output", b.output, out_bytes)];
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
        for (read, r) in [("data", &b.data), ("indices", &b.indices)] {
            if w.buffer == r.buffer {
                return Err(SplitError::BadBuffer(format!(
                    "the {name} region is in the {read}'s buffer; wgpu binds a buffer \
                     read-only or writable in one dispatch"
                )));
            }
        }
    }
    if let [(_, o, o_size), (_, s, _)] = written[..] {
        let apart = s.offset >= o.offset + o_size || o.offset >= s.offset + RowsStatus::BYTES;
        if o.buffer == s.buffer && !apart {
            return Err(SplitError::BadBuffer(format!(
                "the status region at {} overlaps the output's {} bytes at {}",
                s.offset, o_size, o.offset
            )));
        }
    }
    Ok(())
}
