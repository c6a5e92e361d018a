//! The demo: every example of the operator specifications, on the GPU, checked against the
//! CPU reference, and each one's outputs concatenated back into its input.

use super::args;
use super::exit::CliResult;
use super::pipelines::Gpu;
use std::process::ExitCode;
use wgpu_split::{ops, HostTensor};

/// Runs the demo on the device `--backend` and `--adapter` (or the environment) pick.
pub fn run(backend: &Option<String>, adapter: &Option<String>) -> CliResult {
    let gpu = Gpu::open(args::device(backend.as_deref(), adapter.as_deref())?)?;
    let info = gpu.device().adapter_info();
    say!(
        "wgpu-split: spec examples on {} ({:?}, {:?})\n",
        info.name,
        info.backend,
        info.device_type
    );
    let mut all_match = true;
    let mut round_trips = Vec::new();
    for ex in ops::spec_examples() {
        let n: usize = ex.shape.iter().product();
        let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let input = HostTensor::from_slice(&ex.shape, &data)?;
        let plan = ex.plan?;
        let gpu_out = gpu.run(&plan, &input)?;
        let cpu_out = plan.reference(&input)?;
        say!("{}\n  input  {:?} f32", ex.title, ex.shape);
        say!(
            "  {:>6}  {:<18} {:>9}  {}",
            "output",
            "shape",
            "bytes",
            "GPU == CPU"
        );
        for (i, (g, c)) in gpu_out.iter().zip(&cpu_out).enumerate() {
            let same = g.shape() == c.shape() && g.bytes() == c.bytes();
            all_match &= same;
            let shape = format!("{:?}", g.shape());
            say!(
                "  {i:>6}  {shape:<18} {:>9}  {}",
                g.bytes().len(),
                if same { "yes" } else { "NO" }
            );
        }
        all_match &= gpu_out.len() == cpu_out.len();
        // The concat of the same plan takes the outputs back to the input.
        let back = gpu.run(&plan.inverse(), &gpu_out)?;
        round_trips.push((ex.title, back == input));
        say!();
    }
    say!("Concat: each example's outputs concatenated back on the GPU");
    for (title, same) in round_trips {
        all_match &= same;
        say!(
            "  {title:<52} == input: {}",
            if same { "yes" } else { "NO" }
        );
    }
    say!();
    if all_match {
        say!("all outputs equal the CPU reference, byte for byte");
        Ok(ExitCode::SUCCESS)
    } else {
        say!("MISMATCH: some GPU outputs differ from the CPU reference");
        Ok(ExitCode::from(1))
    }
}
