//! A future the browser's callbacks resolve: the page's waits on the GPU, and reading a
//! buffer back through them.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use wgpu_split::{wgpu, GpuSplitter};

/// Resolves when [`Signal::fire`] is called: by the queue's report that submitted work is
/// done, or by a buffer's mapping.
#[derive(Default, Clone)]
pub(crate) struct Signal(Arc<Mutex<(bool, Option<Waker>)>>);

impl Signal {
    pub(crate) fn fire(&self) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        s.0 = true;
        if let Some(w) = s.1.take() {
            w.wake();
        }
    }
}

impl Future for Signal {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if state.0 {
            Poll::Ready(())
        } else {
            state.1 = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// The first `size` bytes of `buffer` (COPY_SRC, `size` a multiple of 4), copied into a
/// buffer the page maps once the GPU is done; `what` names it in errors.
pub(crate) async fn read_back(
    gpu: &GpuSplitter,
    buffer: &wgpu::Buffer,
    size: u64,
    what: &str,
) -> Result<Vec<u8>, String> {
    let readback = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("page readback"),
        size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, size);
    gpu.queue().submit([encoder.finish()]);
    let mapped = Signal::default();
    let result = Arc::new(Mutex::new(None));
    let (signal, slot) = (mapped.clone(), result.clone());
    readback.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        signal.fire();
    });
    mapped.await;
    let outcome = result.lock().unwrap_or_else(|e| e.into_inner()).take();
    match outcome {
        Some(Ok(())) => {}
        Some(Err(e)) => return Err(format!("mapping {what}: {e}")),
        None => return Err(format!("mapping {what}: no answer")),
    }
    let bytes = readback
        .slice(..)
        .get_mapped_range()
        .map_err(|e| format!("reading {what}: {e}"))?
        .to_vec();
    readback.unmap();
    Ok(bytes)
}
