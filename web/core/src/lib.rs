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

#[path = "../../src/cases.rs"]
mod cases;

/// The library the shared cases (`cases`) take the operators from.
pub(crate) use wgsl_split as split;

pub use jobs::Jobs;

use serde_json::{json, Map, Value};
use wgsl_split::gather::binds::write_stand_in_bytes;
use wgsl_split::gather::builds::{Bodies, Build};
use wgsl_split::recording::{Command, Dispatched, Recording, Role, StandIn};
use wgsl_split::{Limits, Result};

/// The name a recording's JSON gives `role`: `table`, `input0`, `output0`, `indices`,
/// `status`, `scatter`, `standInRead`, `standInWrite`, `standInStatus`, `standInScatter`.
pub fn role_name(role: Role) -> String {
    match role {
        Role::Table => "table".into(),
        Role::Input(k) => format!("input{k}"),
        Role::Output(k) => format!("output{k}"),
        Role::Indices => "indices".into(),
        Role::Status => "status".into(),
        Role::Scatter => "scatter".into(),
        Role::StandIn(s) => format!("standIn{s:?}"),
        Role::Trace => "trace".into(),
    }
}

/// `recording` as the JSON that `web/driver.js` executes, for a device of `limits`.
pub fn recording_json(recording: &Recording, limits: &Limits) -> Result<Value> {
    let (mut builds, mut layouts, mut modules) = (Vec::new(), Vec::new(), Map::new());
    let mut commands = Vec::with_capacity(recording.commands.len());
    for command in &recording.commands {
        commands.push(match command {
            Command::Copy { from, to, size } => json!({"copy": {
                "from": role_name(from.0), "fromOffset": from.1,
                "to": role_name(to.0), "toOffset": to.1, "size": size,
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
                dispatch_json(d, layout, module)
            }
        });
    }
    Ok(json!({"modules": modules, "layouts": layouts, "commands": commands}))
}

/// One dispatch of the build at `layout`, its program in `module`.
fn dispatch_json(d: &Dispatched, layout: usize, module: String) -> Value {
    let constants: Map<String, Value> = (d.program.constants().iter())
        .map(|(name, value)| (name.to_string(), json!(value)))
        .collect();
    let binds: Vec<Value> = (d.binds.list.iter())
        .map(|b| json!({"role": role_name(b.role), "offset": b.offset, "size": b.size}))
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

/// The device's limits from their JSON, named as `GPUSupportedLimits` names them.
pub(crate) fn limits_from(json: &str) -> std::result::Result<Limits, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("the limits' JSON: {e}"))?;
    let field = |name: &str| {
        v.get(name)
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("the limits have no {name}"))
    };
    let small = |name: &str| {
        u32::try_from(field(name)?).map_err(|_| format!("the limits' {name} exceeds u32"))
    };
    Ok(Limits {
        max_storage_buffer_binding_size: field("maxStorageBufferBindingSize")?,
        max_buffer_size: field("maxBufferSize")?,
        max_storage_buffers_per_shader_stage: small("maxStorageBuffersPerShaderStage")?,
        max_dynamic_storage_buffers_per_pipeline_layout: small(
            "maxDynamicStorageBuffersPerPipelineLayout",
        )?,
        max_compute_workgroups_per_dimension: small("maxComputeWorkgroupsPerDimension")?,
        min_storage_buffer_offset_alignment: small("minStorageBufferOffsetAlignment")?,
    })
}
