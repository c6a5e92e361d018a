//! The host round trip: upload the input, [`GpuSplitter::encode_with_layout`], read the
//! outputs back.

use crate::error::{Result, SplitError};
use crate::gpu::device::scoped;
use crate::gpu::gather::abi::window_limit;
use crate::gpu::gather::plan::fits_one_dispatch;
use crate::gpu::output_layout::OutputLayout;
use crate::gpu::record::EncodedSplit;
use crate::gpu::region::BufferRegion;
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;

impl GpuSplitter {
    /// The layout [`GpuSplitter::run`] reads back: outputs packed at 16 bytes (memory in
    /// proportion to the data, even for 100,000 tiny outputs) where one dispatch covers the
    /// split, bindable offsets where it must be cut into parts. Fails before any allocation
    /// if the input or the outputs exceed the device's `max_buffer_size`.
    pub fn host_layout(&self, plan: &SplitPlan, dtype: DType) -> Result<OutputLayout> {
        let input_bytes = byte_count(plan.input_shape(), dtype)? as u64;
        let packed = OutputLayout::packed(plan, dtype)?;
        let layout =
            if fits_one_dispatch(input_bytes, packed.total_bytes, window_limit(&self.limits)) {
                packed
            } else {
                self.output_layout(plan, dtype)?
            };
        let input_binding = Self::input_binding_size(plan, dtype)?;
        for (what, bytes) in [
            ("input", input_binding),
            ("output region", layout.total_bytes),
        ] {
            if bytes > self.limits.max_buffer_size {
                return Err(SplitError::TooLarge(format!(
                    "{what} of {bytes} bytes exceeds the device's max_buffer_size of {} bytes",
                    self.limits.max_buffer_size
                )));
            }
        }
        Ok(layout)
    }

    /// Uploads `input`, splits it as `plan` says and reads every output back.
    pub fn run(&self, plan: &SplitPlan, input: &HostTensor) -> Result<Vec<HostTensor>> {
        Ok(self.run_detailed(plan, input)?.0)
    }

    /// [`GpuSplitter::run`], also returning what was recorded (layout, dispatches, copies).
    pub fn run_detailed(
        &self,
        plan: &SplitPlan,
        input: &HostTensor,
    ) -> Result<(Vec<HostTensor>, EncodedSplit)> {
        let dtype = input.dtype();
        plan.check_input_shape(input.shape())?;
        let layout = self.host_layout(plan, dtype)?;
        let in_size = Self::input_binding_size(plan, dtype)?.max(4);
        let (in_buf, out_buf, readback) = scoped(&self.device, "allocating buffers", || {
            let buffer = |label, size, usage, mapped_at_creation| {
                self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation,
                })
            };
            use wgpu::BufferUsages as U;
            (
                buffer("split input", in_size, U::STORAGE | U::COPY_SRC, true),
                buffer(
                    "split outputs",
                    layout.total_bytes,
                    U::STORAGE | U::COPY_SRC | U::COPY_DST,
                    false,
                ),
                buffer(
                    "split readback",
                    layout.total_bytes,
                    U::MAP_READ | U::COPY_DST,
                    false,
                ),
            )
        })?;
        {
            let mut view = in_buf
                .get_mapped_range_mut(..)
                .map_err(|e| SplitError::Device(format!("mapping the input buffer: {e}")))?;
            view.slice(..input.bytes().len())
                .copy_from_slice(input.bytes());
        }
        in_buf.unmap();

        let mut encoder = self.device.create_command_encoder(&Default::default());
        let region = |buffer| BufferRegion { buffer, offset: 0 };
        let encoded = self.encode_with_layout(
            &mut encoder,
            plan,
            dtype,
            region(&in_buf),
            region(&out_buf),
            layout,
        )?;
        let total = encoded.layout.total_bytes;
        scoped(&self.device, "submitting the split", || {
            encoder.copy_buffer_to_buffer(&out_buf, 0, &readback, 0, total);
            self.queue.submit([encoder.finish()]);
        })?;
        let outputs = self.read_back(&readback, |bytes| {
            encoded.layout.outputs_from(bytes, plan, dtype)
        })?;
        Ok((outputs, encoded))
    }

    /// Maps a MAP_READ buffer after the queue's work and hands its bytes to `read`, which copies
    /// out what it needs (the mapped bytes are not copied as a whole first).
    pub(crate) fn read_back<T>(
        &self,
        buffer: &wgpu::Buffer,
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| SplitError::Device(format!("waiting for the split: {e}")))?;
        rx.recv()
            .map_err(|_| SplitError::Device("the device dropped the readback".into()))?
            .map_err(|e| SplitError::Device(format!("mapping the readback buffer: {e}")))?;
        let result = {
            let view = buffer
                .get_mapped_range(..)
                .map_err(|e| SplitError::Device(format!("reading the readback buffer: {e}")))?;
            read(&view)
        };
        buffer.unmap();
        result
    }
}
