//! `wgpu-split run --op concat|concat-from-sequence`: files joined and stacked on each
//! adapter and on the CPU, streamed in small windows, and the errors of bad inputs.

use crate::{s, save, wgpu_split};
use wgpu_split::{npy, ops, DType, HostTensor};

fn tensor(dtype: DType, shape: &[usize], seed: usize) -> HostTensor {
    let n = shape.iter().product::<usize>() * dtype.size();
    let bytes = (0..n)
        .map(|i| ((i * 89 + seed * 31 + 3) % 251) as u8)
        .collect();
    HostTensor::new(dtype, shape.to_vec(), bytes).unwrap()
}

/// `run --op OP --input A --input B ... --out OUT ARGS...`.
fn run_concat(op: &str, inputs: &[String], out: &str, args: &[&str]) -> crate::Out {
    let mut full = vec!["run", "--op", op, "--out", out];
    for i in inputs {
        full.extend(["--input", i.as_str()]);
    }
    full.extend(args);
    wgpu_split(&full)
}

fn files_join_and_stack(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let a = tensor(DType::F16, &[2, 3, 4], 1);
    let b = tensor(DType::F16, &[2, 1, 4], 2);
    let files = [save(dir.path(), "a.npy", &a), save(dir.path(), "b.npy", &b)];
    let join = ops::concat(&[a.shape(), b.shape()], 1).unwrap();
    let want = join.reference(&[a.clone(), b.clone()]).unwrap();
    let gpu = format!("--backend={backend}");
    for (name, args) in [
        ("plain", vec!["--axis=1", gpu.as_str(), "--json"]),
        ("windows", vec!["--axis=-2", gpu.as_str(), "--window=6"]),
        ("onnx", vec!["--opset=3", gpu.as_str()]),
        ("cpu", vec!["--axis=1", "--backend=cpu", "--window=10"]),
    ] {
        let out_dir = dir.path().join(name);
        let out = run_concat("concat", &files, &s(&out_dir), &args);
        assert_eq!(out.code, 0, "{name}: {}", out.stderr);
        let got = npy::read(&out_dir.join("output_0.npy")).unwrap();
        assert_eq!(got, want, "{name}");
        if name == "plain" {
            let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(report["verified"], true);
            assert_eq!(report["outputs"][0]["shape"], serde_json::json!([2, 4, 4]));
        }
    }
    let stack = ops::concat_from_sequence(&[a.shape(), a.shape()], -1, 1).unwrap();
    let want = stack.reference(&[a.clone(), a.clone()]).unwrap();
    let out_dir = dir.path().join("stacked");
    let twice = [files[0].clone(), files[0].clone()];
    let out = run_concat(
        "concat-from-sequence",
        &twice,
        &s(&out_dir),
        &["--axis=-1", "--new-axis=1", &gpu, "--window=7"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(npy::read(&out_dir.join("output_0.npy")).unwrap(), want);
}

per_backend_command!(files_join_and_stack);

#[test]
fn bad_inputs_are_refused_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let a = save(dir.path(), "a.npy", &tensor(DType::F32, &[2, 3], 0));
    let b = save(dir.path(), "b.npy", &tensor(DType::I32, &[2, 3], 0));
    let c = save(dir.path(), "c.npy", &tensor(DType::F32, &[3, 3], 0));
    let out = s(&dir.path().join("out"));
    for (op, inputs, args, message) in [
        ("concat", vec![&a, &b], vec!["--axis=0"], "input 1 ("),
        (
            "concat",
            vec![&a, &c],
            vec!["--axis=1"],
            "inputs may differ only on the concat axis",
        ),
        ("concat", vec![&a, &a], vec![], "--op concat needs --axis"),
        (
            "concat",
            vec![&a, &a],
            vec!["--opset=4"],
            "requires the axis attribute",
        ),
        (
            "concat",
            vec![&a],
            vec!["--axis=0", "--new-axis=1"],
            "--new-axis does not apply",
        ),
        (
            "concat-from-sequence",
            vec![&a, &c],
            vec!["--axis=0", "--new-axis=1"],
            "same shape",
        ),
        (
            "concat-from-sequence",
            vec![&a],
            vec!["--axis=0", "--new-axis=2"],
            "must be 0 or 1",
        ),
        (
            "split",
            vec![&a, &a],
            vec!["--axis=0", "--num-splits=2"],
            "takes one --input, not 2",
        ),
    ] {
        let inputs: Vec<String> = inputs.into_iter().cloned().collect();
        let got = run_concat(op, &inputs, &out, &args);
        assert_eq!(got.code, 2, "{op} {args:?}: {}", got.stderr);
        assert!(
            got.stderr.contains(message),
            "{op} {args:?}: {}",
            got.stderr
        );
        assert!(
            !dir.path().join("out").exists(),
            "{op} {args:?} wrote files"
        );
    }
}
