//! The async entry points as an engine on an async runtime uses them: every public future is
//! `Send` (checked when this file compiles), split and concat alike, and `run_async` and
//! `run_stream_async` sleep until wgpu's map callback wakes them instead of waking themselves.

#[macro_use]
mod common;

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use wgpu_split::{
    ops, BufferRegion, CacheLayout, DType, GpuSplitter, HostTensor, Inputs, IntTensor, Outputs,
    PagedKvBuffers, RowsBuffers, StreamOptions,
};

/// What `tokio::spawn` asks of a future, besides `'static` (which an engine gets by moving an
/// `Arc<GpuSplitter>` and its buffers into an `async move` block).
fn assert_send<F: Future + Send>(f: F) -> F {
    f
}

/// Never run: it only has to compile, which it does when every public future is `Send`.
#[allow(dead_code, unused_must_use)]
fn every_public_future_is_send(
    gpu: &GpuSplitter,
    encoder: &mut wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
    prepared: &wgpu_split::Prepared<wgpu_split::SplitPlan>,
) {
    let plan = ops::split(&[4, 4], &IntTensor::scalar(0), 2).unwrap();
    let region = BufferRegion { buffer, offset: 0 };
    let input = HostTensor::from_slice(&[4, 4], &[0u32; 16]).unwrap();
    let layout = gpu.layout(&plan, DType::U32).unwrap();
    assert_send(GpuSplitter::new_async(
        gpu.device().clone(),
        gpu.queue().clone(),
    ));
    assert_send(gpu.run_async(&plan, &input));
    assert_send(gpu.prepare_async(&plan, DType::U32, region, Outputs::Region(region)));
    assert_send(gpu.prepare_async(&plan, DType::U32, region, Outputs::Placed(region, &layout)));
    assert_send(prepared.encode_async(encoder));
    assert_send(gpu.encode_async(encoder, &plan, DType::U32, region, Outputs::Region(region)));
    assert_send(gpu.encode_async(
        encoder,
        &plan,
        DType::U32,
        region,
        Outputs::Placed(region, &layout),
    ));
    assert_send(gpu.encode_async(
        encoder,
        &plan,
        DType::U32,
        region,
        Outputs::Regions(&[region]),
    ));
    // The concat's, and the stream's with a reader and writers that are Send.
    let concat = plan.inverse();
    let parts = [input.clone(), input.clone()];
    assert_send(gpu.run_async(&concat, &parts));
    let inputs = Inputs::Regions(&[region, region]);
    assert_send(gpu.encode_async(encoder, &concat, DType::U32, inputs, region));
    assert_send(gpu.prepare_async(&concat, DType::U32, Inputs::Region(region), region));
    let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 2];
    let options = StreamOptions::default();
    let stream = gpu.run_stream_async(&plan, DType::U32, input.bytes(), &mut outputs, &options);
    assert_send(stream);
    // Rows placed by indices and a paged write, through the same entry points.
    let rows = ops::get_rows(&[4, 4], &[2]).unwrap();
    let from = RowsBuffers {
        source: region,
        indices: region,
        index_type: DType::I32,
        status: None,
    };
    assert_send(gpu.prepare_async(&rows, DType::U32, from, region));
    assert_send(gpu.encode_async(encoder, &rows, DType::U32, from, region));
    let ids = HostTensor::from_slice(&[2], &[0i32, 1]).unwrap();
    assert_send(gpu.run_async(&rows, &[input.clone(), ids.clone()]));
    let paged = ops::paged_kv_write(1, 1, 1, 4, 1, 1, CacheLayout::Nhd).unwrap();
    let from = PagedKvBuffers {
        sources: &[region],
        slots: region,
        index_type: DType::I32,
        status: None,
    };
    let to = Outputs::Regions(&[region, region, region]);
    assert_send(gpu.prepare_async(&paged, DType::U32, from, to));
    assert_send(gpu.run_async(&paged, &[input.clone(), ids, input.clone(), input]));
}

/// Counts how often the future is polled; a wake unparks the test's thread.
struct Counting {
    thread: std::thread::Thread,
    wakes: AtomicUsize,
}

impl Wake for Counting {
    fn wake(self: Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

/// Runs `f` to completion on this thread, parking between polls; returns its output and the
/// number of polls.
fn block_on_counting<F: Future>(f: F) -> (F::Output, usize) {
    let counting = Arc::new(Counting {
        thread: std::thread::current(),
        wakes: AtomicUsize::new(0),
    });
    let waker = Waker::from(counting.clone());
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            return (out, polls);
        }
        // A spurious unpark only costs one more poll, which the count shows.
        std::thread::park_timeout(std::time::Duration::from_secs(10));
    }
}

/// `run_async` on a split of 16 MiB (the device works for milliseconds): a handful of polls,
/// where a future that wakes itself is polled hundreds of times.
fn run_async_waits_for_the_map_callback(gpu: &'static GpuSplitter) {
    let data: Vec<u32> = (0..4u32 << 20).collect();
    let input = HostTensor::from_slice(&[1024, 4096], &data).unwrap();
    let plan = ops::variadic_split(
        input.shape(),
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![1000, 1096, 2000]),
    )
    .unwrap();
    let (outputs, polls) = block_on_counting(gpu.run_async(&plan, &input));
    let outputs = outputs.unwrap();
    let want = plan.reference(&input).unwrap();
    common::assert_same_outputs("run_async", &outputs, &want);
    assert!(
        polls <= 4,
        "{}: run_async was polled {polls} times",
        common::name(gpu)
    );
}

/// `run_stream_async` window by window and the concat's `run_async` back, awaited the same
/// way: the stream's outputs are the reference's, and the concat of them is the input.
fn the_stream_and_the_concat_await_their_read_backs(gpu: &'static GpuSplitter) {
    let name = common::name(gpu);
    let data: Vec<u16> = (0..64 * 300).map(|i| (i * 7) as u16).collect();
    let input = HostTensor::from_slice(&[64, 300], &data).unwrap();
    let plan = ops::split(input.shape(), &IntTensor::scalar(1), 3).unwrap();
    let mut outputs: Vec<Vec<u8>> = vec![Vec::new(); 3];
    let options = StreamOptions {
        window_bytes: 16 * 600, // 16 rows: 4 windows
        verify: true,
    };
    let stream = gpu.run_stream_async(&plan, DType::U16, input.bytes(), &mut outputs, &options);
    let (report, polls) = block_on_counting(stream);
    let report = report.unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!((report.windows, report.verified), (4, true), "{name}");
    assert!(polls <= 4 * 4, "{name}: 4 windows took {polls} polls");
    let want = plan.reference(&input).unwrap();
    for (i, (g, w)) in outputs.iter().zip(&want).enumerate() {
        assert!(g == w.bytes(), "{name}: output {i} differs");
    }
    let (back, _) = block_on_counting(gpu.run_async(&plan.inverse(), &want));
    assert_eq!(back.unwrap(), input, "{name}: the concat back");
}

per_backend!(
    run_async_waits_for_the_map_callback,
    the_stream_and_the_concat_await_their_read_backs,
);
