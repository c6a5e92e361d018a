//! `wgpu-split bench`: the report's fields, on each adapter.

use crate::{s, wgpu_split, Out};

fn bench_writes_the_report_fields(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let backend = &format!("--backend={backend}");
    let (out, v) = report(
        &[
            "bench",
            backend,
            "--quick",
            "--cases=spec_split",
            "--gather-mode=gpu",
        ],
        &json,
    );
    assert!(out.stdout.contains("spec_split"), "{}", out.stdout);
    assert_eq!(v["gather_mode"], "gpu");
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
    let commands: Vec<u64> = ["dispatches", "buffer_copies"]
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
    assert!(case["unfused_gbps"].is_null(), "{}", case["unfused_gbps"]);

    // An attention case: Q and K, V into caches at a position through views, in one
    // dispatch, checked, and timed against the unfused way.
    let (_, v) = report(&["bench", backend, "--quick", "--cases=decode_step"], &json);
    let case = &v["cases"][0];
    assert_eq!(
        (case["dispatches"].as_u64(), case["outputs"].as_u64()),
        (Some(1), Some(3))
    );
    let unfused = case["unfused_gbps"].as_f64().unwrap_or(-1.0);
    assert!(
        unfused.is_finite() && unfused > 0.0,
        "{}",
        case["unfused_gbps"]
    );

    // The gather alone, with the traced memory figures beside the copy kernel's.
    let (out, v) = report(
        &[
            "bench",
            backend,
            "--quick",
            "--cases=tiny_runs",
            "--route=gather",
            "--memory",
        ],
        &json,
    );
    assert!(out.stdout.contains("copy kernel"), "{}", out.stdout);
    assert_eq!(v["route"], "gather");
    // The adapter's own mode: cpu on a CPU adapter, gpu on a GPU.
    assert!(
        ["cpu", "gpu"].contains(&v["gather_mode"].as_str().unwrap_or("")),
        "{}",
        v["gather_mode"]
    );
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
            "load_lines_once_per_512",
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
    let dir_as_json = format!("--json={}", s(dir.path()));
    for (arg, expect) in [
        ("--plot=/nonexistent/dir/x", "--plot /nonexistent/dir/x: "),
        ("--json=/nonexistent/dir/x", "--json /nonexistent/dir/x: "),
        (dir_as_json.as_str(), "--json "),
    ] {
        let out = refused(
            &["bench", backend, "--quick", "--cases=spec_split", arg],
            expect,
        );
        assert!(
            !out.stdout.contains("adapter:"),
            "the suite ran: {}",
            out.stdout
        );
    }
    refused(
        &["bench", backend, "--route=fastest"],
        "auto, gather, copies",
    );
    refused(&["bench", backend, "--cases=nope"], "unknown case \"nope\"");
    refused(
        &["bench", backend, "--gather-mode=fastest"],
        "invalid value 'fastest' for '--gather-mode",
    );
}

/// Runs `args` with `--json=JSON`, which must succeed; its output and the report it wrote.
fn report(args: &[&str], json: &std::path::Path) -> (Out, serde_json::Value) {
    let flag = format!("--json={}", s(json));
    let out = wgpu_split(&[args, &[flag.as_str()]].concat());
    assert_eq!(out.code, 0, "{args:?}: {}{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(json).unwrap();
    (
        out,
        serde_json::from_str(&text).expect("the report is JSON"),
    )
}

/// Runs `args`, which must exit 2 with `expect` in the error.
fn refused(args: &[&str], expect: &str) -> Out {
    let out = wgpu_split(args);
    assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    assert!(out.stderr.contains(expect), "{args:?}: {}", out.stderr);
    out
}

per_backend_command!(bench_writes_the_report_fields);
