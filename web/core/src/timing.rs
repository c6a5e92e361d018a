//! The benchmark suite's cases as recordings for the JavaScript driver to time
//! ([`suite_recordings`]): each packed case of at most 64 MiB, its parts in one region.

use crate::{parts_recording, Device};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use wgsl_split::planner::Direction;
use wgsl_split::suite::{standard_suite, Layout};

/// Cases whose whole tensor is larger than this are left out, as the page's other timings
/// leave them out.
const MOST_BYTES: usize = 64 << 20;

/// The suite's cases with their parts in one region, for `device` (as [`crate::Jobs::new`]
/// takes it), as a JSON array: each case's `name`, `op`, `dtype`, `shape`, `bytes` (of the
/// whole tensor), `recording` (routed as wgpu-split routes it by default: buffer copies
/// where they are cheaper on a CPU, else the gather; the whole tensor and the parts each at
/// the start of a buffer), and the bytes of its `whole` buffer and of its `parts` buffer.
/// The cases through views are left out.
#[wasm_bindgen]
pub fn suite_recordings(device: &str) -> Result<String, String> {
    let device = Device::from_json(device)?;
    let mut cases = Vec::new();
    for case in standard_suite() {
        let bytes = case.bytes().map_err(|e| e.to_string())?;
        if case.layout != Layout::Packed || bytes > MOST_BYTES || bytes == 0 {
            continue;
        }
        let plan = case.plan().map_err(|e| e.to_string())?;
        let direction = match case.concat {
            true => Direction::Concat,
            false => Direction::Split,
        };
        let (recording, layout) =
            parts_recording(direction, &plan, case.dtype, &device, device.cpu, (0, 0))
                .map_err(|e| format!("{}: {e}", case.name))?;
        cases.push(json!({
            "name": case.name,
            "op": case.op_name(),
            "dtype": case.dtype.name(),
            "shape": case.shape,
            "bytes": bytes,
            "recording": recording,
            "whole": (bytes as u64).next_multiple_of(16),
            "parts": layout.total_bytes.next_multiple_of(16),
        }));
    }
    Ok(Value::Array(cases).to_string())
}
