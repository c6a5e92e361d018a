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
            "--max-steps-per-lane=1",
        ],
        &json,
    );
    assert!(out.stdout.contains("spec_split"), "{}", out.stdout);
    assert!(
        out.stdout.contains("max steps per lane 1;"),
        "{}",
        out.stdout
    );
    assert_eq!(v["gather_mode"], "gpu");
    assert_eq!(v["max_steps_per_lane"], 1);
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
    // Every figure with its wall time and, where the adapter has timestamps (lavapipe,
    // llvmpipe GL and the GPUs measured so far do), its device time, no longer than the
    // wall's; its rate and the ratios from the device time, or else from the wall time.
    let timestamps = adapter_has_timestamps(&v["adapter"]);
    let (clock, time) = match timestamps {
        true => ("device", "device_ms"),
        false => ("wall", "wall_ms"),
    };
    assert_eq!(v["clock"], clock);
    let line = match timestamps {
        true => "time: the device's own",
        false => "time: wall (recording, submit and wait): this adapter has no timestamps",
    };
    assert!(out.stdout.contains(line), "{}", out.stdout);
    let copies = ["copy_buffer_to_buffer", "copy_kernel", "copy_kernel_x4"];
    let mut figures = vec![&case["split"], &case["prepared"]];
    figures.extend(copies.iter().map(|c| &case["copies"][c]));
    for (k, t) in figures.into_iter().enumerate() {
        let [wall, rate] = ["wall_ms", "gbps"].map(|f| t[f].as_f64());
        let (Some(wall), Some(rate)) = (wall, rate) else {
            panic!("figure {k}: {t}");
        };
        match t["device_ms"].as_f64() {
            Some(device) => assert!(device > 0.0 && device <= wall, "figure {k}: {t}"),
            None => assert!(!timestamps && t["device_ms"].is_null(), "figure {k}: {t}"),
        }
        let want = (6 * 12 * 10 * 24 * 4) as f64 / (t[time].as_f64().unwrap() * 1e6);
        assert!((rate - want).abs() <= 1e-9 * want, "figure {k}: {t}");
    }
    for field in ["roundtrip_ms", "host_ms", "cpu_reference_gbps"] {
        let x = case[field].as_f64().unwrap_or(-1.0);
        assert!(x.is_finite() && x > 0.0, "{field}: {}", case[field]);
    }
    // The fastest copy is named, and the ratios are taken against it.
    let best = case["best_copy"].as_str().unwrap_or("");
    let fastest = copies
        .iter()
        .min_by(|a, b| {
            let ms = |c: &&&str| case["copies"][**c][time].as_f64().unwrap();
            ms(a).total_cmp(&ms(b))
        })
        .unwrap();
    assert_eq!(best, *fastest, "{}", case["copies"]);
    assert!(out.stdout.contains(best), "{}", out.stdout);
    for (ratio, figure) in [
        ("split_over_best_copy", "split"),
        ("prepared_over_best_copy", "prepared"),
    ] {
        let want =
            case["copies"][best][time].as_f64().unwrap() / case[figure][time].as_f64().unwrap();
        let got = case[ratio].as_f64().unwrap_or(-1.0);
        assert!(
            (got - want).abs() <= 1e-9 * want,
            "{ratio}: {got}, want {want}"
        );
    }
    assert!(case["unfused"].is_null(), "{}", case["unfused"]);

    // An attention case: Q and K, V into caches at a position through views, in one
    // dispatch, checked, and timed against the unfused way.
    let (_, v) = report(&["bench", backend, "--quick", "--cases=decode_step"], &json);
    let case = &v["cases"][0];
    assert_eq!(
        (case["dispatches"].as_u64(), case["outputs"].as_u64()),
        (Some(1), Some(3))
    );
    let unfused = &case["unfused"];
    let wall = unfused["wall_ms"].as_f64().unwrap_or(-1.0);
    let device = unfused["device_ms"].as_f64().unwrap_or(match timestamps {
        true => -1.0,
        false => wall,
    });
    assert!(device > 0.0 && device <= wall, "{unfused}");
    assert!(case["unfused_over_best_copy"].as_f64().unwrap_or(-1.0) > 0.0);

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
    // The one dispatch's program, by the adapter's mode: the channels of 4-byte parts, in
    // runs on a CPU adapter, in lanes on a GPU.
    let program = match v["gather_mode"].as_str() {
        Some("cpu") => "main_rows runs channels w4",
        _ => "main_rows lanes channels w4",
    };
    assert_eq!(
        case["programs"][0].as_str(),
        Some(program),
        "{}",
        case["programs"]
    );
    assert!(out.stdout.contains(program), "{}", out.stdout);
    for warp in ["warp32", "warp64"] {
        let split = &case["memory"][warp];
        let copy = &case["copy_kernel_memory"][warp];
        for field in ["load_efficiency", "store_efficiency"] {
            let x = split[field].as_f64().unwrap();
            assert!(x > 0.0 && x <= 1.0, "{warp} {field}: {x}");
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
    // The chart: an SVG with every case, the split and the three copies.
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
        "copy kernel, 4 vec4 a lane",
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
    for steps in ["0", "469"] {
        refused(
            &["bench", backend, &format!("--max-steps-per-lane={steps}")],
            &format!("{steps} is not in 1..=468"),
        );
    }
}

/// Whether `info --json` lists `adapter` (a bench report's: name and backend) with timestamps
/// inside encoders.
fn adapter_has_timestamps(adapter: &serde_json::Value) -> bool {
    let out = wgpu_split(&["info", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("info --json is JSON");
    let listed = v["adapters"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["name"] == adapter["name"] && a["backend"] == adapter["backend"]);
    let listed = listed.unwrap_or_else(|| panic!("info does not list {adapter}: {v}"));
    listed["timestamps"]
        .as_bool()
        .expect("info says whether it has timestamps")
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
