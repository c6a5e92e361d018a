//! [`GpuSplitter::run_stream`] and its async twin: the streamed split with the GPU splitting
//! each window, its read-back blocking the caller's thread or awaited.

use crate::error::Result;
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::stream::{stream, OutputSink, StreamOptions, StreamReport, WindowSplitter};
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
    ///
    /// ```no_run
    /// use wgpu_split::{ops, BackendChoice, DType, GpuSplitter, IntTensor, StreamOptions};
    /// let gpu = GpuSplitter::open(BackendChoice::Auto)?;
    /// // 8 GiB of f32 from a file, into three files, 4 MiB of input at a time.
    /// let plan = ops::split(&[1 << 20, 2048], &IntTensor::scalar(1), 3)?;
    /// let input = std::io::BufReader::new(std::fs::File::open("x.bin")?);
    /// let mut outputs: Vec<std::fs::File> =
    ///     (0..3).map(|i| std::fs::File::create(format!("y{i}.bin"))).collect::<Result<_, _>>()?;
    /// let report = gpu.run_stream(&plan, DType::F32, input, &mut outputs, &StreamOptions::default())?;
    /// assert!(report.verified);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_stream(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: impl Read,
        outputs: &mut (impl OutputSink + ?Sized),
        options: &StreamOptions,
    ) -> Result<StreamReport> {
        // Each window's read-back blocks this thread, as `run`'s does: no thread is started.
        crate::gpu::device::block_on(
            "GpuSplitter::run_stream",
            self.stream_on_gpu(plan, dtype, input, outputs, options, true),
        )
    }

    /// [`GpuSplitter::run_stream`] for async callers and WebGPU: each window's read-back is
    /// awaited, as in [`GpuSplitter::run_async`]. Reading `input` and writing `outputs` stay
    /// sync (in a browser, a reader over bytes in memory). The future is `Send` where `input`
    /// and `outputs` are. In the browser the timings are zero: std has no clock there.
    pub async fn run_stream_async(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: impl Read,
        outputs: &mut (impl OutputSink + ?Sized),
        options: &StreamOptions,
    ) -> Result<StreamReport> {
        self.stream_on_gpu(plan, dtype, input, outputs, options, false)
            .await
    }

    /// [`GpuSplitter::run_stream`], each window's read-back blocking the thread where
    /// `blocking`, else awaited.
    async fn stream_on_gpu(
        &self,
        plan: &SplitPlan,
        dtype: DType,
        input: impl Read,
        outputs: &mut (impl OutputSink + ?Sized),
        options: &StreamOptions,
        blocking: bool,
    ) -> Result<StreamReport> {
        let options = StreamOptions {
            window_bytes: options.window_bytes.min(self.limits.max_buffer_size / 4),
            ..*options
        };
        let mut splitter = WindowSplitter::Gpu {
            gpu: self,
            buffers: None,
            blocking,
        };
        stream(plan, dtype, input, outputs, &options, &mut splitter).await
    }
}
