//! `wgpu-split run`: split a .npy file, streamed from the file to the output files.

use super::args::{self, Op, RunArgs};
use super::exit::{CliError, CliResult};
use super::outputs::OutputFiles;
use super::pipelines::Gpu;
use super::progress::Progress;
use super::transpose::Transposed;
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;
use wgpu_split::bench::run_reference_stream;
use wgpu_split::ops::{self, OnnxSplitParts, Operator};
use wgpu_split::{npy, DeviceChoice, SplitPlan, StreamOptions};

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

/// The name `--op` takes: the registry's ([`Operator::NAMES`]), in the same order as [`Op`],
/// then the concat operators'.
pub(super) fn op_name(op: Op) -> &'static str {
    match op {
        Op::Concat => "concat",
        Op::ConcatFromSequence => "concat-from-sequence",
        Op::Gather => "gather",
        Op::ScatterNd => "scatter-nd",
        Op::GetRows => "get-rows",
        Op::SetRows => "set-rows",
        split => Operator::NAMES[split as usize],
    }
}

pub(super) fn required<'a>(value: &'a Option<String>, name: &str, op: Op) -> CliResult<&'a str> {
    value
        .as_deref()
        .ok_or_else(|| CliError::usage(format!("--op {} needs --{name}", op_name(op))))
}

/// An attribute axis (ONNX): an integer, or a scalar / shape-[1] tensor file; default 0.
pub(super) fn attribute_axis(value: &Option<String>) -> CliResult<i64> {
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

/// Refuses the options given that do not apply to `--op`: the one list of which operator
/// takes which option.
pub(super) fn check_options(a: &RunArgs) -> CliResult<()> {
    use Op::*;
    only_for(
        a.op,
        &[
            ("num-splits", a.num_splits.is_some(), &[Split]),
            ("lengths", a.lengths.is_some(), &[VariadicSplit]),
            ("split", a.split.is_some(), &[SplitToSequence, OnnxSplit]),
            ("keepdims", a.keepdims.is_some(), &[SplitToSequence]),
            ("num-outputs", a.num_outputs.is_some(), &[OnnxSplit]),
            ("opset", a.opset.is_some(), &[OnnxSplit, Concat]),
            ("new-axis", a.new_axis.is_some(), &[ConcatFromSequence]),
            (
                "indices",
                a.indices.is_some(),
                &[Gather, ScatterNd, GetRows, SetRows],
            ),
            ("updates", a.updates.is_some(), &[ScatterNd, SetRows]),
            ("rows-dtype", a.rows_dtype.is_some(), &[Gather, GetRows]),
            (
                "transpose",
                a.transpose.is_some(),
                &[Split, VariadicSplit, SplitToSequence, OnnxSplit],
            ),
        ],
    )
}

/// The operator and its parameters, from the options.
fn operator(a: &RunArgs) -> CliResult<Operator> {
    use Op::*;
    check_options(a)?;
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
        Concat | ConcatFromSequence | Gather | ScatterNd | GetRows | SetRows => {
            return Err(CliError::usage(format!(
                "--op {} is not a split",
                op_name(a.op)
            )))
        }
        OnnxSplit => {
            let split = match a.split.as_deref() {
                None => None,
                Some(s) => {
                    let t = args::split(s)?;
                    if t.shape().len() != 1 {
                        return Err(CliError::usage(format!(
                            "split must be a 1-D tensor for onnx-split, got shape {:?}",
                            t.shape()
                        )));
                    }
                    Some(t.values().to_vec())
                }
            };
            let newest = ops::OnnxSplitParts::NEWEST_OPSET;
            let opset = a.opset.map_or(newest as i64, i64::from);
            if !(1..=newest as i64).contains(&opset) {
                return Err(CliError::usage(format!(
                    "--opset must be an ONNX opset from 1 to {newest}, got {opset}"
                )));
            }
            match (&split, a.num_outputs) {
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
                _ => {}
            }
            let parts = OnnxSplitParts::at_opset(opset, split, a.num_outputs)
                .map_err(|e| CliError::usage(e.to_string()))?;
            Operator::OnnxSplit {
                axis: attribute_axis(&a.axis)?,
                parts,
            }
        }
    })
}

/// Refuses an `--out` that exists and is not a directory.
pub(super) fn check_out(a: &RunArgs) -> CliResult<()> {
    if a.out.exists() && !a.out.is_dir() {
        return Err(CliError::usage(format!(
            "--out {} exists and is not a directory",
            a.out.display()
        )));
    }
    Ok(())
}

/// Where a `run` command computes: the CPU reference or a GPU.
pub(super) enum Engine {
    Cpu,
    Gpu(Box<Gpu>),
}

impl Engine {
    /// The device `--backend` and `--adapter` pick, checked before any file is read; `None`
    /// for `--backend=cpu`, the CPU reference.
    pub(super) fn choice(a: &RunArgs) -> CliResult<Option<DeviceChoice>> {
        let backend = a.backend.as_deref();
        if backend.is_some_and(|b| b.eq_ignore_ascii_case("cpu")) {
            return Ok(None);
        }
        Ok(Some(args::device(backend, a.adapter.as_deref())?))
    }

    /// The engine of `choice`: its device opened, or the CPU reference.
    pub(super) fn open(choice: Option<DeviceChoice>) -> CliResult<Engine> {
        Ok(match choice {
            Some(choice) => Engine::Gpu(Box::new(Gpu::open(choice)?)),
            None => Engine::Cpu,
        })
    }

    /// The adapter's name and backend, as the reports give them.
    pub(super) fn names(&self) -> (String, String) {
        match self {
            Engine::Cpu => ("CPU reference".to_string(), "cpu".to_string()),
            Engine::Gpu(g) => {
                let info = g.device().adapter_info();
                (
                    info.name.clone(),
                    format!("{:?}", info.backend).to_lowercase(),
                )
            }
        }
    }
}

pub(super) fn ms(t: Instant) -> f64 {
    ms_of(t.elapsed())
}

pub(super) fn ms_of(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `wgpu-split run`.
///
/// Everything the .npy header decides (the shape, the dtype, every split rule, room for the
/// outputs) is checked before any data is read or a device is opened. The split then streams
/// window by window from the file into the output files, verified as it goes.
pub fn run(a: &RunArgs) -> CliResult {
    let t_total = Instant::now();
    check_out(a)?;
    let [input] = a.input.as_slice() else {
        return Err(CliError::usage(format!(
            "--op {} takes one --input, not {}",
            op_name(a.op),
            a.input.len()
        )));
    };
    let choice = Engine::choice(a)?;

    let (header, data) = npy::open(input)?;
    let plan = plan(a, &header.shape)?;
    let dtype = header.dtype;
    let transposed = a
        .transpose
        .as_deref()
        .map(|p| Transposed::new(&plan, p))
        .transpose()?;
    let shapes = match &transposed {
        Some(t) => t.shapes.clone(),
        None => plan.part_shapes(),
    };
    let files = OutputFiles::new(&shapes, dtype)?;
    files.check_room(&a.out)?;
    let names = files.names().to_vec();
    let plan_ms = ms(t_total);

    let engine = Engine::open(choice)?;
    let mut staged = files.stage(&a.out, Progress::new(!a.quiet && !a.json))?;
    // The command raises a window under one element to one element (the library refuses it).
    let window = a.window.unwrap_or(StreamOptions::default().window_bytes);
    let options = StreamOptions {
        window_bytes: window.max(dtype.size() as u64),
        verify: !a.no_verify,
    };
    let report = match (&engine, &transposed) {
        (Engine::Cpu, Some(t)) => t.split(None, &plan, dtype, data, &mut staged, false)?,
        (Engine::Gpu(g), Some(t)) => {
            t.split(Some(g), &plan, dtype, data, &mut staged, options.verify)?
        }
        (Engine::Cpu, None) => {
            run_reference_stream(&plan, dtype, data, &mut staged, options.window_bytes)?
        }
        (Engine::Gpu(g), None) => g.run_stream(&plan, dtype, data, &mut staged, &options)?,
    };
    let t = Instant::now();
    staged.commit(&a.out)?;
    let commit_ms = ms(t);

    let (adapter, backend) = engine.names();
    let verified = report.verified.then_some(true);
    let r = &report;
    if a.json {
        let outs: Vec<_> = names
            .iter()
            .enumerate()
            .map(|(i, f)| json!({"shape": shapes[i], "file": a.out.join(f).display().to_string()}))
            .collect();
        let report = json!({
            "op": op_name(a.op),
            "adapter": adapter,
            "backend": backend,
            "input": {"shape": header.shape, "dtype": dtype.name(), "file": input.display().to_string()},
            "outputs": outs,
            "verified": verified,
            "windows": report.windows,
            "window_bytes": options.window_bytes,
            "timings_ms": {"read": ms_of(r.read_time), "plan": plan_ms, "split": ms_of(r.split_time),
                           "verify": ms_of(r.verify_time), "write": ms_of(r.write_time) + commit_ms,
                           "total": ms(t_total)},
        });
        say!("{report}");
    } else {
        say!(
            "{} of {:?} {} on {adapter} ({backend}): {} output(s)",
            op_name(a.op),
            header.shape,
            dtype,
            names.len()
        );
        for (f, shape) in names.iter().zip(&shapes) {
            say!("  {:<16} {:?}", f, shape);
        }
        match verified {
            Some(_) => say!("verified: GPU result equals the CPU reference, byte for byte"),
            None if matches!(engine, Engine::Cpu) => say!("computed by the CPU reference"),
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
        // The split operators, then the two concat operators, the gather, the scatter, get
        // rows and set rows.
        assert_eq!(Op::value_variants().len(), Operator::NAMES.len() + 6);
    }
}
