//! The built `wgpu-split` binary: the demo, round trips through `run`, and every error path.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use wgpu_split::{npy, ops, reference, DType, HostTensor, IntTensor};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn wgpu_split(args: &[&str]) -> Out {
    wgpu_split_with(args, &[])
}

/// [`wgpu_split`] with these environment variables set.
fn wgpu_split_with(args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_wgpu-split"))
        .args(args)
        .envs(env.iter().copied())
        .env_remove("WGPU_SPLIT_BACKEND")
        .output()
        .expect("the binary runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into(),
        stderr: String::from_utf8_lossy(&out.stderr).into(),
    }
}

fn save(dir: &Path, name: &str, t: &HostTensor) -> String {
    let p = dir.join(name);
    npy::write(&p, t).unwrap();
    p.display().to_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn demo_runs_every_spec_example_and_matches(backend: &str) {
    let out = wgpu_split(&[&format!("--backend={backend}")]);
    assert_eq!(out.code, 0, "{backend}: {}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("all outputs equal the CPU reference"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("[6, 4, 10, 24]") && out.stdout.contains("keepdims 0"));
    assert!(!out.stdout.contains(" NO"));
}

#[test]
fn adapters_are_picked_by_index_name_and_wgpu_variables() {
    let out = wgpu_split(&["info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let adapters = v["adapters"].as_array().unwrap();
    for (i, a) in adapters.iter().enumerate() {
        assert_eq!(a["index"], i);
    }
    // By index within a backend, by part of a name, and through wgpu's own variables.
    let out = wgpu_split(&["--backend=gl", "--adapter=0"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("(Gl, "), "{}", out.stdout);
    let out = wgpu_split(&["--backend=vulkan", "--adapter=LLVMPIPE"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("(Vulkan, "), "{}", out.stdout);
    let out = wgpu_split_with(&[], &[("WGPU_BACKEND", "gl")]);
    assert!(out.stdout.contains("(Gl, "), "{}", out.stdout);
    let out = wgpu_split_with(
        &[],
        &[("WGPU_BACKEND", "vulkan"), ("WGPU_ADAPTER_NAME", "llvm")],
    );
    assert!(out.stdout.contains("(Vulkan, "), "{}", out.stdout);
    // No such adapter: exit 3, one line naming what was asked for and what there is.
    for args in [&["--adapter=no-such-gpu"][..], &["--adapter=99"]] {
        let out = wgpu_split(args);
        assert_eq!(out.code, 3, "{}", out.stderr);
        assert!(out.stderr.contains("the adapters are"), "{}", out.stderr);
        assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    }
    let out = wgpu_split_with(&[], &[("WGPU_ADAPTER_NAME", "no-such-gpu")]);
    assert_eq!(out.code, 3, "{}", out.stderr);
    assert!(out.stderr.contains("no-such-gpu"), "{}", out.stderr);
}

#[test]
fn info_lists_adapters_and_limits() {
    let out = wgpu_split(&["info", "--json"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let adapters = v["adapters"].as_array().unwrap();
    assert!(!adapters.is_empty());
    assert!(
        adapters[0]["limits"]["max_storage_buffer_binding_size"]
            .as_u64()
            .unwrap()
            > 0
    );
}

fn bench_writes_the_report_fields(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let backend = &format!("--backend={backend}");
    let out = wgpu_split(&[
        "bench",
        backend,
        "--quick",
        "--cases=spec_split",
        &format!("--json={}", s(&json)),
    ]);
    assert_eq!(out.code, 0, "{backend}: {}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("spec_split"), "{}", out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("the report is JSON");
    assert!(v["adapter"]["name"].is_string() && v["adapter"]["backend"].is_string());
    assert!(v["roundtrip_ms"].as_f64().unwrap() > 0.0);
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1);
    let case = &cases[0];
    assert_eq!(case["name"], "spec_split");
    assert_eq!(case["op"], "split");
    assert_eq!(case["dtype"], "f32");
    assert_eq!(case["shape"], serde_json::json!([6, 12, 10, 24]));
    assert_eq!(case["axis"], 1);
    assert_eq!(case["outputs"], 3);
    assert_eq!(case["bytes"], 6 * 12 * 10 * 24 * 4);
    assert_eq!(case["zero_copy"], false);
    let commands: Vec<u64> = ["dispatches", "buffer_copies", "texture_copies"]
        .iter()
        .map(|field| case[field].as_u64().unwrap_or_else(|| panic!("{field}")))
        .collect();
    assert!(commands.iter().sum::<u64>() >= 1, "{commands:?}");
    for field in [
        "split_ms",
        "prepared_ms",
        "roundtrip_ms",
        "split_gbps",
        "prepared_gbps",
        "copy_gbps",
        "shader_copy_gbps",
        "cpu_reference_gbps",
    ] {
        let x = case[field].as_f64().unwrap_or(-1.0);
        assert!(x.is_finite() && x > 0.0, "{field}: {}", case[field]);
    }

    // The gather alone, with the traced memory figures beside the copy kernel's.
    let out = wgpu_split(&[
        "bench",
        backend,
        "--quick",
        "--cases=tiny_runs",
        "--route=gather",
        "--memory",
        &format!("--json={}", s(&json)),
    ]);
    assert_eq!(out.code, 0, "{backend}: {}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("copy kernel"), "{}", out.stdout);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("the report is JSON");
    assert_eq!(v["route"], "gather");
    let case = &v["cases"][0];
    assert_eq!(
        (case["dispatches"].as_u64(), case["buffer_copies"].as_u64()),
        (Some(1), Some(0))
    );
    for warp in ["warp32", "warp64"] {
        let split = &case["memory"][warp];
        let copy = &case["copy_kernel_memory"][warp];
        for field in ["load_efficiency", "store_efficiency"] {
            let x = split[field].as_f64().unwrap();
            assert!(x > 0.5 && x <= 1.0, "{warp} {field}: {x}");
            assert_eq!(copy[field].as_f64(), Some(1.0), "{warp} {field}");
        }
        for field in [
            "load_lines_per_512",
            "store_lines_per_512",
            "table_bytes_per_512",
        ] {
            assert!(split[field].as_f64().unwrap() >= 0.0, "{warp} {field}");
        }
    }
    // The chart: an SVG with every case and the three rates.
    let svg = dir.path().join("bench.svg");
    let out = wgpu_split(&[
        "bench",
        backend,
        "--quick",
        "--cases=spec_split,tiny_runs",
        &format!("--plot={}", s(&svg)),
    ]);
    assert_eq!(out.code, 0, "{backend}: {}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..text.len().min(80)]);
    for label in [
        "spec_split",
        "tiny_runs",
        "split",
        "copy_buffer_to_buffer",
        "vec4 copy kernel",
    ] {
        assert!(text.contains(label), "the chart lacks {label}");
    }
    // Report paths that cannot be written fail before the suite runs: no results printed.
    for option in ["--plot", "--json"] {
        let arg = format!("{option}=/nonexistent/dir/x");
        let out = wgpu_split(&["bench", backend, "--quick", "--cases=spec_split", &arg]);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr
                .contains(&format!("{option} /nonexistent/dir/x: ")),
            "{}",
            out.stderr
        );
        assert!(
            !out.stdout.contains("adapter:"),
            "the suite ran: {}",
            out.stdout
        );
    }
    let dir_as_json = format!("--json={}", s(dir.path()));
    let out = wgpu_split(&[
        "bench",
        backend,
        "--quick",
        "--cases=spec_split",
        &dir_as_json,
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        !out.stdout.contains("adapter:"),
        "the suite ran: {}",
        out.stdout
    );

    let out = wgpu_split(&["bench", backend, "--route=fastest"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("auto, gather, copies"),
        "{}",
        out.stderr
    );

    let out = wgpu_split(&["bench", backend, "--cases=nope"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("unknown case \"nope\""),
        "{}",
        out.stderr
    );
}

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
        let want = reference::split_tensor(&input, &plan).unwrap();
        for backend in [gpu_flag.as_str(), "--backend=cpu"] {
            let out_dir = dir.path().join(format!(
                "out_{}_{}",
                dtype.name().replace('<', ""),
                &backend[10..]
            ));
            let out = wgpu_split(&[
                "run",
                "--op",
                "variadic-split",
                "--input",
                &in_path,
                "--out",
                &s(&out_dir),
                "--axis=1",
                "--lengths=2,0,-1",
                backend,
                "--json",
            ]);
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
    let out = wgpu_split(&[
        "run",
        "--op",
        "split",
        "--input",
        &s(&path),
        "--out",
        &s(&out_dir),
        "--axis=-1",
        "--num-splits=2",
        &flag,
    ]);
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
    let out = wgpu_split(&[
        "run",
        "--op",
        "split-to-sequence",
        "--input",
        &s(&path),
        "--out",
        &s(&out_dir),
        "--axis=0",
        "--split=2",
        &flag,
    ]);
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
    let out = wgpu_split(&[
        "run",
        "--op",
        "split-to-sequence",
        "--input",
        &input,
        "--out",
        &s(&out_dir),
    ]);
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
    let out = wgpu_split(&[
        "run",
        "--op",
        "onnx-split",
        "--input",
        &input,
        "--out",
        &s(&o),
        "--axis=1",
        "--num-outputs=3",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let last = npy::read(&o.join("output_2.npy")).unwrap();
    assert_eq!(last.to_vec::<f32>().unwrap(), vec![7.0, 8.0, 15.0, 16.0]);
    let o = dir.path().join("o13");
    let out = wgpu_split(&[
        "run",
        "--op",
        "onnx-split",
        "--input",
        &input,
        "--out",
        &s(&o),
        "--axis=1",
        "--num-outputs=3",
        "--opset=13",
    ]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.trim(),
        "error: number of outputs 3 does not divide axis 1 of length 8"
    );
    let out = wgpu_split(&[
        "run",
        "--op",
        "onnx-split",
        "--input",
        &input,
        "--out",
        &s(&o),
        "--split=[2,6]",
        "--num-outputs=2",
    ]);
    assert_eq!(out.code, 2);
    assert!(!o.exists());
}

/// Every bad argument or input: exit 2, one `error:` line, nothing written.
#[test]
fn error_paths_exit_2_with_one_line_and_leave_dir_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let x = save(d, "x.npy", &HostTensor::from_slice(&[4, 6], &data).unwrap());
    let scalar = save(
        d,
        "scalar.npy",
        &HostTensor::from_slice(&[], &[1.0f32]).unwrap(),
    );
    let float_axis = save(
        d,
        "fa.npy",
        &HostTensor::from_slice(&[], &[1.0f32]).unwrap(),
    );
    let axis_2d = save(
        d,
        "a2.npy",
        &HostTensor::from_slice(&[1, 1], &[1i64]).unwrap(),
    );
    let lengths_2d = save(
        d,
        "l2.npy",
        &HostTensor::from_slice(&[1, 2], &[3i32, 3]).unwrap(),
    );
    let split_2d = save(
        d,
        "s2.npy",
        &HostTensor::from_slice(&[1, 2], &[3i32, 3]).unwrap(),
    );
    let good = std::fs::read(&x).unwrap();
    let truncated = d.join("t.npy");
    std::fs::write(&truncated, &good[..good.len() - 5]).unwrap();
    let not_npy = d.join("n.npy");
    std::fs::write(&not_npy, b"this is not a numpy file at all").unwrap();
    let (t, n) = (s(&truncated), s(&not_npy));

    // An existing output directory with a file in it must come out unchanged.
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("keep.txt"), b"untouched").unwrap();
    let o = s(&out_dir);

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--op", "split", "--input", &x, "--axis=2", "--num-splits=2"],
            "axis 2 is out of range",
        ),
        (
            vec!["--op", "split", "--input", &x, "--axis=1", "--num-splits=4"],
            "num_splits 4 does not divide axis 1 of length 6",
        ),
        (
            vec!["--op", "split", "--input", &x, "--axis=1", "--num-splits=0"],
            "num_splits 0 must be at least 1",
        ),
        (
            vec!["--op", "split", "--input", &x, "--num-splits=2"],
            "needs --axis",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                &x,
                "--axis",
                &float_axis,
                "--num-splits=2",
            ],
            "axis must have an integer dtype",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis",
                &axis_2d,
                "--lengths=4",
            ],
            "axis must be a scalar or a tensor of shape [1]",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=0",
                "--lengths=2,1",
            ],
            "split_lengths [2, 1] sum to 3, but axis 0 has length 4",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=0",
                "--lengths=-1,-1",
            ],
            "at most one entry may be -1",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=0",
                "--lengths=-2,6",
            ],
            "is negative",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=1",
                "--lengths",
                &lengths_2d,
            ],
            "split_lengths must be a 1-D tensor",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &x, "--split=0"],
            "split 0 must be positive",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &x, "--split=[1,1]"],
            "split [1, 1] sum to 2",
        ),
        (
            vec![
                "--op",
                "split-to-sequence",
                "--input",
                &x,
                "--split",
                &split_2d,
            ],
            "split must be a scalar or a 1-D tensor",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &x, "--keepdims=2"],
            "--keepdims must be 0 or 1",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &scalar],
            "data is a scalar (rank 0)",
        ),
        (
            vec!["--op", "split", "--input", &t, "--axis=0", "--num-splits=1"],
            "truncated",
        ),
        (
            vec!["--op", "split", "--input", &n, "--axis=0", "--num-splits=1"],
            "not a valid .npy file",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                "missing.npy",
                "--axis=0",
                "--num-splits=1",
            ],
            "missing.npy",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                &x,
                "--axis=0",
                "--num-splits=2",
                "--keepdims=1",
            ],
            "--keepdims does not apply to --op split",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                &x,
                "--axis=0",
                "--num-splits=2",
                "--backend=quantum",
            ],
            "unknown backend",
        ),
        (
            vec!["--op", "nonsense", "--input", &x],
            "invalid value 'nonsense'",
        ),
    ];
    for (args, expect) in cases {
        let mut full = vec!["run", "--out", &o];
        full.extend(args.iter());
        let out = wgpu_split(&full);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let lines: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| !l.contains("XDG_RUNTIME_DIR"))
            .collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
        assert!(lines[0].starts_with("error: "), "{args:?}: {}", lines[0]);
        assert!(
            lines[0].contains(expect),
            "{args:?}: {} lacks {expect:?}",
            lines[0]
        );
        assert!(!out.stderr.contains("panicked"));
        let names: Vec<PathBuf> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(
            names,
            vec![out_dir.join("keep.txt")],
            "{args:?} wrote into DIR"
        );
    }
    // Nothing was left beside DIR either (temporary directories are cleaned up).
    assert!(std::fs::read_dir(d).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".wgpu-split-")));
}

per_backend_command!(
    demo_runs_every_spec_example_and_matches,
    bench_writes_the_report_fields,
    every_dtype_round_trips_through_run,
    fortran_order_and_big_endian_inputs,
    strings_split_to_sequence,
);
