//! A decode step on WebGPU: Q, and K and V into caches at a position, split through views by
//! a node prepared once and moved along the caches with `Prepared::set_views` and `encode_async`
//! (each part buffer's window at a new dynamic offset); every buffer read back whole and
//! compared byte for byte with the reference's views.

use crate::signal::read_back;
use wgpu::util::DeviceExt;
use wgpu_split::ops::Attention;
use wgpu_split::{reference, wgpu, BufferRegion, DType, GpuSplitter, HostTensor, Outputs};

/// The positions the node moves to, in turn.
const POSITIONS: [usize; 5] = [0, 1, 2, 5, 3];

/// Positions of each cache.
const CACHE_LEN: usize = 6;

/// What the decode steps gave: the steps taken, and whether every buffer came out as the
/// reference's.
pub(crate) struct Decoded {
    pub steps: usize,
    pub same: bool,
}

/// Writes one token a step (Q `[1, 4, 1, 128]` f16, K and V into caches of [`CACHE_LEN`]
/// positions) at each of [`POSITIONS`], from one prepared node.
pub(crate) async fn decode_steps(gpu: &GpuSplitter) -> Result<Decoded, String> {
    let layer = Attention {
        batch: 1,
        seq: 1,
        q_heads: 4,
        kv_heads: 2,
        head_dim: 128,
    };
    let (plan, first) = layer.split_qkv(CACHE_LEN, 0).map_err(|e| e.to_string())?;
    let device = gpu.device();
    let sizes = [
        4 * 128 * 2,
        2 * CACHE_LEN * 128 * 2,
        2 * CACHE_LEN * 128 * 2,
    ];
    let mut want: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(k, &n)| (0..n).map(|i| (i * 131 + k * 7 + 3) as u8).collect())
        .collect();
    let parts: Vec<wgpu::Buffer> = want
        .iter()
        .map(|bytes| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("decode part"),
                contents: bytes,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            })
        })
        .collect();
    let token_bytes = 8 * 128 * 2;
    let input = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("decode token"),
        size: token_bytes as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let regions: Vec<BufferRegion<'_>> = parts.iter().map(Into::into).collect();
    let to = Outputs::Views(&regions, &first);
    let mut node = gpu
        .prepare_async(&plan, DType::F16, (&input).into(), to)
        .await
        .map_err(|e| format!("preparing the decode step: {e}"))?;
    for (step, &p) in POSITIONS.iter().enumerate() {
        let bytes: Vec<u8> = (0..token_bytes)
            .map(|i| (i * 7 + step * 61) as u8)
            .collect();
        let token = HostTensor::new(DType::F16, plan.whole_shape().to_vec(), bytes)
            .map_err(|e| e.to_string())?;
        gpu.queue().write_buffer(&input, 0, token.bytes());
        let views = layer.split_qkv(CACHE_LEN, p).map_err(|e| e.to_string())?.1;
        let mut encoder = device.create_command_encoder(&Default::default());
        let at = |e| format!("the decode step at position {p}: {e}");
        node.set_views(&views).map_err(at)?;
        node.encode_async(&mut encoder).await.map_err(at)?;
        gpu.queue().submit([encoder.finish()]);
        reference::split_into_views(&token, &plan, &views, &mut want).map_err(|e| e.to_string())?;
    }
    let mut same = true;
    for (k, (part, w)) in parts.iter().zip(&want).enumerate() {
        let what = format!("decode part {k}");
        let got = read_back(gpu, part, w.len() as u64, &what).await?;
        same &= got == *w;
    }
    Ok(Decoded {
        steps: POSITIONS.len(),
        same,
    })
}
