//! The yardsticks every case is timed against ([`Yardsticks`]: the copy command and the copy
//! kernels moving the same bytes), and the cases of rows placed by indices (`wgsl_split::suite::rows_suite`):
//! an embedding's lookup, set rows, and a paged KV write at a decode step and at a prefill,
//! each timed against the copies of its bytes and checked against the CPU reference.

use super::rows_buffers::RowsCaseBuffers;
use super::timing::{time_interleaved, time_ms, Time};
use super::{Bencher, CopyKind};
use crate::error::{Result, SplitError};
use crate::gpu::device::block_on;
use crate::gpu::device::{buffer_with, scoped};
use crate::gpu::gather::grid;
use crate::gpu::prepared::PreparedParts;
use wgsl_split::suite::RowsCase;

/// The copies of `size` bytes from `input` to `output`: the copy command, and each copy
/// kernel with its bind group and grid.
pub(super) struct Yardsticks<'a> {
    input: &'a wgpu::Buffer,
    output: &'a wgpu::Buffer,
    size: u64,
    kernels: Vec<(u32, &'a wgpu::ComputePipeline, wgpu::BindGroup, (u32, u32))>,
}

impl Yardsticks<'_> {
    /// Records the copy of `kind` into `encoder`.
    pub(super) fn record(&self, kind: CopyKind, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        match self.kernels.iter().find(|k| Some(k.0) == kind.units()) {
            Some((_, pipeline, bind_group, (x, y))) => {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(*x, *y, 1);
            }
            None => encoder.copy_buffer_to_buffer(self.input, 0, self.output, 0, self.size),
        }
        Ok(())
    }
}

impl<'g> Bencher<'g> {
    /// The copies of the first `size` bytes of `input` into `output`.
    pub(super) fn yardsticks<'a>(
        &'a self,
        input: &'a wgpu::Buffer,
        output: &'a wgpu::Buffer,
        size: u64,
    ) -> Result<Yardsticks<'a>> {
        let device = self.gpu.device();
        let binding = |buffer| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset: 0,
                size: std::num::NonZeroU64::new(size),
            })
        };
        let mut kernels = Vec::new();
        for (units, pipeline) in &self.copy_kernels {
            let bind_group = scoped(device, "binding the copy kernel", || {
                device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("bench copy"),
                    layout: &pipeline.get_bind_group_layout(0),
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: binding(input),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: binding(output),
                        },
                    ],
                })
            })?;
            let grid = grid(&self.gpu.limits, (size / 16).div_ceil(256 * *units as u64))?;
            kernels.push((*units, pipeline, bind_group, grid));
        }
        Ok(Yardsticks {
            input,
            output,
            size,
            kernels,
        })
    }
}

/// One case of rows placed by indices, measured.
#[derive(Debug, Clone)]
pub struct RowsResult {
    /// The case.
    pub name: &'static str,
    /// Bytes the case moves (read, and written): the copies move as many.
    pub bytes: u64,
    /// The dispatch, recorded each run into the engine's encoder.
    pub ours: Time,
    /// The copies ([`CopyKind::ALL`] order).
    pub copies: [Time; 3],
    /// Host time of the prepared node's encode, ms.
    pub prepared_host_ms: f64,
    /// Host time of a whole `encode` (planned, checked and bound again), ms.
    pub encode_host_ms: f64,
}

impl RowsResult {
    /// The fastest copy's time over ours, by the clock ratios take.
    pub fn over_best_copy(&self) -> f64 {
        let best = self
            .copies
            .iter()
            .map(Time::ms)
            .fold(f64::INFINITY, f64::min);
        best / self.ours.ms()
    }

    /// The faster copy kernel's time over ours (the floor of the test devices).
    pub fn over_copy_kernel(&self) -> f64 {
        self.copies[1].ms().min(self.copies[2].ms()) / self.ours.ms()
    }
}

impl Bencher<'_> {
    /// Measures one case of rows placed by indices, and checks its bytes.
    pub fn run_rows_case(&self, case: &RowsCase) -> Result<RowsResult> {
        let buffers = RowsCaseBuffers::new(self.gpu, case)?;
        let prepared = buffers.prepare(self.gpu, case)?;
        let encode = &mut |encoder: &mut wgpu::CommandEncoder| {
            encode_now(&buffers.prepare(self.gpu, case)?, encoder)
        };
        let result = self.time_rows(case.name, buffers.moved, &prepared, encode)?;
        for (k, offset, want) in &buffers.want {
            self.check_bytes(case.name, &buffers.named[*k].1, *offset, want)?;
        }
        Ok(result)
    }

    /// Times `prepared` against the copies of `moved` bytes, in one loop; and on the host,
    /// its encode and `encode`, a node prepared and encoded once (planned, checked and
    /// bound again).
    fn time_rows(
        &self,
        name: &'static str,
        moved: u64,
        prepared: &PreparedParts,
        encode: &mut dyn FnMut(&mut wgpu::CommandEncoder) -> Result<()>,
    ) -> Result<RowsResult> {
        let device = self.gpu.device();
        let host = |f: &mut dyn FnMut(&mut wgpu::CommandEncoder) -> Result<()>| {
            time_ms(self.runs, || {
                f(&mut device.create_command_encoder(&Default::default()))
            })
        };
        let prepared_host_ms = host(&mut |e| encode_now(prepared, e))?;
        let encode_host_ms = host(encode)?;
        let device = self.gpu.device();
        let storage = wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_SRC
            | wgpu::BufferUsages::COPY_DST;
        let size = moved.next_multiple_of(16).max(16);
        let zeros = vec![0u8; size as usize];
        let input = buffer_with(device, "bench copy input", &zeros, storage)?;
        let output = buffer_with(device, "bench copy output", &zeros, storage)?;
        let yardsticks = self.yardsticks(&input, &output, size)?;
        let batch = self.batch;
        let copy = |kind: CopyKind| {
            let yardsticks = &yardsticks;
            move || {
                self.submit(|encoder| (0..batch).try_for_each(|_| yardsticks.record(kind, encoder)))
            }
        };
        let [mut c0, mut c1, mut c2] = CopyKind::ALL.map(copy);
        let [ours, c0, c1, c2] = time_interleaved(
            self.runs,
            self.clock.as_ref(),
            [
                &mut || {
                    self.submit(|encoder| {
                        (0..batch).try_for_each(|_| encode_now(prepared, encoder))
                    })
                },
                &mut c0,
                &mut c1,
                &mut c2,
            ],
        )?;
        let [ours, c0, c1, c2] = [ours, c0, c1, c2].map(|t| t.per(batch));
        Ok(RowsResult {
            name,
            bytes: moved,
            ours,
            copies: [c0, c1, c2],
            prepared_host_ms,
            encode_host_ms,
        })
    }

    /// Checks `want` against the bytes of `buffer` from `offset`.
    fn check_bytes(
        &self,
        name: &str,
        buffer: &wgpu::Buffer,
        offset: u64,
        want: &[u8],
    ) -> Result<()> {
        let size = (want.len() as u64).next_multiple_of(4);
        let back = self.gpu.device().create_buffer(&wgpu::BufferDescriptor {
            label: Some("bench rows readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self
            .gpu
            .device()
            .create_command_encoder(&Default::default());
        encoder.copy_buffer_to_buffer(buffer, offset, &back, 0, size);
        self.gpu.queue().submit([encoder.finish()]);
        self.gpu.read_back(&back, |bytes| {
            match (0..want.len()).find(|&i| bytes[i] != want[i]) {
                None => Ok(()),
                Some(i) => Err(SplitError::Mismatch(format!(
                    "{name}: byte {i} of {} differs from the CPU reference",
                    want.len()
                ))),
            }
        })
    }
}

/// Records `prepared` into `encoder`, as [`Prepared::encode`](crate::Prepared::encode) does.
fn encode_now(prepared: &PreparedParts, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
    block_on("Prepared::encode", prepared.encode(encoder)).map(|_| ())
}
