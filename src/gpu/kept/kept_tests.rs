//! The one cache: routes found only under their whole key, tables uploaded once, and one
//! bound over routes, tables and builds together.

use super::*;
use crate::gpu::device::test_devices::{per_backend, test_device};
use crate::gpu::gather::GatherTuning;
use crate::gpu::placement::PartLayout;
use crate::BackendChoice;
use crate::GatherMode;

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
        recording: Default::default(),
        tables: Vec::new(),
    })
}

#[test]
fn a_route_is_found_only_under_its_whole_key() {
    let cache = Kept::default();
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
    assert!(cache.route(&key).is_none());
    let route = kept(&layout);
    cache.keep_route(&key, route.clone());
    assert!(Arc::ptr_eq(&cache.route(&key).unwrap(), &route));
    // A plan equal to the kept one but made anew finds it too.
    let same_plan = SplitPlan::from_lengths(&[6, 12], 1, &[4, 8], true).unwrap();
    let same = RouteKey {
        plan: &same_plan,
        ..key
    };
    assert!(Arc::ptr_eq(&cache.route(&same).unwrap(), &route));
    // A caller's layout is a key of its own, found again by an equal layout.
    let given = RouteKey {
        layout: Placement::Given(&layout),
        ..key
    };
    assert!(cache.route(&given).is_none());
    cache.keep_route(&given, kept(&layout));
    let equal_layout = layout.clone();
    let kept_given = cache.route(&RouteKey {
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
        assert!(cache.route(miss).is_none(), "{miss:?}");
    }
}

#[test]
fn the_cache_keeps_plans_of_thousands_of_outputs_within_its_bounds() {
    let cache = Kept::default();
    let plans: Vec<SplitPlan> = (1..=MAX_ENTRIES + 1)
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
    for (i, layout) in layouts.iter().enumerate().take(MAX_ENTRIES) {
        cache.keep_route(&key(i), kept(layout));
    }
    // Plan 0 used again, so plan 1 is the least recently used when a new one comes.
    assert!(cache.route(&key(0)).is_some());
    cache.keep_route(&key(MAX_ENTRIES), kept(&layouts[MAX_ENTRIES]));
    assert!(cache.route(&key(0)).is_some());
    assert!(cache.route(&key(1)).is_none());
    assert!(cache.route(&key(MAX_ENTRIES)).is_some());

    let many = SplitPlan::from_lengths(&[4096], 0, &[1; 4096], true).unwrap();
    let many_layout = PartLayout::packed(&many, DType::U8).unwrap();
    let many_key = RouteKey {
        plan: &many,
        layout: Placement::Given(&many_layout),
        ..key(0)
    };
    cache.keep_route(&many_key, kept(&many_layout));
    assert!(cache.route(&many_key).is_some(), "4,096 outputs are kept");

    let n = MAX_BYTES / PART_BYTES + 1;
    let large = SplitPlan::from_lengths(&[n], 0, &vec![1; n], true).unwrap();
    let layout = PartLayout::packed(&large, DType::U8).unwrap();
    let large_key = RouteKey {
        plan: &large,
        layout: Placement::Given(&layout),
        ..key(0)
    };
    cache.keep_route(&large_key, kept(&layout));
    assert!(
        cache.route(&large_key).is_none(),
        "heavier than the whole cache"
    );
}

fn get(cache: &Kept, device: &wgpu::Device, tables: &[Vec<u8>]) -> Vec<wgpu::Buffer> {
    pollster::block_on(cache.tables(device, tables)).unwrap()
}

fn table(tag: u8, len: usize) -> Vec<u8> {
    let mut t = vec![0u8; len];
    t[0] = tag;
    t
}

fn a_table_seen_again_is_served_from_the_cache(choice: BackendChoice) {
    let device = test_device(choice);
    let cache = Kept::default();
    let first = get(&cache, &device, &[table(1, 48)]);
    let again = get(&cache, &device, &[table(1, 48)]);
    assert_eq!(first, again);
    let other = get(&cache, &device, &[table(2, 48)]);
    assert_ne!(first, other);
}

fn equal_tables_of_one_split_share_one_upload(choice: BackendChoice) {
    let device = test_device(choice);
    let cache = Kept::default();
    let got = get(&cache, &device, &[table(1, 48), table(2, 48), table(1, 48)]);
    assert_eq!(got[0], got[2]);
    assert_ne!(got[0], got[1]);
    assert_eq!(cache.0.len(), 2);
}

fn the_cache_is_bounded_and_drops_the_least_recently_used(choice: BackendChoice) {
    let device = test_device(choice);
    let cache = Kept::default();
    let kept = get(&cache, &device, &[table(0, 48)]);
    let first = get(&cache, &device, &[table(1, 48)]);
    for tag in 1..=(MAX_ENTRIES as u8 + 8) {
        get(&cache, &device, &[table(tag, 48)]);
        // Table 0 stays the most recently used one before each new upload.
        assert_eq!(get(&cache, &device, &[table(0, 48)]), kept);
    }
    assert_eq!(cache.0.len(), MAX_ENTRIES);
    // Table 1 went first: uploaded anew, it is another buffer.
    assert_ne!(get(&cache, &device, &[table(1, 48)]), first);

    let big = table(9, MAX_TABLE_BYTES + 32);
    let first = get(&cache, &device, std::slice::from_ref(&big));
    let again = get(&cache, &device, std::slice::from_ref(&big));
    assert_ne!(
        first, again,
        "tables past MAX_TABLE_BYTES are not kept on their own"
    );
}

fn routes_tables_and_builds_share_one_bound(choice: BackendChoice) {
    let device = test_device(choice);
    let cache = Kept::default();
    let plan = SplitPlan::from_lengths(&[8], 0, &[4, 4], true).unwrap();
    let layout = PartLayout::packed(&plan, DType::U8).unwrap();
    let key = RouteKey {
        direction: Direction::Split,
        plan: &plan,
        dtype: DType::U8,
        layout: Placement::Bindable,
        regions: Regions {
            input_offset: 0,
            output_offset: 0,
            copies_allowed: false,
        },
        caps: caps(),
    };
    cache.keep_route(&key, kept(&layout));
    let build = (InputBindings::ONE, OutputBindings::Units(2), None);
    let pipeline = pollster::block_on(GatherPipeline::with_bindings(
        &device, build.0, build.1, build.2,
    ))
    .unwrap();
    cache.keep_build(build, pipeline);
    assert!(cache.route(&key).is_some());
    assert!(cache.build(&build).is_some());
    assert!(cache
        .build(&(InputBindings::ONE, OutputBindings::Units(3), None))
        .is_none());
    // The build used last: the route is the least recently used when the tables come.
    for tag in 0..(MAX_ENTRIES - 1) as u8 {
        get(&cache, &device, &[table(tag, 48)]);
    }
    assert!(cache.route(&key).is_none());
    assert!(cache.build(&build).is_some());
    assert_eq!(cache.0.len(), MAX_ENTRIES);
}

per_backend!(
    a_table_seen_again_is_served_from_the_cache,
    equal_tables_of_one_split_share_one_upload,
    the_cache_is_bounded_and_drops_the_least_recently_used,
    routes_tables_and_builds_share_one_bound,
);
