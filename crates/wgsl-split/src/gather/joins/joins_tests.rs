//! The concat's dispatch: its header and segments.

use super::*;
use crate::gather::abi::EntryPoint;

use crate::gather::GatherMode;
use crate::ops;

fn gpu() -> GatherTuning {
    GatherTuning::of(GatherMode::Gpu)
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
    // On a GPU, lanes in turn.
    assert_eq!(
        (d.program.entry, d.program.lanes_in_runs),
        (EntryPoint::Join, false)
    );
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
    // heads64 read back: 64 f32 inputs [512, 64], packed one after another, into [512, 4096]:
    // rows of whole units, so one entry per part, its rows 16 KiB apart in the output; the
    // lanes on a GPU, the runs on a CPU adapter.
    let (bytes, parts) = packed_concat(&[[512, 64]; 64], 4);
    let d = join_dispatch(&bytes, &parts, &[64 << 17], gpu(), 1 << 27).unwrap();
    assert_eq!(
        (d.program.entry, d.program.lanes_in_runs),
        (EntryPoint::RowsVec4, false)
    );
    let cpu = GatherTuning::of(GatherMode::Cpu);
    let d = join_dispatch(&bytes, &parts, &[64 << 17], cpu, 1 << 27).unwrap();
    assert_eq!(
        (d.program.entry, d.program.lanes_in_runs),
        (EntryPoint::RowsVec4, true)
    );
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
fn parts_of_short_rows_side_by_side_take_one_segment() {
    // RGB planes read back: 3 u8 inputs [64, 1] into [64, 3]: rows of 3 bytes, whose every
    // unit walks the parts in turn, take one segment of 3 parts, 64 bytes apart.
    let (bytes, parts) = packed_concat(&[[64, 1]; 3], 1);
    let d = join_dispatch(&bytes, &parts, &[192], gpu(), 1 << 27).unwrap();
    let segments = &table(&d).segments;
    let s = segments[0];
    assert_eq!(
        (
            segments.len(),
            s.first_byte,
            s.row_bytes,
            s.src_offset,
            s.count,
            s.part_step
        ),
        (1, 0, 1, 0, 3, 64)
    );
    // A gap in the source or another binding starts a new segment.
    let mut apart = parts.clone();
    apart[2].src += 16;
    let d = join_dispatch(&bytes, &apart, &[208], gpu(), 1 << 27).unwrap();
    let counts: Vec<u32> = table(&d).segments.iter().map(|e| e.count).collect();
    assert_eq!(counts, vec![2, 1]);
    apart[2].src -= 16;
    apart[2].binding = 1;
    let d = join_dispatch(&bytes, &apart, &[192; 2], gpu(), 1 << 27).unwrap();
    let counts: Vec<u32> = table(&d).segments.iter().map(|e| e.count).collect();
    assert_eq!(counts, vec![2, 1]);
    // Rows longer than a unit: a segment per part (heads of 63 f16, rows of 126 bytes).
    let (bytes, parts) = packed_concat(&[[512, 63]; 64], 2);
    let d = join_dispatch(&bytes, &parts, &[64 * 64512], gpu(), 1 << 27).unwrap();
    assert_eq!(table(&d).segments.len(), 64);
}

#[test]
fn parts_of_whole_words_side_by_side_are_walked() {
    use crate::gather::abi::Channels;
    let cpu = GatherTuning {
        mode: GatherMode::Cpu,
        ..gpu()
    };
    // Eight f32 columns, three f64 columns, two parts of 3 f32 (12 bytes), three rows of 5
    // f32 parts (their rows on words, not vec4s): one segment of all the parts, walked
    // (`join_walks`), a unit a step in either mapping.
    for (shapes, size, count) in [
        (vec![[301, 1]; 8], 4, 8),
        (vec![[301, 1]; 3], 8, 3),
        (vec![[5, 3]; 2], 4, 2),
        (vec![[3, 1]; 5], 4, 5),
    ] {
        let (bytes, parts) = packed_concat(&shapes, size);
        let window = bytes.input_bytes();
        for tuning in [gpu(), cpu] {
            let d = join_dispatch(&bytes, &parts, &[window], tuning, 1 << 27).unwrap();
            assert_eq!(d.program.channels, None, "{shapes:?}");
            let segments = &table(&d).segments;
            assert!(join_walks(bytes.stride, segments), "{shapes:?}");
            assert_eq!(
                (segments.len(), segments[0].count),
                (1, count),
                "{shapes:?}"
            );
            let units = window.div_ceil(16);
            let lanes = d.program.workgroup_size();
            let steps = d.params.num_blocks as u64 * d.params.steps_per_lane as u64 * lanes;
            assert!(steps >= units, "{shapes:?}: {d:?}");
        }
    }
    // Parts of 4 bytes on vec4s (the channels), or wider than a unit, or not all equal: not
    // walked. Equal parts narrower than a unit that are the whole row make one segment
    // walked a byte at a time (rows not on whole words); the others take one segment a part.
    for (shapes, size, channels, segments) in [
        (vec![[301, 3]; 8], 1, None, 1),
        (vec![[300, 1]; 4], 4, Channels::of(16, 4, 4), 1),
        (vec![[301, 5]; 3], 4, None, 3),
        (vec![[301, 1], [301, 2]], 4, None, 2),
        (vec![[301, 7]; 5], 1, None, 1),
        (vec![[301, 7], [301, 7], [301, 6]], 1, None, 3),
    ] {
        let (bytes, parts) = packed_concat(&shapes, size);
        let d = join_dispatch(&bytes, &parts, &[bytes.input_bytes()], gpu(), 1 << 27).unwrap();
        assert_eq!(d.program.channels, channels, "{shapes:?}");
        assert_eq!(table(&d).segments.len(), segments, "{shapes:?}");
    }
}

#[test]
fn forced_long_lanes_stay_within_llvmpipe_turns() {
    // The GPU mapping forced to 60,000 steps a lane (a test's, or a user's, on llvmpipe): a
    // step of the join's channels or of a walked join takes up to 8 loop turns there, so at
    // most 7,500 steps; a step of the join's units up to 32 (a unit a step of 4 words lost
    // every unit past a lane's 16,384th step at 60,000, the join's units of
    // `concat_bytes_odd` past the 2,024th).
    let forced = GatherTuning {
        max_steps_per_lane: 60_000,
        ..gpu()
    };
    // Four and eight columns (the channels), nine (walked), `concat_bytes_odd` (the join's
    // units).
    for (shapes, size, channels, steps) in [
        (vec![[1 << 24, 1]; 4], 4, true, 7_500),
        (vec![[1 << 24, 1]; 8], 4, true, 7_500),
        (vec![[1 << 24, 1]; 9], 4, false, 7_500),
        (vec![[16384, 1365]; 3], 1, false, 60_000 / 32),
    ] {
        let (bytes, parts) = packed_concat(&shapes, size);
        let d = join_dispatch(&bytes, &parts, &[bytes.input_bytes()], forced, 1 << 31).unwrap();
        assert_eq!(d.program.channels.is_some(), channels, "{shapes:?}");
        assert!(d.params.steps_per_lane <= steps, "{shapes:?}: {d:?}");
    }
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
