//! The concat's dispatch: its header, segments and block records.

use super::*;
use crate::gpu::splitter::gather_defaults;
use crate::ops;

fn gpu() -> GatherTuning {
    gather_defaults(wgpu::DeviceType::DiscreteGpu)
}

fn table(d: &Dispatch) -> &JoinTable {
    d.join()
        .unwrap_or_else(|| panic!("a join's table expected: {d:?}"))
}

/// The byte rows of the concat of `shapes` (elements of `size` bytes) on axis 1, and its
/// parts, each packed after the one before in one source window.
fn packed_concat(shapes: &[[usize; 2]], size: usize) -> (ByteRows, Vec<JoinPart>) {
    let plan = ops::concat(shapes, 1).unwrap().inverse();
    let bytes = ByteRows::new(&plan, size).unwrap();
    let parts = packed(&bytes);
    (bytes, parts)
}

#[test]
fn segments_follow_the_columns_and_the_header_the_output() {
    // Two f16 inputs [1, 2, 3, 4] and [1, 2, 1, 4] on axis 2: rows of 24 and 8 bytes in
    // an output of 2 rows of 32.
    let plan = ops::concat(&[[1, 2, 3, 4], [1, 2, 1, 4]], 2)
        .unwrap()
        .inverse();
    let bytes = ByteRows::new(&plan, 2).unwrap();
    let parts = [
        JoinPart {
            position: 0,
            binding: 0,
            src: 0,
        },
        JoinPart {
            position: 1,
            binding: 0,
            src: 48,
        },
    ];
    let d = join_dispatch(&bytes, &parts, &[64], gpu(), 1 << 27).unwrap();
    let j = table(&d);
    let h = j.header;
    assert_eq!(
        (h.units, h.first_unit, h.end_byte, h.row_bytes),
        (4, 0, 64, 32)
    );
    let cols: Vec<(u32, u32, u32)> = j
        .segments
        .iter()
        .map(|e| (e.first_byte, e.row_bytes, e.src_offset))
        .collect();
    assert_eq!(cols, vec![(0, 24, 0), (24, 8, 48)]);
    assert_eq!((d.params.num_blocks, d.params.num_entries), (1, 2));
    assert_eq!(d.program.entry, EntryPoint::Join);
    // The one block crosses a row's end: it keeps both segments.
    assert_eq!(j.blocks, [BlockRecord { first: 1, count: 2 }]);
    // One part alone (columns 24 .. 32): the unit of its band in each row, 2 rather than
    // the 3 from its first byte's to its last byte's.
    let d = join_dispatch(&bytes, &parts[1..], &[16], gpu(), 1 << 27).unwrap();
    let h = table(&d).header;
    assert_eq!(
        (h.units, h.band_units, h.band_first, h.band_width),
        (2, 1, 24, 8)
    );
}

#[test]
fn blocks_keep_the_segments_their_columns_touch() {
    // Segments at columns 0, 100 and 200 of rows of 300 bytes (a gap at 150 .. 200).
    let columns = [0, 100, 200];
    let kept = |from, to| kept_segments(&columns, 300, from, to);
    assert_eq!(kept(0, 16), (1, 1));
    assert_eq!(kept(96, 112), (1, 2));
    assert_eq!(kept(160, 176), (2, 1), "in the gap after segment 2");
    assert_eq!(kept(192, 208), (2, 2));
    assert_eq!(kept(288, 304), (1, 3), "across a row's end: all of them");
    assert_eq!(kept(0, 0), (0, 0));
    // Before the first segment: segment 1 is kept, for the gap's end.
    assert_eq!(kept_segments(&[64], 128, 0, 16), (1, 1));
    // More than a block keeps: none, the lanes search the table.
    let many: Vec<u64> = (0..1000).map(|i| 4 * i).collect();
    assert_eq!(kept_segments(&many, 4000, 0, 1024), (1, 256));
    assert_eq!(kept_segments(&many, 4000, 0, 1028), (0, 0));
}

#[test]
fn a_narrow_band_of_the_columns_numbers_only_its_units() {
    // 64 inputs of [100, 5] u8 on axis 1: rows of 320 bytes. Input 10 alone (columns 50
    // .. 55) numbers 1 unit per row (the rows start 320 bytes apart, a multiple of 16, so
    // every row's band starts at byte 2 of its unit), not the 1,980 units between its
    // first and last byte.
    let plan = ops::concat(&vec![[100, 5]; 64], 1).unwrap().inverse();
    let bytes = ByteRows::new(&plan, 1).unwrap();
    let part = |position, binding, src| JoinPart {
        position,
        binding,
        src,
    };
    let d = join_dispatch(&bytes, &[part(10, 0, 0)], &[500], gpu(), 1 << 27).unwrap();
    let h = table(&d).header;
    assert_eq!((h.band_units, h.band_first, h.band_width), (1, 50, 5));
    assert_eq!(h.units, 100, "one unit per row");
    let band = Band::of(&bytes, 50, 55).unwrap();
    assert_eq!(band.unit(320, 0), Some(3));
    assert_eq!(band.unit(320, 1), Some(23));
    // Inputs 10 and 11 from two bindings: 10 bytes, from byte 2 of a unit, span one.
    let parts = [part(10, 0, 0), part(11, 1, 0)];
    let d = join_dispatch(&bytes, &parts, &[500, 500], gpu(), 1 << 27).unwrap();
    let j = table(&d);
    assert_eq!((j.header.band_units, j.header.units), (1, 100));
    let bindings: Vec<u32> = j.segments.iter().map(|e| e.binding).collect();
    assert_eq!(bindings, [0, 1]);
    // A binding past the windows given is refused.
    let e = join_dispatch(&bytes, &parts, &[500], gpu(), 1 << 27).unwrap_err();
    assert!(e.to_string().contains("input binding 1 of 1"), "{e}");
    // Rows less than a unit apart, or all the columns: every unit from the first.
    let plan = ops::concat(&[[100, 5], [100, 10]], 1).unwrap().inverse();
    let bytes = ByteRows::new(&plan, 1).unwrap();
    assert_eq!(Band::of(&bytes, 0, 5), None);
    let d = join_dispatch(&bytes, &[part(0, 0, 0)], &[500], gpu(), 1 << 27).unwrap();
    assert_eq!(table(&d).header.band_units, 0);
}

#[test]
fn an_output_past_one_binding_is_refused() {
    let plan = ops::concat(&[[1 << 20], [1 << 20]], 0).unwrap().inverse();
    let bytes = ByteRows::new(&plan, 4).unwrap();
    let part = JoinPart {
        position: 0,
        binding: 0,
        src: 0,
    };
    let e = join_dispatch(&bytes, &[part], &[4 << 20], gpu(), 1 << 22).unwrap_err();
    assert!(e.to_string().contains("output of 8388608 bytes"), "{e}");
}

#[test]
fn aligned_parts_take_the_splits_rows() {
    // heads64 read back on a CPU adapter: 64 f32 inputs [512, 64], packed one after another,
    // into [512, 4096]: rows of whole units, so one entry per part, its rows 16 KiB apart in
    // the output. (A GPU takes the join: `equal_parts_side_by_side_take_one_segment`.)
    let (bytes, parts) = packed_concat(&[[512, 64]; 64], 4);
    let d = join_dispatch(&bytes, &parts, &[64 << 17], gpu(), 1 << 27).unwrap();
    assert_eq!(d.program.entry, EntryPoint::Join);
    let cpu = gather_defaults(wgpu::DeviceType::Cpu);
    let d = join_dispatch(&bytes, &parts, &[64 << 17], cpu, 1 << 27).unwrap();
    assert_eq!(d.program.entry, EntryPoint::RowsVec4);
    let Table::Split(entries) = &d.table else {
        panic!("{d:?} takes the split's rows");
    };
    assert_eq!(entries.len(), 64);
    let e = entries[3];
    let got = (
        e.dst_unit,
        e.out_bytes,
        e.row_bytes,
        e.src_stride,
        e.dst_stride,
    );
    assert_eq!(got, (48, 512 * 256, 256, 256, 16384));
    assert_eq!(e.src_offset, 3 * 512 * 256);
}

#[test]
fn equal_parts_side_by_side_take_one_segment() {
    // Heads of 63 f16 read back: 64 inputs [512, 63], packed one after another, into
    // [512, 4032]: rows of 126 bytes, so the join; one segment of 64 parts, 64,512 bytes
    // apart in the source.
    let (bytes, parts) = packed_concat(&[[512, 63]; 64], 2);
    let d = join_dispatch(&bytes, &parts, &[64 * 64512], gpu(), 1 << 27).unwrap();
    let segments = &table(&d).segments;
    assert_eq!(segments.len(), 1, "one segment");
    let s = segments[0];
    assert_eq!(
        (
            s.first_byte,
            s.row_bytes,
            s.src_offset,
            s.count,
            s.part_step
        ),
        (0, 126, 0, 64, 64512)
    );
    // A gap in the source, another binding or another width starts a new segment: part 10,
    // 16 bytes further on, starts one, which part 11 joins at its own step; part 20, in
    // binding 1, is one of its own.
    let mut apart = parts.clone();
    apart[10].src += 16;
    apart[20].binding = 1;
    let d = join_dispatch(&bytes, &apart, &[64 * 64512; 2], gpu(), 1 << 27).unwrap();
    let counts: Vec<u32> = table(&d).segments.iter().map(|e| e.count).collect();
    assert_eq!(counts, vec![10, 2, 8, 1, 43]);
    let (bytes, parts) = packed_concat(&[[2, 4], [2, 4], [2, 8]], 2);
    let d = join_dispatch(&bytes, &parts, &[64], gpu(), 1 << 27).unwrap();
    let counts: Vec<u32> = table(&d).segments.iter().map(|e| e.count).collect();
    assert_eq!(counts, vec![2, 1]);
}

/// Each part packed after the one before in one source window.
fn packed(bytes: &ByteRows) -> Vec<JoinPart> {
    let mut src = 0;
    let mut parts = Vec::new();
    for (position, o) in bytes.outputs.iter().enumerate() {
        parts.push(JoinPart {
            position,
            binding: 0,
            src,
        });
        src += bytes.rows * o.row_bytes;
    }
    parts
}

#[test]
fn narrow_or_unaligned_parts_are_staged_on_gpus() {
    // RGB planes into pixels, u8 parts at odd offsets and f16 parts of 126 bytes take the
    // staged join on GPUs; more parts than a block stages, and CPU adapters' runs do not.
    let cpu = gather_defaults(wgpu::DeviceType::Cpu);
    let many = vec![[4usize, 1]; MAX_STAGED_PARTS as usize + 1];
    for (shapes, size, staged) in [
        (vec![[64usize, 1]; 3], 1, true),
        (vec![[16, 1365]; 3], 1, true),
        (vec![[8, 63]; 4], 2, true),
        (many, 1, false),
    ] {
        let (bytes, parts) = packed_concat(&shapes, size);
        let window = parts.len() as u64 * bytes.input_bytes();
        for (tuning, expected) in [(gpu(), staged), (cpu, false)] {
            let d = join_dispatch(&bytes, &parts, &[window], tuning, 1 << 27).unwrap();
            assert_eq!(
                table(&d).header.staged,
                u32::from(expected),
                "{shapes:?} {tuning:?}"
            );
        }
    }
}
