//! `wgpu-split bench`: the standard suite with a progress bar, a table and optional JSON; with
//! `--memory`, the traced memory figures of each case beside the copy kernel's.

use super::args::{self, BenchArgs};
use super::exit::{CliError, CliResult};
use super::pipelines::Gpu;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::process::ExitCode;
use wgpu_split::bench::{
    gbps, median, memory_report, rows_suite, standard_suite, Bencher, Case, CaseResult, CopyKind,
    MemoryReport, RowsCase, RowsResult, Time, WARPS,
};
use wgpu_split::trace::analysis::MemoryFigures;
use wgpu_split::{GatherMode, RouteChoice, SplitOptions};

/// Runs the suite and prints (and optionally writes) the results.
pub fn run(a: &BenchArgs) -> CliResult {
    let route: RouteChoice = a.route.parse()?;
    // The suite takes minutes: a report path that cannot be written fails now, not after it.
    if let Some(path) = &a.json {
        check_writable("--json", path)?;
    }
    if let Some(path) = &a.plot {
        check_writable("--plot", path)?;
    }
    let choice = args::device(a.backend.as_deref(), a.adapter.as_deref())?;
    let gpu = Gpu::open(choice)?.map(|gpu| {
        gpu.with_options(SplitOptions {
            route,
            gather_mode: a.gather_mode,
            max_steps_per_lane: a.max_steps_per_lane,
            ..Default::default()
        })
    });
    // `options()` fills in the gather's tuning; the fallbacks are never taken.
    let options = gpu.options();
    let gather_mode = options.gather_mode.unwrap_or(GatherMode::Gpu);
    let max_steps = options.max_steps_per_lane.unwrap_or(1);
    let info = gpu.device().adapter_info();
    let bencher = Bencher::new(&gpu, if a.quick { 5 } else { 15 })?.with_batch(a.batch.into());
    let (suite, rows_suite) = chosen_cases(&a.cases)?;
    let bar = ProgressBar::new(suite.len() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut results = Vec::new();
    for case in &suite {
        bar.set_message(case.name);
        let result = bencher.run_case(case)?;
        let memory = if a.memory {
            Some(memory_report(&gpu, case)?)
        } else {
            None
        };
        results.push((result, memory));
        bar.inc(1);
    }
    // A case of rows placed by indices binds its data whole: one past this device's binding
    // is reported as such.
    let (mut rows_results, mut rows_past) = (Vec::new(), Vec::new());
    for case in &rows_suite {
        bar.set_message(case.name);
        match bencher.run_rows_case(case) {
            Err(wgpu_split::SplitError::TooLarge(why)) => rows_past.push((case.name, why)),
            result => rows_results.push(result?),
        }
    }
    bar.finish_and_clear();
    // Each case times empty round trips in turn with its split; the adapter's figure is the
    // median over the cases.
    let roundtrip_ms = median(
        results
            .iter()
            .map(|(r, _)| r.roundtrip_ms)
            .collect::<Vec<_>>(),
    );

    say!(
        "adapter: {} ({:?}); route: {}; gather: {:?}, max steps per lane {}; splits per \
         submission: {}; empty submit + wait: {:.3} ms (median over the cases)",
        info.name,
        info.backend,
        a.route,
        gather_mode,
        max_steps,
        a.batch,
        roundtrip_ms
    );
    say!("{}", clock_line(bencher.device_time()));
    print_rates(&results);
    print_rows(&rows_results);
    for r in &rows_results {
        say!(
            "  {:<18} host: {:.1} us the prepared encode, {:.1} us prepared and encoded again",
            r.name,
            r.prepared_host_ms * 1e3,
            r.encode_host_ms * 1e3
        );
    }
    for (name, why) in &rows_past {
        say!("  {name:<18} not run on this device: {why}");
    }
    say!();
    say!("programs (each gather dispatch's entry point, lane mapping and channels):");
    for (r, _) in &results {
        let mut programs = r.programs.clone();
        programs.dedup();
        let shown = match programs.is_empty() {
            true => "- (buffer copies)".to_string(),
            false => programs.join(", "),
        };
        say!("  {:<16} {}", r.case.name, shown);
    }
    for (r, _) in &results {
        if let Some(ms) = r.moved_host_ms {
            say!(
                "{}: the prepared split recorded at a new position (set_views, encode): {:.1} us on the host",
                r.case.name,
                ms * 1e3
            );
        }
    }
    if a.memory {
        print_memory(&results);
    }
    if let Some(path) = &a.plot {
        let title = format!(
            "wgpu-split bench: {} ({:?}), route {}",
            info.name, info.backend, a.route
        );
        let rates: Vec<&CaseResult> = results.iter().map(|(r, _)| r).collect();
        super::plot::rates(path, &title, &rates)?;
    }
    if let Some(path) = &a.json {
        let cases: Vec<Value> = results.iter().map(|(r, m)| case_json(r, m)).collect();
        let report = json!({
            "adapter": {"name": info.name, "backend": format!("{:?}", info.backend).to_lowercase()},
            "route": a.route,
            "gather_mode": gather_mode.name(),
            "max_steps_per_lane": max_steps,
            "batch": a.batch,
            "clock": clock_name(bencher.device_time()),
            "roundtrip_ms": roundtrip_ms,
            "cases": cases,
            "rows_cases": rows_results.iter().map(rows_json).collect::<Vec<_>>(),
        });
        let text =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::usage(e.to_string()))?;
        std::fs::write(path, text)
            .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Fails unless `path` can be written: an existing file is opened for writing (and left as it
/// is), a new one is created and removed again.
fn check_writable(option: &str, path: &std::path::Path) -> CliResult<()> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| CliError::usage(format!("{option} {}: {e}", path.display())))?;
    if !existed {
        // The probe leaves nothing behind (should removing it fail, the report overwrites
        // the empty file at the end).
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}

/// The standard suite and the suite of rows placed by indices, or the named cases of them;
/// an unknown name is a usage error.
fn chosen_cases(names: &[String]) -> CliResult<(Vec<Case>, Vec<RowsCase>)> {
    let (mut suite, mut rows) = (standard_suite(), rows_suite());
    if names.is_empty() {
        return Ok((suite, rows));
    }
    let known = |n: &str| suite.iter().any(|c| c.name == n) || rows.iter().any(|c| c.name == n);
    if let Some(unknown) = names.iter().find(|n| !known(n)) {
        let all: Vec<&str> = suite
            .iter()
            .map(|c| c.name)
            .chain(rows.iter().map(|c| c.name))
            .collect();
        return Err(CliError::usage(format!(
            "unknown case {unknown:?}; cases are {}",
            all.join(", ")
        )));
    }
    suite.retain(|c| names.iter().any(|n| n == c.name));
    rows.retain(|c| names.iter().any(|n| n == c.name));
    Ok((suite, rows))
}

/// The cases of rows placed by indices: each one's rate beside the fastest copy of its bytes.
fn print_rows(results: &[RowsResult]) {
    if results.is_empty() {
        return;
    }
    say!();
    say!("rows placed by indices (one dispatch each; the copies move the same bytes):");
    say!(
        "  {:<18} {:>9} {:>10} {:>10} {:>9} {:>10}",
        "case",
        "MB",
        "GB/s",
        "copy GB/s",
        "vs copy",
        "vs kernel"
    );
    for r in results {
        let best = r
            .copies
            .iter()
            .map(|t| t.ms())
            .fold(f64::INFINITY, f64::min);
        say!(
            "  {:<18} {:>9.2} {:>10.1} {:>10.1} {:>9.2} {:>10.2}",
            r.name,
            r.bytes as f64 / 1e6,
            gbps(r.bytes as usize, r.ours.ms()),
            gbps(r.bytes as usize, best),
            r.over_best_copy(),
            r.over_copy_kernel()
        );
    }
}

/// A case of rows placed by indices in the JSON report.
fn rows_json(r: &RowsResult) -> Value {
    json!({
        "name": r.name,
        "bytes": r.bytes,
        "ms": r.ours.ms(),
        "copies_ms": r.copies.iter().map(|t| t.ms()).collect::<Vec<_>>(),
        "over_best_copy": r.over_best_copy(),
        "over_copy_kernel": r.over_copy_kernel(),
        "prepared_host_ms": r.prepared_host_ms,
        "encode_host_ms": r.encode_host_ms,
    })
}

/// What the rates and ratios are taken from, in the report.
fn clock_name(device_time: bool) -> &'static str {
    match device_time {
        true => "device",
        false => "wall",
    }
}

/// The table's line on its clock.
fn clock_line(device_time: bool) -> &'static str {
    match device_time {
        true => "time: the device's own (timestamps around each figure's commands); wall times in --json",
        false => "time: wall (recording, submit and wait): this adapter has no timestamps inside encoders",
    }
}

fn print_rates(results: &[(CaseResult, Option<MemoryReport>)]) {
    say!(
        "{:<16} {:<17} {:>5} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>14} {:>6} {:>6} {:>8} {:>7} {:>9}",
        "case",
        "op",
        "dtype",
        "outputs",
        "MiB",
        "split_ms",
        "host_ms",
        "split",
        "prepared",
        "b2b",
        "kernel",
        "kernel4",
        "best copy",
        "split/",
        "prep/",
        "unfused",
        "cpu",
        "disp/buf"
    );
    for (r, _) in results {
        let rate = |t: Time| gbps(r.bytes, t.ms());
        let (best, _) = r.best_copy();
        say!(
            "{:<16} {:<17} {:>5} {:>7} {:>8.1} {:>8.3} {:>8.3} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>14} {:>6.2} {:>6.2} {:>8} {:>7.2} {:>9}{}",
            r.case.name,
            r.case.op_name(),
            r.case.dtype.name(),
            r.outputs,
            r.bytes as f64 / (1 << 20) as f64,
            r.split.ms(),
            r.host_ms,
            rate(r.split),
            rate(r.prepared),
            rate(r.copy(CopyKind::BufferCopy)),
            rate(r.copy(CopyKind::Kernel)),
            rate(r.copy(CopyKind::Kernel4)),
            best.name(),
            r.over_best_copy(r.split),
            r.over_best_copy(r.prepared),
            r.unfused.map_or("-".into(), |t| format!("{:.2}", rate(t))),
            gbps(r.bytes, r.cpu_reference_ms),
            format!("{}/{}", r.recorded.dispatches, r.recorded.buffer_copies),
            if r.zero_copy { " zero-copy" } else { "" }
        );
    }
    say!("(rates in GB/s = input bytes / median time; split = encode + submit + wait;");
    say!(" prepared = the same split prepared once, then encode + submit + wait; the device's copies");
    say!(" of the same bytes: b2b = copy_buffer_to_buffer, kernel = the copy kernel at one vec4 a");
    say!(
        " lane, kernel4 at four; best copy = the fastest of the three, and split/ and prep/ = the"
    );
    say!(" split's and the prepared split's rate over it; unfused = an attention case's split,");
    say!(" transpose kernels and copies into the caches, the way without views; cpu = the CPU");
    say!(" reference; disp/buf = gather dispatches / buffer copies the split recorded; each case");
    say!(
        " times all of these in turn in one loop; with --batch N, each submission holds N of each"
    );
    say!(" and every time is per split)");
}

fn print_memory(results: &[(CaseResult, Option<MemoryReport>)]) {
    say!();
    say!("memory, traced: the gather as a GPU runs it, whatever the adapter");
    say!(
        "{:<11} {:>4} {:>9} {:>10} {:>10} {:>10} {:>11} {:>10}",
        "case",
        "warp",
        "load eff",
        "store eff",
        "load l/512",
        "once l/512",
        "store l/512",
        "table B/512"
    );
    let row = |name: &str, f: &MemoryFigures| {
        say!(
            "{:<11} {:>4} {:>9.3} {:>10.3} {:>10.2} {:>10.2} {:>11.2} {:>10.2}",
            name,
            f.warp,
            f.load_efficiency,
            f.store_efficiency,
            f.load_lines_per_512,
            f.load_lines_once_per_512,
            f.store_lines_per_512,
            f.table_bytes_per_512
        );
    };
    for (r, m) in results {
        let Some(m) = m else { continue };
        for f in &m.split {
            row(r.case.name, f);
        }
    }
    if let Some((_, Some(m))) = results.first() {
        for f in &m.copy_kernel {
            row("copy kernel", f);
        }
    }
    say!("(eff = useful bytes / (32-byte sectors touched x 32) per warp instruction; l/512 = 128-byte");
    say!(
        " lines touched per 512 bytes stored, summed over warp instructions; once l/512 = the load"
    );
    say!(" lines counted once per warp; table B/512 = table bytes each warp reads per 512 bytes");
    say!(" stored)");
}

fn figures_json(f: &MemoryFigures) -> Value {
    json!({
        "load_efficiency": f.load_efficiency,
        "store_efficiency": f.store_efficiency,
        "load_lines_per_512": f.load_lines_per_512,
        "load_lines_once_per_512": f.load_lines_once_per_512,
        "store_lines_per_512": f.store_lines_per_512,
        "table_bytes_per_512": f.table_bytes_per_512,
    })
}

/// One figure: its wall and device times, and its rate from the time ratios use.
fn time_json(r: &CaseResult, t: Time) -> Value {
    json!({"wall_ms": t.wall_ms, "device_ms": t.device_ms, "gbps": gbps(r.bytes, t.ms())})
}

fn case_json(r: &CaseResult, memory: &Option<MemoryReport>) -> Value {
    let mut copies = serde_json::Map::new();
    for kind in CopyKind::ALL {
        copies.insert(kind.name().into(), time_json(r, r.copy(kind)));
    }
    let (best, _) = r.best_copy();
    let mut v = json!({
        "name": r.case.name,
        "op": r.case.op_name(),
        "dtype": r.case.dtype.name(),
        "shape": r.case.shape,
        "axis": r.case.op.axis(),
        "outputs": r.outputs,
        "bytes": r.bytes,
        "split": time_json(r, r.split),
        "prepared": time_json(r, r.prepared),
        "roundtrip_ms": r.roundtrip_ms,
        "host_ms": r.host_ms,
        "copies": copies,
        "best_copy": best.name(),
        "split_over_best_copy": r.over_best_copy(r.split),
        "prepared_over_best_copy": r.over_best_copy(r.prepared),
        "cpu_reference_gbps": gbps(r.bytes, r.cpu_reference_ms),
        "unfused": r.unfused.map(|t| time_json(r, t)),
        "unfused_over_best_copy": r.unfused.map(|t| r.over_best_copy(t)),
        "moved_host_ms": r.moved_host_ms,
        "dispatches": r.recorded.dispatches,
        "programs": r.programs,
        "buffer_copies": r.recorded.buffer_copies,
        "zero_copy": r.zero_copy,
    });
    if let Some(m) = memory {
        let warps = |fs: &[MemoryFigures; 2]| {
            let mut o = serde_json::Map::new();
            for (w, f) in WARPS.iter().zip(fs) {
                o.insert(format!("warp{w}"), figures_json(f));
            }
            Value::Object(o)
        };
        v["memory"] = warps(&m.split);
        v["copy_kernel_memory"] = warps(&m.copy_kernel);
    }
    v
}
