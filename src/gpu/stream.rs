//! [`GpuSplitter::run_stream`]: host data split on the GPU window by window, in bounded
//! memory ([`crate::stream`]).

use crate::error::{Result, SplitError};
use crate::gpu::device::scoped_async;
use crate::gpu::record::input_binding_size;
use crate::gpu::run::HostBuffers;
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::stream::{stream, OutputSink, StreamOptions, StreamReport};
use crate::tensor::HostTensor;
use crate::DType;
use std::io::Read;

impl GpuSplitter {
    /// Splits the C-order little-endian bytes of `input` as `plan` says, window by window,
    /// and appends each output's bytes to `outputs` in order: inputs larger than the host's
    /// memory or than the device's buffers split in the memory of a few windows.
    ///
    /// Each window (`options.window_bytes` of input, kept within a quarter of the device's
    /// `max_buffer_size`) is uploaded, split on the GPU into the matching parts of every
    /// output, read back, checked against the CPU reference when `options.verify`, and handed
    /// to `outputs`. The device buffers are allocated once and reused. An input that ends
    /// early, a writer's error and a device error (a lost device included) end the stream
    /// with an error; what was written by then is the caller's to discard.
    pub fn run_stream(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: impl Read,
        outputs: &mut (impl OutputSink + ?Sized),
        options: &StreamOptions,
    ) -> Result<StreamReport> {
        let options = StreamOptions {
            window_bytes: options.window_bytes.min(self.limits.max_buffer_size / 4),
            ..*options
        };
        let mut buffers = None;
        stream(
            plan,
            dtype,
            input,
            outputs,
            &options,
            &mut |plan, input, emit| {
                // Native wgpu's error scopes are ready at once: this waits only for the read-back.
                pollster::block_on(self.split_window(&mut buffers, plan, input, emit))
            },
        )
    }

    /// Uploads one window, splits it and hands each non-empty output's bytes to `emit`.
    async fn split_window(
        &self,
        buffers: &mut Option<HostBuffers>,
        plan: &SplitPlan,
        input: &HostTensor,
        emit: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let dtype = input.dtype();
        let layout = self.host_layout(plan, dtype)?;
        let in_size = input_binding_size(plan, dtype)?;
        let fits =
            |b: &HostBuffers| b.input.size() >= in_size && b.output.size() >= layout.total_bytes;
        if !buffers.as_ref().is_some_and(fits) {
            // Windows are the same size but for the last, so this happens once or twice.
            *buffers = None;
            *buffers =
                Some(HostBuffers::new(&self.device, in_size, layout.total_bytes, false).await?);
        }
        let Some(b) = buffers.as_ref() else {
            return Err(SplitError::Device("the window buffers are missing".into()));
        };
        // write_buffer takes whole 4-byte words: the last partial word goes up zero-padded.
        let data = input.bytes();
        let whole = data.len() / 4 * 4;
        let uploaded = scoped_async(&self.device, "uploading a window", || {
            if whole > 0 {
                self.queue.write_buffer(&b.input, 0, &data[..whole]);
            }
            if whole < data.len() {
                let mut tail = [0u8; 4];
                tail[..data.len() - whole].copy_from_slice(&data[whole..]);
                self.queue.write_buffer(&b.input, whole as u64, &tail);
            }
        })
        .await;
        if uploaded.is_err() {
            // Buffers made on a lost device are invalid: name the loss, not the upload.
            // (`split_into` checks the device too, as every encode does.)
            self.probe.check("streaming the split")?;
        }
        uploaded?;
        let encoded = self.split_into(b, plan, dtype, layout).await?;
        self.read_back(&b.readback, |bytes| {
            for (i, r) in encoded.layout.ranges.iter().enumerate() {
                if r.size > 0 {
                    emit(i, &bytes[r.offset as usize..(r.offset + r.size) as usize])?;
                }
            }
            Ok(())
        })
    }
}
