//! The concat's gather dispatch ([`Schedule::Join`]): the split's byte rows read the other
//! way. Pure arithmetic, tested without a device.
//!
//! The destination is the concat's output, `rows` rows of `stride` bytes (the plan's
//! [`ByteRows`], whose "input" is the concat's output); each part (a concat input) is a
//! column band of those rows, a segment, and its rows lie back to back in the source. Entry 0
//! of the table is the dispatch's header, entries 1 and on its segments in column order:
//!
//! | entry field | header (entry 0) | segment |
//! | --- | --- | --- |
//! | `block_start` | units the dispatch writes | 0 |
//! | `dst_unit` | first unit it writes | 0 |
//! | `first_byte` | 0 | first column in an output row |
//! | `out_bytes` | bytes of the output | 0 |
//! | `row_bytes` | bytes of one output row | bytes of one part row |
//! | `src_stride` | 0 | bytes between the part's rows in the source |
//! | `src_offset` | 0 | source offset of the part's row 0 |
//! | `mode` | 0 | the segment's [`Mode`] |

use super::abi::{binding_bytes, Entry, Mode, Params, Schedule, UNIT_BYTES, WORKGROUP_SIZE};
use super::blocks::{GatherTuning, MIN_RUN_UNITS};
use super::dispatches::Dispatch;
use super::modes::GatherMode;
use crate::error::{Result, SplitError};
use crate::gpu::placement::OutputLayout;
use crate::plan::bytes::ByteRows;

/// Workgroups a concat is spread over on a CPU adapter, at least, when its lanes' runs stay
/// long enough: more than the threads of the machines measured (`docs/performance.md`).
const CPU_WORKGROUPS: u64 = 8;

/// One part a dispatch writes: its position in `ByteRows::outputs` and where its bytes start
/// in the dispatch's source window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JoinPart {
    /// Position in the byte rows' non-empty outputs.
    pub position: usize,
    /// Source byte offset of its first row, in the source window.
    pub src: u64,
}

/// Every non-empty part of `bytes`, in one source window where `layout` places them (as
/// `Inputs::Region` and `Inputs::Placed` do).
pub fn join_parts(bytes: &ByteRows, layout: &OutputLayout) -> Vec<JoinPart> {
    bytes
        .outputs
        .iter()
        .enumerate()
        .map(|(position, o)| JoinPart {
            position,
            src: layout.ranges[o.output].offset,
        })
        .collect()
}

/// The dispatch that writes `parts` (in column order) into the output of `bytes`, reading a
/// source window of `src_bytes` bytes. Errors where the output or the window exceeds one
/// binding (`window_limit`), or a byte count the shader's u32 arithmetic cannot hold.
pub fn join_dispatch(
    bytes: &ByteRows,
    parts: &[JoinPart],
    src_bytes: u64,
    tuning: GatherTuning,
    window_limit: u64,
) -> Result<Dispatch> {
    let output = bytes.input_bytes();
    for (what, size) in [("output", output), ("source window", src_bytes)] {
        if binding_bytes(size) > window_limit {
            return Err(SplitError::TooLarge(format!(
                "a concat's {what} of {size} bytes exceeds one storage binding of \
                 {window_limit} bytes (the device's max_storage_buffer_binding_size, at most \
                 2 GiB)"
            )));
        }
    }
    let segments: Vec<Entry> = parts
        .iter()
        .map(|p| {
            let o = &bytes.outputs[p.position];
            let mode = Mode::of(o.offset | o.row_bytes | p.src | bytes.stride);
            Entry {
                block_start: 0,
                dst_unit: 0,
                first_byte: o.offset as u32,
                out_bytes: 0,
                row_bytes: o.row_bytes as u32,
                src_stride: o.row_bytes as u32,
                src_offset: p.src as u32,
                mode: mode as u32,
            }
        })
        .collect();
    // The units from the one holding the first segment's row-0 byte to the one holding the
    // last segment's last byte.
    let (first, end) = match (parts.first(), parts.last()) {
        (Some(a), Some(z)) => {
            let last = &bytes.outputs[z.position];
            (
                bytes.outputs[a.position].offset,
                (bytes.rows - 1) * bytes.stride + last.offset + last.row_bytes,
            )
        }
        _ => (0, 0),
    };
    let first_unit = first / UNIT_BYTES;
    let units = end.div_ceil(UNIT_BYTES) - first_unit;
    let (steps, interleaved) = match tuning.mode {
        // A run of units per lane, over at least CPU_WORKGROUPS workgroups where the runs
        // stay MIN_RUN_UNITS long: a CPU adapter runs each workgroup on one thread.
        GatherMode::Cpu => (
            units
                .div_ceil(CPU_WORKGROUPS * WORKGROUP_SIZE)
                .max(MIN_RUN_UNITS)
                .clamp(1, tuning.max_steps_per_lane.max(1)),
            0,
        ),
        _ => (
            units
                .div_ceil(WORKGROUP_SIZE)
                .clamp(1, tuning.max_steps_per_lane.max(1)),
            1,
        ),
    };
    let header = Entry {
        block_start: units as u32,
        dst_unit: first_unit as u32,
        first_byte: 0,
        out_bytes: output as u32,
        row_bytes: bytes.stride as u32,
        src_stride: 0,
        src_offset: 0,
        mode: 0,
    };
    let mut entries = Vec::with_capacity(segments.len() + 1);
    entries.push(header);
    entries.extend(segments);
    Ok(Dispatch {
        src_offset: 0,
        src_size: binding_bytes(src_bytes),
        dst_offset: 0,
        dst_size: binding_bytes(output),
        params: Params {
            num_blocks: units.div_ceil(steps * WORKGROUP_SIZE) as u32,
            num_entries: entries.len() as u32,
            steps_per_lane: steps as u32,
            schedule: Schedule::Join as u32,
            tile_rows: 0,
            rows: 0,
            num_lanes: 0,
            interleaved,
        },
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::splitter::gather_defaults;
    use crate::ops;

    fn gpu() -> GatherTuning {
        gather_defaults(wgpu::DeviceType::DiscreteGpu, wgpu::Backend::Vulkan)
    }

    #[test]
    fn segments_follow_the_columns_and_the_header_the_output() {
        // Two f16 inputs [1, 2, 3, 4] and [1, 2, 1, 4] on axis 2: rows of 24 and 8 bytes in
        // an output of 2 rows of 32.
        let plan = ops::concat(&[[1, 2, 3, 4], [1, 2, 1, 4]], 2).unwrap();
        let bytes = ByteRows::new(&plan, 2).unwrap();
        let parts = [
            JoinPart {
                position: 0,
                src: 0,
            },
            JoinPart {
                position: 1,
                src: 48,
            },
        ];
        let d = join_dispatch(&bytes, &parts, 64, gpu(), 1 << 27).unwrap();
        let h = d.entries[0];
        assert_eq!(
            (h.block_start, h.dst_unit, h.out_bytes, h.row_bytes),
            (4, 0, 64, 32)
        );
        let cols: Vec<(u32, u32, u32, u32)> = d.entries[1..]
            .iter()
            .map(|e| (e.first_byte, e.row_bytes, e.src_offset, e.mode))
            .collect();
        assert_eq!(
            cols,
            vec![
                (0, 24, 0, Mode::Word as u32),
                (24, 8, 48, Mode::Word as u32)
            ]
        );
        assert_eq!((d.params.num_blocks, d.params.num_entries), (1, 3));
        assert_eq!(d.params.schedule, Schedule::Join as u32);
        // One part alone: the units from its first byte's to its last byte's.
        let d = join_dispatch(&bytes, &parts[1..], 16, gpu(), 1 << 27).unwrap();
        assert_eq!((d.entries[0].dst_unit, d.entries[0].block_start), (1, 3));
    }

    #[test]
    fn an_output_past_one_binding_is_refused() {
        let plan = ops::concat(&[[1 << 20], [1 << 20]], 0).unwrap();
        let bytes = ByteRows::new(&plan, 4).unwrap();
        let part = JoinPart {
            position: 0,
            src: 0,
        };
        let e = join_dispatch(&bytes, &[part], 4 << 20, gpu(), 1 << 22).unwrap_err();
        assert!(e.to_string().contains("output of 8388608 bytes"), "{e}");
    }
}
