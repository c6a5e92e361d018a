//! Device copies of dispatch tables, kept for the next split with the same shapes.
//!
//! A graph runtime runs the same split node again and again with the same shapes, so it needs
//! the same table every time. Uploading it is a buffer creation per dispatch, which costs more
//! than a small split's copying on a CPU adapter. Tables are immutable once
//! uploaded, so a cached one is safe to bind from any encoder, thread or submission.

use crate::cache::Lru;
use crate::error::Result;
use crate::gpu::device::{buffer_with, scoped_async};
use std::collections::HashMap;

/// Tables kept at most; the least recently used goes first.
const MAX_TABLES: usize = 32;

/// Table bytes kept at most. Larger tables (splits into thousands of outputs) are kept with
/// their routes ([`crate::gpu::planner`]).
const MAX_TABLE_BYTES: usize = 2 << 20;

/// The cache, keyed by the table's bytes.
#[derive(Debug)]
pub(crate) struct TableCache(Lru<Vec<u8>, wgpu::Buffer>);

impl Default for TableCache {
    fn default() -> Self {
        Self(Lru::new(MAX_TABLES, MAX_TABLE_BYTES))
    }
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
        let mut found: Vec<Option<wgpu::Buffer>> =
            tables.iter().map(|t| self.0.get(|k| k == t)).collect();
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
        for (table, buffer) in created {
            self.0
                .insert(table.to_vec(), buffer, table.len(), |k| k == table);
        }
        Ok(found.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::device::test_devices::{per_backend, test_device};
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
        assert_eq!(cache.0.len(), 2);
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
        assert_eq!(cache.0.len(), MAX_TABLES);
        assert!(cache.0.get(|k| *k == table(1, 48)).is_none());

        let big = table(9, MAX_TABLE_BYTES + 32);
        let first = get(&cache, &device, std::slice::from_ref(&big));
        let again = get(&cache, &device, std::slice::from_ref(&big));
        assert_ne!(
            first, again,
            "tables past MAX_TABLE_BYTES in all are not kept"
        );
    }

    per_backend!(
        a_table_seen_again_is_served_from_the_cache,
        equal_tables_of_one_split_share_one_upload,
        the_cache_is_bounded_and_drops_the_least_recently_used,
    );
}
