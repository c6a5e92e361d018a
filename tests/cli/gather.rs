//! `wgpu-split run --op gather|scatter-nd|get-rows|set-rows`: a gather by i32 and i64
//! indices, a scatter, and get and set rows by u32 ids, equal the CPU reference; an index out
//! of range exits 2 naming it, and writes nothing.

use crate::{s, save, wgpu_split};
use wgpu_split::{npy, ops, DType, HostTensor};

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

/// An embedding's rows got by u32 ids, and rows set into a cache by them (f32 rows into an
/// f16 cache rounded on the way): the reference's bytes; a negative i32 id is out of range
/// for both, and `--axis` is refused.
fn get_and_set_rows_files(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let table = HostTensor::from_slice(&[6, 4], &(0..24u16).collect::<Vec<_>>()).unwrap();
    let input = save(dir.path(), "table.npy", &table);
    let ids = HostTensor::from_slice(&[3], &[5u32, 0, 5]).unwrap();
    let indices = save(dir.path(), "ids.npy", &ids);
    let rows = HostTensor::from_slice(&[2, 4], &[7u16, 7, 7, 7, 9, 9, 9, 9]).unwrap();
    let updates = save(dir.path(), "rows.npy", &rows);
    let set_ids = save(
        dir.path(),
        "set.npy",
        &HostTensor::from_slice(&[2], &[1u32, 4]).unwrap(),
    );
    let run = |op: &str, ids: &str, more: &[&str], out: &std::path::Path| {
        let args = ["run", "--op", op, "--input", &input, "--indices", ids];
        let tail = ["--backend", backend, "--out", &s(out)];
        wgpu_split(&[&args[..], more, &tail[..]].concat())
    };
    let out = dir.path().join("got");
    let r = run("get-rows", &indices, &[], &out);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let got = npy::read(&out.join("output_0.npy")).unwrap();
    let plan = ops::get_rows(&[6, 4], &[3]).unwrap();
    assert_eq!(
        got,
        plan.reference(&[table.clone(), ids.clone()]).unwrap().0
    );
    assert_eq!(got.to_vec::<u16>().unwrap()[..4], [20, 21, 22, 23]);
    let out = dir.path().join("set");
    let r = run("set-rows", &set_ids, &["--updates", &updates], &out);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let got = npy::read(&out.join("output_0.npy"))
        .unwrap()
        .to_vec::<u16>()
        .unwrap();
    assert_eq!(
        (got[4..8].to_vec(), got[16..20].to_vec()),
        (vec![7; 4], vec![9; 4])
    );
    // f32 rows set into an f16 table are rounded on the way: 1.5, 65520 (to infinity), -0.0,
    // 1 + 2^-11 (a tie, to even: 1).
    let halves = HostTensor::new(DType::F16, vec![6, 4], table.bytes().to_vec()).unwrap();
    let input = save(dir.path(), "halves.npy", &halves);
    let wide = [1.5f32, 65520.0, -0.0, 1.0 + 1.0 / 2048.0].repeat(2);
    let wide = save(
        dir.path(),
        "wide.npy",
        &HostTensor::from_slice(&[2, 4], &wide).unwrap(),
    );
    let out = dir.path().join("set_f16");
    let args = [
        "run",
        "--op",
        "set-rows",
        "--input",
        &input,
        "--indices",
        &set_ids,
    ];
    let tail = ["--updates", &wide, "--backend", backend, "--out", &s(&out)];
    let r = wgpu_split(&[&args[..], &tail[..]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let got = npy::read(&out.join("output_0.npy")).unwrap();
    assert_eq!(got.dtype(), DType::F16);
    let got: Vec<u16> = (got.bytes().chunks_exact(2))
        .map(|h| u16::from_le_bytes([h[0], h[1]]))
        .collect();
    assert_eq!(got[4..8], [0x3e00, 0x7c00, 0x8000, 0x3c00]);
    assert_eq!(got[..4], [0, 1, 2, 3], "the other rows keep their bits");
    // f16 rows got into f32 (--rows-dtype): row 1 of the rounded table read back exactly.
    let rounded = save(
        dir.path(),
        "rounded.npy",
        &npy::read(&out.join("output_0.npy")).unwrap(),
    );
    let out = dir.path().join("get_f32");
    let args = [
        "run",
        "--op",
        "get-rows",
        "--input",
        &rounded,
        "--indices",
        &set_ids,
    ];
    let tail = [
        "--rows-dtype",
        "f32",
        "--backend",
        backend,
        "--out",
        &s(&out),
    ];
    let r = wgpu_split(&[&args[..], &tail[..]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let got = npy::read(&out.join("output_0.npy")).unwrap();
    assert_eq!(got.dtype(), DType::F32);
    let got = got.to_vec::<f32>().unwrap();
    assert_eq!(got[..4], [1.5, f32::INFINITY, -0.0, 1.0]);
    assert_eq!(got[2].to_bits(), 0x8000_0000, "-0.0 keeps its sign");
    // The option is a gather's alone.
    let args = [
        "run",
        "--op",
        "set-rows",
        "--input",
        &rounded,
        "--indices",
        &set_ids,
    ];
    let tail = ["--updates", &wide, "--rows-dtype", "f32", "--out", &s(&out)];
    let r = wgpu_split(&[&args[..], &tail[..]].concat());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("rows-dtype"), "{}", r.stderr);
    // -1 is out of range here, where ONNX Gather takes it from the end.
    let minus = save(
        dir.path(),
        "minus.npy",
        &HostTensor::from_slice(&[1], &[-1i32]).unwrap(),
    );
    let out = dir.path().join("bad");
    let r = run("get-rows", &minus, &[], &out);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("get-rows takes [0, 6)"), "{}", r.stderr);
    assert!(!out.exists(), "nothing is written");
    let r = run("get-rows", &indices, &["--axis=1"], &out);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("takes no --axis"), "{}", r.stderr);
}

per_backend_command!(gather_files, scatter_nd_files, get_and_set_rows_files);
