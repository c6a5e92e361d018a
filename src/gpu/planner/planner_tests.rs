//! Route choice (pure) and the kept routes.

use super::kept::{KeptRoute, MAX_KEPT_OUTPUTS, MAX_ROUTES};
use super::*;
use crate::gpu::gather::abi::EntryPoint;
use crate::gpu::placement::Placement;
use crate::{DType, GatherMode, SplitPlan};
use std::sync::Arc;

const CAPS: DeviceCaps = DeviceCaps {
    window_limit: 1 << 27,
    offset_align: 256,
    buffer_copies: true,
    gather: GatherTuning {
        mode: crate::gpu::gather::GatherMode::Cpu,
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

fn caps() -> DeviceCaps {
    DeviceCaps {
        window_limit: 1 << 27,
        offset_align: 256,
        buffer_copies: true,
        gather: GatherTuning {
            mode: GatherMode::Cpu,
            max_steps_per_lane: 2048,
        },
    }
}

fn kept(layout: &PartLayout) -> Arc<KeptRoute> {
    Arc::new(KeptRoute {
        layout: Arc::new(layout.clone()),
        route: Route::BufferCopies(Vec::new()),
        tables: Vec::new(),
    })
}

#[test]
fn a_route_is_found_only_under_its_whole_key() {
    let cache = RouteCache::default();
    let plan = SplitPlan::from_lengths(&[6, 12], 1, &[4, 8], true).unwrap();
    let layout = PartLayout::new(&plan, DType::F32, 256).unwrap();
    let regions = Regions {
        input_offset: 0,
        output_offset: 256,
        copies_allowed: true,
    };
    let key = RouteKey {
        direction: Direction::Split,
        plan: &plan,
        dtype: DType::F32,
        layout: Placement::Bindable,
        regions,
        caps: caps(),
    };
    assert!(cache.get(&key).is_none());
    let route = kept(&layout);
    cache.insert(&key, route.clone());
    assert!(Arc::ptr_eq(&cache.get(&key).unwrap(), &route));
    // A plan equal to the kept one but made anew finds it too.
    let same_plan = SplitPlan::from_lengths(&[6, 12], 1, &[4, 8], true).unwrap();
    let same = RouteKey {
        plan: &same_plan,
        ..key
    };
    assert!(Arc::ptr_eq(&cache.get(&same).unwrap(), &route));
    // A caller's layout is a key of its own, found again by an equal layout.
    let given = RouteKey {
        layout: Placement::Given(&layout),
        ..key
    };
    assert!(cache.get(&given).is_none());
    cache.insert(&given, kept(&layout));
    let equal_layout = layout.clone();
    let kept_given = cache.get(&RouteKey {
        layout: Placement::Given(&equal_layout),
        ..key
    });
    assert!(kept_given.is_some_and(|k| !Arc::ptr_eq(&k, &route)));

    let other_plan = SplitPlan::from_lengths(&[6, 12], 1, &[8, 4], true).unwrap();
    let packed = PartLayout::packed(&plan, DType::F32).unwrap();
    let misses = [
        RouteKey {
            plan: &other_plan,
            ..key
        },
        RouteKey {
            dtype: DType::I32,
            ..key
        },
        RouteKey {
            caps: DeviceCaps {
                offset_align: 16,
                ..caps()
            },
            ..key
        },
        RouteKey {
            layout: Placement::Given(&packed),
            ..key
        },
        RouteKey {
            regions: Regions {
                output_offset: 512,
                ..regions
            },
            ..key
        },
        RouteKey {
            caps: DeviceCaps {
                buffer_copies: false,
                ..caps()
            },
            ..key
        },
        // The concat of the same plan moves the bytes the other way.
        RouteKey {
            direction: Direction::Concat,
            ..key
        },
    ];
    for miss in &misses {
        assert!(cache.get(miss).is_none(), "{miss:?}");
    }
}

#[test]
fn the_cache_keeps_plans_of_thousands_of_outputs_within_its_bounds() {
    let cache = RouteCache::default();
    let plans: Vec<SplitPlan> = (1..=MAX_ROUTES + 1)
        .map(|n| SplitPlan::from_lengths(&[n], 0, &[n], true).unwrap())
        .collect();
    let layouts: Vec<PartLayout> = plans
        .iter()
        .map(|p| PartLayout::packed(p, DType::U8).unwrap())
        .collect();
    let key = |i: usize| RouteKey {
        direction: Direction::Split,
        plan: &plans[i],
        dtype: DType::U8,
        layout: Placement::Given(&layouts[i]),
        regions: Regions {
            input_offset: 0,
            output_offset: 0,
            copies_allowed: false,
        },
        caps: caps(),
    };
    for (i, layout) in layouts.iter().enumerate().take(MAX_ROUTES) {
        cache.insert(&key(i), kept(layout));
    }
    // Plan 0 used again, so plan 1 is the least recently used when a new one comes.
    assert!(cache.get(&key(0)).is_some());
    cache.insert(&key(MAX_ROUTES), kept(&layouts[MAX_ROUTES]));
    assert!(cache.get(&key(0)).is_some());
    assert!(cache.get(&key(1)).is_none());
    assert!(cache.get(&key(MAX_ROUTES)).is_some());

    let many = SplitPlan::from_lengths(&[4096], 0, &[1; 4096], true).unwrap();
    let many_layout = PartLayout::packed(&many, DType::U8).unwrap();
    let many_key = RouteKey {
        plan: &many,
        layout: Placement::Given(&many_layout),
        ..key(0)
    };
    cache.insert(&many_key, kept(&many_layout));
    assert!(cache.get(&many_key).is_some(), "4,096 outputs are kept");

    let n = MAX_KEPT_OUTPUTS + 1;
    let large = SplitPlan::from_lengths(&[n], 0, &vec![1; n], true).unwrap();
    let layout = PartLayout::packed(&large, DType::U8).unwrap();
    let large_key = RouteKey {
        plan: &large,
        layout: Placement::Given(&layout),
        ..key(0)
    };
    cache.insert(&large_key, kept(&layout));
    assert!(
        cache.get(&large_key).is_none(),
        "heavier than the whole cache"
    );
}
