//! Splits streamed through bounded memory: host data larger than memory or the device.
//!
//! The input is read window by window ([`crate::plan::windows`]); each window is split, and
//! its part of every output is appended to that output's writer. Every output byte depends on
//! exactly one input byte, so the outputs come out in order and nothing is kept between
//! windows: memory holds a few windows, whatever the size of the input. Verification is
//! streamed the same way: each window's outputs are checked against the CPU reference split
//! of that window before they are written.
//!
//! [`GpuSplitter::run_stream`](crate::GpuSplitter::run_stream) splits on the GPU;
//! `run_reference_stream` on the CPU reference alone (feature `bench`, for the command).

use crate::error::{Result, SplitError};
#[cfg(feature = "bench")]
use crate::gpu::device::block_on;
use crate::gpu::placement::PartRange;
use crate::gpu::round_trip::{read_mapped, HostBuffers};
use crate::gpu::splitter::GpuSplitter;
use crate::plan::windows::windows;
use crate::plan::SplitPlan;
use crate::reference;
use crate::tensor::{byte_count, HostTensor};
use crate::DType;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

mod on_gpu;

/// Default input bytes per window: 4 MiB. A window takes about six times this in memory
/// (the window, the CPU reference's outputs, and on software adapters the upload, the device
/// buffers and the readback).
pub(crate) const DEFAULT_WINDOW_BYTES: u64 = 4 << 20;

/// Most input bytes per window, whatever [`StreamOptions::window_bytes`] asks: 1 GiB. A
/// window takes a few times its size in host memory, and larger windows gain nothing (the
/// per-window cost is one submit and one read-back).
pub(crate) const MAX_WINDOW_BYTES: u64 = 1 << 30;

/// How a split is streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Input bytes per window: at least one element ([`SplitError::WindowTooSmall`] where it
    /// is less), at most 1 GiB (4 MiB by default). The GPU path also keeps windows within the
    /// device's buffer limits.
    pub window_bytes: u64,
    /// Check every window's outputs against the CPU reference, byte for byte.
    pub verify: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        Self {
            window_bytes: DEFAULT_WINDOW_BYTES,
            verify: true,
        }
    }
}

/// What a streamed split did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamReport {
    /// Windows split.
    pub windows: u64,
    /// Input bytes read.
    pub input_bytes: u64,
    /// Whether every output byte was checked against the CPU reference.
    pub verified: bool,
    /// Where the time went, summed over the windows (zero in the browser, where std has no
    /// clock): reading the input,
    pub read_time: Duration,
    /// splitting (upload, split and read-back on the GPU path),
    pub split_time: Duration,
    /// the CPU reference's split and the comparison,
    pub verify_time: Duration,
    /// and handing the outputs to the sink.
    pub write_time: Duration,
}

/// Where the outputs of a streamed split go.
pub trait OutputSink {
    /// Appends `bytes` to output `output`. The bytes of each output arrive in order.
    fn write(&mut self, output: usize, bytes: &[u8]) -> std::io::Result<()>;

    /// Called after each window with the input bytes done so far and the total.
    fn progress(&mut self, _done: u64, _total: u64) {}
}

/// One writer per output, in output order; too few writers is an error, not a panic.
impl<W: Write> OutputSink for [W] {
    fn write(&mut self, output: usize, bytes: &[u8]) -> std::io::Result<()> {
        let count = self.len();
        let writer = self.get_mut(output).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("there are {count} writers, so none for output {output}"),
            )
        })?;
        writer.write_all(bytes)
    }
}

/// One writer per output, in output order, as for a slice.
impl<W: Write> OutputSink for Vec<W> {
    fn write(&mut self, output: usize, bytes: &[u8]) -> std::io::Result<()> {
        self.as_mut_slice().write(output, bytes)
    }
}

/// What splits each window of a stream.
pub(crate) enum WindowSplitter<'a> {
    /// The GPU, with the window buffers it allocates once and reuses; blocking the thread on
    /// each read-back where `blocking`.
    Gpu {
        gpu: &'a GpuSplitter,
        buffers: Option<HostBuffers>,
        blocking: bool,
    },
    /// The CPU reference alone, with the outputs it reuses.
    #[cfg(feature = "bench")]
    Reference(Vec<Vec<u8>>),
}

impl WindowSplitter<'_> {
    /// Splits one window (`plan`, `input`), then hands each non-empty output's bytes to `emit`.
    /// Only the split awaits; the hand-over is sync, so nothing `emit` holds lives across an
    /// await.
    async fn split(
        &mut self,
        plan: &SplitPlan,
        input: &HostTensor,
        emit: impl FnMut(usize, &[u8]) -> Result<()>,
    ) -> Result<()> {
        match self {
            WindowSplitter::Gpu {
                gpu,
                buffers,
                blocking,
            } => {
                let window = gpu.split_window(buffers, plan, input, *blocking).await?;
                let (readback, recorded) = window;
                hand_over(&recorded.parts.ranges, readback, emit)
            }
            #[cfg(feature = "bench")]
            WindowSplitter::Reference(parts) => {
                reference::split_bytes_into(input, plan, parts)?;
                let mut emit = emit;
                for (i, part) in parts.iter().enumerate() {
                    if !part.is_empty() {
                        emit(i, part)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Hands each non-empty part of the mapped `readback`, as `ranges` place them, to `emit`.
fn hand_over(
    ranges: &[PartRange],
    readback: &wgpu::Buffer,
    mut emit: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    read_mapped(readback, |bytes| {
        for (i, r) in ranges.iter().enumerate().filter(|(_, r)| r.size > 0) {
            let part = bytes.get(r.offset as usize..(r.offset + r.size) as usize);
            let part = part.ok_or_else(|| {
                SplitError::Device(format!(
                    "output {i} lies past the {} bytes read back",
                    bytes.len()
                ))
            })?;
            emit(i, part)?;
        }
        Ok(())
    })
}

/// The time since `start`; zero in the browser, where std has no clock.
fn since(start: Option<Instant>) -> Duration {
    start.map(|t| t.elapsed()).unwrap_or_default()
}

/// Now, where std has a clock (not wasm32).
fn now() -> Option<Instant> {
    (!cfg!(target_arch = "wasm32")).then(Instant::now)
}

/// Streams the split of `plan` from `input` (the C-order little-endian input bytes) to
/// `outputs`, one window at a time, with `splitter` doing each window's work.
pub(crate) async fn stream(
    plan: &SplitPlan,
    dtype: DType,
    mut input: impl Read,
    outputs: &mut (impl OutputSink + ?Sized),
    options: &StreamOptions,
    splitter: &mut WindowSplitter<'_>,
) -> Result<StreamReport> {
    let total = byte_count(plan.whole_shape(), dtype)? as u64;
    if options.window_bytes < dtype.size() as u64 {
        return Err(SplitError::WindowTooSmall {
            window_bytes: options.window_bytes,
            element_bytes: dtype.size(),
        });
    }
    let all = windows(
        plan,
        dtype.size(),
        options.window_bytes.min(MAX_WINDOW_BYTES),
    )?;
    let mut report = StreamReport {
        windows: all.len() as u64,
        input_bytes: 0,
        verified: options.verify,
        read_time: Duration::ZERO,
        split_time: Duration::ZERO,
        verify_time: Duration::ZERO,
        write_time: Duration::ZERO,
    };
    // The window's bytes and the reference's outputs, reused from window to window.
    let mut buffer = Vec::new();
    let mut want = Vec::new();
    for window in all {
        let window_plan = window.plan(plan)?;
        let n = byte_count(window_plan.whole_shape(), dtype)?;
        if let Err(e) = buffer.try_reserve_exact(n.saturating_sub(buffer.len())) {
            return Err(SplitError::TooLarge(format!(
                "a window of {n} bytes does not fit in memory ({e}); choose a smaller window"
            )));
        }
        buffer.resize(n, 0);
        let started = now();
        input.read_exact(&mut buffer).map_err(|e| {
            SplitError::File(format!(
                "reading input bytes {} to {}: {e}",
                report.input_bytes,
                report.input_bytes + n as u64
            ))
        })?;
        report.read_time += since(started);
        let tensor = HostTensor::new(dtype, window_plan.whole_shape().to_vec(), buffer)?;
        let started = now();
        if options.verify {
            reference::split_bytes_into(&tensor, &window_plan, &mut want)?;
        }
        report.verify_time += since(started);
        // Time spent inside `emit`: comparing (verify) and writing.
        let (mut handed_verify, mut handed_write) = (Duration::ZERO, Duration::ZERO);
        let mut emitted = vec![false; plan.num_parts()];
        let window_start = report.input_bytes;
        let emit = |output: usize, bytes: &[u8]| -> Result<()> {
            check_emitted(&window_plan, dtype, output, bytes.len(), &mut emitted)?;
            let started = now();
            if options.verify {
                compare_part(output, window_start, bytes, &want[output])?;
            }
            handed_verify += since(started);
            let started = now();
            let written = outputs
                .write(output, bytes)
                .map_err(|e| SplitError::File(format!("writing output {output}: {e}")));
            handed_write += since(started);
            written
        };
        let started = now();
        splitter.split(&window_plan, &tensor, emit).await?;
        let inside = since(started);
        report.split_time += inside.saturating_sub(handed_verify + handed_write);
        report.verify_time += handed_verify;
        report.write_time += handed_write;
        for (i, done) in emitted.iter().enumerate() {
            if !done && window_plan.part_bytes(i, dtype)? > 0 {
                return Err(SplitError::Mismatch(format!(
                    "output {i} got no bytes from the window at input byte {}",
                    report.input_bytes
                )));
            }
        }
        buffer = tensor.into_bytes();
        report.input_bytes += n as u64;
        outputs.progress(report.input_bytes, total);
    }
    Ok(report)
}

/// Checks that a window hands over each output once, with its size.
fn check_emitted(
    window: &SplitPlan,
    dtype: DType,
    output: usize,
    len: usize,
    emitted: &mut [bool],
) -> Result<()> {
    let expected = window.part_bytes(output, dtype)?;
    if emitted[output] || len as u64 != expected {
        return Err(SplitError::Mismatch(format!(
            "output {output} was handed {len} bytes of a window that gives it {expected}, \
             or handed them twice"
        )));
    }
    emitted[output] = true;
    Ok(())
}

/// Compares one window's part of an output with the reference's; the error names the first
/// different byte by its position in the window.
fn compare_part(output: usize, window_start: u64, got: &[u8], want: &[u8]) -> Result<()> {
    if got == want {
        return Ok(()); // memcmp; the byte loop below only names the difference
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        None => Ok(()),
        Some(b) => Err(SplitError::Mismatch(format!(
            "output {output} differs at byte {b} of the window at input byte {window_start}: \
             {:#04x}, expected {:#04x}",
            got[b], want[b]
        ))),
    }
}

/// Streams the split of `plan` through the CPU reference alone: the outputs of
/// [`crate::GpuSplitter::run_stream`], in the same bounded memory, without a device.
#[cfg(feature = "bench")]
pub fn run_reference_stream(
    plan: &SplitPlan,
    dtype: DType,
    input: impl Read,
    outputs: &mut (impl OutputSink + ?Sized),
    window_bytes: u64,
) -> Result<StreamReport> {
    let options = StreamOptions {
        window_bytes,
        verify: false,
    };
    let mut splitter = WindowSplitter::Reference(Vec::new());
    // The reference never waits: the future is ready at its first poll.
    block_on(
        "run_reference_stream",
        stream(plan, dtype, input, outputs, &options, &mut splitter),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_stream_writes_the_whole_split_in_order() {
        let shape = [5, 7, 3];
        let data: Vec<u16> = (0..105).map(|i| i * 3 + 1).collect();
        let input = HostTensor::from_slice(&shape, &data).unwrap();
        let plan = SplitPlan::from_lengths(&shape, 1, &[2, 0, 5], true).unwrap();
        let want = plan.reference(&input).unwrap();
        for window in [2, 6, 20, 1 << 20, u64::MAX] {
            let mut outs: Vec<Vec<u8>> = vec![Vec::new(); 3];
            let r =
                run_reference_stream(&plan, DType::U16, input.bytes(), &mut outs, window).unwrap();
            assert_eq!(r.input_bytes, 210);
            for (g, w) in outs.iter().zip(&want) {
                assert_eq!(g.as_slice(), w.bytes(), "window {window}");
            }
        }
    }

    #[test]
    fn short_input_and_failing_writers_are_errors() {
        let plan = SplitPlan::from_lengths(&[4, 4], 1, &[1, 3], true).unwrap();
        let mut outs: Vec<Vec<u8>> = vec![Vec::new(); 2];
        let e = run_reference_stream(&plan, DType::U8, &[0u8; 10][..], &mut outs, 4).unwrap_err();
        assert!(e.to_string().contains("reading input bytes 8 to 12"), "{e}");
        let mut full = [std::io::sink(), std::io::sink()];
        assert!(run_reference_stream(&plan, DType::U8, &[0u8; 16][..], &mut full[..], 4).is_ok());
        struct Full;
        impl OutputSink for Full {
            fn write(&mut self, _: usize, _: &[u8]) -> std::io::Result<()> {
                Err(std::io::Error::other("no space left"))
            }
        }
        let e = run_reference_stream(&plan, DType::U8, &[0u8; 16][..], &mut Full, 4).unwrap_err();
        assert!(
            e.to_string().contains("writing output 0: no space left"),
            "{e}"
        );
        let mut one: Vec<Vec<u8>> = vec![Vec::new()];
        let e = run_reference_stream(&plan, DType::U8, &[0u8; 16][..], &mut one, 4).unwrap_err();
        let rule = "writing output 1: there are 1 writers, so none for output 1";
        assert!(e.to_string().contains(rule), "{e}");
    }
}
