//! `wgpu-split run --op gather|scatter-nd|get-rows|set-rows`: ONNX Gather (or get rows) of a
//! .npy file by a .npy of indices, or ONNX ScatterND (or set rows) of a .npy of updates into
//! it, into `DIR/output_0.npy`, checked against the CPU reference. The command makes an index
//! out of range an error, as ONNX does: the status the shader records is read back, and the
//! command names the first such index and writes nothing.

use super::args::{Op, RunArgs};
use super::exit::{CliError, CliResult};
use super::outputs::OutputFiles;
use super::progress::Progress;
use super::run::{attribute_axis, check_options, check_out, ms, op_name, Engine};
use serde_json::json;
use std::process::ExitCode;
use std::time::Instant;
use wgpu_split::{npy, ops, DType, OutputSink, Plan, SplitError};

/// Runs the gather or the scatter: the files read whole (the indices decide which rows
/// move).
pub fn run(a: &RunArgs) -> CliResult {
    let t_total = Instant::now();
    check_options(a)?;
    check_out(a)?;
    let name = op_name(a.op);
    let [input] = a.input.as_slice() else {
        return Err(CliError::usage(format!("--op {name} takes one --input")));
    };
    let indices_path = a
        .indices
        .as_ref()
        .ok_or_else(|| CliError::usage(format!("--op {name} needs --indices")))?;
    let choice = Engine::choice(a)?;
    let data = npy::read(input)?;
    let indices = npy::read(indices_path)?;
    let updates = match (a.op, &a.updates) {
        (Op::ScatterNd | Op::SetRows, Some(path)) => Some(npy::read(path)?),
        (Op::ScatterNd | Op::SetRows, None) => {
            return Err(CliError::usage(format!("--op {name} needs --updates")))
        }
        _ => None,
    };
    if matches!(a.op, Op::GetRows | Op::SetRows) && a.axis.is_some() {
        return Err(CliError::usage(format!(
            "--op {name} places rows of the first axis; it takes no --axis"
        )));
    }
    let (data_shape, ids_shape) = (data.shape(), indices.shape());
    // The rows' dtype: the updates' (f32 rows into f16 or bf16 data are rounded on the way,
    // as ggml's SET_ROWS does), or --rows-dtype for a gather's output.
    let rows_dtype = match (&updates, &a.rows_dtype) {
        (Some(u), _) => u.dtype(),
        (None, Some(d)) => DType::from_name(d).ok_or_else(|| {
            CliError::usage(format!("--rows-dtype {d:?} is not a dtype (f32, f16, ...)"))
        })?,
        (None, None) => data.dtype(),
    };
    let plan = match (a.op, &updates) {
        (Op::ScatterNd, Some(u)) => ops::scatter_nd(data_shape, ids_shape, u.shape())?,
        (Op::SetRows, _) => ops::set_rows(data_shape, ids_shape)?,
        (Op::GetRows, _) => ops::get_rows(data_shape, ids_shape)?,
        _ => ops::gather(data_shape, ids_shape, attribute_axis(&a.axis)?)?,
    }
    .with_rows_dtype(rows_dtype);
    // A gather writes its rows; a scatter, the data.
    let written = match updates {
        None => rows_dtype,
        Some(_) => data.dtype(),
    };
    let files = OutputFiles::new(&[plan.output_shape()], written)?;
    files.check_room(&a.out)?;
    let engine = Engine::open(choice)?;
    let t = Instant::now();
    let mut tensors = vec![data.clone(), indices.clone()];
    tensors.extend(updates.clone());
    let (rows, status) = match &engine {
        Engine::Cpu => plan.reference(&tensors)?,
        Engine::Gpu(g) => {
            let got = g.run(&plan, &tensors)?;
            if !a.no_verify {
                plan.verify(&tensors, &got)?;
            }
            got
        }
    };
    let rows_ms = ms(t);
    if let Some(i) = status.first_bad {
        let place = unflatten(i as usize, plan.indices_shape());
        let value = index_value(&indices, i as usize);
        let len = plan.data_shape()[plan.axis()];
        let takes = match a.op {
            Op::Gather => format!("ONNX Gather takes [-{len}, {len})"),
            Op::ScatterNd => format!("ONNX ScatterND takes [-{len}, {len})"),
            _ => format!("{name} takes [0, {len})"),
        };
        return Err(CliError::usage(format!(
            "indices{place:?} is {value}, out of range for axis {} of length {len} ({takes}; \
             {} of {} indices are out of range); nothing was written",
            plan.axis(),
            status.bad_indices,
            plan.index_count(),
        )));
    }
    let mut staged = files.stage(&a.out, Progress::new(false))?;
    staged
        .write(0, rows.bytes())
        .map_err(|e| SplitError::File(format!("writing output_0.npy: {e}")))?;
    staged.commit(&a.out)?;
    let (adapter, backend) = engine.names();
    let verified = matches!(engine, Engine::Gpu(_)) && !a.no_verify;
    let file = a.out.join("output_0.npy");
    if a.json {
        let report = json!({
            "op": op_name(a.op),
            "adapter": adapter,
            "backend": backend,
            "input": {"shape": data.shape(), "dtype": data.dtype().name(), "file": input.display().to_string()},
            "indices": {"shape": indices.shape(), "dtype": indices.dtype().name(), "file": indices_path.display().to_string()},
            "outputs": [{"shape": plan.output_shape(), "file": file.display().to_string()}],
            "verified": verified.then_some(true),
            "timings_ms": {"rows": rows_ms, "total": ms(t_total)},
        });
        say!("{report}");
    } else {
        say!(
            "{name} of {:?} {} by {:?} on {adapter} ({backend}): {:?}",
            data.shape(),
            data.dtype(),
            indices.shape(),
            plan.output_shape()
        );
        match verified {
            true => say!("verified: GPU result equals the CPU reference, byte for byte"),
            false => say!("not verified against the CPU reference"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The place of flat index `i` in `shape`.
fn unflatten(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut place = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        place[k] = i % d.max(1);
        i /= d.max(1);
    }
    place
}

/// The value of index `i` (i32, i64 or u32).
fn index_value(indices: &wgpu_split::HostTensor, i: usize) -> i64 {
    match indices.dtype() {
        wgpu_split::DType::I64 => indices.to_vec::<i64>().map_or(0, |v| v[i]),
        wgpu_split::DType::U32 => indices.to_vec::<u32>().map_or(0, |v| i64::from(v[i])),
        _ => indices.to_vec::<i32>().map_or(0, |v| i64::from(v[i])),
    }
}
