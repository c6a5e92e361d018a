//! `wgpu-split run`: every dtype, Fortran-order and big-endian inputs, strings, empty
//! sequences and the ONNX Split opsets, read back from the files it writes.

use crate::{run_op, s, save};
use wgpu_split::{npy, ops, reference, DType, HostTensor, IntTensor};

fn every_dtype_round_trips_through_run(backend: &str) {
    let gpu_flag = format!("--backend={backend}");
    let dir = tempfile::tempdir().unwrap();
    for dtype in DType::ALL_NUMERIC
        .into_iter()
        .filter(|d| *d != DType::BF16)
        .chain([DType::Utf32(4)])
    {
        let shape = vec![3, 5, 2];
        let n = 30 * dtype.size();
        let mut bytes: Vec<u8> = (0..n).map(|i| (i * 89 + 3) as u8).collect();
        if dtype == DType::Bool {
            bytes.iter_mut().for_each(|b| *b &= 1);
        }
        if let DType::Utf32(_) = dtype {
            // Valid code points: printable ASCII.
            bytes
                .chunks_exact_mut(4)
                .enumerate()
                .for_each(|(i, c)| c.copy_from_slice(&(33 + (i as u32 % 90)).to_le_bytes()));
        }
        let input = HostTensor::new(dtype, shape.clone(), bytes).unwrap();
        let in_path = save(
            dir.path(),
            &format!("in_{}.npy", dtype.name().replace('<', "")),
            &input,
        );
        let plan = ops::variadic_split(
            &shape,
            &IntTensor::scalar(1),
            &IntTensor::vector(vec![2, 0, -1]),
        )
        .unwrap();
        let want = plan.reference(&input).unwrap();
        for backend in [gpu_flag.as_str(), "--backend=cpu"] {
            let out_dir = dir.path().join(format!(
                "out_{}_{}",
                dtype.name().replace('<', ""),
                &backend[10..]
            ));
            let out = run_op(
                "variadic-split",
                &in_path,
                &s(&out_dir),
                &["--axis=1", "--lengths=2,0,-1", backend, "--json"],
            );
            assert_eq!(out.code, 0, "{dtype} {backend}: {}", out.stderr);
            let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(report["outputs"].as_array().unwrap().len(), 3);
            assert_eq!(report["input"]["dtype"], dtype.name());
            if backend != "--backend=cpu" {
                assert_eq!(report["verified"], true);
            }
            for (i, w) in want.iter().enumerate() {
                let got = npy::read(&out_dir.join(format!("output_{i}.npy"))).unwrap();
                assert_eq!(&got, w, "{dtype} {backend} output {i}");
            }
        }
    }
}

/// A hand-made .npy header, for layouts this crate never writes.
fn raw_npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    let pad = (64 - (10 + header.len() + 1) % 64) % 64;
    let text = format!("{header}{}\n", " ".repeat(pad));
    let mut f = b"\x93NUMPY\x01\x00".to_vec();
    f.extend_from_slice(&(text.len() as u16).to_le_bytes());
    f.extend_from_slice(text.as_bytes());
    f.extend_from_slice(data);
    f
}

fn fortran_order_and_big_endian_inputs(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    // [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]] as Fortran-order big-endian i32.
    let mut data = Vec::new();
    for c in 0..4i32 {
        for r in 0..3 {
            data.extend_from_slice(&(r * 4 + c).to_be_bytes());
        }
    }
    let path = dir.path().join("f.npy");
    std::fs::write(&path, raw_npy(">i4", true, "(3, 4)", &data)).unwrap();
    let flag = format!("--backend={backend}");
    let out_dir = dir.path().join(backend);
    let out = run_op(
        "split",
        &s(&path),
        &s(&out_dir),
        &["--axis=-1", "--num-splits=2", &flag],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let second = npy::read(&out_dir.join("output_1.npy")).unwrap();
    assert_eq!(second.to_vec::<i32>().unwrap(), vec![2, 3, 6, 7, 10, 11]);
}

fn strings_split_to_sequence(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let words = ["alpha", "be", "", "δέλτα", "e", "zeta"];
    let mut data = Vec::new();
    for w in words {
        let mut cps: Vec<u32> = w.chars().map(|c| c as u32).collect();
        cps.resize(5, 0);
        cps.iter()
            .for_each(|c| data.extend_from_slice(&c.to_le_bytes()));
    }
    let path = dir.path().join("s.npy");
    std::fs::write(&path, raw_npy("<U5", false, "(3, 2)", &data)).unwrap();
    let flag = format!("--backend={backend}");
    let out_dir = dir.path().join(backend);
    let out = run_op(
        "split-to-sequence",
        &s(&path),
        &s(&out_dir),
        &["--axis=0", "--split=2", &flag],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let first = npy::utf32_strings(&npy::read(&out_dir.join("output_0.npy")).unwrap()).unwrap();
    assert_eq!(first, vec!["alpha", "be", "", "δέλτα"]);
    let last = npy::utf32_strings(&npy::read(&out_dir.join("output_1.npy")).unwrap()).unwrap();
    assert_eq!(last, vec!["e", "zeta"]);
}

#[test]
fn empty_sequence_writes_no_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = save(
        dir.path(),
        "e.npy",
        &HostTensor::from_slice::<f32>(&[0, 3], &[]).unwrap(),
    );
    let out_dir = dir.path().join("o");
    let out = run_op("split-to-sequence", &input, &s(&out_dir), &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 0);
}

#[test]
fn onnx_split_opsets() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<f32> = (1..=16).map(|i| i as f32).collect();
    let input = save(
        dir.path(),
        "x.npy",
        &HostTensor::from_slice(&[2, 8], &data).unwrap(),
    );
    let o = dir.path().join("o18");
    let out = run_op(
        "onnx-split",
        &input,
        &s(&o),
        &["--axis=1", "--num-outputs=3", "--json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = npy::read(&o.join("output_2.npy")).unwrap();
    assert_eq!(last.to_vec::<f32>().unwrap(), vec![7.0, 8.0, 15.0, 16.0]);
    let o = dir.path().join("o13");
    let out = run_op(
        "onnx-split",
        &input,
        &s(&o),
        &["--axis=1", "--num-outputs=3", "--opset=13"],
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        "error: number of outputs 3 does not divide axis 1 of length 8"
    );
    let out = run_op(
        "onnx-split",
        &input,
        &s(&o),
        &["--split=[2,6]", "--num-outputs=2"],
    );
    assert_eq!(out.code, 2);
    assert!(!o.exists());
    // A model's opset, not Split's since-version: opset 17 (YOLOv8n) is Split-13, equal parts;
    // opset 1 is Split-1; 27 is Split-18.
    for (opset, ok) in [
        ("17", true),
        ("1", true),
        ("27", true),
        ("0", false),
        ("28", false),
    ] {
        let o = dir.path().join(format!("opset{opset}"));
        let out = run_op(
            "onnx-split",
            &input,
            &s(&o),
            &["--axis=1", "--num-outputs=2", &format!("--opset={opset}")],
        );
        if ok {
            assert_eq!(out.code, 0, "opset {opset}: {}", out.stderr);
            let first = npy::read(&o.join("output_0.npy")).unwrap();
            assert_eq!(first.shape(), &[2, 4], "opset {opset}");
        } else {
            assert_eq!(out.code, 2, "opset {opset}");
            assert_eq!(
                out.stderr.trim(),
                format!("error: --opset must be an ONNX opset from 1 to 27, got {opset}")
            );
        }
    }
    let help = crate::wgpu_split(&["run", "--help"]);
    assert!(
        help.stdout.contains("13-17 Split-13"),
        "run --help names the Split version of each opset: {}",
        help.stdout
    );
}

/// The command raises a window under one element to one element, as it always has (the
/// library refuses such a window): f32 in windows of 1 byte splits element by element.
#[test]
fn a_window_under_one_element_is_raised_to_one() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<f32> = (1..=8).map(|i| i as f32).collect();
    let input = save(
        dir.path(),
        "x.npy",
        &HostTensor::from_slice(&[2, 4], &data).unwrap(),
    );
    let o = dir.path().join("o");
    let out = run_op(
        "split",
        &input,
        &s(&o),
        &["--axis=1", "--num-splits=2", "--window=1", "--json"],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("\"window_bytes\":4"), "{}", out.stdout);
    let second = npy::read(&o.join("output_1.npy")).unwrap();
    assert_eq!(second.to_vec::<f32>().unwrap(), vec![3.0, 4.0, 7.0, 8.0]);
}

fn transposed_outputs_are_the_reference_views(backend: &str) {
    // f16 [2, 3, 4, 16] split on the last axis into 2, each output written as
    // np.transpose(output, (0, 2, 1, 3)): [2, 4, 3, 8].
    let dir = tempfile::tempdir().unwrap();
    let shape = [2, 3, 4, 16];
    let bytes: Vec<u8> = (0..384 * 2).map(|i| (i * 37 + 5) as u8).collect();
    let input = HostTensor::new(DType::F16, shape.to_vec(), bytes).unwrap();
    let in_path = save(dir.path(), "heads.npy", &input);
    let plan = ops::split(&shape, &IntTensor::scalar(-1), 2).unwrap();
    let view = wgpu_split::PartView::within(&[2, 3, 4, 8], &[2, 4, 3, 8], &[0, 2, 1, 3], &[0; 4]);
    let views = [view.clone().unwrap(), view.unwrap()];
    let mut want = vec![vec![0u8; 192 * 2]; 2];
    reference::split_into_views(&input, &plan, &views, &mut want).unwrap();
    for backend in [format!("--backend={backend}"), "--backend=cpu".into()] {
        let out_dir = dir.path().join(&backend[10..]);
        let args = [
            "--axis=-1",
            "--num-splits=2",
            "--transpose=0,2,1,3",
            &backend,
            "--json",
        ];
        let out = run_op("split", &in_path, &s(&out_dir), &args);
        assert_eq!(out.code, 0, "{backend}: {}", out.stderr);
        let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(
            report["outputs"][1]["shape"],
            serde_json::json!([2, 4, 3, 8])
        );
        let verified = report["verified"].as_bool();
        assert_eq!(verified, (!backend.ends_with("cpu")).then_some(true));
        for (i, w) in want.iter().enumerate() {
            let got = npy::read(&out_dir.join(format!("output_{i}.npy"))).unwrap();
            assert_eq!(got.shape(), &[2, 4, 3, 8]);
            assert_eq!(got.bytes(), w.as_slice(), "{backend} output {i}");
        }
    }
    // Not a permutation of the outputs' axes; not an option of the concat.
    let refused: [(&str, &[&str], &str); 2] = [
        (
            "split",
            &["--axis=0", "--num-splits=1", "--transpose=0,1,1,3"],
            "is not a permutation of the outputs' 4 axes",
        ),
        (
            "concat",
            &["--axis=0", "--transpose=0,1,2,3"],
            "--transpose does not apply to --op concat",
        ),
    ];
    for (op, args, rule) in refused {
        let out = run_op(op, &in_path, &s(dir.path()), args);
        assert_eq!(out.code, 2, "{op}: {}", out.stderr);
        assert!(out.stderr.contains(rule), "{}", out.stderr);
    }
}

per_backend_command!(
    transposed_outputs_are_the_reference_views,
    every_dtype_round_trips_through_run,
    fortran_order_and_big_endian_inputs,
    strings_split_to_sequence,
);
