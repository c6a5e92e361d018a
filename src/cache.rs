//! The least-recently-used cache behind a splitter's one cache ([`crate::gpu::kept`]): least
//! recently used first out, bounded in entries and in weight (what each entry costs to keep,
//! in the user's unit).

use std::sync::Mutex;

/// A least-recently-used cache, shared by a splitter's clones under a mutex.
#[derive(Debug)]
pub(crate) struct Lru<K, V> {
    state: Mutex<State<K, V>>,
    max_entries: usize,
    max_weight: usize,
}

#[derive(Debug)]
struct State<K, V> {
    entries: Vec<Entry<K, V>>,
    /// Counts lookups; stands in for time.
    clock: u64,
}

#[derive(Debug)]
struct Entry<K, V> {
    key: K,
    value: V,
    weight: usize,
    used: u64,
}

impl<K, V: Clone> Lru<K, V> {
    /// A cache of at most `max_entries` entries weighing `max_weight` in all.
    pub(crate) fn new(max_entries: usize, max_weight: usize) -> Self {
        Self {
            state: Mutex::new(State {
                entries: Vec::new(),
                clock: 0,
            }),
            max_entries,
            max_weight,
        }
    }

    /// The value of the first key `matches` accepts, marked as just used.
    pub(crate) fn get(&self, matches: impl Fn(&K) -> bool) -> Option<V> {
        let mut state = self.lock();
        state.clock += 1;
        let clock = state.clock;
        let entry = state.entries.iter_mut().find(|e| matches(&e.key))?;
        entry.used = clock;
        Some(entry.value.clone())
    }

    /// Keeps `value` under `key`, in place of any entry whose key `matches` accepts, then
    /// drops the least recently used entries until the cache is within its bounds. An entry
    /// heavier than the whole cache is not kept.
    pub(crate) fn insert(&self, key: K, value: V, weight: usize, matches: impl Fn(&K) -> bool) {
        if weight > self.max_weight {
            return;
        }
        let mut state = self.lock();
        state.clock += 1;
        let used = state.clock;
        state.entries.retain(|e| !matches(&e.key));
        state.entries.push(Entry {
            key,
            value,
            weight,
            used,
        });
        let mut weight: usize = state.entries.iter().map(|e| e.weight).sum();
        while state.entries.len() > self.max_entries || weight > self.max_weight {
            let oldest = (0..state.entries.len()).min_by_key(|&i| state.entries[i].used);
            let Some(oldest) = oldest else { break };
            weight -= state.entries.swap_remove(oldest).weight;
        }
    }

    /// Entries kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// The state; a panic elsewhere while it was held leaves it consistent, so a poisoned
    /// lock is taken as is.
    fn lock(&self) -> std::sync::MutexGuard<'_, State<K, V>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_goes_first() {
        let cache: Lru<u32, &str> = Lru::new(2, 100);
        cache.insert(1, "one", 1, |&k| k == 1);
        cache.insert(2, "two", 1, |&k| k == 2);
        assert_eq!(cache.get(|&k| k == 1), Some("one"));
        cache.insert(3, "three", 1, |&k| k == 3);
        assert_eq!(cache.get(|&k| k == 2), None);
        assert_eq!(cache.get(|&k| k == 1), Some("one"));
        assert_eq!(cache.get(|&k| k == 3), Some("three"));
        cache.insert(3, "again", 1, |&k| k == 3);
        assert_eq!(cache.get(|&k| k == 3), Some("again"));
    }

    #[test]
    fn weight_bounds_the_cache() {
        let cache: Lru<u32, u32> = Lru::new(10, 10);
        cache.insert(1, 1, 6, |&k| k == 1);
        cache.insert(2, 2, 6, |&k| k == 2);
        assert_eq!(
            cache.get(|&k| k == 1),
            None,
            "6 + 6 is over 10: the older goes"
        );
        assert_eq!(cache.get(|&k| k == 2), Some(2));
        cache.insert(3, 3, 11, |&k| k == 3);
        assert_eq!(cache.get(|&k| k == 3), None, "heavier than the whole cache");
        assert_eq!(cache.get(|&k| k == 2), Some(2));
    }
}
