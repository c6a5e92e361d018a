//! The browser page of wgpu-split (`web/index.html`): the library compiled for wasm32 and
//! run on the browser's WebGPU adapter through its async entry points. [`run_checks`] runs the
//! specifications' examples and a randomized sweep, each output compared byte for byte with
//! the CPU reference compiled into the same wasm; [`run_bench`] times the suite's cases that
//! fit. Both return their results as JSON for the page (and the browser test) to read.

mod cases;
mod decode;
mod regions;
mod rows;
mod rows_timing;
mod signal;
mod suite_timing;
mod sweep;
mod views;

use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
/// The library the shared cases (`cases`) take the operators from.
pub(crate) use wgpu_split as split;
use wgpu_split::{ops, wgpu, GpuSplitter, HostTensor, RouteChoice, SplitOptions, SplitPlan};

/// The largest storage binding of the page's device: WebGPU's default, which the page asks
/// for (see [`open`]), so that the sweep's largest input takes more than one binding.
const BINDING_LIMIT: u64 = 128 << 20;

/// Opens the browser's WebGPU adapter with WebGPU's default limits, the ones every browser
/// gives a page that asks for nothing more (8 storage buffers per stage, bindings of
/// [`BINDING_LIMIT`], buffers of 256 MiB, 16 KiB of workgroup memory), whatever the adapter
/// could give.
async fn open() -> Result<GpuSplitter, String> {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::BROWSER_WEBGPU;
    let instance = wgpu::Instance::new(desc);
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions::default())
        .await
        .map_err(|e| format!("no WebGPU adapter (is WebGPU enabled?): {e}"))?;
    let limits = wgpu::Limits::default();
    debug_assert_eq!(limits.max_storage_buffer_binding_size, BINDING_LIMIT);
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            label: Some("wgpu-split page"),
            required_limits: limits,
            ..Default::default()
        })
        .await
        .map_err(|e| format!("requesting the device: {e}"))?;
    GpuSplitter::new_async(device, queue)
        .await
        .map_err(|e| e.to_string())
}

/// The adapter, as the page shows it.
fn adapter_json(gpu: &GpuSplitter) -> Value {
    let info = gpu.device().adapter_info();
    let limits = gpu.device().limits();
    json!({
        "name": info.name,
        "backend": format!("{:?}", info.backend),
        "device_type": format!("{:?}", info.device_type),
        "storage_buffers_per_stage": limits.max_storage_buffers_per_shader_stage,
        "max_storage_binding": limits.max_storage_buffer_binding_size,
        "max_buffer": limits.max_buffer_size,
        "workgroup_storage": limits.max_compute_workgroup_storage_size,
    })
}

/// What [`split_and_compare`] found: per output its shape, bytes and equality with the CPU
/// reference; and whether the concat of the GPU's outputs, on the GPU, gave the input back
/// (`None` where no concat was run: a split with no outputs). An input past one binding is
/// concatenated back through the gather, in windows.
pub(crate) struct Compared {
    pub outputs: Vec<(Vec<usize>, usize, bool)>,
    pub round_trip: Option<bool>,
    /// The same concat from one buffer per output ([`regions::concat_from_buffers`]), for
    /// splits of at most [`MOST_BUFFERS`] outputs and 4 MiB.
    pub from_buffers: Option<regions::FromBuffers>,
}

/// The most outputs a split may have for its concat from buffers of their own.
const MOST_BUFFERS: usize = 64;

/// Splits `input` as `plan` says on the GPU and compares every output with the CPU
/// reference, byte for byte, then concatenates the outputs back on the GPU and compares the
/// result with `input`: `Ok`, or the error either side gave.
async fn split_and_compare(
    gpu: &GpuSplitter,
    plan: &SplitPlan,
    input: &HostTensor,
) -> Result<Compared, String> {
    let got = gpu
        .run_async(plan, input)
        .await
        .map_err(|e| e.to_string())?;
    let want = plan.reference(input).map_err(|e| e.to_string())?;
    if got.len() != want.len() {
        return Err(format!(
            "{} outputs, the reference has {}",
            got.len(),
            want.len()
        ));
    }
    let outputs = got
        .iter()
        .zip(&want)
        .map(|(g, w)| {
            let same = g.shape() == w.shape() && g.bytes() == w.bytes();
            (g.shape().to_vec(), g.bytes().len(), same)
        })
        .collect();
    let concat = plan.inverse();
    let round_trip = if got.is_empty() {
        None
    } else {
        // Past one binding, through the gather's windows rather than copies.
        let joined = if input.bytes().len() as u64 > BINDING_LIMIT {
            let gather = gpu.clone().with_options(SplitOptions {
                route: RouteChoice::Gather,
                ..Default::default()
            });
            gather.run_async(&concat, &got).await
        } else {
            gpu.run_async(&concat, &got).await
        }
        .map_err(|e| format!("the concat back: {e}"))?;
        Some(joined.shape() == input.shape() && joined.bytes() == input.bytes())
    };
    let from_buffers =
        if round_trip.is_some() && got.len() <= MOST_BUFFERS && input.bytes().len() <= 4 << 20 {
            Some(regions::concat_from_buffers(gpu, &concat, &got, input).await?)
        } else {
            None
        };
    Ok(Compared {
        outputs,
        round_trip,
        from_buffers,
    })
}

/// The specifications' examples on f32 inputs counting up from 0, as the command's demo runs
/// them.
async fn examples(gpu: &GpuSplitter) -> Value {
    let mut all = Vec::new();
    for ex in ops::spec_examples() {
        let checked = match ex.plan {
            Ok(plan) => {
                let n: usize = ex.shape.iter().product();
                let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
                match HostTensor::from_slice(&ex.shape, &data) {
                    Ok(input) => split_and_compare(gpu, &plan, &input).await,
                    Err(e) => Err(e.to_string()),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        all.push(match checked {
            Ok(Compared {
                outputs,
                round_trip,
                ..
            }) => json!({
                "title": ex.title,
                "input": ex.shape,
                "ok": outputs.iter().all(|o| o.2),
                "round_trip": round_trip,
                "outputs": outputs
                    .iter()
                    .map(|(shape, bytes, same)| json!({"shape": shape, "bytes": bytes, "same": same}))
                    .collect::<Vec<_>>(),
            }),
            Err(e) => json!({"title": ex.title, "input": ex.shape, "ok": false, "error": e}),
        });
    }
    Value::Array(all)
}

/// Opens the adapter, runs the specifications' examples, then `sweep` randomized splits from
/// `seed`, then a prepared decode step moved along its caches ([`decode::decode_steps`]),
/// rows placed by indices ([`rows::checks`]), and calls a sync entry point, which must refuse;
/// the JSON has `adapter`, `examples`, `sweep`, `decode`, `rows`, `sync_entry_point` (its
/// error) and `error` (null when none).
#[wasm_bindgen]
pub async fn run_checks(sweep: u32, seed: u32) -> String {
    let gpu = match open().await {
        Ok(gpu) => gpu,
        Err(e) => return json!({ "error": e }).to_string(),
    };
    let examples = examples(&gpu).await;
    let sweep = sweep::run(&gpu, sweep, seed as u64).await;
    let rows = rows::checks(&gpu).await;
    let decode = match decode::decode_steps(&gpu).await {
        Ok(d) => json!({"steps": d.steps, "same": d.same, "error": null}),
        Err(e) => json!({"steps": 0, "same": false, "error": e}),
    };
    // A sync entry point cannot wait in a browser: it must say so, not hang or panic.
    let sync = match GpuSplitter::new(gpu.device().clone(), gpu.queue().clone()) {
        Err(e) => e.to_string(),
        Ok(_) => "GpuSplitter::new returned a splitter without waiting for the device".into(),
    };
    json!({
        "adapter": adapter_json(&gpu),
        "examples": examples,
        "sweep": sweep,
        "decode": decode,
        "rows": rows,
        "sync_entry_point": sync,
        "error": null,
    })
    .to_string()
}

/// Opens the adapter and times the benchmark suite's cases that fit in it (see
/// [`suite_timing::run`]) and the rows cases ([`rows_timing::run`]); the JSON has
/// `adapter`, `cases`, `rows` and `error`.
#[wasm_bindgen]
pub async fn run_bench(repeats: u32) -> String {
    let gpu = match open().await {
        Ok(gpu) => gpu,
        Err(e) => return json!({ "error": e }).to_string(),
    };
    let suite = suite_timing::run(&gpu, repeats.max(1)).await;
    let rows = match suite {
        Ok(_) => rows_timing::run(&gpu, repeats.max(1)).await,
        Err(_) => Ok(Value::Null),
    };
    match (suite, rows) {
        (Ok(cases), Ok(rows)) => json!({
            "adapter": adapter_json(&gpu), "cases": cases, "rows": rows, "error": null
        })
        .to_string(),
        (Err(e), _) | (_, Err(e)) => json!({ "error": e }).to_string(),
    }
}
