//! `wgpu-split bench`: the standard suite with a progress bar, a table and optional JSON; with
//! `--memory`, the traced memory figures of each case beside the copy kernel's.

use super::args::{self, BenchArgs};
use super::exit::{CliError, CliResult};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Value};
use std::process::ExitCode;
use wgpu_split::bench::{
    gbps, median, memory_report, standard_suite, Bencher, Case, CaseResult, MemoryReport, WARPS,
};
use wgpu_split::trace::analysis::MemoryFigures;
use wgpu_split::{GatherMode, GpuSplitter, RouteChoice, SplitOptions};

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
    let gpu = GpuSplitter::open(choice)?.with_options(SplitOptions {
        route,
        gather_mode: a.gather_mode,
        ..Default::default()
    });
    // `options()` fills in the gather mode; the fallback is never taken.
    let gather_mode = gpu.options().gather_mode.unwrap_or(GatherMode::Gpu);
    let info = gpu.device().adapter_info();
    let bencher = Bencher::new(&gpu, if a.quick { 5 } else { 15 })?.with_batch(a.batch.into());
    let suite = chosen_cases(&a.cases)?;
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
    bar.finish_and_clear();
    // Each case times empty round trips in turn with its split; the adapter's figure is the
    // median over the cases.
    let roundtrip_ms = median(results.iter().map(|(r, _)| r.roundtrip_ms).collect());

    say!(
        "adapter: {} ({:?}); route: {}; gather: {:?}; splits per submission: {}; empty submit + \
         wait: {:.3} ms (median over the cases)",
        info.name,
        info.backend,
        a.route,
        gather_mode,
        a.batch,
        roundtrip_ms
    );
    print_rates(&results);
    for (r, _) in &results {
        if let Some(ms) = r.moved_host_ms {
            say!(
                "{}: the prepared split recorded at a new position (encode_with_views): {:.1} us on the host",
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
            "batch": a.batch,
            "roundtrip_ms": roundtrip_ms,
            "cases": cases,
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

/// The standard suite, or the named cases of it; an unknown name is a usage error.
fn chosen_cases(names: &[String]) -> CliResult<Vec<Case>> {
    let mut suite = standard_suite();
    if names.is_empty() {
        return Ok(suite);
    }
    if let Some(unknown) = names
        .iter()
        .find(|n| !suite.iter().any(|c| c.name == n.as_str()))
    {
        let all: Vec<&str> = suite.iter().map(|c| c.name).collect();
        return Err(CliError::usage(format!(
            "unknown case {unknown:?}; cases are {}",
            all.join(", ")
        )));
    }
    suite.retain(|c| names.iter().any(|n| n == c.name));
    Ok(suite)
}

fn print_rates(results: &[(CaseResult, Option<MemoryReport>)]) {
    say!(
        "{:<11} {:<17} {:>5} {:>8} {:>9} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>13}",
        "case",
        "op",
        "dtype",
        "outputs",
        "MiB",
        "split_ms",
        "x rt",
        "host_ms",
        "split",
        "prepared",
        "copy",
        "shader",
        "cpu",
        "unfused",
        "disp/buf"
    );
    for (r, _) in results {
        say!(
            "{:<11} {:<17} {:>5} {:>8} {:>9.1} {:>8.3} {:>7.2} {:>8.3} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>6.2} {:>8} {:>13}{}",
            r.case.name,
            r.case.op_name(),
            r.case.dtype.name(),
            r.outputs,
            r.bytes as f64 / (1 << 20) as f64,
            r.split_ms,
            r.split_ms / r.roundtrip_ms,
            r.host_ms,
            gbps(r.bytes, r.split_ms),
            gbps(r.bytes, r.prepared_ms),
            gbps(r.bytes, r.copy_ms),
            gbps(r.bytes, r.shader_copy_ms),
            gbps(r.bytes, r.cpu_reference_ms),
            r.unfused_ms
                .map_or("-".into(), |ms| format!("{:.2}", gbps(r.bytes, ms))),
            format!(
                "{}/{}",
                r.recorded.dispatches, r.recorded.buffer_copies
            ),
            if r.zero_copy { " zero-copy" } else { "" }
        );
    }
    say!("(x rt = split_ms / the case's empty submit + wait; rates in GB/s = input bytes / median time;");
    say!(" prepared = the same split prepared once, then encode + submit + wait;");
    say!(
        " copy = copy_buffer_to_buffer, shader = vec4 copy kernel; each case times its split, the"
    );
    say!(" prepared split, round trip, copy and copy kernel in turn; disp/buf = gather");
    say!(" dispatches / buffer copies the split recorded; unfused = an attention case's split,");
    say!(" transpose kernels and copies into the caches, the way without views; with --batch N, each");
    say!(" submission holds N of each and every time is per split)");
}

fn print_memory(results: &[(CaseResult, Option<MemoryReport>)]) {
    say!();
    say!("memory, traced: the gather as a GPU runs it, whatever the adapter");
    say!(
        "{:<11} {:>4} {:>9} {:>10} {:>10} {:>10} {:>11} {:>10} {:>10}",
        "case",
        "warp",
        "load eff",
        "store eff",
        "load l/512",
        "once l/512",
        "store l/512",
        "table B/512",
        "shared/512"
    );
    let row = |name: &str, f: &MemoryFigures| {
        say!(
            "{:<11} {:>4} {:>9.3} {:>10.3} {:>10.2} {:>10.2} {:>11.2} {:>10.2} {:>10.2}",
            name,
            f.warp,
            f.load_efficiency,
            f.store_efficiency,
            f.load_lines_per_512,
            f.load_lines_once_per_512,
            f.store_lines_per_512,
            f.table_bytes_per_512,
            f.shared_wavefronts_per_512
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
    say!(" lines counted once per warp; table B/512 = table bytes read per 512 bytes stored;");
    say!(
        " shared/512 = workgroup memory passes per 512 bytes stored, bank conflicts counted: 8 for"
    );
    say!(" bytes staged once and read once without one)");
}

fn figures_json(f: &MemoryFigures) -> Value {
    json!({
        "load_efficiency": f.load_efficiency,
        "store_efficiency": f.store_efficiency,
        "load_lines_per_512": f.load_lines_per_512,
        "load_lines_once_per_512": f.load_lines_once_per_512,
        "store_lines_per_512": f.store_lines_per_512,
        "table_bytes_per_512": f.table_bytes_per_512,
        "shared_wavefronts_per_512": f.shared_wavefronts_per_512,
    })
}

fn case_json(r: &CaseResult, memory: &Option<MemoryReport>) -> Value {
    let mut v = json!({
        "name": r.case.name,
        "op": r.case.op_name(),
        "dtype": r.case.dtype.name(),
        "shape": r.case.shape,
        "axis": r.case.op.axis(),
        "outputs": r.outputs,
        "bytes": r.bytes,
        "split_ms": r.split_ms,
        "prepared_ms": r.prepared_ms,
        "roundtrip_ms": r.roundtrip_ms,
        "host_ms": r.host_ms,
        "copy_ms": r.copy_ms,
        "shader_copy_ms": r.shader_copy_ms,
        "split_gbps": gbps(r.bytes, r.split_ms),
        "prepared_gbps": gbps(r.bytes, r.prepared_ms),
        "copy_gbps": gbps(r.bytes, r.copy_ms),
        "shader_copy_gbps": gbps(r.bytes, r.shader_copy_ms),
        "cpu_reference_gbps": gbps(r.bytes, r.cpu_reference_ms),
        "unfused_ms": r.unfused_ms,
        "unfused_gbps": r.unfused_ms.map(|ms| gbps(r.bytes, ms)),
        "moved_host_ms": r.moved_host_ms,
        "dispatches": r.recorded.dispatches,
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
