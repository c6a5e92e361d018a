//! The host round trip of a split through views ([`GpuSplitter::run_into_views`]): the GPU's
//! [`reference::split_into_views`](crate::reference::split_into_views).

use crate::error::{Result, SplitError};
use crate::gpu::device::{block_on, buffer_with, scoped_async};
use crate::gpu::parts::Outputs;
use crate::gpu::placement::BufferRegion;
use crate::gpu::plans::Encoded;
use crate::gpu::round_trip::{map_read, read_mapped};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::{PartView, SplitPlan};
use crate::tensor::HostTensor;

impl GpuSplitter {
    /// Uploads `input` and each output's region (`regions[i]`, with the bytes it holds),
    /// splits `input` as `plan` says with output `i` written through `views[i]` into
    /// `regions[i]`, and reads the regions back: every byte outside the views' elements as it
    /// was. [`reference::split_into_views`](crate::reference::split_into_views) computes the
    /// same on the CPU.
    ///
    /// ```no_run
    /// use wgpu_split::{ops, BackendChoice, GpuSplitter, HostTensor, IntTensor, PartView};
    /// let gpu = GpuSplitter::open(BackendChoice::Auto)?;
    /// let x = HostTensor::from_slice(&[4, 6], &[0u32; 24])?;
    /// let plan = ops::split(x.shape(), &IntTensor::scalar(1), 2)?;
    /// // Each [4, 3] output stored transposed, [3, 4].
    /// let t = PartView::within(&[4, 3], &[3, 4], &[1, 0], &[0, 0])?;
    /// let mut regions = vec![vec![0u8; 48]; 2];
    /// gpu.run_into_views(&plan, &x, &[t.clone(), t], &mut regions)?;
    /// # Ok::<(), wgpu_split::SplitError>(())
    /// ```
    pub fn run_into_views(
        &self,
        plan: &SplitPlan,
        input: &HostTensor,
        views: &[PartView],
        regions: &mut [Vec<u8>],
    ) -> Result<Encoded> {
        let submitted = self.submit_views(plan, input, views, regions);
        let (readback, sizes, encoded) = block_on("GpuSplitter::run_into_views", submitted)?;
        self.read_back(&readback, |bytes| copy_regions(bytes, &sizes, regions))?;
        Ok(encoded)
    }

    /// [`GpuSplitter::run_into_views`] for async callers (WebGPU), as
    /// [`GpuSplitter::run_async`].
    pub async fn run_into_views_async(
        &self,
        plan: &SplitPlan,
        input: &HostTensor,
        views: &[PartView],
        regions: &mut [Vec<u8>],
    ) -> Result<Encoded> {
        let (readback, sizes, encoded) = self.submit_views(plan, input, views, regions).await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |bytes| copy_regions(bytes, &sizes, regions))?;
        Ok(encoded)
    }

    /// Uploads the input and the regions, records the split through `views` and the copy of
    /// every region into one readback buffer, and submits; returns the readback buffer, each
    /// region's bytes in it (its length rounded up to 4), and what the split recorded.
    async fn submit_views(
        &self,
        plan: &SplitPlan,
        input: &HostTensor,
        views: &[PartView],
        regions: &[Vec<u8>],
    ) -> Result<(wgpu::Buffer, Vec<u64>, Encoded)> {
        plan.check_whole_shape(input.shape())?;
        if regions.len() != plan.num_parts() {
            return Err(SplitError::BadView(format!(
                "{} regions for {} outputs: one each",
                regions.len(),
                plan.num_parts()
            )));
        }
        let device = &self.device;
        let storage = wgpu::BufferUsages::STORAGE;
        let whole = buffer_with(device, "split input", input.bytes(), storage)?;
        let parts = regions
            .iter()
            .map(|r| {
                buffer_with(
                    device,
                    "split output",
                    r,
                    storage | wgpu::BufferUsages::COPY_SRC,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        // Each region's bytes rounded up to 4, back to back in one readback buffer.
        let sizes: Vec<u64> = parts.iter().map(wgpu::Buffer::size).collect();
        let readback = scoped_async(device, "allocating the readback buffer", || {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("split readback"),
                size: sizes.iter().sum::<u64>().max(4),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })
        .await?;
        let bound: Vec<BufferRegion<'_>> = parts.iter().map(Into::into).collect();
        let mut encoder = device.create_command_encoder(&Default::default());
        let to = Outputs::Views(&bound, views);
        let encoded = self
            .encode_async(&mut encoder, plan, input.dtype(), (&whole).into(), to)
            .await?;
        scoped_async(device, "reading the regions back", || {
            let mut at = 0;
            for (part, &size) in parts.iter().zip(&sizes) {
                encoder.copy_buffer_to_buffer(part, 0, &readback, at, size);
                at += size;
            }
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        Ok((readback, sizes, encoded))
    }
}

/// Each region's bytes from `bytes`, where they lie `sizes` bytes apart.
fn copy_regions(bytes: &[u8], sizes: &[u64], regions: &mut [Vec<u8>]) -> Result<()> {
    let mut at = 0;
    for (region, &size) in regions.iter_mut().zip(sizes) {
        let n = region.len();
        region.copy_from_slice(&bytes[at..at + n]);
        at += size as usize;
    }
    Ok(())
}
