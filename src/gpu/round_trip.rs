//! The host round trip ([`GpuSplitter::run`]): upload, record as [`GpuSplitter::encode`]
//! does (parts packed), read back; and one window of a stream ([`crate::stream`]).

use crate::error::{Result, SplitError};
use crate::gpu::device::{block_on, scoped_async};
use crate::gpu::gather::UNIT_BYTES;
use crate::gpu::placement::{BufferRegion, PartLayout, Placement};
use crate::gpu::planner::Direction;
use crate::gpu::plans::Recorded;
use crate::gpu::plans::{Parts, Plan};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::SplitPlan;
use crate::tensor::HostTensor;
use crate::DType;

impl GpuSplitter {
    /// Where [`GpuSplitter::run`] places the parts of the split or concat of `plan`
    /// (`direction`): packed at 16 bytes (memory in proportion to the data, even for 100,000
    /// tiny parts) where one dispatch covers it, bindable offsets where it must be cut into
    /// pieces. Fails before any allocation if the whole tensor or the parts exceed the
    /// device's `max_buffer_size`.
    pub(crate) fn host_layout(
        &self,
        direction: Direction,
        plan: &SplitPlan,
        dtype: DType,
    ) -> Result<PartLayout> {
        let packed = PartLayout::place(plan, dtype, UNIT_BYTES)?;
        if !self.runs_in_pieces(plan, dtype, packed.total_bytes)? {
            self.check_buffer_sizes(direction, plan, dtype, &packed)?;
            Ok(packed)
        } else {
            self.bindable_layout(direction, plan, dtype)
        }
    }

    /// Uploads `input`, does what `plan` says and reads the result back: a split
    /// ([`SplitPlan`]) takes a `&HostTensor` and gives its outputs, a concat
    /// ([`ConcatPlan`](crate::ConcatPlan)) takes its inputs (`&[HostTensor]`) and gives its
    /// output; rows placed by indices and a paged write take their tensors in the order
    /// [`Plan`] lists. [`Plan::verify`] checks the result against the CPU's, byte for byte.
    ///
    /// ```no_run
    /// use wgpu_split::{ops, BackendChoice, GpuSplitter, HostTensor, IntTensor};
    /// let gpu = GpuSplitter::open(BackendChoice::Auto)?;
    /// let x = HostTensor::from_slice(&[2, 3], &[1u16, 2, 3, 4, 5, 6])?;
    /// let plan = ops::split(x.shape(), &IntTensor::scalar(1), 3)?;
    /// let parts = gpu.run(&plan, &x)?;
    /// let back = gpu.run(&plan.inverse(), &parts)?; // the concat of the parts
    /// assert_eq!(back, x);
    /// # Ok::<(), wgpu_split::SplitError>(())
    /// ```
    pub fn run<P: Plan>(&self, plan: &P, input: &P::HostInput) -> Result<P::HostOutput> {
        plan.run_blocking(self, input)
    }

    /// [`GpuSplitter::run`] for async callers: nothing blocks the caller's thread, and the
    /// future is `Send` (an engine on tokio can spawn it). The result is read back once the
    /// buffer maps: the future sleeps until wgpu's map callback wakes it. On native wgpu nobody
    /// needs to poll the device for that: a helper thread, blocked in `device.poll` until the
    /// device has done the work, runs the callback (an engine that polls its device itself
    /// does no harm). On WebGPU the browser runs it.
    pub async fn run_async<P: Plan>(
        &self,
        plan: &P,
        input: &P::HostInput,
    ) -> Result<P::HostOutput> {
        plan.run_on(self, input).await
    }

    /// [`GpuSplitter::run`] of a split or a concat.
    pub(crate) fn run_parts<P: Parts>(
        &self,
        plan: &P,
        input: &P::HostInput,
    ) -> Result<P::HostOutput> {
        // Native wgpu's error scopes are ready at once: this does not wait; the read-back does.
        let (readback, recorded, dtype) = block_on("GpuSplitter::run", self.submit(plan, input))?;
        self.read_back(&readback, |bytes| {
            plan.download(bytes, &recorded.parts, dtype)
        })
    }

    /// [`GpuSplitter::run_async`] of a split or a concat.
    pub(crate) async fn run_parts_async<P: Parts>(
        &self,
        plan: &P,
        input: &P::HostInput,
    ) -> Result<P::HostOutput> {
        let (readback, recorded, dtype) = self.submit(plan, input).await?;
        map_read(&self.device, &readback).await?;
        read_mapped(&readback, |bytes| {
            plan.download(bytes, &recorded.parts, dtype)
        })
    }

    /// Uploads `input` (its parts packed), records the split or concat and the copy of what it
    /// writes into a readback buffer, and submits; returns the readback buffer, what was
    /// recorded and the dtype.
    async fn submit<P: Parts>(
        &self,
        plan: &P,
        input: &P::HostInput,
    ) -> Result<(wgpu::Buffer, Recorded, DType)> {
        let dtype = plan.host_dtype(input)?;
        let layout = self.host_layout(P::DIRECTION, plan.geometry(), dtype)?;
        let upload = P::upload(input, &layout);
        let (readback, recorded) = self
            .submit_placed(P::DIRECTION, plan.geometry(), dtype, &layout, |view| {
                for &(at, bytes) in &upload {
                    let at = at as usize;
                    view.slice(at..at + bytes.len()).copy_from_slice(bytes);
                }
            })
            .await?;
        Ok((readback, recorded, dtype))
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
        layout: &PartLayout,
        fill: impl FnOnce(&mut wgpu::BufferViewMut),
    ) -> Result<(wgpu::Buffer, Recorded)> {
        // The whole tensor's bytes, and the parts' region.
        let whole = plan.whole_binding_size(dtype)?;
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
        layout: &PartLayout,
    ) -> Result<Recorded> {
        let mut encoder = self.device.create_command_encoder(&Default::default());
        let encoded = self
            .prepare_placed(
                direction,
                plan,
                dtype,
                BufferRegion::from(&buffers.input),
                BufferRegion::from(&buffers.output),
                Placement::Given(layout),
            )
            .await?
            .encode_once(&mut encoder)
            .await?;
        let written = match direction {
            Direction::Split => encoded.parts.total_bytes,
            Direction::Concat => plan.whole_binding_size(dtype)?,
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
        self.map_blocking(buffer)?;
        read_mapped(buffer, read)
    }

    /// Maps a MAP_READ buffer after the queue's work: polling the device on this thread where
    /// `blocking` (the sync entry points, which start no thread: a thread left waiting in the
    /// device's poll when the process exits crashed Mesa's GL driver), else awaiting wgpu's
    /// callback ([`map_read`]).
    pub(crate) async fn map_readback(&self, buffer: &wgpu::Buffer, blocking: bool) -> Result<()> {
        match blocking {
            true => self.map_blocking(buffer),
            false => map_read(&self.device, buffer).await,
        }
    }

    /// Maps a MAP_READ buffer after the queue's work, polling the device on this thread until
    /// it is done: the sync entry points, which start no thread.
    pub(crate) fn map_blocking(&self, buffer: &wgpu::Buffer) -> Result<()> {
        let (tx, rx) = std::sync::mpsc::channel();
        buffer.map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| SplitError::Device(format!("waiting for the split: {e}")))?;
        rx.recv()
            .map_err(|_| SplitError::Device("the device dropped the readback".into()))?
            .map_err(|e| SplitError::Device(format!("mapping the readback buffer: {e}")))
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
    /// Uploads one window of a stream into `buffers` (allocated on the first window, again
    /// only where a window needs more), splits it and maps the readback, blocking this thread
    /// where `blocking` (the sync `run_stream`, which starts no thread), else awaiting the map
    /// ([`map_read`]): returns the mapped readback buffer and what was recorded (where each
    /// output lies in it).
    pub(crate) async fn split_window<'b>(
        &self,
        buffers: &'b mut Option<HostBuffers>,
        plan: &SplitPlan,
        input: &HostTensor,
        blocking: bool,
    ) -> Result<(&'b wgpu::Buffer, Recorded)> {
        let dtype = input.dtype();
        let layout = self.host_layout(Direction::Split, plan, dtype)?;
        let in_size = plan.whole_binding_size(dtype)?;
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
        let recorded = self
            .record_into(b, Direction::Split, plan, dtype, &layout)
            .await?;
        if blocking {
            self.map_blocking(&b.readback)?;
        } else {
            map_read(&self.device, &b.readback).await?;
        }
        Ok((&b.readback, recorded))
    }
}
