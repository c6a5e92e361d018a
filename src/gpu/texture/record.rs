//! Recording the texture route: the copies of each band, and the scratch textures they go
//! through.

use super::plan::{TexturePlan, TEXEL_BYTES};
use crate::error::Result;
use crate::gpu::device::scoped_async;
use std::sync::Mutex;

/// Records `plan`'s copies from `input` to `output` through `scratch` (at least
/// `plan.scratch` texels). The bands reuse the one texture; wgpu orders the copies.
pub fn record(
    encoder: &mut wgpu::CommandEncoder,
    plan: &TexturePlan,
    scratch: &wgpu::Texture,
    input: &wgpu::Buffer,
    output: &wgpu::Buffer,
) {
    for band in &plan.bands {
        encoder.copy_buffer_to_texture(
            wgpu::TexelCopyBufferInfo {
                buffer: input,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: band.src_offset,
                    bytes_per_row: Some(plan.src_stride),
                    rows_per_image: None,
                },
            },
            scratch.as_image_copy(),
            extent(band.width, band.rows),
        );
        for piece in &band.pieces {
            encoder.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    origin: wgpu::Origin3d {
                        x: piece.x,
                        y: 0,
                        z: 0,
                    },
                    ..scratch.as_image_copy()
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: output,
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: piece.dst_offset,
                        bytes_per_row: Some(piece.width * TEXEL_BYTES as u32),
                        rows_per_image: None,
                    },
                },
                extent(piece.width, band.rows),
            );
        }
    }
}

/// A copy of `rows` rows of `width` texels.
fn extent(width: u32, rows: u32) -> wgpu::Extent3d {
    wgpu::Extent3d {
        width,
        height: rows,
        depth_or_array_layers: 1,
    }
}

/// Scratch textures kept between splits. A graph alternates splits of different shapes (the
/// attention projections, then the MLP gate), and their bands need differently shaped
/// textures: keeping a few means none is recreated on every call.
const KEPT_SCRATCH: usize = 4;

/// The scratch textures kept between splits: at most `KEPT_SCRATCH` of at most
/// `MAX_SCRATCH_BYTES` each, the least recently used first out.
///
/// Sharing a texture between encoders and threads is safe: every split writes the rows it
/// reads within its own commands, and wgpu places a barrier between uses.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Most recently used last.
    kept: Mutex<Vec<wgpu::Texture>>,
}

impl Scratch {
    /// A texture of at least `width` x `height` texels: a kept one if one is large enough,
    /// else a new one, kept when it was created without a device error.
    pub(crate) async fn get(
        &self,
        device: &wgpu::Device,
        width: u32,
        height: u32,
    ) -> Result<wgpu::Texture> {
        {
            let mut kept = self.lock();
            if let Some(i) = kept
                .iter()
                .position(|t| t.width() >= width && t.height() >= height)
            {
                let texture = kept.remove(i);
                kept.push(texture.clone());
                return Ok(texture);
            }
        }
        // No lock is held across the wait for the device's verdict.
        let texture = scoped_async(device, "creating the scratch texture", || {
            device.create_texture(&wgpu::TextureDescriptor {
                label: Some("split scratch"),
                size: wgpu::Extent3d {
                    width,
                    height,
                    depth_or_array_layers: 1,
                },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba32Uint,
                usage: wgpu::TextureUsages::COPY_SRC | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            })
        })
        .await?;
        let mut kept = self.lock();
        if kept.len() == KEPT_SCRATCH {
            kept.remove(0);
        }
        kept.push(texture.clone());
        Ok(texture)
    }

    /// The kept textures; a panic elsewhere while the lock was held leaves the list
    /// consistent, so a poisoned lock is taken as is.
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<wgpu::Texture>> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::device::tests::{per_backend, test_device};
    use crate::BackendChoice;

    fn alternating_shapes_reuse_their_kept_textures(choice: BackendChoice) {
        let device = test_device(choice);
        let scratch = Scratch::default();
        let wide = pollster::block_on(scratch.get(&device, 512, 512)).unwrap();
        let tall = pollster::block_on(scratch.get(&device, 256, 1024)).unwrap();
        assert_ne!(wide, tall);
        for _ in 0..3 {
            assert_eq!(
                pollster::block_on(scratch.get(&device, 512, 512)).unwrap(),
                wide
            );
            assert_eq!(
                pollster::block_on(scratch.get(&device, 256, 1024)).unwrap(),
                tall
            );
            // A smaller request takes a kept texture that is large enough.
            let small = pollster::block_on(scratch.get(&device, 16, 16)).unwrap();
            assert!(small == wide || small == tall);
        }
        // Past KEPT_SCRATCH new shapes, the least recently used goes.
        for i in 1..=KEPT_SCRATCH as u32 {
            pollster::block_on(scratch.get(&device, 1024 + i, 1)).unwrap();
        }
        assert_ne!(
            pollster::block_on(scratch.get(&device, 512, 512)).unwrap(),
            wide
        );
    }

    per_backend!(alternating_shapes_reuse_their_kept_textures);
}
