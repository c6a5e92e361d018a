//! [`PreparedRows`]: rows placed by indices, or a paged write, bound once to the caller's
//! buffers and recorded again at every step ([`GpuSplitter::prepare_rows`],
//! [`GpuSplitter::prepare_paged_kv`]).

use crate::error::Result;
use crate::gpu::device::{self, scoped_async, LossProbe};
use crate::gpu::gather::pipeline::record_unscoped;
use crate::gpu::gather::BoundDispatch;
use crate::gpu::GpuSplitter;
use std::sync::Arc;

/// Rows placed by indices (or a paged KV write), bound once: [`PreparedRows::encode`] records
/// its dispatch into an engine's encoder, reading whatever the indices' buffer holds when the
/// encoder runs. It keeps its buffers alive; the device's loss is an error of every encode.
#[derive(Debug, Clone)]
pub struct PreparedRows {
    device: wgpu::Device,
    probe: Arc<LossProbe>,
    /// None where nothing moves (no tokens, rows of no bytes).
    pub(crate) bound: Vec<BoundDispatch>,
}

impl PreparedRows {
    /// Records the dispatch into `encoder`; nothing is submitted.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        device::block_on("PreparedRows::encode", self.encode_async(encoder))
    }

    /// [`PreparedRows::encode`] for async callers, and the one for WebGPU.
    pub async fn encode_async(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        self.probe.check("encoding prepared rows")?;
        if self.bound.is_empty() {
            return Ok(());
        }
        scoped_async(&self.device, "encoding prepared rows", || {
            record_unscoped(encoder, self.bound.iter().map(|b| (b, b.offsets())))
        })
        .await
    }

    /// Dispatches it records at each encode (0 where nothing moves).
    pub fn dispatches(&self) -> u32 {
        self.bound.len() as u32
    }
}

impl GpuSplitter {
    /// The prepared rows of `bound`.
    pub(crate) fn prepared_rows(&self, bound: Vec<BoundDispatch>) -> PreparedRows {
        PreparedRows {
            device: self.device.clone(),
            probe: self.probe.clone(),
            bound,
        }
    }
}
