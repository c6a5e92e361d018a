//! Device copies of dispatch tables, kept for the next split with the same shapes.
//!
//! A graph runtime runs the same split node again and again with the same shapes, so it needs
//! the same table every time. Uploading it is a buffer creation per dispatch, which costs more
//! than a small split's copying (about 45 us per buffer on lavapipe). Tables are immutable once
//! uploaded, so a cached one is safe to bind from any encoder, thread or submission.

use crate::error::Result;
use crate::gpu::device::{buffer_with, scoped_async};
use std::collections::HashMap;
use std::sync::Mutex;

/// Tables kept at most; the least recently used goes first.
const MAX_TABLES: usize = 32;

/// Larger tables (splits into thousands of outputs) are uploaded each time: their dispatch
/// outweighs the upload, and the cache stays within `MAX_TABLES * MAX_TABLE_BYTES` (2 MiB).
const MAX_TABLE_BYTES: usize = 64 << 10;

/// The cache, keyed by the table's bytes.
#[derive(Debug, Default)]
pub(crate) struct TableCache {
    state: Mutex<CacheState>,
}

#[derive(Debug, Default)]
struct CacheState {
    /// Each table's buffer and when it was last used.
    buffers: HashMap<Vec<u8>, (wgpu::Buffer, u64)>,
    /// Counts lookups; stands in for time.
    clock: u64,
}

impl TableCache {
    /// One storage buffer per table, from the cache where it holds one. Buffers created here
    /// enter the cache only when their creation raised no device error, so a failed upload
    /// (out of memory) is not served again.
    pub(crate) async fn buffers(
        &self,
        device: &wgpu::Device,
        tables: &[Vec<u8>],
    ) -> Result<Vec<wgpu::Buffer>> {
        let mut found: Vec<Option<wgpu::Buffer>> = {
            let mut state = self.lock();
            tables.iter().map(|t| state.get(t)).collect()
        };
        if found.iter().all(Option::is_some) {
            return Ok(found.into_iter().flatten().collect());
        }
        // Dispatches of one split can have equal tables (their windows differ): one upload each.
        let created = scoped_async(device, "uploading the split tables", || {
            let mut created: HashMap<&[u8], wgpu::Buffer> = HashMap::new();
            for (table, slot) in tables.iter().zip(&mut found) {
                if slot.is_none() {
                    let buffer = match created.get(table.as_slice()) {
                        Some(b) => b.clone(),
                        None => {
                            let usage = wgpu::BufferUsages::STORAGE;
                            let b = buffer_with(device, "split table", table, usage)?;
                            created.insert(table, b.clone());
                            b
                        }
                    };
                    *slot = Some(buffer);
                }
            }
            Ok::<_, crate::SplitError>(created)
        })
        .await??;
        let mut state = self.lock();
        for (table, buffer) in created {
            state.insert(table, buffer);
        }
        Ok(found.into_iter().flatten().collect())
    }

    /// The state; a panic elsewhere while it was held leaves it consistent, so a poisoned
    /// lock is taken as is.
    fn lock(&self) -> std::sync::MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl CacheState {
    fn get(&mut self, table: &[u8]) -> Option<wgpu::Buffer> {
        if table.len() > MAX_TABLE_BYTES {
            // Never kept, so not worth hashing.
            return None;
        }
        self.clock += 1;
        let clock = self.clock;
        self.buffers.get_mut(table).map(|(buffer, used)| {
            *used = clock;
            buffer.clone()
        })
    }

    fn insert(&mut self, table: &[u8], buffer: wgpu::Buffer) {
        if table.len() > MAX_TABLE_BYTES {
            return;
        }
        if self.buffers.len() >= MAX_TABLES && !self.buffers.contains_key(table) {
            let oldest = self
                .buffers
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            if let Some(key) = oldest {
                self.buffers.remove(&key);
            }
        }
        self.clock += 1;
        self.buffers.insert(table.to_vec(), (buffer, self.clock));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::device::tests::{per_backend, test_device};
    use crate::BackendChoice;

    fn get(cache: &TableCache, device: &wgpu::Device, tables: &[Vec<u8>]) -> Vec<wgpu::Buffer> {
        pollster::block_on(cache.buffers(device, tables)).unwrap()
    }

    fn table(tag: u8, len: usize) -> Vec<u8> {
        let mut t = vec![0u8; len];
        t[0] = tag;
        t
    }

    fn a_table_seen_again_is_served_from_the_cache(choice: BackendChoice) {
        let device = test_device(choice);
        let cache = TableCache::default();
        let first = get(&cache, &device, &[table(1, 48)]);
        let again = get(&cache, &device, &[table(1, 48)]);
        assert_eq!(first, again);
        let other = get(&cache, &device, &[table(2, 48)]);
        assert_ne!(first, other);
    }

    fn equal_tables_of_one_split_share_one_upload(choice: BackendChoice) {
        let device = test_device(choice);
        let cache = TableCache::default();
        let got = get(&cache, &device, &[table(1, 48), table(2, 48), table(1, 48)]);
        assert_eq!(got[0], got[2]);
        assert_ne!(got[0], got[1]);
        assert_eq!(cache.lock().buffers.len(), 2);
    }

    fn the_cache_is_bounded_and_drops_the_least_recently_used(choice: BackendChoice) {
        let device = test_device(choice);
        let cache = TableCache::default();
        let kept = get(&cache, &device, &[table(0, 48)]);
        for tag in 1..=(MAX_TABLES as u8 + 8) {
            get(&cache, &device, &[table(tag, 48)]);
            // Table 0 stays the most recently used one before each new upload.
            assert_eq!(get(&cache, &device, &[table(0, 48)]), kept);
        }
        let state = cache.lock();
        assert_eq!(state.buffers.len(), MAX_TABLES);
        assert!(!state.buffers.contains_key(&table(1, 48)));
        drop(state);

        let big = table(9, MAX_TABLE_BYTES + 32);
        let first = get(&cache, &device, std::slice::from_ref(&big));
        let again = get(&cache, &device, std::slice::from_ref(&big));
        assert_ne!(first, again, "tables past MAX_TABLE_BYTES are not kept");
    }

    per_backend!(
        a_table_seen_again_is_served_from_the_cache,
        equal_tables_of_one_split_share_one_upload,
        the_cache_is_bounded_and_drops_the_least_recently_used,
    );
}
