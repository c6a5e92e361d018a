//! `wgpu-split run`: split a .npy file.

use super::args::{self, Op, RunArgs};
use super::error::{CliError, CliResult};
use serde_json::json;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;
use wgpu_split::ops::{OnnxSplitParts, Operator};
use wgpu_split::{npy, reference, verify, DType, DeviceChoice, GpuSplitter, HostTensor, SplitPlan};

/// Refuses options that belong to other operators.
fn only_for(op: Op, present: &[(&str, bool, &[Op])]) -> CliResult<()> {
    for &(name, given, ops) in present {
        if given && !ops.contains(&op) {
            return Err(CliError::usage(format!(
                "--{name} does not apply to --op {}",
                op_name(op)
            )));
        }
    }
    Ok(())
}

/// The name `--op` takes: the registry's ([`Operator::NAMES`]), in the same order as [`Op`].
fn op_name(op: Op) -> &'static str {
    Operator::NAMES[op as usize]
}

fn required<'a>(value: &'a Option<String>, name: &str, op: Op) -> CliResult<&'a str> {
    value
        .as_deref()
        .ok_or_else(|| CliError::usage(format!("--op {} needs --{name}", op_name(op))))
}

/// An attribute axis (ONNX): an integer, or a scalar / shape-[1] tensor file; default 0.
fn attribute_axis(value: &Option<String>) -> CliResult<i64> {
    let Some(v) = value else { return Ok(0) };
    let t = args::axis(v)?;
    if t.values().len() != 1 || t.shape().len() > 1 {
        return Err(CliError::usage(format!(
            "axis must be a scalar or a tensor of shape [1], got shape {:?}",
            t.shape()
        )));
    }
    Ok(t.values()[0])
}

/// Validates the operator's options against the input shape and produces the plan.
pub fn plan(a: &RunArgs, shape: &[usize]) -> CliResult<SplitPlan> {
    Ok(operator(a)?.plan(shape)?)
}

/// The operator and its parameters, from the options.
fn operator(a: &RunArgs) -> CliResult<Operator> {
    use Op::*;
    only_for(
        a.op,
        &[
            ("num-splits", a.num_splits.is_some(), &[Split]),
            ("lengths", a.lengths.is_some(), &[VariadicSplit]),
            ("split", a.split.is_some(), &[SplitToSequence, OnnxSplit]),
            ("keepdims", a.keepdims.is_some(), &[SplitToSequence]),
            ("num-outputs", a.num_outputs.is_some(), &[OnnxSplit]),
            ("opset", a.opset.is_some(), &[OnnxSplit]),
        ],
    )?;
    Ok(match a.op {
        Split => Operator::Split {
            axis: args::axis(required(&a.axis, "axis", a.op)?)?,
            num_splits: a
                .num_splits
                .ok_or_else(|| CliError::usage("--op split needs --num-splits"))?,
        },
        VariadicSplit => Operator::VariadicSplit {
            axis: args::axis(required(&a.axis, "axis", a.op)?)?,
            split_lengths: args::lengths(required(&a.lengths, "lengths", a.op)?)?,
        },
        SplitToSequence => {
            let keepdims = match a.keepdims {
                None | Some(1) => true,
                Some(0) => false,
                Some(k) => {
                    return Err(CliError::usage(format!(
                        "--keepdims must be 0 or 1, got {k}"
                    )))
                }
            };
            Operator::SplitToSequence {
                axis: attribute_axis(&a.axis)?,
                split: a.split.as_deref().map(args::split).transpose()?,
                keepdims,
            }
        }
        OnnxSplit => {
            let opset = a.opset.unwrap_or(18);
            if ![2, 11, 13, 18].contains(&opset) {
                return Err(CliError::usage(format!(
                    "--opset must be 2, 11, 13 or 18, got {opset}"
                )));
            }
            let parts = match (a.split.as_deref(), a.num_outputs) {
                (Some(_), Some(_)) => {
                    return Err(CliError::usage(
                        "onnx-split takes --split or --num-outputs, not both",
                    ))
                }
                (None, None) => {
                    return Err(CliError::usage(
                        "--op onnx-split needs --split or --num-outputs",
                    ))
                }
                (Some(s), None) => {
                    let t = args::split(s)?;
                    if t.shape().len() != 1 {
                        return Err(CliError::usage(format!(
                            "split must be a 1-D tensor for onnx-split, got shape {:?}",
                            t.shape()
                        )));
                    }
                    OnnxSplitParts::Lengths(t.values().to_vec())
                }
                (None, Some(n)) if opset >= 18 => OnnxSplitParts::NumOutputs(n),
                (None, Some(n)) => OnnxSplitParts::EqualOutputs(n),
            };
            Operator::OnnxSplit {
                axis: attribute_axis(&a.axis)?,
                parts,
            }
        }
    })
}

/// Where the split runs.
enum Engine {
    Cpu,
    Gpu(Box<GpuSplitter>),
}

/// Checks GPU outputs against the CPU reference. Strings are compared through the generic
/// reference on decoded `String`s, an independent path from the byte-level one.
fn verify(input: &HostTensor, plan: &SplitPlan, outputs: &[HostTensor]) -> CliResult<()> {
    if let DType::Utf32(_) = input.dtype() {
        let strings = npy::utf32_strings(input)?;
        let array = ndarray::ArrayD::from_shape_vec(input.shape(), strings)
            .map_err(|e| CliError::usage(e.to_string()))?;
        let want = reference::split_array(array.view(), plan)?;
        for (i, (w, g)) in want.iter().zip(outputs).enumerate() {
            if w.iter().cloned().collect::<Vec<_>>() != npy::utf32_strings(g)? {
                return Err(wgpu_split::SplitError::Mismatch(format!(
                    "output {i} holds different strings"
                ))
                .into());
            }
        }
        return Ok(());
    }
    Ok(verify::compare_outputs(
        outputs,
        &reference::split_tensor(input, plan)?,
    )?)
}

/// Writes the outputs into a temporary directory beside `dir`, then moves them in, so a
/// failure leaves `dir` as it was. Stale `output_{i}.npy` files with i >= k are removed.
fn write_outputs(dir: &Path, outputs: &[HostTensor]) -> CliResult<Vec<String>> {
    let io = |what: &str, e: std::io::Error| CliError {
        code: 2,
        message: format!("{what}: {e}"),
    };
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    std::fs::create_dir_all(&parent).map_err(|e| io(&parent.display().to_string(), e))?;
    let tmp = tempfile::Builder::new()
        .prefix(".wgpu-split-")
        .tempdir_in(&parent)
        .map_err(|e| io(&parent.display().to_string(), e))?;
    let names: Vec<String> = (0..outputs.len())
        .map(|i| format!("output_{i}.npy"))
        .collect();
    for (name, t) in names.iter().zip(outputs) {
        npy::write(&tmp.path().join(name), t)?;
    }
    if !dir.exists() {
        let staged = tmp.keep();
        std::fs::rename(&staged, dir).map_err(|e| io(&dir.display().to_string(), e))?;
        return Ok(names);
    }
    for name in &names {
        std::fs::rename(tmp.path().join(name), dir.join(name)).map_err(|e| io(name, e))?;
    }
    let entries = std::fs::read_dir(dir).map_err(|e| io(&dir.display().to_string(), e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let index = name
            .strip_prefix("output_")
            .and_then(|r| r.strip_suffix(".npy"))
            .and_then(|i| i.parse::<usize>().ok());
        if index.is_some_and(|i| i >= outputs.len()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(names)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs `wgpu-split run`.
pub fn run(a: &RunArgs) -> CliResult {
    let t_total = Instant::now();
    if a.out.exists() && !a.out.is_dir() {
        return Err(CliError::usage(format!(
            "--out {} exists and is not a directory",
            a.out.display()
        )));
    }
    let engine_choice = a.backend.as_deref().unwrap_or("");
    let use_cpu = engine_choice.eq_ignore_ascii_case("cpu");
    let choice = if use_cpu {
        DeviceChoice::default()
    } else {
        args::device(a.backend.as_deref(), a.adapter.as_deref())?
    };

    let t = Instant::now();
    let input = npy::read(&a.input)?;
    let read_ms = ms(t);
    let t = Instant::now();
    let plan = plan(a, input.shape())?;
    let plan_ms = ms(t);

    let engine = if use_cpu {
        Engine::Cpu
    } else {
        Engine::Gpu(Box::new(GpuSplitter::open_chosen(&choice)?))
    };
    let t = Instant::now();
    let outputs = match &engine {
        Engine::Cpu => reference::split_tensor(&input, &plan)?,
        Engine::Gpu(g) => g.run(&plan, &input)?,
    };
    let split_ms = ms(t);
    let t = Instant::now();
    let verified = match (&engine, a.no_verify) {
        (Engine::Gpu(_), false) => {
            verify(&input, &plan, &outputs)?;
            Some(true)
        }
        _ => None,
    };
    let verify_ms = ms(t);
    let t = Instant::now();
    let files = write_outputs(&a.out, &outputs)?;
    let write_ms = ms(t);

    let (adapter, backend) = match &engine {
        Engine::Cpu => ("CPU reference".to_string(), "cpu".to_string()),
        Engine::Gpu(g) => (
            g.adapter_info().name.clone(),
            format!("{:?}", g.adapter_info().backend).to_lowercase(),
        ),
    };
    if a.json {
        let outs: Vec<_> = outputs
            .iter()
            .zip(&files)
            .map(|(t, f)| json!({"shape": t.shape(), "file": a.out.join(f).display().to_string()}))
            .collect();
        let report = json!({
            "op": op_name(a.op),
            "adapter": adapter,
            "backend": backend,
            "input": {"shape": input.shape(), "dtype": input.dtype().name(), "file": a.input.display().to_string()},
            "outputs": outs,
            "verified": verified,
            "timings_ms": {"read": read_ms, "plan": plan_ms, "split": split_ms, "verify": verify_ms,
                           "write": write_ms, "total": ms(t_total)},
        });
        say!("{report}");
    } else {
        say!(
            "{} of {:?} {} on {adapter} ({backend}): {} output(s)",
            op_name(a.op),
            input.shape(),
            input.dtype(),
            outputs.len()
        );
        for (t, f) in outputs.iter().zip(&files) {
            say!("  {:<16} {:?}", f, t.shape());
        }
        match verified {
            Some(_) => say!("verified: GPU result equals the CPU reference, byte for byte"),
            None if use_cpu => say!("computed by the CPU reference"),
            None => say!("not verified (--no-verify)"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn op_names_are_the_registry_names() {
        for op in Op::value_variants() {
            let clap_name = op.to_possible_value().map(|v| v.get_name().to_string());
            assert_eq!(clap_name.as_deref(), Some(op_name(*op)));
        }
        assert_eq!(Op::value_variants().len(), Operator::NAMES.len());
    }
}
