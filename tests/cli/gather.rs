//! `wgpu-split run --op gather|scatter-nd`: a gather by i32 and i64 indices, and a scatter,
//! equal the CPU reference; an index out of range exits 2 naming it, and writes nothing.

use crate::{s, save, wgpu_split};
use wgpu_split::{npy, ops, HostTensor};

fn gather_files(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<f32> = (0..60).map(|i| i as f32 * 0.5 - 7.0).collect();
    let data = HostTensor::from_slice(&[3, 4, 5], &values).unwrap();
    let input = save(dir.path(), "data.npy", &data);
    let narrow = HostTensor::from_slice(&[2, 2], &[2i32, -1, 0, 1]).unwrap();
    let wide = HostTensor::from_slice(&[2, 2], &[2i64, -1, 0, 1]).unwrap();
    let plan = ops::gather(&[3, 4, 5], &[2, 2], 1).unwrap();
    for (name, ids) in [("i32.npy", &narrow), ("i64.npy", &wide)] {
        let indices = save(dir.path(), name, ids);
        let out = dir.path().join(format!("out-{name}"));
        let args = [
            "run",
            "--op",
            "gather",
            "--input",
            &input,
            "--indices",
            &indices,
        ];
        let more = ["--axis=1", "--backend", backend, "--out", &s(&out)];
        let r = wgpu_split(&[&args[..], &more[..]].concat());
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("verified"), "{}", r.stdout);
        let got = npy::read(&out.join("output_0.npy")).unwrap();
        let (want, _) = plan.reference(&[data.clone(), ids.clone()]).unwrap();
        assert_eq!(got, want);
    }
    let bad = HostTensor::from_slice(&[2, 2], &[2i64, -1, 4, -5]).unwrap();
    let indices = save(dir.path(), "bad.npy", &bad);
    let out = dir.path().join("out-bad");
    let args = [
        "run",
        "--op",
        "gather",
        "--input",
        &input,
        "--indices",
        &indices,
    ];
    let more = ["--axis=1", "--backend", backend, "--out", &s(&out)];
    let r = wgpu_split(&[&args[..], &more[..]].concat());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("indices[1, 0] is 4, out of range"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("2 of 4 indices"), "{}", r.stderr);
    assert!(!out.exists(), "nothing is written");
}

fn scatter_nd_files(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let data = HostTensor::from_slice(&[5, 3], &(0..15u8).collect::<Vec<_>>()).unwrap();
    let updates = HostTensor::from_slice(&[2, 3], &[90u8, 91, 92, 80, 81, 82]).unwrap();
    let input = save(dir.path(), "data.npy", &data);
    let ups = save(dir.path(), "updates.npy", &updates);
    let run = |ids: &HostTensor, name: &str| {
        let indices = save(dir.path(), name, ids);
        let out = dir.path().join(format!("out-{name}"));
        let args = [
            "run",
            "--op",
            "scatter-nd",
            "--input",
            &input,
            "--indices",
            &indices,
        ];
        let more = ["--updates", &ups, "--backend", backend, "--out", &s(&out)];
        (wgpu_split(&[&args[..], &more[..]].concat()), out)
    };
    let ids = HostTensor::from_slice(&[2, 1], &[-1i64, 1]).unwrap();
    let (r, out) = run(&ids, "good.npy");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let got = npy::read(&out.join("output_0.npy")).unwrap();
    let want = [0u8, 1, 2, 80, 81, 82, 6, 7, 8, 9, 10, 11, 90, 91, 92];
    assert_eq!(got.bytes(), &want);
    let bad = HostTensor::from_slice(&[2, 1], &[2i32, 5]).unwrap();
    let (r, out) = run(&bad, "bad.npy");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("indices[1, 0] is 5, out of range"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "nothing is written");
}

per_backend_command!(gather_files, scatter_nd_files);
