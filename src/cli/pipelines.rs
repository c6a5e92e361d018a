//! The command's device, its pipelines kept across runs: on a backend with pipeline caches
//! (Vulkan), the splitter makes its pipelines through a cache read from the user's cache
//! directory when the device opens and written back when the command ends, so that a second
//! run compiles nothing the first compiled.
//!
//! The directory is `$WGPU_SPLIT_CACHE_DIR` (empty: no cache), else
//! `$XDG_CACHE_HOME/wgpu-split`, else `~/.cache/wgpu-split` (`%LOCALAPPDATA%\wgpu-split` on
//! Windows). The cache is an optimisation: a file that cannot be read, is damaged or was made
//! by another driver is set aside for an empty cache, and one that cannot be written is not,
//! without a word on stderr.

use super::exit::CliResult;
use std::io::Write;
use std::ops::Deref;
use std::path::PathBuf;
use wgpu_split::{DeviceChoice, GpuSplitter};

/// The first bytes of a cache file; a checksum of the driver's data follows, then the data.
const MAGIC: &[u8; 8] = b"WSPLITC1";
/// A cache file larger than this is not read (a few hundred pipelines take a few MiB).
const MAX_FILE_BYTES: u64 = 256 << 20;

/// A splitter opened for one command, with the pipeline cache it keeps, if any.
pub(super) struct Gpu {
    splitter: GpuSplitter,
    /// Held for its drop, which writes the cache back.
    kept: Option<KeptCache>,
}

impl Gpu {
    /// Opens the device `choice` picks, its pipelines made through the kept cache where the
    /// backend has one.
    pub(super) fn open(choice: DeviceChoice) -> CliResult<Gpu> {
        let splitter = GpuSplitter::open(choice)?;
        let kept = KeptCache::open(splitter.device());
        let splitter = match &kept {
            Some(k) => splitter.with_pipeline_cache(k.cache.clone()),
            None => splitter,
        };
        Ok(Gpu { splitter, kept })
    }

    /// This device with its splitter changed by `f` (its options), the cache kept.
    pub(super) fn map(self, f: impl FnOnce(GpuSplitter) -> GpuSplitter) -> Gpu {
        Gpu {
            splitter: f(self.splitter),
            kept: self.kept,
        }
    }
}

impl Deref for Gpu {
    type Target = GpuSplitter;
    fn deref(&self) -> &GpuSplitter {
        &self.splitter
    }
}

/// A pipeline cache and the file it is written back to when dropped (the command's end).
struct KeptCache {
    cache: wgpu::PipelineCache,
    path: PathBuf,
    /// The checksum of the data read, so that a run that compiled nothing writes nothing.
    read: Option<u64>,
}

impl KeptCache {
    /// The cache of `device`'s driver, from its file where one is there and sound; `None`
    /// where the backend keeps no pipelines or no cache directory is known.
    fn open(device: &wgpu::Device) -> Option<KeptCache> {
        if !device.features().contains(wgpu::Features::PIPELINE_CACHE) {
            return None;
        }
        let name = wgpu::util::pipeline_cache_key(&device.adapter_info())?;
        let path = cache_dir()?.join(format!("{name}.bin"));
        let data = read_data(&path);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        // SAFETY: the data is what `PipelineCache::get_data` gave a device whose adapter has
        // the same `pipeline_cache_key` (the file's name), written whole (a rename) with a
        // checksum that matched; wgpu checks its header against this adapter and driver, and
        // with `fallback` an unusable cache is an empty one.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("wgpu-split pipelines"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        if pollster::block_on(scope.pop()).is_some() {
            return None;
        }
        Some(KeptCache {
            cache,
            path,
            read: data.as_deref().map(checksum),
        })
    }

    /// Writes the cache's data to its file (a new file renamed over the old), where it
    /// changed; any failure leaves the file as it was.
    fn save(&self) -> std::io::Result<()> {
        let Some(data) = self.cache.get_data() else {
            return Ok(());
        };
        let sum = checksum(&data);
        if self.read == Some(sum) {
            return Ok(());
        }
        let dir = self.path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut file = tempfile::NamedTempFile::new_in(dir)?;
        file.write_all(MAGIC)?;
        file.write_all(&sum.to_le_bytes())?;
        file.write_all(&data)?;
        file.persist(&self.path).map_err(|e| e.error)?;
        Ok(())
    }
}

impl Drop for KeptCache {
    fn drop(&mut self) {
        // The cache only saves time: a directory that cannot be written costs the next run
        // its compilation, and the command says nothing of it.
        let _ = self.save();
    }
}

/// Where the command keeps its caches; `None` where no directory is set or known.
fn cache_dir() -> Option<PathBuf> {
    let var = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = std::env::var_os("WGPU_SPLIT_CACHE_DIR") {
        return (!dir.is_empty()).then(|| dir.into());
    }
    if let Some(dir) = var("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("wgpu-split"));
    }
    if cfg!(windows) {
        return var("LOCALAPPDATA").map(|d| PathBuf::from(d).join("wgpu-split"));
    }
    var("HOME").map(|home| PathBuf::from(home).join(".cache").join("wgpu-split"))
}

/// The driver's data in the file at `path`, where the file is there, small enough, and its
/// checksum matches.
fn read_data(path: &std::path::Path) -> Option<Vec<u8>> {
    if std::fs::metadata(path).ok()?.len() > MAX_FILE_BYTES {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    let rest = bytes.strip_prefix(MAGIC.as_slice())?;
    let (sum, data) = rest.split_first_chunk::<8>()?;
    (u64::from_le_bytes(*sum) == checksum(data)).then(|| data.to_vec())
}

/// FNV-1a over `data`: enough to tell a whole file from a damaged one.
fn checksum(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}
