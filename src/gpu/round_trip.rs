//! The host round trip: upload the input, [`GpuSplitter::encode`] (outputs packed), read the
//! outputs back; and [`GpuSplitter::run_stream`], the same window by window in bounded memory
//! ([`crate::stream`]).

use crate::error::{Result, SplitError};
use crate::gpu::device::{block_on, blocks_in_browser, scoped_async};
use crate::gpu::gather::{fits_one_dispatch, window_limit};
use crate::gpu::placement::{input_binding_size, BufferRegion, OutputLayout, Placement};
use crate::gpu::planner::Direction;
use crate::gpu::prepared::EncodedSplit;
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::stream::{stream, OutputSink, StreamOptions, StreamReport};
use crate::tensor::{byte_count, HostTensor};
use crate::DType;
use std::io::Read;

impl GpuSplitter {
    /// The layout [`GpuSplitter::run`] reads back: outputs packed at 16 bytes (memory in
    /// proportion to the data, even for 100,000 tiny outputs) where one dispatch covers the
    /// split, bindable offsets where it must be cut into parts. Fails before any allocation
    /// if the input or the outputs exceed the device's `max_buffer_size`.
    pub(crate) fn host_layout(&self, plan: &SplitPlan, dtype: DType) -> Result<OutputLayout> {
        let input_bytes = byte_count(plan.input_shape(), dtype)? as u64;
        let packed = OutputLayout::packed(plan, dtype)?;
        if fits_one_dispatch(input_bytes, packed.total_bytes, window_limit(&self.limits)) {
            self.check_buffer_sizes(Direction::Split, plan, dtype, &packed)?;
            Ok(packed)
        } else {
            self.output_layout(plan, dtype)
        }
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
        // Native wgpu's error scopes are ready at once: this does not wait; the read-back does.
        let (readback, encoded) = block_on("GpuSplitter::run", self.submit(plan, input))?;
        let dtype = input.dtype();
        let outputs = self.read_back(&readback, |bytes| {
            encoded.layout.outputs_from(bytes, plan, dtype)
        })?;
        Ok((outputs, encoded))
    }

    /// [`GpuSplitter::run`] for async callers: nothing blocks the caller's thread, and the
    /// future is `Send` (an engine on tokio can spawn it). The outputs are read back once the
    /// buffer maps: the future sleeps until wgpu's map callback wakes it. On native wgpu nobody
    /// needs to poll the device for that: a helper thread, blocked in `device.poll` until the
    /// device has done the split, runs the callback (an engine that polls its device itself
    /// does no harm). On WebGPU the browser runs it.
    pub async fn run_async(&self, plan: &SplitPlan, input: &HostTensor) -> Result<Vec<HostTensor>> {
        let (readback, encoded) = self.submit(plan, input).await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |bytes| {
            encoded.layout.outputs_from(bytes, plan, input.dtype())
        })
    }

    /// Uploads `input`, records the split and the copy into a readback buffer, and submits;
    /// returns the readback buffer and what was recorded.
    async fn submit(
        &self,
        plan: &SplitPlan,
        input: &HostTensor,
    ) -> Result<(wgpu::Buffer, EncodedSplit)> {
        let dtype = input.dtype();
        plan.check_input_shape(input.shape())?;
        let layout = self.host_layout(plan, dtype)?;
        let data = input.bytes();
        self.submit_placed(Direction::Split, plan, dtype, &layout, |view| {
            view.slice(..data.len()).copy_from_slice(data)
        })
        .await
    }

    /// Allocates host buffers for the split or concat of `plan` (`direction`) whose parts
    /// `layout` places, writes the bytes it reads through `fill` (the mapped input buffer),
    /// records it and the copy of what it writes into the readback buffer, and submits;
    /// returns the readback buffer and what was recorded.
    pub(crate) async fn submit_placed(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        layout: &OutputLayout,
        fill: impl FnOnce(&mut wgpu::BufferViewMut),
    ) -> Result<(wgpu::Buffer, EncodedSplit)> {
        // The whole tensor's bytes, and the parts' region.
        let whole = input_binding_size(plan, dtype)?;
        let (in_size, out_size) = direction.in_order(whole, layout.total_bytes);
        let buffers = HostBuffers::new(&self.device, in_size, out_size, true).await?;
        {
            // A lost device makes buffers that cannot be mapped: say so, rather than name the
            // mapping. (`record_into` checks the device too, as every encode does.)
            let mut view = match buffers.input.get_mapped_range_mut(..) {
                Ok(view) => view,
                Err(e) => {
                    self.probe
                        .check(format_args!("running the {}", direction.op()))?;
                    return Err(SplitError::Device(format!("mapping the input buffer: {e}")));
                }
            };
            fill(&mut view);
        }
        buffers.input.unmap();
        let encoded = self
            .record_into(&buffers, direction, plan, dtype, layout)
            .await?;
        Ok((buffers.readback, encoded))
    }

    /// Records the split (or concat) of `buffers.input` into `buffers.output`, its parts
    /// placed by `layout`, and the copy of what it writes into `buffers.readback`, and
    /// submits them.
    pub(crate) async fn record_into(
        &self,
        buffers: &HostBuffers,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
        layout: &OutputLayout,
    ) -> Result<EncodedSplit> {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let region = |buffer| BufferRegion { buffer, offset: 0 };
        let encoded = self
            .prepare_placed(
                direction,
                plan,
                dtype,
                region(&buffers.input),
                region(&buffers.output),
                Placement::Given(layout),
            )
            .await?
            .encode_once(&mut encoder)
            .await?;
        let written = match direction {
            Direction::Split => encoded.layout.total_bytes,
            Direction::Concat => input_binding_size(plan, dtype)?,
        };
        let what = format!("submitting the {}", direction.op());
        scoped_async(&self.device, &what, || {
            encoder.copy_buffer_to_buffer(&buffers.output, 0, &buffers.readback, 0, written);
            self.queue.submit([encoder.finish()]);
        })
        .await?;
        Ok(encoded)
    }

    /// Maps a MAP_READ buffer after the queue's work, waiting for the device, and hands its
    /// bytes to `read` ([`read_mapped`]).
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
        read_mapped(buffer, read)
    }
}

/// The buffers of a host round trip: the input, the outputs and the readback.
pub(crate) struct HostBuffers {
    /// The input (STORAGE, COPY_SRC for the copy routes, COPY_DST for uploads).
    pub input: wgpu::Buffer,
    /// The output region (STORAGE, COPY_SRC, COPY_DST).
    pub output: wgpu::Buffer,
    /// Where the outputs are copied to be read (MAP_READ).
    pub readback: wgpu::Buffer,
}

impl HostBuffers {
    /// Allocates `input_bytes` (at least 16) of input, mapped for writing if `mapped_input`,
    /// and `output_bytes` of outputs and of readback; a device error is captured.
    pub(crate) async fn new(
        device: &wgpu::Device,
        input_bytes: u64,
        output_bytes: u64,
        mapped_input: bool,
    ) -> Result<Self> {
        use wgpu::BufferUsages as U;
        scoped_async(device, "allocating buffers", || {
            let buffer = |label, size, usage, mapped_at_creation| {
                device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size,
                    usage,
                    mapped_at_creation,
                })
            };
            Self {
                input: buffer(
                    "split input",
                    input_bytes.max(16),
                    U::STORAGE | U::COPY_SRC | U::COPY_DST,
                    mapped_input,
                ),
                output: buffer(
                    "split outputs",
                    output_bytes,
                    U::STORAGE | U::COPY_SRC | U::COPY_DST,
                    false,
                ),
                readback: buffer(
                    "split readback",
                    output_bytes,
                    U::MAP_READ | U::COPY_DST,
                    false,
                ),
            }
        })
        .await
    }
}

/// Hands the bytes of a mapped buffer to `read`, which copies out what it needs (the mapped
/// bytes are not copied as a whole first), then unmaps it.
pub(crate) fn read_mapped<T>(
    buffer: &wgpu::Buffer,
    read: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<T> {
    let result = {
        let view = buffer
            .get_mapped_range(..)
            .map_err(|e| SplitError::Device(format!("reading the readback buffer: {e}")))?;
        read(&view)
    };
    buffer.unmap();
    result
}

/// Maps `buffer` for reading without blocking: a future woken by wgpu's map callback, never
/// by itself. Someone must poll the device for that callback to run: on native wgpu a helper
/// thread does, blocked in `device.poll` until the queue's work is done (no core spins
/// meanwhile); on WebGPU the browser does.
pub(crate) async fn map_read(device: &wgpu::Device, buffer: &wgpu::Buffer) -> Result<()> {
    use std::sync::{Arc, Mutex};
    use std::task::{Poll, Waker};

    /// The map's result once known, and the waker of the task waiting for it.
    #[derive(Default)]
    struct Mapping {
        result: Option<Result<()>>,
        waker: Option<Waker>,
    }
    fn finish(state: &Mutex<Mapping>, result: Result<()>) {
        let mut m = state.lock().unwrap_or_else(|e| e.into_inner());
        m.result.get_or_insert(result);
        if let Some(w) = m.waker.take() {
            w.wake();
        }
    }

    let state: Arc<Mutex<Mapping>> = Arc::default();
    let on_map = state.clone();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        let r = r.map_err(|e| SplitError::Device(format!("mapping the readback buffer: {e}")));
        finish(&on_map, r);
    });
    #[cfg(not(target_arch = "wasm32"))]
    {
        let (device, on_poll) = (device.clone(), state.clone());
        let waiter = std::thread::Builder::new()
            .name("wgpu-split map wait".into())
            .spawn(move || {
                // The map callback runs inside this poll; a poll that fails ends the wait.
                if let Err(e) = device.poll(wgpu::PollType::wait_indefinitely()) {
                    finish(
                        &on_poll,
                        Err(SplitError::Device(format!("waiting for the split: {e}"))),
                    );
                }
            });
        if let Err(e) = waiter {
            return Err(SplitError::Device(format!(
                "starting the thread that waits for the split: {e}"
            )));
        }
    }
    #[cfg(target_arch = "wasm32")]
    let _ = device;
    std::future::poll_fn(|cx| {
        let mut m = state.lock().unwrap_or_else(|e| e.into_inner());
        match m.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                m.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    })
    .await
}

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
        if cfg!(target_arch = "wasm32") {
            // Reading, timing and writing are sync; the browser takes `run_async` per window.
            return Err(blocks_in_browser(
                "GpuSplitter::run_stream",
                "GpuSplitter::run_async on each window",
            ));
        }
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
                block_on(
                    "GpuSplitter::run_stream",
                    self.split_window(&mut buffers, plan, input, emit),
                )
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
            // (`record_into` checks the device too, as every encode does.)
            self.probe.check("streaming the split")?;
        }
        uploaded?;
        let encoded = self
            .record_into(b, Direction::Split, plan, dtype, &layout)
            .await?;
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
