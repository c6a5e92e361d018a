//! `wgpu-split bench`: the standard suite with a progress bar, a table and optional JSON.

use super::args::{self, BenchArgs};
use super::error::{CliError, CliResult};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::process::ExitCode;
use wgpu_split::bench::{gbps, median, standard_suite, Bencher};
use wgpu_split::GpuSplitter;

/// Runs the suite and prints (and optionally writes) the results.
pub fn run(a: &BenchArgs) -> CliResult {
    let mut gpu = GpuSplitter::open(args::backend(a.backend.as_deref())?)?;
    if a.no_texture_copies {
        gpu = gpu.with_texture_copies(false);
    }
    let info = gpu.adapter_info().clone();
    let bencher = Bencher::new(&gpu, if a.quick { 5 } else { 15 })?;
    let mut suite = standard_suite();
    if !a.cases.is_empty() {
        if let Some(unknown) = a
            .cases
            .iter()
            .find(|n| !suite.iter().any(|c| c.name == n.as_str()))
        {
            let names: Vec<&str> = suite.iter().map(|c| c.name).collect();
            return Err(CliError::usage(format!(
                "unknown case {unknown:?}; cases are {}",
                names.join(", ")
            )));
        }
        suite.retain(|c| a.cases.iter().any(|n| n == c.name));
    }
    let bar = ProgressBar::new(suite.len() as u64).with_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut results = Vec::new();
    for case in &suite {
        bar.set_message(case.name);
        results.push(bencher.run_case(case)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Each case times empty round trips in turn with its split; the adapter's figure is the
    // median over the cases.
    let roundtrip_ms = median(results.iter().map(|r| r.roundtrip_ms).collect());

    say!(
        "adapter: {} ({:?}); empty submit + wait: {:.3} ms (median over the cases)",
        info.name,
        info.backend,
        roundtrip_ms
    );
    say!(
        "{:<11} {:<17} {:>5} {:>8} {:>9} {:>8} {:>7} {:>8} {:>8} {:>8} {:>8} {:>6} {:>13}",
        "case",
        "op",
        "dtype",
        "outputs",
        "MiB",
        "split_ms",
        "x rt",
        "host_ms",
        "split",
        "copy",
        "shader",
        "cpu",
        "disp/buf/tex"
    );
    for r in &results {
        say!(
            "{:<11} {:<17} {:>5} {:>8} {:>9.1} {:>8.3} {:>7.2} {:>8.3} {:>8.2} {:>8.2} {:>8.2} {:>6.2} {:>13}{}",
            r.case.name,
            r.case.op.name(),
            r.case.dtype.name(),
            r.outputs,
            r.bytes as f64 / (1 << 20) as f64,
            r.split_ms,
            r.split_ms / r.roundtrip_ms,
            r.host_ms,
            gbps(r.bytes, r.split_ms),
            gbps(r.bytes, r.copy_ms),
            gbps(r.bytes, r.shader_copy_ms),
            gbps(r.bytes, r.cpu_reference_ms),
            format!(
                "{}/{}/{}",
                r.recorded.dispatches, r.recorded.buffer_copies, r.recorded.texture_copies
            ),
            if r.zero_copy { " zero-copy" } else { "" }
        );
    }
    say!("(x rt = split_ms / the case's empty submit + wait; rates in GB/s = input bytes / median time;");
    say!(" copy = copy_buffer_to_buffer, shader = vec4 copy kernel; each case times its split, round");
    say!(" trip, copy and copy kernel in turn; disp/buf/tex = gather dispatches / buffer copies /");
    say!(" texture copies the split recorded)");

    if let Some(path) = &a.json {
        let cases: Vec<_> = results
            .iter()
            .map(|r| {
                json!({
                    "name": r.case.name,
                    "op": r.case.op.name(),
                    "dtype": r.case.dtype.name(),
                    "shape": r.case.shape,
                    "axis": r.case.op.axis(),
                    "outputs": r.outputs,
                    "bytes": r.bytes,
                    "split_ms": r.split_ms,
                    "roundtrip_ms": r.roundtrip_ms,
                    "host_ms": r.host_ms,
                    "copy_ms": r.copy_ms,
                    "shader_copy_ms": r.shader_copy_ms,
                    "split_gbps": gbps(r.bytes, r.split_ms),
                    "copy_gbps": gbps(r.bytes, r.copy_ms),
                    "shader_copy_gbps": gbps(r.bytes, r.shader_copy_ms),
                    "cpu_reference_gbps": gbps(r.bytes, r.cpu_reference_ms),
                    "dispatches": r.recorded.dispatches,
                    "buffer_copies": r.recorded.buffer_copies,
                    "texture_copies": r.recorded.texture_copies,
                    "zero_copy": r.zero_copy,
                })
            })
            .collect();
        let report = json!({
            "adapter": {"name": info.name, "backend": format!("{:?}", info.backend).to_lowercase()},
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
