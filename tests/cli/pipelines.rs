//! The command's pipeline cache: kept in the cache directory on backends that have one
//! (Vulkan), read back by the next run, set aside when damaged, and never a reason to fail.

use crate::{save, wgpu_split_with};
use std::path::Path;
use wgpu_split::HostTensor;

/// The cache files in `dir`: their names and bytes.
fn cache_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

fn pipelines_are_kept_across_runs(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let data: Vec<f32> = (0..2 * 8 * 4 * 4).map(|i| i as f32).collect();
    let input = save(
        dir.path(),
        "in.npy",
        &HostTensor::from_slice(&[2, 8, 4, 4], &data).unwrap(),
    );
    let run = |env: &[(&str, &str)]| {
        let out_dir = tempfile::tempdir().unwrap();
        let out = wgpu_split_with(
            &[
                "run",
                "--op=split",
                "--input",
                &input,
                "--out",
                &out_dir.path().display().to_string(),
                "--axis=1",
                "--num-splits=2",
                "--transpose=0,2,3,1",
                &format!("--backend={backend}"),
            ],
            env,
        );
        // Every run checks its outputs against the CPU reference.
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    };
    let cache_var = cache.display().to_string();
    let in_cache = [("WGPU_SPLIT_CACHE_DIR", cache_var.as_str())];
    run(&in_cache);
    let files = cache_files(&cache);
    if backend != "vulkan" {
        // GL keeps no pipelines across processes.
        assert!(files.is_empty(), "{:?}", files.iter().map(|f| &f.0));
        return;
    }
    let [(name, bytes)] = files.as_slice() else {
        panic!("one cache file, not {:?}", files.iter().map(|f| &f.0));
    };
    assert!(name.starts_with("wgpu_pipeline_cache_vulkan_"), "{name}");
    assert!(
        bytes.starts_with(b"WSPLITC1") && bytes.len() > 16,
        "{bytes:?}"
    );
    run(&in_cache);
    let path = cache.join(name);
    // A damaged file (cut short, or its data changed) is set aside and written again whole.
    for damaged in [bytes[..bytes.len() - 1].to_vec(), {
        let mut b = bytes.clone();
        *b.last_mut().unwrap() ^= 0xff;
        b
    }] {
        std::fs::write(&path, &damaged).unwrap();
        run(&in_cache);
        let written = std::fs::read(&path).unwrap();
        assert!(written.starts_with(b"WSPLITC1"));
        assert_ne!(written, damaged);
    }
    // Without the variable, the cache lies in the home directory's `.cache`; a directory that
    // cannot be made costs nothing but the cache, and an empty variable turns it off.
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let home_var = home.display().to_string();
    run(&[("HOME", home_var.as_str())]);
    assert_eq!(cache_files(&home.join(".cache/wgpu-split")).len(), 1);
    let blocked = dir.path().join("in.npy/cache").display().to_string();
    run(&[("WGPU_SPLIT_CACHE_DIR", blocked.as_str())]);
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    let bare_var = bare.display().to_string();
    run(&[("HOME", bare_var.as_str()), ("WGPU_SPLIT_CACHE_DIR", "")]);
    assert!(cache_files(&bare).is_empty());
}

per_backend_command!(pipelines_are_kept_across_runs);
