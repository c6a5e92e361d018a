//! Route choice (pure) and the kept routes.

use super::*;
use crate::gather::abi::EntryPoint;
use crate::{DType, SplitPlan};

const CAPS: DeviceCaps = DeviceCaps {
    window_limit: 1 << 27,
    offset_align: 256,
    buffer_copies: true,
    gather: GatherTuning {
        mode: crate::gather::GatherMode::Cpu,
        max_steps_per_lane: 128,
    },
};

const COPIES: Regions = Regions {
    input_offset: 0,
    output_offset: 0,
    copies_allowed: true,
};

fn route(
    shape: &[usize],
    axis: usize,
    lengths: &[usize],
    caps: &DeviceCaps,
    regions: &Regions,
) -> Route {
    let plan = SplitPlan::from_lengths(shape, axis, lengths, true).unwrap();
    let layout = PartLayout::new(&plan, DType::F32, caps.offset_align).unwrap();
    let bytes = ByteRows::new(&plan, 4).unwrap();
    choose(&bytes, &layout, caps, regions).unwrap()
}

#[test]
fn a_concat_takes_the_splits_copies_turned_around_or_one_join() {
    // Three inputs of 4,096 f32 each, on axis 0: contiguous, one copy per input, from its
    // place in the inputs' region (at 16) into the output (at 512).
    let plan = SplitPlan::from_lengths(&[12, 1024], 0, &[4, 4, 4], true).unwrap();
    let layout = PartLayout::new(&plan, DType::F32, 256).unwrap();
    let bytes = ByteRows::new(&plan, 4).unwrap();
    let regions = Regions {
        input_offset: 16,
        output_offset: 512,
        copies_allowed: true,
    };
    let Route::BufferCopies(copies) = choose_concat(&bytes, &layout, &CAPS, &regions).unwrap()
    else {
        panic!("copies expected");
    };
    // The split's copies would be one run from the input; the concat reads each input.
    let pairs: Vec<(u64, u64, u64)> = copies.iter().map(|c| (c.src, c.dst, c.size)).collect();
    assert_eq!(pairs, vec![(16, 512, 3 * 16384)]);
    // Without copies: one dispatch, of the split's aligned rows (every input's rows are
    // whole units); of the join where they are not (f16 rows of 2 x 1,025 bytes); with every
    // input empty: nothing.
    let gather = DeviceCaps {
        buffer_copies: false,
        ..CAPS
    };
    let odd = SplitPlan::from_lengths(&[12, 1025], 0, &[4, 4, 4], true).unwrap();
    for (plan, dtype, entry) in [
        (&plan, DType::F32, EntryPoint::RowsVec4),
        (&odd, DType::F16, EntryPoint::Join),
    ] {
        let layout = PartLayout::new(plan, dtype, 256).unwrap();
        let bytes = ByteRows::new(plan, dtype.size()).unwrap();
        let route = choose_concat(&bytes, &layout, &gather, &regions).unwrap();
        assert_eq!(kind(&route), ("gather", 1));
        let Route::Gather(d) = route else {
            unreachable!()
        };
        assert_eq!(d[0].program.entry, entry);
    }
    let empty = SplitPlan::from_lengths(&[0, 4], 0, &[0, 0], true).unwrap();
    let none = ByteRows::new(&empty, 4).unwrap();
    let empty_layout = PartLayout::new(&empty, DType::F32, 256).unwrap();
    let route = choose_concat(&none, &empty_layout, &gather, &regions).unwrap();
    assert_eq!(kind(&route), ("gather", 0));
}

fn kind(r: &Route) -> (&'static str, usize) {
    match r {
        Route::BufferCopies(c) => ("copies", c.len()),
        Route::Gather(d) => ("gather", d.len()),
    }
}

#[test]
fn the_cheaper_copies_win_and_the_gather_takes_the_rest() {
    let spec = (&[6, 12, 10, 24][..], 1, &[4, 4, 4][..]);
    // 18 row copies of 3,840 bytes.
    assert_eq!(
        kind(&route(spec.0, spec.1, spec.2, &CAPS, &COPIES)),
        ("copies", 18)
    );
    // Without COPY_SRC / COPY_DST, one dispatch.
    let no_copies = Regions {
        copies_allowed: false,
        ..COPIES
    };
    assert_eq!(
        kind(&route(spec.0, spec.1, spec.2, &CAPS, &no_copies)),
        ("gather", 1)
    );
    // A GPU: the gather, whatever the buffers allow.
    let gpu = DeviceCaps {
        buffer_copies: false,
        ..CAPS
    };
    assert_eq!(
        kind(&route(spec.0, spec.1, spec.2, &gpu, &COPIES)),
        ("gather", 1)
    );
    assert_eq!(
        kind(&route(&[4096, 2048], 0, &[1; 4096], &gpu, &COPIES)),
        ("gather", 1)
    );
    // Rows of 4 bytes: too many, too short copies.
    assert_eq!(
        kind(&route(&[4096, 4], 1, &[1, 1, 1, 1], &CAPS, &COPIES)),
        ("gather", 1)
    );
    // Every output empty: nothing at all.
    assert_eq!(
        kind(&route(&[0, 4], 1, &[2, 2], &CAPS, &COPIES)),
        ("gather", 0)
    );
}

#[test]
fn back_to_back_outputs_share_one_copy() {
    // 4096 slices of 2048 f32 on axis 0, each 8 KiB, at 256-byte alignment: no padding.
    let r = route(&[4096, 2048], 0, &[1; 4096], &CAPS, &COPIES);
    assert_eq!(
        r,
        Route::BufferCopies(vec![BufferCopy {
            src: 0,
            dst: 0,
            size: 4096 * 8192
        }])
    );
    // Region offsets are added, and an unaligned one leaves the copies.
    let at = Regions {
        input_offset: 256,
        output_offset: 512,
        copies_allowed: true,
    };
    let r = route(&[4, 1024], 0, &[1, 3], &CAPS, &at);
    assert_eq!(
        r,
        Route::BufferCopies(vec![BufferCopy {
            src: 256,
            dst: 512,
            size: 16384
        }])
    );
    let odd = Regions {
        input_offset: 2,
        ..at
    };
    assert_eq!(
        kind(&route(&[4, 1024], 0, &[1, 3], &CAPS, &odd)),
        ("gather", 1)
    );
}

/// A route's recording binds within its regions: the whole tensor's from its offset (its
/// binding's bytes), the parts' from theirs (the layout's bytes), for a split and a concat,
/// copy commands and dispatches alike.
#[test]
fn a_routes_recording_binds_within_its_regions() {
    use crate::gather::builds::{Build, InputBindings, OutputBindings};
    use crate::recording::{Command, Role};
    let gpu = DeviceCaps {
        buffer_copies: false,
        gather: GatherTuning::of(crate::gather::GatherMode::Gpu),
        ..CAPS
    };
    let build = Build::plain(InputBindings::ONE, OutputBindings::Units(1), None);
    for (shape, axis, lengths) in [
        (&[12, 1024][..], 0, &[4, 4, 4][..]),
        (&[6, 12, 10, 24], 1, &[4, 4, 4]),
        (&[64, 7], 1, &[3, 4]),
        (&[4096, 8], 1, &[1; 8]),
    ] {
        let plan = SplitPlan::from_lengths(shape, axis, lengths, true).unwrap();
        let layout = PartLayout::new(&plan, DType::F32, 256).unwrap();
        let bytes = ByteRows::new(&plan, 4).unwrap();
        let whole = plan.whole_binding_size(DType::F32).unwrap();
        for caps in [CAPS, gpu] {
            for direction in [Direction::Split, Direction::Concat] {
                let (whole_at, parts_at) = (512, 4096);
                let (input, output) = direction.in_order(whole_at, parts_at);
                let regions = Regions {
                    input_offset: input,
                    output_offset: output,
                    copies_allowed: true,
                };
                let route = choose_for(direction, &bytes, &layout, &caps, &regions).unwrap();
                let limits = crate::Limits::default();
                let recording = route.recording(build, (input, output), &limits).unwrap();
                let (whole_role, parts_role) = direction.in_order(Role::Input(0), Role::Output(0));
                let region = |role| match role {
                    r if r == whole_role => (whole_at, whole),
                    r if r == parts_role => (parts_at, layout.total_bytes),
                    other => panic!("{other:?} in a route's recording"),
                };
                let within = |role, offset: u64, size: u64| {
                    let (from, bytes) = region(role);
                    assert!(
                        offset >= from && offset + size <= from + bytes,
                        "{role:?} {size} bytes at {offset}, outside {bytes} from {from}: \
                         {shape:?} {direction:?} {caps:?}"
                    );
                };
                assert!(!recording.commands.is_empty());
                for command in &recording.commands {
                    match command {
                        Command::Copy { from, to, size } => {
                            within(from.0, from.1, *size);
                            within(to.0, to.1, *size);
                        }
                        Command::Dispatch(d) => {
                            for b in &d.binds.list {
                                match (b.role, b.size) {
                                    (Role::Table | Role::StandIn(_), _) => {}
                                    (role, Some(size)) => within(role, b.offset, size),
                                    (role, None) => panic!("{role:?} bound to its end"),
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
