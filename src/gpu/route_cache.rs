//! Routes kept for the next split of the same plan at the same offsets.
//!
//! A graph runtime splits the same node again and again: the same plan and dtype, its
//! buffers from a pool at the same offsets. Choosing the route (the byte geometry, the route,
//! the gather's dispatches and their tables) then gives the same answer every time, so
//! [`crate::GpuSplitter::encode`] keeps it. On a CPU adapter, where the host's caches are
//! cold after every dispatch, that is a sizeable part of a small split. A kept route holds
//! numbers and this crate's own table buffers, never a caller's buffer: keeping it changes
//! neither which buffers stay alive nor which errors `encode` reports.

use crate::gpu::output_layout::OutputLayout;
use crate::gpu::route::{DeviceCaps, Regions, Route};
use crate::plan::SplitPlan;
use crate::DType;
use std::sync::{Arc, Mutex};

/// Routes kept at most; the least recently used goes first.
const MAX_ROUTES: usize = 32;

/// Plans with more outputs are not kept: comparing them costs more, and their dispatches
/// outweigh the planning.
const MAX_KEPT_OUTPUTS: usize = 256;

/// Everything a route depends on, borrowed from the split at hand.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteKey<'a> {
    pub plan: &'a SplitPlan,
    pub dtype: DType,
    pub layout: &'a OutputLayout,
    pub regions: Regions,
    pub caps: DeviceCaps,
}

/// A chosen route, with the device copies of its gather tables (one per dispatch).
#[derive(Debug)]
pub(crate) struct KeptRoute {
    pub route: Route,
    pub tables: Vec<wgpu::Buffer>,
}

/// The cache; shared by a splitter's clones, whose settings are part of every key.
#[derive(Debug, Default)]
pub(crate) struct RouteCache {
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    kept: Vec<Kept>,
    /// Counts lookups; stands in for time.
    clock: u64,
}

/// One kept route, with its key owned and when it was last used.
#[derive(Debug)]
struct Kept {
    plan: SplitPlan,
    dtype: DType,
    layout: OutputLayout,
    regions: Regions,
    caps: DeviceCaps,
    route: Arc<KeptRoute>,
    used: u64,
}

impl Kept {
    fn matches(&self, key: &RouteKey<'_>) -> bool {
        // The cheap fields first: most misses differ there.
        (self.dtype, self.regions, self.caps) == (key.dtype, key.regions, key.caps)
            && self.plan == *key.plan
            && self.layout == *key.layout
    }
}

impl RouteCache {
    /// The route kept for `key`, if any.
    pub(crate) fn get(&self, key: &RouteKey<'_>) -> Option<Arc<KeptRoute>> {
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        let kept = state.kept.iter_mut().find(|k| k.matches(key))?;
        kept.used = clock;
        Some(kept.route.clone())
    }

    /// Keeps `route` for `key`, unless the plan is too large to be worth it.
    pub(crate) fn insert(&self, key: &RouteKey<'_>, route: Arc<KeptRoute>) {
        if key.plan.num_outputs() > MAX_KEPT_OUTPUTS {
            return;
        }
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        state.kept.retain(|k| !k.matches(key));
        if state.kept.len() >= MAX_ROUTES {
            if let Some(oldest) = (0..state.kept.len()).min_by_key(|&i| state.kept[i].used) {
                state.kept.swap_remove(oldest);
            }
        }
        state.kept.push(Kept {
            plan: key.plan.clone(),
            dtype: key.dtype,
            layout: key.layout.clone(),
            regions: key.regions,
            caps: key.caps,
            route,
            used,
        });
    }

    /// The state; a panic elsewhere while it was held leaves it consistent, so a poisoned
    /// lock is taken as is.
    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::gather::plan::GatherTuning;
    use crate::GatherMode;

    fn caps() -> DeviceCaps {
        DeviceCaps {
            window_limit: 1 << 27,
            offset_align: 256,
            max_texture_dimension: 8192,
            buffer_copies: true,
            texture_copies: true,
            texture_command_cost: 1,
            gather: GatherTuning {
                mode: GatherMode::Runs,
                max_units_per_lane: 2048,
                spread_lanes: 96,
            },
        }
    }

    fn kept() -> Arc<KeptRoute> {
        Arc::new(KeptRoute {
            route: Route::BufferCopies(Vec::new()),
            tables: Vec::new(),
        })
    }

    #[test]
    fn a_route_is_found_only_under_its_whole_key() {
        let cache = RouteCache::default();
        let plan = SplitPlan::from_lengths(&[6, 12], 1, &[4, 8], true).unwrap();
        let layout = OutputLayout::new(&plan, DType::F32, 256).unwrap();
        let regions = Regions {
            input_offset: 0,
            output_offset: 256,
            copies_allowed: true,
        };
        let key = RouteKey {
            plan: &plan,
            dtype: DType::F32,
            layout: &layout,
            regions,
            caps: caps(),
        };
        assert!(cache.get(&key).is_none());
        let route = kept();
        cache.insert(&key, route.clone());
        assert!(Arc::ptr_eq(&cache.get(&key).unwrap(), &route));

        let other_plan = SplitPlan::from_lengths(&[6, 12], 1, &[8, 4], true).unwrap();
        let packed = OutputLayout::packed(&plan, DType::F32).unwrap();
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
                layout: &packed,
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
                    texture_copies: false,
                    ..caps()
                },
                ..key
            },
        ];
        for miss in &misses {
            assert!(cache.get(miss).is_none(), "{miss:?}");
        }
    }

    #[test]
    fn the_cache_is_bounded_and_keeps_no_large_plan() {
        let cache = RouteCache::default();
        let plans: Vec<SplitPlan> = (1..=MAX_ROUTES + 1)
            .map(|n| SplitPlan::from_lengths(&[n], 0, &[n], true).unwrap())
            .collect();
        let layouts: Vec<OutputLayout> = plans
            .iter()
            .map(|p| OutputLayout::packed(p, DType::U8).unwrap())
            .collect();
        let key = |i: usize| RouteKey {
            plan: &plans[i],
            dtype: DType::U8,
            layout: &layouts[i],
            regions: Regions {
                input_offset: 0,
                output_offset: 0,
                copies_allowed: false,
            },
            caps: caps(),
        };
        for i in 0..MAX_ROUTES {
            cache.insert(&key(i), kept());
        }
        // Plan 0 used again, so plan 1 is the least recently used when a new one comes.
        assert!(cache.get(&key(0)).is_some());
        cache.insert(&key(MAX_ROUTES), kept());
        assert!(cache.get(&key(0)).is_some());
        assert!(cache.get(&key(1)).is_none());
        assert!(cache.get(&key(MAX_ROUTES)).is_some());

        let n = MAX_KEPT_OUTPUTS + 1;
        let large = SplitPlan::from_lengths(&[n], 0, &vec![1; n], true).unwrap();
        let layout = OutputLayout::packed(&large, DType::U8).unwrap();
        let large_key = RouteKey {
            plan: &large,
            layout: &layout,
            ..key(0)
        };
        cache.insert(&large_key, kept());
        assert!(cache.get(&large_key).is_none());
    }
}
