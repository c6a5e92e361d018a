//! The texture route's plan: bands of input rows, each moved into a scratch texture by one
//! buffer-to-texture copy and out of it by one texture-to-buffer copy per output. Pure
//! arithmetic, tested without a device.

use crate::gpu::output_layout::OutputLayout;
use crate::plan::bytes::ByteRows;

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
}

impl TexturePlan {
    /// The plan of `bands`, with a scratch texture that holds the widest and the tallest.
    fn new(src_stride: u64, bands: Vec<Band>) -> Self {
        let width = bands.iter().map(|b| b.width).max().unwrap_or(1);
        let height = bands.iter().map(|b| b.rows).max().unwrap_or(1);
        TexturePlan {
            src_stride: src_stride as u32,
            bands,
            scratch: (width, height),
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
/// byte `src_base` of its buffer to an output region at `dst_base`: a band per output, or
/// bands of every output's columns at once (one read for all of them), whichever records
/// fewer commands. `None` when the split does not fit the texture copy rules: every non-empty
/// output row and the input stride must be multiples of 256 bytes, offsets multiples of 16,
/// rows at most `max_dimension` texels, and at most `MAX_COMMANDS` commands in all. Splits of a
/// single row are left to buffer copies.
pub fn texture_plan(
    bytes: &ByteRows,
    layout: &OutputLayout,
    src_base: u64,
    dst_base: u64,
    max_dimension: u32,
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
    let together = commands(&outputs, outer, max_dimension);
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
    Some(TexturePlan::new(stride, bands))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::SplitPlan;
    use crate::tensor::IntTensor;
    use crate::{ops, DType};

    fn plan_for(shape: &[usize], axis: i64, lengths: Vec<i64>) -> SplitPlan {
        ops::variadic_split(shape, &IntTensor::scalar(axis), &IntTensor::vector(lengths)).unwrap()
    }

    fn bands(
        plan: &SplitPlan,
        dtype: DType,
        src: u64,
        dst: u64,
        max_dim: u32,
    ) -> Option<TexturePlan> {
        let layout = OutputLayout::new(plan, dtype, 16).unwrap();
        let bytes = ByteRows::new(plan, dtype.size()).unwrap();
        texture_plan(&bytes, &layout, src, dst, max_dim)
    }

    /// A band as (first input byte, texels read, rows) and its pieces as (column, texels,
    /// first output byte).
    type BandShape = ((u64, u32, u32), Vec<(u32, u32, u64)>);

    fn shape(t: &TexturePlan) -> Vec<BandShape> {
        let pieces = |b: &Band| {
            b.pieces
                .iter()
                .map(|p| (p.x, p.width, p.dst_offset))
                .collect()
        };
        t.bands
            .iter()
            .map(|b| ((b.src_offset, b.width, b.rows), pieces(b)))
            .collect()
    }

    #[test]
    fn spec_split_is_one_read_of_every_row_and_a_write_per_output() {
        // [6, 12, 10, 24] f32 on axis 1 in 3: rows of 3,840 bytes (240 texels) at a stride of
        // 11,520. One band reads all 720 texels of the 6 rows; three writes, not six copies.
        let plan = plan_for(&[6, 12, 10, 24], 1, vec![4, 4, 4]);
        let t = bands(&plan, DType::F32, 0, 0, 8192).unwrap();
        assert_eq!(t.src_stride, 11520);
        assert_eq!(t.scratch, (720, 6));
        assert_eq!(t.commands(), 4);
        assert_eq!(
            shape(&t),
            vec![(
                (0, 720, 6),
                vec![(0, 240, 0), (240, 240, 23040), (480, 240, 46080)]
            )]
        );
        // Regions at offsets in both buffers move every read and write with them.
        let moved = bands(&plan, DType::F32, 256, 512, 8192).unwrap();
        assert_eq!(
            shape(&moved),
            vec![(
                (256, 720, 6),
                vec![(0, 240, 512), (240, 240, 23552), (480, 240, 46592)]
            )]
        );
        // A texture limit below the row's span leaves a band per output.
        let apart = bands(&plan, DType::F32, 0, 0, 719).unwrap();
        assert_eq!(apart.commands(), 6);
        assert_eq!(
            shape(&apart),
            vec![
                ((0, 240, 6), vec![(0, 240, 0)]),
                ((3840, 240, 6), vec![(0, 240, 23040)]),
                ((7680, 240, 6), vec![(0, 240, 46080)]),
            ]
        );
    }

    #[test]
    fn tall_outputs_go_in_bands_that_cover_every_row() {
        // 8,192 rows of 8,192 bytes per output at a stride of 16,384: 512 rows fill the
        // 4 MiB scratch, so 16 bands per output, 64 commands; bands of both outputs' columns
        // would hold 256 rows, 32 bands of 3 commands.
        let plan = plan_for(&[8192, 8192], 1, vec![4096, 4096]);
        let t = bands(&plan, DType::F16, 0, 0, 8192).unwrap();
        assert_eq!(t.scratch, (512, 512));
        assert_eq!(t.commands(), 64);
        for (i, b) in t.bands.iter().enumerate() {
            let (output, band) = (i as u64 / 16, i as u64 % 16);
            assert_eq!((b.rows, b.pieces.len()), (512, 1));
            assert_eq!(b.src_offset, output * 8192 + band * 512 * 16384);
            assert_eq!(
                b.pieces[0].dst_offset,
                output * 8192 * 8192 + band * 512 * 8192
            );
        }
        // Rows wider than the texture limit do not fit at all.
        assert!(bands(&plan, DType::F16, 0, 0, 511).is_none());
        // A texture limit below the rows that fill the scratch means shorter bands: 8 of
        // 1,024 rows of both outputs (24 commands) beat 16 of one output each (32).
        let narrow = plan_for(&[8192, 512], 1, vec![64, 448]);
        let t = bands(&narrow, DType::F32, 0, 0, 1024).unwrap();
        assert_eq!(t.scratch, (128, 1024));
        assert_eq!(t.commands(), 24);
        for (i, b) in t.bands.iter().enumerate() {
            let first = i as u64 * 1024;
            assert_eq!(
                shape(&t)[i],
                (
                    (first * 2048, 128, 1024),
                    vec![(0, 16, first * 256), (16, 112, 8192 * 256 + first * 1792)]
                ),
                "{b:?}"
            );
        }
    }

    #[test]
    fn rows_or_offsets_off_the_copy_rules_are_refused() {
        // Rows of 4 bytes (not a multiple of 256).
        assert!(bands(&plan_for(&[64, 4], 1, vec![1, 3]), DType::F32, 0, 0, 8192).is_none());
        // A stride of 1,000 bytes.
        assert!(bands(
            &plan_for(&[8, 250], 1, vec![64, 186]),
            DType::F32,
            0,
            0,
            8192
        )
        .is_none());
        // Good rows, but the input region starts off a texel.
        let good = plan_for(&[8, 128], 1, vec![64, 64]);
        assert!(bands(&good, DType::F32, 0, 0, 8192).is_some());
        assert!(bands(&good, DType::F32, 4, 0, 8192).is_none());
        assert!(bands(&good, DType::F32, 0, 8, 8192).is_none());
        // Rows wider than the texture limit (256 bytes = 16 texels).
        assert!(bands(&good, DType::F32, 0, 0, 15).is_none());
        // One row per output: contiguous, left to buffer copies.
        assert!(bands(
            &plan_for(&[1, 128], 1, vec![64, 64]),
            DType::F32,
            0,
            0,
            8192
        )
        .is_none());
    }

    #[test]
    fn empty_outputs_get_no_band_and_too_many_bands_are_refused() {
        // One band reads both non-empty outputs' columns; the empty one gets no write.
        let plan = plan_for(&[4, 192], 1, vec![64, 0, 128]);
        let t = bands(&plan, DType::F32, 0, 0, 8192).unwrap();
        assert_eq!(
            shape(&t),
            vec![((0, 48, 4), vec![(0, 16, 0), (16, 32, 1024)])]
        );
        assert_eq!(t.scratch, (48, 4));
        // 1,100 outputs of 64 f32 each: rows wider than the texture limit, and 2,200
        // commands a band per output, past MAX_COMMANDS.
        let many = plan_for(&[2, 1100 * 64], 1, vec![64; 1100]);
        assert!(bands(&many, DType::F32, 0, 0, 8192).is_none());
    }
}
