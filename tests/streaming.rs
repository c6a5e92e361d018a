//! [`GpuSplitter::run_stream`]: splits streamed window by window from a reader to writers.

#[macro_use]
mod common;

use std::io::Read;
use wgpu_split::{
    ops, BackendChoice, DType, GpuSplitter, HostTensor, IntTensor, OutputSink, SplitError,
    SplitPlan, StreamOptions,
};

/// A deterministic byte pattern that differs at every offset modulo 251.
fn pattern(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| ((i % 251) as u8).wrapping_mul(7) ^ 0x5a)
        .collect()
}

/// Streams `plan` over `input` in windows of `window` bytes and checks every output against
/// the CPU reference of the whole split; returns the number of windows.
fn stream_and_check(gpu: &GpuSplitter, plan: &SplitPlan, input: &HostTensor, window: u64) -> u64 {
    let name = common::name(gpu);
    let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); plan.num_parts()];
    let options = StreamOptions {
        window_bytes: window,
        verify: true,
    };
    let report = gpu
        .run_stream(plan, input.dtype(), input.bytes(), &mut outputs, &options)
        .unwrap_or_else(|e| panic!("{name}, window {window}: {e}"));
    assert!(report.verified);
    assert_eq!(report.input_bytes, input.bytes().len() as u64);
    let want = plan.reference(input).unwrap();
    for (i, (g, w)) in outputs.iter().zip(&want).enumerate() {
        assert!(
            g == w.bytes(),
            "{name}, window {window}: output {i} differs"
        );
    }
    report.windows
}

fn windows_of_rows_and_of_pieces_give_the_whole_split(gpu: &'static GpuSplitter) {
    // [6, 10, 7] u16 on axis 1 as 3, 0, 7: rows of 140 bytes, outputs of 42 and 98 bytes a row.
    let shape = [6, 10, 7];
    let input = HostTensor::new(DType::U16, shape.to_vec(), pattern(840)).unwrap();
    let plan = SplitPlan::from_lengths(&shape, 1, &[3, 0, 7], true).unwrap();
    for (window, windows) in [(1 << 20, 1), (300, 3), (140, 6), (50, 18), (2, 420)] {
        assert_eq!(stream_and_check(gpu, &plan, &input, window), windows);
    }
    // Every dtype's bytes, unaligned rows, on axis 0 (one row, cut into pieces) and inner axes.
    for dtype in [DType::U8, DType::F16, DType::F32, DType::Complex128] {
        let shape = [5, 13, 3];
        let n = 5 * 13 * 3 * dtype.size();
        let input = HostTensor::new(dtype, shape.to_vec(), pattern(n)).unwrap();
        for axis in 0..3 {
            let plan = ops::split(&shape, &IntTensor::scalar(axis), 1).unwrap();
            let lengths = [1, shape[axis as usize] - 1];
            let uneven = SplitPlan::from_lengths(&shape, axis as usize, &lengths, true).unwrap();
            for window in [7, 64, 1000].map(|w: u64| w.max(dtype.size() as u64)) {
                stream_and_check(gpu, &plan, &input, window);
                stream_and_check(gpu, &uneven, &input, window);
            }
        }
    }
}

fn a_window_larger_than_a_quarter_of_the_device_is_cut_down(gpu: &'static GpuSplitter) {
    let shape = [4, 1 << 20];
    let input = HostTensor::new(DType::U8, shape.to_vec(), pattern(4 << 20)).unwrap();
    let plan = ops::split(&shape, &IntTensor::scalar(1), 2).unwrap();
    // u64::MAX asks for everything at once; a quarter of the device's max_buffer_size (2 GiB
    // on the software adapters) holds these 4 MiB: one window.
    assert!(gpu.device().limits().max_buffer_size / 4 >= 4 << 20);
    assert_eq!(stream_and_check(gpu, &plan, &input, u64::MAX), 1);
}

/// Destroys its device after the first window, as a lost device would be lost mid-stream.
struct LoseDevice<'a> {
    device: &'a wgpu::Device,
    written: u64,
}

impl OutputSink for LoseDevice<'_> {
    fn write(&mut self, _: usize, bytes: &[u8]) -> std::io::Result<()> {
        self.written += bytes.len() as u64;
        Ok(())
    }
    fn progress(&mut self, _: u64, _: u64) {
        self.device.destroy();
    }
}

fn a_device_lost_mid_stream_is_an_error_not_a_panic(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    // A device of its own, so the shared one stays usable.
    let backend = BackendChoice::from_backend(gpu.device().adapter_info().backend);
    let (_, device, queue) = wgpu_split::DeviceChoice::from(backend).open().unwrap();
    let lost = GpuSplitter::new(device, queue).unwrap();
    let shape = [8, 4096];
    let input = pattern(8 * 4096 * 4);
    let plan = ops::split(&shape, &IntTensor::scalar(1), 2).unwrap();
    let mut sink = LoseDevice {
        device: lost.device(),
        written: 0,
    };
    let options = StreamOptions {
        window_bytes: 16384,
        verify: true,
    };
    let e = lost
        .run_stream(&plan, DType::F32, &input[..], &mut sink, &options)
        .unwrap_err();
    assert!(matches!(e, SplitError::Device(_)), "{name}: {e}");
    // The first window went through before the device was lost.
    assert_eq!(sink.written, 16384, "{name}");
}

/// A reader that fails after `left` bytes, as a file on a failing disk would.
struct FailingReader {
    left: usize,
}

impl Read for FailingReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Err(std::io::Error::other("input/output error"));
        }
        let n = buf.len().min(self.left);
        buf[..n].fill(1);
        self.left -= n;
        Ok(n)
    }
}

fn a_failing_reader_or_writer_ends_the_stream_with_its_error(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let plan = ops::split(&[16, 64], &IntTensor::scalar(0), 2).unwrap();
    let options = StreamOptions {
        window_bytes: 256,
        verify: true,
    };
    let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 2];
    let e = gpu
        .run_stream(
            &plan,
            DType::U8,
            FailingReader { left: 600 },
            &mut outputs,
            &options,
        )
        .unwrap_err();
    assert!(matches!(e, SplitError::File(_)), "{name}: {e}");
    assert!(
        e.to_string()
            .contains("reading input bytes 512 to 768: input/output error"),
        "{name}: {e}"
    );
    let mut full = [
        std::io::Cursor::new([0u8; 300]),
        std::io::Cursor::new([0u8; 300]),
    ];
    let e = gpu
        .run_stream(
            &plan,
            DType::U8,
            &pattern(1024)[..],
            &mut full[..],
            &options,
        )
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("writing output 0: failed to write whole buffer"),
        "{name}: {e}"
    );
}

/// A window smaller than one element is an error that names the smallest window, on the GPU
/// and the CPU path alike; one element is the smallest that streams.
fn a_window_smaller_than_an_element_is_refused(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let input = HostTensor::new(DType::F32, vec![4, 6], pattern(96)).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 2).unwrap();
    for window in [0, 1, 3] {
        let options = StreamOptions {
            window_bytes: window,
            verify: true,
        };
        let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 2];
        let e = gpu
            .run_stream(&plan, DType::F32, input.bytes(), &mut outputs, &options)
            .unwrap_err();
        assert_eq!(
            e,
            SplitError::WindowTooSmall {
                window_bytes: window,
                element_bytes: 4
            },
            "{name}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "window_bytes {window} is smaller than one element: the smallest window is \
                 one element, 4 bytes"
            )
        );
        let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 2];
        let cpu = wgpu_split::bench::run_reference_stream(
            &plan,
            DType::F32,
            input.bytes(),
            &mut outputs,
            window,
        );
        assert_eq!(cpu.unwrap_err(), e);
    }
    assert_eq!(stream_and_check(gpu, &plan, &input, 4), 24);
}

per_backend!(
    a_window_smaller_than_an_element_is_refused,
    windows_of_rows_and_of_pieces_give_the_whole_split,
    a_window_larger_than_a_quarter_of_the_device_is_cut_down,
    a_device_lost_mid_stream_is_an_error_not_a_panic,
    a_failing_reader_or_writer_ends_the_stream_with_its_error,
);
