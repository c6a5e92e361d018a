//! The texture route's plan: bands of rows, each moved by one buffer-to-texture and one
//! texture-to-buffer copy. Pure arithmetic, tested without a device.

use crate::gpu::output_layout::OutputLayout;
use crate::plan::bytes::ByteRows;

/// `bytes_per_row` of a buffer-texture copy must be a multiple of this (wgpu's rule).
const ROW_ALIGN: u64 = wgpu::COPY_BYTES_PER_ROW_ALIGNMENT as u64;

/// Bytes of one `Rgba32Uint` texel; buffer offsets of a copy must be multiples of it.
pub(super) const TEXEL_BYTES: u64 = 16;

/// Largest scratch texture: taller outputs go through it in bands of rows, one copy pair each.
/// A 4 MiB band takes about a millisecond on a CPU adapter, so the few microseconds each
/// command costs stay negligible, and the texture is small enough to keep between splits.
const MAX_SCRATCH_BYTES: u64 = 4 << 20;

/// Most copy pairs (bands) one split records (4 GiB of outputs in 4 MiB bands); past this the
/// gather dispatch is used.
const MAX_BANDS: u64 = 1024;

/// How many buffer copies one texture copy costs as much as, on `backend`'s CPU adapter: the
/// texture route replaces row copies only where it is cheaper by this measure. Measured per
/// command on the spec example: about 4.5 against 2.2 us on lavapipe (Vulkan), 5.7 against
/// 1.3 us on llvmpipe GL; other backends are given the higher figure.
pub fn texture_command_cost(backend: wgpu::Backend) -> u64 {
    match backend {
        wgpu::Backend::Vulkan => 2,
        _ => 4,
    }
}

/// Rows of one output, moved with one buffer-to-texture and one texture-to-buffer copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Band {
    /// Byte offset of the first row in the input buffer.
    pub src_offset: u64,
    /// Byte offset of the first row in the output buffer.
    pub dst_offset: u64,
    /// Texels per row (row bytes / 16).
    pub width: u32,
    /// Rows in this band.
    pub rows: u32,
}

/// Every band of a split, the input's row stride, and the scratch texture size they need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TexturePlan {
    /// Bytes between consecutive rows in the input (`bytes_per_row` of the reads).
    pub src_stride: u32,
    /// The bands, output by output.
    pub bands: Vec<Band>,
    /// Scratch texture width and height in texels: the widest and tallest band.
    pub scratch: (u32, u32),
}

impl TexturePlan {
    /// Copy commands recorded: two per band.
    pub fn commands(&self) -> u64 {
        2 * self.bands.len() as u64
    }
}

/// The bands that move the outputs of `bytes`, placed by `layout`, from an input region at
/// byte `src_base` of its buffer to an output region at `dst_base`. `None` when the split does
/// not fit the texture copy rules: every non-empty output row and the input stride must be
/// multiples of 256 bytes, offsets multiples of 16, rows at most `max_dimension` texels, and
/// at most `MAX_BANDS` bands in all. Splits of a single row are left to buffer copies.
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
    let outputs: Vec<(u64, u64, u64)> = bytes
        .outputs
        .iter()
        .map(|o| {
            (
                src_base + o.offset,
                dst_base + layout.ranges[o.output].offset,
                o.row_bytes,
            )
        })
        .collect();
    let fits = |&(src, dst, row): &(u64, u64, u64)| {
        row.is_multiple_of(ROW_ALIGN)
            && src.is_multiple_of(TEXEL_BYTES)
            && dst.is_multiple_of(TEXEL_BYTES)
            && row / TEXEL_BYTES <= max_dimension as u64
    };
    if outputs.is_empty() || !outputs.iter().all(fits) {
        return None;
    }
    let widest = outputs.iter().map(|o| o.2).max().unwrap_or(ROW_ALIGN);
    let band_rows = (MAX_SCRATCH_BYTES / widest)
        .clamp(1, max_dimension as u64)
        .min(outer);
    let bands_per_output = outer.div_ceil(band_rows);
    if bands_per_output * outputs.len() as u64 > MAX_BANDS {
        return None;
    }
    let mut bands = Vec::new();
    for &(src, dst, row) in &outputs {
        let mut first = 0;
        while first < outer {
            let rows = band_rows.min(outer - first);
            bands.push(Band {
                src_offset: src + first * stride,
                dst_offset: dst + first * row,
                width: (row / TEXEL_BYTES) as u32,
                rows: rows as u32,
            });
            first += rows;
        }
    }
    Some(TexturePlan {
        src_stride: stride as u32,
        bands,
        scratch: ((widest / TEXEL_BYTES) as u32, band_rows as u32),
    })
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

    #[test]
    fn spec_split_is_one_band_per_output() {
        // [6, 12, 10, 24] f32 on axis 1 in 3: rows of 3,840 bytes at a stride of 11,520.
        let plan = plan_for(&[6, 12, 10, 24], 1, vec![4, 4, 4]);
        let t = bands(&plan, DType::F32, 0, 0, 8192).unwrap();
        assert_eq!(t.src_stride, 11520);
        assert_eq!(t.scratch, (240, 6));
        assert_eq!(t.commands(), 6);
        let starts: Vec<(u64, u64)> = t
            .bands
            .iter()
            .map(|b| (b.src_offset, b.dst_offset))
            .collect();
        assert_eq!(starts, vec![(0, 0), (3840, 23040), (7680, 46080)]);
        assert!(t.bands.iter().all(|b| b.width == 240 && b.rows == 6));
    }

    #[test]
    fn tall_outputs_go_in_bands_that_cover_every_row() {
        // 8,192 rows of 8,192 bytes per output at a stride of 16,384: 512 rows fill the
        // 4 MiB scratch, so 16 bands per output.
        let plan = plan_for(&[8192, 8192], 1, vec![4096, 4096]);
        let t = bands(&plan, DType::F16, 0, 0, 8192).unwrap();
        assert_eq!(t.scratch, (512, 512));
        assert_eq!(t.bands.len(), 32);
        for (i, b) in t.bands.iter().enumerate() {
            let (output, band) = (i as u64 / 16, i as u64 % 16);
            assert_eq!(b.rows, 512);
            assert_eq!(b.src_offset, output * 8192 + band * 512 * 16384);
            assert_eq!(b.dst_offset, output * 8192 * 8192 + band * 512 * 8192);
        }
        // Rows wider than the texture limit do not fit at all.
        assert!(bands(&plan, DType::F16, 0, 0, 511).is_none());
        // A texture limit below the rows that fill the scratch means shorter bands.
        let narrow = plan_for(&[8192, 512], 1, vec![64, 448]);
        let t = bands(&narrow, DType::F32, 0, 0, 1024).unwrap();
        assert_eq!(t.scratch, (112, 1024));
        assert_eq!(t.bands.len(), 16);
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
        let plan = plan_for(&[4, 192], 1, vec![64, 0, 128]);
        let t = bands(&plan, DType::F32, 0, 0, 8192).unwrap();
        assert_eq!(t.bands.len(), 2);
        assert_eq!(t.scratch, (32, 4));
        // 1,100 outputs of 64 f32 each: 1,100 bands, past MAX_BANDS.
        let many = plan_for(&[2, 1100 * 64], 1, vec![64; 1100]);
        assert!(bands(&many, DType::F32, 0, 0, 8192).is_none());
    }
}
