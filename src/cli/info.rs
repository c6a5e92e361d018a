//! `wgpu-split info`: adapters and the limits that matter to a split.

use super::args::InfoArgs;
use super::exit::CliResult;
use serde_json::json;
use std::process::ExitCode;
use wgpu_split::bench::list_adapters;
use wgpu_split::{wgpu, BackendChoice};

/// Lists every adapter on every backend.
pub fn run(a: &InfoArgs) -> CliResult {
    let adapters = list_adapters(BackendChoice::Auto);
    let rows: Vec<_> = adapters
        .iter()
        .enumerate()
        .map(|(index, ad)| {
            let i = ad.get_info();
            let l = ad.limits();
            json!({
                "index": index,
                "name": i.name,
                "backend": format!("{:?}", i.backend).to_lowercase(),
                "device_type": format!("{:?}", i.device_type),
                "driver": format!("{} {}", i.driver, i.driver_info).trim().to_string(),
                // What `bench` needs to time on the device.
                "timestamps": ad.features().contains(
                    wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
                ),
                "limits": {
                    "max_storage_buffer_binding_size": l.max_storage_buffer_binding_size,
                    "max_buffer_size": l.max_buffer_size,
                    "max_storage_buffers_per_shader_stage": l.max_storage_buffers_per_shader_stage,
                    "max_compute_workgroups_per_dimension": l.max_compute_workgroups_per_dimension,
                    "min_storage_buffer_offset_alignment": l.min_storage_buffer_offset_alignment,
                    "max_compute_invocations_per_workgroup": l.max_compute_invocations_per_workgroup,
                    "max_compute_workgroup_storage_size": l.max_compute_workgroup_storage_size,
                }
            })
        })
        .collect();
    if a.json {
        say!("{}", json!({ "adapters": rows }));
    } else if rows.is_empty() {
        say!("no adapters found (install mesa-vulkan-drivers for lavapipe, or a GPU driver)");
    } else {
        for r in &rows {
            say!(
                "[{}] {} ({}) {} — driver: {}",
                r["index"],
                r["name"].as_str().unwrap_or(""),
                r["backend"].as_str().unwrap_or(""),
                r["device_type"].as_str().unwrap_or(""),
                r["driver"].as_str().unwrap_or("")
            );
            for (k, v) in r["limits"].as_object().into_iter().flatten() {
                say!("    {k:<40} {v}");
            }
            say!(
                "    {:<40} {}",
                "timestamps (bench's device time)",
                r["timestamps"]
            );
        }
    }
    Ok(if rows.is_empty() {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}
