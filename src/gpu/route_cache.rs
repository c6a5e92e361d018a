//! Routes kept for the next split of the same plan at the same offsets.
//!
//! A graph runtime splits the same node again and again: the same plan and dtype, its
//! buffers from a pool at the same offsets. Choosing the route (the byte geometry, the route,
//! the gather's dispatches and their tables) then gives the same answer every time, so
//! [`crate::GpuSplitter::encode`] keeps it. On a CPU adapter, where the host's caches are
//! cold after every dispatch, that is a sizeable part of a small split. A kept route holds
//! numbers and this crate's own table buffers, never a caller's buffer: keeping it changes
//! neither which buffers stay alive nor which errors `encode` reports.

use crate::gpu::cache::Lru;
use crate::gpu::output_layout::OutputLayout;
use crate::gpu::route::{DeviceCaps, Regions, Route};
use crate::plan::SplitPlan;
use crate::DType;
use std::sync::Arc;

/// Routes kept at most; the least recently used goes first.
const MAX_ROUTES: usize = 32;

/// Outputs of all kept routes together at most: a kept route holds its plan, layout and
/// tables, in proportion to its outputs. A plan of any size up to this is kept, so a repeated
/// split of thousands of outputs is not planned again.
const MAX_KEPT_OUTPUTS: usize = 1 << 19;

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
#[derive(Debug)]
pub(crate) struct RouteCache(Lru<OwnedKey, Arc<KeptRoute>>);

impl Default for RouteCache {
    fn default() -> Self {
        Self(Lru::new(MAX_ROUTES, MAX_KEPT_OUTPUTS))
    }
}

/// A [`RouteKey`], owned.
#[derive(Debug)]
struct OwnedKey {
    plan: SplitPlan,
    dtype: DType,
    layout: OutputLayout,
    regions: Regions,
    caps: DeviceCaps,
}

impl OwnedKey {
    fn matches(&self, key: &RouteKey<'_>) -> bool {
        // The cheap fields first: most misses differ there.
        (self.dtype, self.regions, self.caps) == (key.dtype, key.regions, key.caps)
            && self.plan.num_outputs() == key.plan.num_outputs()
            && self.plan == *key.plan
            && self.layout == *key.layout
    }
}

impl RouteCache {
    /// The route kept for `key`, if any.
    pub(crate) fn get(&self, key: &RouteKey<'_>) -> Option<Arc<KeptRoute>> {
        self.0.get(|k| k.matches(key))
    }

    /// Keeps `route` for `key`.
    pub(crate) fn insert(&self, key: &RouteKey<'_>, route: Arc<KeptRoute>) {
        let owned = OwnedKey {
            plan: key.plan.clone(),
            dtype: key.dtype,
            layout: key.layout.clone(),
            regions: key.regions,
            caps: key.caps,
        };
        let weight = key.plan.num_outputs().max(1);
        self.0.insert(owned, route, weight, |k| k.matches(key));
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
    fn the_cache_keeps_plans_of_thousands_of_outputs_within_its_bounds() {
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

        let many = SplitPlan::from_lengths(&[4096], 0, &[1; 4096], true).unwrap();
        let many_layout = OutputLayout::packed(&many, DType::U8).unwrap();
        let many_key = RouteKey {
            plan: &many,
            layout: &many_layout,
            ..key(0)
        };
        cache.insert(&many_key, kept());
        assert!(cache.get(&many_key).is_some(), "4,096 outputs are kept");

        let n = MAX_KEPT_OUTPUTS + 1;
        let large = SplitPlan::from_lengths(&[n], 0, &vec![1; n], true).unwrap();
        let layout = OutputLayout::packed(&large, DType::U8).unwrap();
        let large_key = RouteKey {
            plan: &large,
            layout: &layout,
            ..key(0)
        };
        cache.insert(&large_key, kept());
        assert!(
            cache.get(&large_key).is_none(),
            "heavier than the whole cache"
        );
    }
}
