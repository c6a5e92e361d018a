//! A future the browser's callbacks resolve: the page's waits on the GPU.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

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
