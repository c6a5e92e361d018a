//! The texture route, for CPU adapters: strided outputs moved by the device's copy commands,
//! through a scratch texture.
//!
//! A buffer-to-texture copy reads rows at any `bytes_per_row` that is a multiple of 256, and a
//! texture-to-buffer copy writes a rectangle of them at another: one command reads a band of
//! input rows (every output's columns, or one output's), and one per output writes its
//! columns back to back. On CPU adapters (lavapipe, llvmpipe) copy commands run at memcpy
//! speed, faster than any compute shader there, so this beats the gather dispatch on splits
//! with 256-byte-multiple rows (figures in `docs/performance.md`). On GPUs it moves every
//! byte twice, so [`GpuSplitter`](crate::GpuSplitter) uses it on CPU adapters only unless
//! told otherwise.
//!
//! A concat runs the same bands the other way ([`TexturePlan::direction`]): one copy per piece
//! from its part into the texture, then one per band out to the whole tensor's rows.
//!
//! The texture is `Rgba32Uint`: 16-byte texels copied as raw bits, so every dtype comes out
//! bit-exact. [`texture_plan`] is pure and tested without a device; [`record`] records the
//! copies.

use crate::error::Result;
use crate::gpu::device::scoped_async;
use crate::gpu::direction::Direction;
use crate::gpu::placement::PartLayout;
use crate::plan::bytes::ByteRows;
use std::sync::Mutex;

/// `bytes_per_row` of a buffer-texture copy must be a multiple of this (wgpu's rule).
const ROW_ALIGN: u64 = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64;

/// Bytes of one `Rgba32Uint` texel; buffer offsets of a copy must be multiples of it.
pub(super) const TEXEL_BYTES: u64 = 16;

/// Largest scratch texture: taller inputs go through it in bands of rows. A 4 MiB band takes
/// about a millisecond on a CPU adapter, so the few microseconds each command costs stay
/// negligible, and the texture is small enough to keep between splits.
const MAX_SCRATCH_BYTES: u64 = 4 << 20;

/// Most copy commands one split records (4 GiB of outputs in 4 MiB bands, a pair each); past
/// this the gather dispatch is used.
const MAX_COMMANDS: u64 = 2048;

/// How many buffer copies one texture copy costs as much as, on `backend`'s CPU adapter: the
/// texture route replaces row copies only where it is cheaper by this measure. Measured per
/// command on the spec example over an empty submission (`docs/performance.md`, "CPU
/// adapters"); other backends are given the higher figure.
pub fn texture_command_cost(backend: wgpu::Backend) -> u64 {
    match backend {
        wgpu::Backend::Vulkan => 2,
        _ => 6,
    }
}

/// Rows of the input moved into the scratch texture by one buffer-to-texture copy, and out
/// of it by one texture-to-buffer copy per piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Band {
    /// Byte offset of the band's first row in the input buffer.
    pub src_offset: u64,
    /// Texels read per row: one output's row, or the span of every output's.
    pub width: u32,
    /// Rows in this band.
    pub rows: u32,
    /// Where each output's columns of the band go.
    pub pieces: Vec<Piece>,
}

/// One output's columns of a band, written back to back by one texture-to-buffer copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// First texel column of the piece in the scratch texture.
    pub x: u32,
    /// Texels per row (the output's row bytes / 16).
    pub width: u32,
    /// Byte offset of the piece's first row in the output buffer.
    pub dst_offset: u64,
}

/// Every band of a split, the input's row stride, and the scratch texture size they need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TexturePlan {
    /// Bytes between consecutive rows in the input (`bytes_per_row` of the reads).
    pub src_stride: u32,
    /// The bands: output by output, or from the top row down where each reads every output.
    pub bands: Vec<Band>,
    /// Scratch texture width and height in texels: the widest and tallest band.
    pub scratch: (u32, u32),
    /// Which way the copies run. A concat copies each piece from the part's buffer into the
    /// texture, then the band from the texture into the whole tensor's rows ("input" above is
    /// then the concat's output, and "output" its inputs).
    pub(crate) direction: Direction,
}

impl TexturePlan {
    /// The plan of `bands`, with a scratch texture that holds the widest and the tallest.
    fn new(src_stride: u64, bands: Vec<Band>, direction: Direction) -> Self {
        let width = bands.iter().map(|b| b.width).max().unwrap_or(1);
        let height = bands.iter().map(|b| b.rows).max().unwrap_or(1);
        TexturePlan {
            src_stride: src_stride as u32,
            bands,
            scratch: (width, height),
            direction,
        }
    }

    /// Copy commands recorded: one read per band, one write per piece.
    pub fn commands(&self) -> u64 {
        self.bands.iter().map(|b| 1 + b.pieces.len() as u64).sum()
    }
}

/// One non-empty output: its row's byte offset in the input buffer and in the output buffer,
/// and its row bytes.
#[derive(Debug, Clone, Copy)]
struct Output {
    src: u64,
    dst: u64,
    row: u64,
}

/// The bands that move the outputs of `bytes`, placed by `layout`, from an input region at
/// byte `src_base` of its buffer to an output region at `dst_base`, or back for a concat:
/// a band per output, or bands of every output's columns at once (one read for all of them),
/// whichever records fewer commands. A concat's band writes every column of its span, so it
/// takes several outputs at once only where their columns tile it (a concat of some of the
/// parts, the others in other buffers, leaves gaps). `None` when the split does not fit the
/// texture copy rules: every non-empty output row and the input stride must be multiples of
/// 256 bytes, offsets multiples of 16, rows at most `max_dimension` texels, and at most
/// `MAX_COMMANDS` commands in all. Splits of a single row are left to buffer copies.
pub fn texture_plan(
    bytes: &ByteRows,
    layout: &PartLayout,
    src_base: u64,
    dst_base: u64,
    max_dimension: u32,
    direction: Direction,
) -> Option<TexturePlan> {
    let (outer, stride) = (bytes.rows, bytes.stride);
    if outer < 2 || !stride.is_multiple_of(ROW_ALIGN) || stride > u32::MAX as u64 {
        return None;
    }
    let outputs: Vec<Output> = bytes
        .outputs
        .iter()
        .map(|o| Output {
            src: src_base + o.offset,
            dst: dst_base + layout.ranges[o.output].offset,
            row: o.row_bytes,
        })
        .collect();
    let fits = |o: &Output| {
        o.row.is_multiple_of(ROW_ALIGN)
            && o.src.is_multiple_of(TEXEL_BYTES)
            && o.dst.is_multiple_of(TEXEL_BYTES)
            && o.row / TEXEL_BYTES <= max_dimension as u64
    };
    if outputs.is_empty() || !outputs.iter().all(fits) {
        return None;
    }
    // Commands are counted before any band is built: a split of many outputs can need far
    // more than MAX_COMMANDS.
    let tiled = outputs.windows(2).all(|w| w[0].src + w[0].row == w[1].src);
    let together =
        commands(&outputs, outer, max_dimension).filter(|_| tiled || direction == Direction::Split);
    let apart: Option<u64> = outputs
        .iter()
        .map(|o| commands(std::slice::from_ref(o), outer, max_dimension))
        .sum();
    let bands: Vec<Band> = match (together, apart) {
        (Some(t), Some(a)) if t < a && t <= MAX_COMMANDS => {
            bands(&outputs, outer, stride, max_dimension)
        }
        (_, Some(a)) if a <= MAX_COMMANDS => outputs
            .iter()
            .flat_map(|o| bands(std::slice::from_ref(o), outer, stride, max_dimension))
            .collect(),
        _ => return None,
    };
    Some(TexturePlan::new(stride, bands, direction))
}

/// Bytes of the input row from the first of `outputs`' columns (in input order) to the end
/// of the last's.
fn span(outputs: &[Output]) -> u64 {
    match (outputs.first(), outputs.last()) {
        (Some(first), Some(last)) => last.src + last.row - first.src,
        _ => 0,
    }
}

/// Rows per band of reads `span` bytes wide: as many as fill the scratch texture, at least
/// one; `None` where the span is wider than `max_dimension` texels.
fn band_rows(span: u64, outer: u64, max_dimension: u32) -> Option<u64> {
    (span / TEXEL_BYTES <= max_dimension as u64).then(|| {
        (MAX_SCRATCH_BYTES / span.max(1))
            .clamp(1, max_dimension as u64)
            .min(outer)
    })
}

/// Commands that bands of `outputs`' columns record: a read per band, a write per output.
fn commands(outputs: &[Output], outer: u64, max_dimension: u32) -> Option<u64> {
    let rows = band_rows(span(outputs), outer, max_dimension)?;
    Some(outer.div_ceil(rows) * (1 + outputs.len() as u64))
}

/// The bands of `outer` rows (`stride` bytes apart) that read the span of `outputs`' columns
/// and write each output's piece; `outputs` fit the texture (see [`commands`]).
fn bands(outputs: &[Output], outer: u64, stride: u64, max_dimension: u32) -> Vec<Band> {
    let Some(first) = outputs.first() else {
        return Vec::new();
    };
    let span = span(outputs);
    let band_rows = band_rows(span, outer, max_dimension).unwrap_or(1);
    let mut bands = Vec::new();
    let mut row = 0;
    while row < outer {
        let rows = band_rows.min(outer - row);
        bands.push(Band {
            src_offset: first.src + row * stride,
            width: (span / TEXEL_BYTES) as u32,
            rows: rows as u32,
            pieces: outputs
                .iter()
                .map(|o| Piece {
                    x: ((o.src - first.src) / TEXEL_BYTES) as u32,
                    width: (o.row / TEXEL_BYTES) as u32,
                    dst_offset: o.dst + row * o.row,
                })
                .collect(),
        });
        row += rows;
    }
    bands
}

/// Records `plan`'s copies through `scratch` (at least `plan.scratch` texels), reading
/// `from` and writing `to`: the split's input and outputs, or the concat's inputs and output.
/// The bands reuse the one texture; wgpu orders the copies.
pub fn record(
    encoder: &mut wgpu::CommandEncoder,
    plan: &TexturePlan,
    scratch: &wgpu::Texture,
    from: &wgpu::Buffer,
    to: &wgpu::Buffer,
) {
    // The whole tensor's buffer and the parts'.
    let (whole, parts) = plan.direction.in_order(from, to);
    for band in &plan.bands {
        let rows = wgpu::TexelCopyBufferInfo {
            buffer: whole,
            layout: wgpu::TexelCopyBufferLayout {
                offset: band.src_offset,
                bytes_per_row: Some(plan.src_stride),
                rows_per_image: None,
            },
        };
        let pieces = band.pieces.iter().map(|piece| {
            let texels = wgpu::TexelCopyTextureInfo {
                origin: wgpu::Origin3d {
                    x: piece.x,
                    y: 0,
                    z: 0,
                },
                ..scratch.as_image_copy()
            };
            let part = wgpu::TexelCopyBufferInfo {
                buffer: parts,
                layout: wgpu::TexelCopyBufferLayout {
                    offset: piece.dst_offset,
                    bytes_per_row: Some(piece.width * TEXEL_BYTES as u32),
                    rows_per_image: None,
                },
            };
            (texels, part, extent(piece.width, band.rows))
        });
        if plan.direction == Direction::Concat {
            for (texels, part, size) in pieces {
                encoder.copy_buffer_to_texture(part, texels, size);
            }
            encoder.copy_texture_to_buffer(
                scratch.as_image_copy(),
                rows,
                extent(band.width, band.rows),
            );
        } else {
            encoder.copy_buffer_to_texture(
                rows,
                scratch.as_image_copy(),
                extent(band.width, band.rows),
            );
            for (texels, part, size) in pieces {
                encoder.copy_texture_to_buffer(texels, part, size);
            }
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
mod texture_tests;
