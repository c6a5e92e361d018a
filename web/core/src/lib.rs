//! wgsl-split for a JavaScript host: the core compiled to wasm without wgpu. It gives the
//! core's recordings as JSON ([`recording_json`]), the form `web/driver.js` executes on
//! `navigator.gpu`, and the page's checks of that driver ([`Jobs`]): the specifications'
//! examples, random splits and their concatenations, and rows placed by indices, each with
//! the buffers a job starts from and the bytes they must hold after it, guard bytes included.
//!
//! A recording's JSON: `modules` (an id to its WGSL), `layouts` (per build: its bindings in
//! order, each `readOnly` and `dynamic`, and the bytes of each of its stand-ins), and
//! `commands` in order, each `{copy: {from, fromOffset, to, toOffset, size}}` or
//! `{dispatch: {layout, module, entry, constants, table, workgroups, binds, offsets}}`, every
//! buffer named by its role ([`role_name`]). `docs/hosts.md` gives the contract.

mod jobs;
mod timing;

#[path = "../../src/cases.rs"]
mod cases;

/// The library the shared cases (`cases`) take the operators from.
pub(crate) use wgsl_split as split;

pub use jobs::Jobs;
pub use timing::suite_recordings;

use serde_json::{json, Map, Value};
use wgsl_split::gather::binds::write_stand_in_bytes;
use wgsl_split::gather::builds::{
    fits_stage, single_output, Bodies, Build, InputBindings, OutputBindings,
};
use wgsl_split::gather::{window_limit, GatherMode, GatherTuning, MAX_DST_BINDINGS};
use wgsl_split::plan::bytes::ByteRows;
use wgsl_split::planner::{choose_for, DeviceCaps, Direction, Regions};
use wgsl_split::recording::{Command, Dispatched, Recording, Role, StandIn};
use wgsl_split::{DType, Limits, PartLayout, Result, SplitPlan};

/// The name a recording's JSON gives `role`: `table`, `input0`, `output0`, `indices`,
/// `status`, `scatter0` (and `scatter1`), `standInRead`, `standInWrite`, `standInStatus`, `standInScatter`.
pub fn role_name(role: Role) -> String {
    match role {
        Role::Table => "table".into(),
        Role::Input(k) => format!("input{k}"),
        Role::Output(k) => format!("output{k}"),
        Role::Indices => "indices".into(),
        Role::Status => "status".into(),
        Role::Scatter(k) => format!("scatter{k}"),
        Role::StandIn(s) => format!("standIn{s:?}"),
        Role::Trace => "trace".into(),
    }
}

/// `recording` as the JSON that `web/driver.js` executes, for a device of `limits`.
pub fn recording_json(recording: &Recording, limits: &Limits) -> Result<Value> {
    recordings_json(&[(recording, &role_name)], limits)
}

/// `recordings`, one after the other, as one recording's JSON for a device of `limits`: each
/// with the names its roles take (batches binding other buffers in the same roles).
pub fn recordings_json(
    recordings: &[(&Recording, &dyn Fn(Role) -> String)],
    limits: &Limits,
) -> Result<Value> {
    let (mut builds, mut layouts, mut modules) = (Vec::new(), Vec::new(), Map::new());
    let mut commands = Vec::new();
    for &(recording, name) in recordings {
        for command in &recording.commands {
            commands.push(match command {
                Command::Copy { from, to, size } => json!({"copy": {
                    "from": name(from.0), "fromOffset": from.1,
                    "to": name(to.0), "toOffset": to.1, "size": size,
                }}),
                Command::Dispatch(d) => {
                    let layout = match builds.iter().position(|b| *b == d.build) {
                        Some(k) => k,
                        None => {
                            builds.push(d.build);
                            layouts.push(layout_json(&d.build, limits));
                            builds.len() - 1
                        }
                    };
                    let (bodies, runs) = (Bodies::of(d.program), d.program.lanes_in_runs);
                    let module = format!("{layout}.{}.{}", bodies as u8, u8::from(runs));
                    if !modules.contains_key(&module) {
                        let source = d.build.source()?.with(bodies, runs);
                        modules.insert(module.clone(), source.into());
                    }
                    dispatch_json(d, layout, module, name)
                }
            });
        }
    }
    Ok(json!({"modules": modules, "layouts": layouts, "commands": commands}))
}

/// One dispatch of the build at `layout`, its program in `module`, each role named by
/// `name`.
fn dispatch_json(
    d: &Dispatched,
    layout: usize,
    module: String,
    name: &dyn Fn(Role) -> String,
) -> Value {
    let constants: Map<String, Value> = (d.program.constants().iter())
        .map(|(name, value)| (name.to_string(), json!(value)))
        .collect();
    let binds: Vec<Value> = (d.binds.list.iter())
        .map(|b| json!({"role": name(b.role), "offset": b.offset, "size": b.size}))
        .collect();
    json!({"dispatch": {
        "layout": layout, "module": module, "entry": d.program.entry.name(),
        "constants": constants, "table": d.table,
        "workgroups": [d.workgroups.0, d.workgroups.1],
        "binds": binds, "offsets": d.binds.offsets,
    }})
}

/// The bind group layout of `build` and the bytes of its stand-ins.
fn layout_json(build: &Build, limits: &Limits) -> Value {
    let entries: Vec<Value> = (build.layout().iter())
        .map(|e| json!({"readOnly": e.read_only, "dynamic": e.dynamic}))
        .collect();
    let outputs = build.outputs.count_and_views().0;
    let align = limits.min_storage_buffer_offset_alignment as u64;
    let stand_in = |s| role_name(Role::StandIn(s));
    json!({"entries": entries, "standIns": {
        stand_in(StandIn::Read): 16,
        stand_in(StandIn::Write): write_stand_in_bytes(outputs, align),
        stand_in(StandIn::Status): 16,
        stand_in(StandIn::Scatter): 16,
    }})
}

/// What the host's device offers the plans: its limits, and whether it is a CPU (a fallback
/// adapter, as `GPUAdapterInfo.isFallbackAdapter` says), whose gather maps lanes as CPUs
/// take them and whose buffer copies beat a dispatch (wgpu-split decides alike).
pub(crate) struct Device {
    pub limits: Limits,
    pub cpu: bool,
}

impl Device {
    /// The device from its JSON: the limits named as `GPUSupportedLimits` names them, and
    /// `isFallbackAdapter`.
    pub(crate) fn from_json(json: &str) -> std::result::Result<Device, String> {
        let v: Value = serde_json::from_str(json).map_err(|e| format!("the device's JSON: {e}"))?;
        let field = |name: &str| {
            v.get(name)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("the device's limits have no {name}"))
        };
        let small = |name: &str| {
            u32::try_from(field(name)?).map_err(|_| format!("the limits' {name} exceeds u32"))
        };
        let limits = Limits {
            max_storage_buffer_binding_size: field("maxStorageBufferBindingSize")?,
            max_buffer_size: field("maxBufferSize")?,
            max_storage_buffers_per_shader_stage: small("maxStorageBuffersPerShaderStage")?,
            max_dynamic_storage_buffers_per_pipeline_layout: small(
                "maxDynamicStorageBuffersPerPipelineLayout",
            )?,
            max_compute_workgroups_per_dimension: small("maxComputeWorkgroupsPerDimension")?,
            min_storage_buffer_offset_alignment: small("minStorageBufferOffsetAlignment")?,
        };
        let cpu = v
            .get("isFallbackAdapter")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Ok(Device { limits, cpu })
    }

    /// The most output buffers one dispatch of a split writes: as many as the stage binds
    /// with the table and the input (as wgpu-split binds them).
    pub(crate) fn most_outputs(&self) -> u32 {
        let fits = |m| {
            fits_stage(
                &self.limits,
                InputBindings::ONE,
                OutputBindings::Units(m),
                false,
            )
        };
        match single_output(&self.limits) {
            OutputBindings::Units(_) => {
                (2..=MAX_DST_BINDINGS).rev().find(|&m| fits(m)).unwrap_or(1)
            }
            OutputBindings::WordsOnly => 1,
        }
    }

    /// How its gather maps lanes.
    pub(crate) fn tuning(&self) -> GatherTuning {
        GatherTuning::of(if self.cpu {
            GatherMode::Cpu
        } else {
            GatherMode::Gpu
        })
    }
}

/// The recording, as JSON, of the split (or concat, `direction`) of `plan`'s elements of
/// `dtype` between the whole tensor (`Role::Input(0)` of a split, `Role::Output(0)` of a
/// concat) at `whole_at` of its buffer and the parts at `region_at` of theirs, placed for a
/// `device`, as the core's planner routes it (buffer copies where `copies` allows them and
/// they are cheaper, else the gather); with the parts' layout.
pub(crate) fn parts_recording(
    direction: Direction,
    plan: &SplitPlan,
    dtype: DType,
    device: &Device,
    copies: bool,
    (whole_at, region_at): (u64, u64),
) -> Result<(Value, PartLayout)> {
    let limits = &device.limits;
    let align = limits.min_storage_buffer_offset_alignment as u64;
    let layout = PartLayout::place(plan, dtype, align)?;
    let (read_at, written_at) = direction.in_order(whole_at, region_at);
    let regions = Regions {
        input_offset: read_at,
        output_offset: written_at,
        copies_allowed: true,
    };
    let caps = DeviceCaps {
        window_limit: window_limit(limits),
        offset_align: align,
        buffer_copies: copies,
        gather: device.tuning(),
    };
    let bytes = ByteRows::new(plan, dtype.size())?;
    let route = choose_for(direction, &bytes, &layout, &caps, &regions)?;
    let build = Build::plain(InputBindings::ONE, single_output(limits), None);
    let recording = route.recording(build, (read_at, written_at), limits)?;
    Ok((recording_json(&recording, limits)?, layout))
}
