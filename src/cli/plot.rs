//! `wgpu-split bench --plot=FILE.svg`: one chart of the split's rate beside the device's copy
//! and copy-kernel rates, per case, in the same run.

use super::exit::{CliError, CliResult};
use plotters::prelude::*;
use std::path::Path;
use wgpu_split::bench::{gbps, CaseResult, CopyKind};

/// The bars of a case: label, colour; the rates of the split and of each [`CopyKind`].
const BARS: [(&str, RGBColor); 4] = [
    ("split", RGBColor(31, 119, 180)),
    ("copy_buffer_to_buffer", RGBColor(190, 190, 190)),
    ("vec4 copy kernel", RGBColor(255, 127, 14)),
    ("copy kernel, 4 vec4 a lane", RGBColor(44, 160, 44)),
];

/// Draws the rates of `results` into an SVG file at `path`: one row per case, four
/// horizontal bars each, GB/s on a log scale (the rates span two orders of magnitude).
pub fn rates(path: &Path, title: &str, results: &[&CaseResult]) -> CliResult<()> {
    let err = |e: String| CliError::usage(format!("{}: {e}", path.display()));
    let rows: Vec<[f64; 4]> = results
        .iter()
        .map(|r| {
            let [b2b, kernel, kernel4] = CopyKind::ALL.map(|k| r.copy(k));
            [r.split, b2b, kernel, kernel4].map(|t| gbps(r.bytes, t.ms()).max(1e-3))
        })
        .collect();
    let most = rows.iter().flatten().copied().fold(1.0, f64::max) * 2.0;
    let least = rows.iter().flatten().copied().fold(most, f64::min) / 2.0;
    let height = 120 + 60 * results.len() as u32;
    let root = SVGBackend::new(path, (900, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let n = results.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(110)
        .build_cartesian_2d((least..most).log_scale(), 0.0..n)
        .map_err(|e| err(e.to_string()))?;
    let names: Vec<&str> = results.iter().map(|r| r.case.name).collect();
    chart
        .configure_mesh()
        .x_desc("GB/s (input bytes / median time), log scale")
        .y_labels(results.len() * 2 + 1)
        .y_label_formatter(&|y| {
            // Case i fills rows [n - 1 - i, n - i), top to bottom; its name sits mid-row.
            let row = y.floor();
            let i = (n - 1.0 - row) as usize;
            match names.get(i) {
                Some(name) if row >= 0.0 && (y - row - 0.5).abs() < 0.26 => name.to_string(),
                _ => String::new(),
            }
        })
        .disable_y_mesh()
        .draw()
        .map_err(|e| err(e.to_string()))?;
    for (k, (label, colour)) in BARS.iter().enumerate() {
        let bars = rows.iter().enumerate().map(|(i, rates)| {
            // Top to bottom in the order of the suite; four bars a case.
            let row = n - 1.0 - i as f64;
            let top = row + 0.9 - 0.2 * k as f64;
            Rectangle::new([(least, top - 0.17), (rates[k], top)], colour.filled())
        });
        chart
            .draw_series(bars)
            .map_err(|e| err(e.to_string()))?
            .label(*label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 15, y + 5)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}
