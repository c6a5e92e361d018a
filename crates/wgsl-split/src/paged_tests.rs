//! The paged write's recordings: what a host that checks nothing gets, and where it takes
//! one dispatch or two.

use super::*;
use crate::gather::GatherMode;
use crate::plan::NegativeIndex;
use crate::rows::index_rule;

/// A host that records a plan without checking it first gets the core's refusal, not a
/// dispatch: heads-first queries whose heads' blocks are not whole units, and a plan
/// whose products `PagedKvPlan::new` refuses.
#[test]
fn a_recording_refuses_what_the_shader_cannot_take() {
    let rule = index_rule(DType::I32, NegativeIndex::Padding, 64).unwrap();
    let at = regions([0, 1 << 20], true);
    let tuning = GatherTuning::of(GatherMode::Gpu);
    let record =
        |plan: &PagedKvPlan| record_paged(plan, DType::F16, rule, at, &Limits::default(), tuning);
    // 3 tokens of 6 f16 elements a head: blocks of 36 bytes.
    let mut plan = crate::ops::paged_kv_write(3, 4, 2, 6, 4, 5, CacheLayout::Nhd).unwrap();
    assert!(record(&plan).is_ok());
    plan.heads_first = true;
    let refused = record(&plan).unwrap_err().to_string();
    assert!(refused.contains("multiple of 16"), "{refused}");
    let mut huge = plan;
    huge.heads_first = false;
    huge.tokens = usize::MAX / 2;
    assert!(record(&huge).is_err());
}

/// Regions at the start of their buffers, the caches at `caches` (one buffer where
/// `one`), each source in a buffer of its own where not `one`.
fn regions(caches: [u64; 2], one: bool) -> PagedRegions {
    PagedRegions {
        sources: [0, 0],
        one_source: one,
        slots: 0,
        queries: 0,
        caches,
        one_cache_window: one,
        status: Some(0),
    }
}

/// One dispatch moves everything where its windows allow; else the keys' and the
/// queries' dispatch binds the first source and cache and counts the slots out of range,
/// and the values' binds the second of each and counts nothing.
#[test]
fn caches_apart_take_a_dispatch_each() {
    let rule = index_rule(DType::U32, NegativeIndex::Padding, 64).unwrap();
    let limits = Limits::default();
    let tuning = GatherTuning::of(GatherMode::Gpu);
    let plan = crate::ops::paged_kv_write(3, 4, 2, 8, 4, 16, CacheLayout::Nhd).unwrap();
    let cache = plan.bytes(DType::F16, DType::U32).unwrap()[4];
    let roles = |at: PagedRegions, plan: &PagedKvPlan| {
        let recording = record_paged(plan, DType::F16, rule, at, &limits, tuning).unwrap();
        let dispatches: Vec<_> = recording.dispatches().collect();
        let roles: Vec<Vec<Role>> = dispatches
            .iter()
            .map(|d| d.binds.list.iter().map(|b| b.role).collect())
            .collect();
        let jobs = paged_jobs(plan, DType::F16, rule, at, &limits);
        let counts: Vec<bool> = jobs.iter().map(|j| j.job.counts).collect();
        (roles, counts, jobs)
    };
    let (one, counts, _) = roles(regions([0, cache.next_multiple_of(256)], true), &plan);
    assert_eq!((one.len(), counts), (1, vec![true]));
    assert!(one[0].contains(&Role::Output(0)) && one[0].contains(&Role::Scatter(0)));
    let (two, counts, jobs) = roles(regions([0, 0], false), &plan);
    assert_eq!((two.len(), counts), (2, vec![true, false]));
    assert!(two[0].contains(&Role::Input(0)) && two[0].contains(&Role::Scatter(0)));
    assert!(two[0].contains(&Role::Output(0)));
    assert!(two[1].contains(&Role::Input(1)) && two[1].contains(&Role::Scatter(1)));
    assert!(!two[1].contains(&Role::Output(0)) && !two[1].contains(&Role::Input(0)));
    // A fused projection's values are read from their place in its rows.
    let token = (4 + 2 * 2) * 8 * 2;
    assert_eq!(jobs[1].job.parts[0].src_offset, (4 + 2) * 8 * 2);
    assert_eq!(jobs[1].job.parts[0].src_stride, token);
    // Caches too far apart for one binding take two dispatches in one buffer too.
    let far = regions([0, limits.max_storage_buffer_binding_size], true);
    assert_eq!(roles(far, &plan).0.len(), 2);
    // Separate keys and values at their own strides, sources at any multiple of 4.
    let kv = plan.with_separate_kv(40, 16).unwrap();
    let mut at = regions([0, 0], false);
    at.sources = [300, 4];
    let (_, _, jobs) = roles(at, &kv);
    assert_eq!(
        (jobs[0].src_base, jobs[0].job.parts[0].src_offset),
        (256, 44)
    );
    assert_eq!(jobs[0].job.parts[0].src_stride, 80);
    assert!(jobs.iter().all(|j| j.job.copy.is_empty()));
}
