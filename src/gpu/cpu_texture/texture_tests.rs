//! The texture route's plan (pure) and its recording on a device.

use super::*;
use crate::gpu::device::test_devices::{per_backend, test_device};
use crate::plan::SplitPlan;
use crate::tensor::IntTensor;
use crate::{ops, BackendChoice, DType};

fn plan_for(shape: &[usize], axis: i64, lengths: Vec<i64>) -> SplitPlan {
    ops::variadic_split(shape, &IntTensor::scalar(axis), &IntTensor::vector(lengths)).unwrap()
}

fn bands(plan: &SplitPlan, dtype: DType, src: u64, dst: u64, max_dim: u32) -> Option<TexturePlan> {
    let layout = PartLayout::new(plan, dtype, 16).unwrap();
    let bytes = ByteRows::new(plan, dtype.size()).unwrap();
    texture_plan(&bytes, &layout, src, dst, max_dim, Direction::Split)
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
fn a_concat_band_writes_back_only_columns_its_pieces_tile() {
    // The spec split read the other way: the same bands, marked to run back.
    let plan = plan_for(&[6, 12, 10, 24], 1, vec![4, 4, 4]);
    let layout = PartLayout::new(&plan, DType::F32, 16).unwrap();
    let bytes = ByteRows::new(&plan, 4).unwrap();
    let all = texture_plan(&bytes, &layout, 0, 0, 8192, Direction::Concat).unwrap();
    assert_eq!(all.direction, Direction::Concat);
    assert_eq!(
        shape(&all),
        shape(&bands(&plan, DType::F32, 0, 0, 8192).unwrap())
    );
    // Parts 0 and 2 alone (part 1 in another buffer): one band over both would write part 1's
    // columns from the texture, so each takes its own band. The split may read across.
    let sub = bytes.subset([0, 2]);
    let sub_layout = PartLayout {
        ranges: vec![layout.ranges[0], layout.ranges[2]],
        ..layout.clone()
    };
    let apart = texture_plan(&sub, &sub_layout, 0, 0, 8192, Direction::Concat).unwrap();
    assert_eq!(
        shape(&apart),
        vec![
            ((0, 240, 6), vec![(0, 240, 0)]),
            ((7680, 240, 6), vec![(0, 240, 46080)]),
        ]
    );
    let split = texture_plan(&sub, &sub_layout, 0, 0, 8192, Direction::Split).unwrap();
    assert_eq!(split.bands.len(), 1);
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
