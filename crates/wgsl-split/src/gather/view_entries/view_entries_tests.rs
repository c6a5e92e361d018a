use super::*;
use crate::gather::modes::GatherMode;
use crate::plan::views::{part_runs, Access};
use crate::{ops, IntTensor, PartView};

/// The room of WebGPU's default binding.
const ROOM: u64 = 3_355_442;

/// The entries of output `i` of a split of [1, 4, 48, D] f16 on axis 2 into 32, 8 and 8
/// heads (Q, K, V), written through `view`.
fn heads(d: usize, i: usize, view: &PartView) -> Result<Vec<Entry>> {
    let lengths = IntTensor::vector(vec![32, 8, 8]);
    let plan = ops::variadic_split(&[1, 4, 48, d], &IntTensor::scalar(2), &lengths).unwrap();
    view_entries(
        "output",
        &part_runs(&plan, i, view, 2, Access::Write).unwrap(),
        0,
        0,
        0,
        ROOM,
    )
}

#[test]
fn a_view_past_its_tables_room_is_refused_by_name() {
    // [41, 41, 41, 41] f16 written with its axes reversed: the destination's rows are
    // the first axis, one element a run, in 41^3 = 68,921 blocks. WebGPU's default
    // binding holds them; a table with room for one block fewer refuses them.
    let plan = ops::split(&[41; 4], &IntTensor::scalar(0), 1).unwrap();
    let transposed = PartView {
        offset: 0,
        strides: vec![1, 41, 41 * 41, 41 * 41 * 41],
    };
    let runs = part_runs(&plan, 0, &transposed, 2, Access::Write).unwrap();
    assert_eq!(
        view_entries("output 0", &runs, 0, 0, 0, ROOM)
            .unwrap()
            .len(),
        68_921
    );
    let m = view_entries("output 0", &runs, 0, 0, 0, 68_920)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains(
            "output 0: its view lowers to 68921 blocks of runs, past the 68920 its \
             dispatch's table has room for in one storage binding (the device's \
             max_storage_buffer_binding_size; 44 bytes a block)"
        ),
        "{m}"
    );
}

#[test]
fn a_table_takes_its_header_then_40_bytes_a_block() {
    // 128 MiB, WebGPU's default binding.
    assert_eq!(ROOM, ((128 << 20) - HEADER_BYTES) / 40);
    let tiny = crate::Limits {
        max_storage_buffer_binding_size: HEADER_BYTES - 1,
        ..crate::Limits::default()
    };
    assert_eq!(table_room(&tiny), 0);
}

#[test]
fn aligned_rows_take_the_level_of_most_runs() {
    // Q [1, 4, 32, 128] as [1, 32, 4, 128]: a head's 4 rows lie back to back, but the
    // 32 heads of a position are the level of most runs: an entry a position, its 32
    // rows a head apart in the destination and back to back in the source.
    let q = PartView::within(&[1, 4, 32, 128], &[1, 32, 4, 128], &[0, 2, 1, 3], &[0; 4]).unwrap();
    let entries = heads(128, 0, &q).unwrap();
    assert_eq!(entries.len(), 4);
    let e = entries[3];
    assert_eq!(
        (e.dst_unit, e.out_bytes, e.row_bytes),
        (3 * 256 / 16, 32 * 256, 256)
    );
    assert_eq!(
        (e.src_offset, e.src_stride, e.dst_stride),
        (3 * 48 * 256, 256, 4 * 256)
    );
    assert!(entries.iter().all(Entry::is_vec4));
    assert_eq!(dispatch_of(&entries), [0; 4]);
    // Heads of 127 elements, not in units: an entry a head, whose rows lie back to back.
    // Head 1's 4 rows of 254 bytes start at byte 1,016, 8 bytes into unit 63, where head
    // 0 ends; its unit 0 starts a row back, at column 246.
    let q = PartView::within(&[1, 4, 32, 127], &[1, 32, 4, 127], &[0, 2, 1, 3], &[0; 4]).unwrap();
    let entries = heads(127, 0, &q).unwrap();
    let e = entries[1];
    assert_eq!(
        (e.dst_unit, e.skip, e.first_byte, e.out_bytes),
        (63, 8, 246, 8 + 1016)
    );
    assert_eq!(e.src_offset, (254u32).wrapping_sub(48 * 254));
    assert_eq!((entries[0].skip, entries[2].skip), (0, 0));
    // Head 0 ends inside unit 63, head 1 starts there: the odd heads take a second
    // dispatch (head 2 starts on a unit; head 3 inside the unit where head 2 ends).
    let of = dispatch_of(&entries);
    assert_eq!(of[..4], [0, 1, 0, 1]);
    assert_eq!(*of.iter().max().unwrap(), 1);
}

#[test]
fn channels_last_parts_join_their_planes() {
    // [1, 8, 64, 64] f32 split into two parts of 4 channels, each written [1, 64, 64, 4]:
    // part 1 joins its 4 planes, from input byte 4 x 16 KiB on, into rows of 16 bytes,
    // 4 rows a group, 1,024 groups; written from output byte 256 of binding 1.
    let plan = ops::split(&[1, 8, 64, 64], &IntTensor::scalar(1), 2).unwrap();
    let part = plan.part_shape(1);
    let last = PartView::within(&part, &[1, 64, 64, 4], &[0, 2, 3, 1], &[0; 4]).unwrap();
    let runs = part_runs(&plan, 1, &last, 4, Access::Write).unwrap();
    let sizes = (128 << 10, 0);
    for (mode, mapping) in [(GatherMode::Gpu, "lanes"), (GatherMode::Cpu, "runs")] {
        let tuning = GatherTuning {
            mode,
            max_steps_per_lane: 4,
        };
        let d = view_channels(&runs, (0, 256, 1), sizes, tuning).unwrap();
        assert_eq!(
            d.program.to_string(),
            format!("main_join {mapping} channels w4")
        );
        let plane = 64 * 64 * 4;
        let Table::Join(j) = &d.table else {
            panic!("{d:?}")
        };
        let s = Segment {
            first_byte: 0,
            row_bytes: 4,
            src_offset: 4 * plane,
            binding: 0,
            count: 4,
            part_step: plane,
        };
        assert_eq!(j.segments, [s]);
        let h = j.header;
        assert_eq!(
            (h.first_unit, h.binding, h.row_bytes, h.end_byte),
            (16, 1, 16, 4 * plane)
        );
        let p = d.params;
        assert!(p.num_blocks * p.steps_per_lane * d.program.workgroup_size() as u32 >= 1024);
    }
    let tuning = GatherTuning {
        mode: GatherMode::Cpu,
        max_steps_per_lane: 4,
    };
    // Written 8 bytes into a unit: an entry a pixel.
    assert!(view_channels(&runs, (0, 8, 0), sizes, tuning).is_none());
    // Eight planes: the wide channels.
    let eight = ops::split(&[1, 8, 64, 64], &IntTensor::scalar(1), 1).unwrap();
    let view = PartView::within(&[1, 8, 64, 64], &[1, 64, 64, 8], &[0, 2, 3, 1], &[0; 4]);
    let eight_runs = part_runs(&eight, 0, &view.unwrap(), 4, Access::Write).unwrap();
    let d = view_channels(&eight_runs, (0, 0, 0), sizes, tuning).unwrap();
    assert_eq!(d.program.to_string(), "main_join runs channels w4 wide");
    // Planes of 63 x 63 lie off a unit (4 channels), rows of 10 are more than 8: the planes joined
    // and walked (`join_walk`: a word at a time for f32 on words, a byte at a time for f16
    // off a word), one segment of all the planes, not an entry a pixel.
    let odd = ops::split(&[1, 8, 63, 63], &IntTensor::scalar(1), 2).unwrap();
    let whole = ops::split(&[1, 10, 64, 64], &IntTensor::scalar(1), 1).unwrap();
    let odd_view = PartView::within(&[1, 4, 63, 63], &[1, 63, 63, 4], &[0, 2, 3, 1], &[0; 4]);
    let whole_view = PartView::within(&[1, 10, 64, 64], &[1, 64, 64, 10], &[0, 2, 3, 1], &[0; 4]);
    for (plan, part, view, planes) in [
        (&odd, 1, odd_view.unwrap(), 4),
        (&whole, 0, whole_view.unwrap(), 10),
    ] {
        for size in [4, 2] {
            let runs = part_runs(plan, part, &view, size, Access::Write).unwrap();
            let d = view_channels(&runs, (0, 0, 0), sizes, tuning).unwrap();
            assert_eq!(d.program.channels, None, "{view:?} {size}");
            let Table::Join(JoinTable { segments, .. }) = &d.table else {
                panic!("{view:?} {size}: {d:?}");
            };
            assert_eq!(segments.len(), 1, "{view:?} {size}");
            assert_eq!(
                (segments[0].count, segments[0].row_bytes),
                (planes, size as u32)
            );
        }
    }
}

#[test]
fn equal_joins_at_equal_steps_take_one_dispatch() {
    // [1, 12, 8, 8] f32 into three parts of 4 channels, each written [1, 8, 8, 4] (the
    // channels: 16 groups, one block each): part k's planes from input byte k x 1 KiB on.
    let plan = ops::split(&[1, 12, 8, 8], &IntTensor::scalar(1), 3).unwrap();
    let view = PartView::within(&[1, 4, 8, 8], &[1, 8, 8, 4], &[0, 2, 3, 1], &[0; 4]).unwrap();
    let tuning = GatherTuning {
        mode: GatherMode::Gpu,
        max_steps_per_lane: 4,
    };
    let join = |k: usize, dst: u64, binding: u32| {
        let runs = part_runs(&plan, k, &view, 4, Access::Write).unwrap();
        view_channels(&runs, (0, dst, binding), (48 << 10, 0), tuning).unwrap()
    };
    let one = join(0, 0, 0);
    let blocks = one.params.num_blocks;
    // In buffers of their own (output bindings 0 to 2), or 1 KiB apart in one: one dispatch,
    // join k 1 KiB further on in the input and a binding or 64 units on.
    for (dst, binding, units) in [(0, 1, 0), (1024, 0, 64)] {
        let d = repeat_joins(
            (0..3)
                .map(|k| join(k, k as u64 * dst, k as u32 * binding))
                .collect(),
        );
        let [d] = &d[..] else { panic!("{d:?}") };
        let Table::Join(j) = &d.table else {
            panic!("{d:?}")
        };
        let h = j.header;
        assert_eq!(
            (h.first_unit, h.repeat_blocks, h.repeat_src, h.repeat_units),
            (0, blocks, 1 << 10, units)
        );
        assert_eq!((h.binding, h.repeat_binding), (0, binding));
        assert_eq!(
            (d.params.num_blocks, j.segments[0].src_offset),
            (3 * blocks, 0)
        );
        assert_eq!(d.table.bytes().len(), one.table.bytes().len());
    }
    // A third part at another step, or of other planes, goes on in a dispatch of its own.
    let apart = repeat_joins(vec![join(0, 0, 0), join(1, 1024, 0), join(2, 4096, 0)]);
    assert_eq!(apart.len(), 2);
    assert_eq!(apart[1], join(2, 4096, 0));
    let rgb = ops::split(&[1, 9, 8, 8], &IntTensor::scalar(1), 3).unwrap();
    let view = PartView::within(&[1, 3, 8, 8], &[1, 8, 8, 3], &[0, 2, 3, 1], &[0; 4]).unwrap();
    let runs = part_runs(&rgb, 2, &view, 4, Access::Write).unwrap();
    let other = view_channels(&runs, (0, 2048, 0), (48 << 10, 0), tuning);
    assert_eq!(
        repeat_joins(vec![join(0, 0, 0), join(1, 1024, 0), other.unwrap()]).len(),
        2
    );
}

#[test]
fn rows_apart_take_vec4s_and_unaligned_ones_an_entry_each() {
    // K [1, 4, 8, 8] f16 into [1, 4, 8, 16]: rows of 16 bytes, 32 apart: vec4s.
    let k = PartView::within(&[1, 4, 8, 8], &[1, 4, 8, 16], &[0, 1, 2, 3], &[0; 4]).unwrap();
    let lengths = IntTensor::vector(vec![32, 8, 8]);
    let plan = ops::variadic_split(&[1, 4, 48, 8], &IntTensor::scalar(2), &lengths).unwrap();
    let entries = view_entries(
        "k",
        &part_runs(&plan, 1, &k, 2, Access::Write).unwrap(),
        0,
        0,
        0,
        ROOM,
    )
    .unwrap();
    assert_eq!(entries.len(), 4);
    let e = entries[1];
    assert_eq!(
        (e.out_bytes, e.row_bytes, e.dst_stride, e.src_stride),
        (8 * 16, 16, 32, 16)
    );
    assert_eq!((e.dst_unit, e.src_offset), (256 / 16, 768 + 32 * 16));
    assert!(entries.iter().all(Entry::is_vec4));
    // At element 4 of each row (byte 8): the rows start inside units.
    let k = PartView::within(&[1, 4, 8, 8], &[1, 4, 8, 16], &[0, 1, 2, 3], &[0, 0, 0, 4]).unwrap();
    let runs = part_runs(&plan, 1, &k, 2, Access::Write).unwrap();
    let entries = view_entries("k", &runs, 0, 0, 0, ROOM).unwrap();
    assert_eq!(entries.len(), 32);
    assert!(entries
        .iter()
        .all(|e| (e.skip, e.first_byte, e.out_bytes) == (8, 8, 24)));
    // Each row owns the unit it starts in and the one it ends in: one dispatch.
    assert_eq!(dispatch_of(&entries), [0; 32]);
    // Moved 8 bytes on, every run starts on a unit: rows apart again, unless the source
    // is not in units either.
    assert_eq!(view_entries("k", &runs, 0, 8, 0, ROOM).unwrap().len(), 4);
    let entries = view_entries("k", &runs, 4, 8, 1, ROOM).unwrap();
    assert_eq!(entries.len(), 32);
    assert_eq!((entries[1].dst_unit, entries[1].binding), (3, 1));
    assert_eq!(
        (entries[1].out_bytes, entries[1].mode),
        (16, Mode::Word as u32)
    );
}
