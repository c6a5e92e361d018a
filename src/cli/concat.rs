//! `wgpu-split run --op concat|concat-from-sequence`: concatenate .npy files into
//! `DIR/output_0.npy`, streamed window by window of the output.

use super::args::{Op, RunArgs};
use super::exit::{CliError, CliResult};
use super::outputs::OutputFiles;
use super::progress::Progress;
use super::run::{attribute_axis, check_options, check_out, ms, ms_of, op_name, required, Engine};
use serde_json::json;
use std::io::Read;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use wgpu_split::bench::windows;
use wgpu_split::{
    npy, ops, ConcatPlan, HostTensor, OutputSink, Plan, SplitError, SplitPlan, StreamOptions,
};

/// The concat's plan, from the options and the inputs' shapes.
fn plan(a: &RunArgs, shapes: &[Vec<usize>]) -> CliResult<ConcatPlan> {
    check_options(a)?;
    Ok(match (a.op, a.opset) {
        (Op::ConcatFromSequence, _) => {
            ops::concat_from_sequence(shapes, required_axis(a)?, a.new_axis.unwrap_or(0))?
        }
        // ONNX Concat-1 defaults the axis; the operator says whether it may be missing.
        (_, Some(opset)) => {
            let axis = a
                .axis
                .is_some()
                .then(|| attribute_axis(&a.axis))
                .transpose()?;
            ops::onnx_concat(shapes, axis, i64::from(opset))?
        }
        (_, None) => ops::concat(shapes, required_axis(a)?)?,
    })
}

/// The `--axis` the operator requires: an integer, or a scalar / shape-[1] tensor file.
fn required_axis(a: &RunArgs) -> CliResult<i64> {
    required(&a.axis, "axis", a.op)?;
    attribute_axis(&a.axis)
}

/// Runs the concat. As for the split, everything the headers decide (shapes, dtypes, the
/// operator's rules, room for the output) is checked before any data is read or a device is
/// opened; the output is then made window by window, each window's parts read from every
/// input in turn, so memory stays within the window whatever the inputs' sizes.
pub fn run(a: &RunArgs) -> CliResult {
    let t_total = Instant::now();
    check_out(a)?;
    let choice = Engine::choice(a)?;
    let mut readers = Vec::with_capacity(a.input.len());
    let mut shapes = Vec::with_capacity(a.input.len());
    let mut dtype = None;
    for (i, path) in a.input.iter().enumerate() {
        let (header, data) = npy::open(path)?;
        match dtype {
            Some(d) if d != header.dtype => {
                return Err(SplitError::DataMismatch(format!(
                    "input {i} ({}) is {}, but input 0 ({}) is {d}: a concat's inputs share \
                     one dtype",
                    path.display(),
                    header.dtype,
                    a.input[0].display()
                ))
                .into())
            }
            _ => dtype = Some(header.dtype),
        }
        shapes.push(header.shape);
        readers.push(data);
    }
    let dtype = dtype.ok_or_else(|| CliError::usage("--op concat needs an --input"))?;
    let plan = plan(a, &shapes)?;
    // One output file, written window by window of the split that undoes the concat.
    let output_shape = plan.whole_shape().to_vec();
    let split = plan.inverse();
    let whole = SplitPlan::from_lengths(&output_shape, 0, &[output_shape[0]], true)?;
    let files = OutputFiles::new(&whole.part_shapes(), dtype)?;
    files.check_room(&a.out)?;
    let plan_ms = ms(t_total);

    let engine = Engine::open(choice)?;
    let mut staged = files.stage(&a.out, Progress::new(!a.quiet && !a.json))?;
    let window = a
        .window
        .unwrap_or(StreamOptions::default().window_bytes)
        .max(dtype.size() as u64);
    let total = wgpu_split::bench::byte_count(&output_shape, dtype)? as u64;
    let (mut read, mut concat, mut write) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (mut done, mut count) = (0u64, 0usize);
    for w in windows(&split, dtype.size(), window)? {
        let part_plan = w.plan(&split)?.inverse();
        let t = Instant::now();
        let mut parts = Vec::with_capacity(part_plan.num_parts());
        for (i, reader) in readers.iter_mut().enumerate() {
            let mut bytes = vec![0u8; part_plan.part_bytes(i, dtype)? as usize];
            reader
                .read_exact(&mut bytes)
                .map_err(|e| SplitError::File(format!("{}: {e}", a.input[i].display())))?;
            parts.push(HostTensor::new(dtype, part_plan.part_shape(i), bytes)?);
        }
        read += t.elapsed();
        let t = Instant::now();
        let out = match &engine {
            Engine::Cpu => part_plan.reference(&parts)?,
            Engine::Gpu(g) => {
                let out = g.run(&part_plan, &parts)?;
                if !a.no_verify {
                    part_plan.verify(&parts, &out)?;
                }
                out
            }
        };
        concat += t.elapsed();
        let t = Instant::now();
        staged
            .write(0, out.bytes())
            .map_err(|e| SplitError::File(format!("writing output_0.npy: {e}")))?;
        done += out.bytes().len() as u64;
        staged.progress(done, total);
        write += t.elapsed();
        count += 1;
    }
    let t = Instant::now();
    staged.commit(&a.out)?;
    write += t.elapsed();

    let (adapter, backend) = engine.names();
    let use_cpu = matches!(engine, Engine::Cpu);
    let verified = (!use_cpu && !a.no_verify).then_some(true);
    let file = a.out.join("output_0.npy");
    if a.json {
        let inputs: Vec<_> = a
            .input
            .iter()
            .zip(&shapes)
            .map(|(f, s)| json!({"shape": s, "file": f.display().to_string()}))
            .collect();
        let report = json!({
            "op": op_name(a.op),
            "adapter": adapter,
            "backend": backend,
            "dtype": dtype.name(),
            "inputs": inputs,
            "outputs": [{"shape": output_shape, "file": file.display().to_string()}],
            "verified": verified,
            "windows": count,
            "window_bytes": window,
            "timings_ms": {"read": ms_of(read), "plan": plan_ms, "concat": ms_of(concat),
                           "write": ms_of(write), "total": ms(t_total)},
        });
        say!("{report}");
    } else {
        say!(
            "{} of {} input(s) {dtype} on {adapter} ({backend}): {:?}",
            op_name(a.op),
            shapes.len(),
            output_shape
        );
        say!("  {:<16} {:?}", "output_0.npy", output_shape);
        match verified {
            Some(_) => say!("verified: GPU result equals the CPU reference, byte for byte"),
            None if use_cpu => say!("computed by the CPU reference"),
            None => say!("not verified (--no-verify)"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
