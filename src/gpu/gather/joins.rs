//! The concat's gather dispatch ([`Schedule::Join`]): the split's byte rows read the other
//! way. Pure arithmetic, tested without a device.
//!
//! The destination is the concat's output, `rows` rows of `stride` bytes (the plan's
//! [`ByteRows`], whose "input" is the concat's output); each part (a concat input) is a
//! column band of those rows, a segment, and its rows lie back to back in the source. Entry 0
//! of the table is the dispatch's header, entries 1 and on its segments in column order, then
//! one record per block (workgroup): the segments its columns touch, which its lanes keep at
//! hand in workgroup memory, so a block reads each of them once from the table.
//!
//! | entry field | header (entry 0) | segment | block record |
//! | --- | --- | --- | --- |
//! | `block_start` | units the dispatch writes | 0 | first segment kept |
//! | `dst_unit` | first unit it writes | 0 | segments kept (0: none, search the table) |
//! | `first_byte` | first block record (1 + segments) | first column in an output row | 0 |
//! | `out_bytes` | bytes of the output | 0 | 0 |
//! | `row_bytes` | bytes of one output row | bytes of one part row | 0 |
//! | `src_stride` | 0 | bytes between the part's rows in the source | 0 |
//! | `src_offset` | 0 | source offset of the part's row 0 | 0 |
//! | `mode` | 0 | the segment's [`Mode`] | 0 |

use super::abi::{
    binding_bytes, Entry, Mode, Params, Schedule, STAGE_WORDS, UNIT_BYTES, WORKGROUP_SIZE,
};
use super::blocks::{GatherTuning, MIN_RUN_UNITS};
use super::dispatches::Dispatch;
use super::modes::GatherMode;
use crate::error::{Result, SplitError};
use crate::gpu::placement::OutputLayout;
use crate::plan::bytes::ByteRows;
use bytemuck::Zeroable;

/// Workgroups a concat is spread over on a CPU adapter, at least, when its lanes' runs stay
/// long enough: more than the threads of the machines measured (`docs/performance.md`).
const CPU_WORKGROUPS: u64 = 8;

/// Segments a block keeps at hand, at most: one per lane, so one step loads them, three words
/// each in the shader's `stage`. A block whose columns touch more searches the table.
const MAX_KEPT_SEGMENTS: u64 = WORKGROUP_SIZE;
const _: () = assert!(3 * MAX_KEPT_SEGMENTS <= STAGE_WORDS);

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
    let num_blocks = units.div_ceil(steps * WORKGROUP_SIZE);
    let header = Entry {
        block_start: units as u32,
        dst_unit: first_unit as u32,
        first_byte: 1 + segments.len() as u32,
        out_bytes: output as u32,
        row_bytes: bytes.stride as u32,
        src_stride: 0,
        src_offset: 0,
        mode: 0,
    };
    let columns: Vec<u64> = segments.iter().map(|e| e.first_byte as u64).collect();
    let records = (0..num_blocks).map(|block| {
        // The block's bytes of the output, `from .. to`.
        let from = (first_unit + block * steps * WORKGROUP_SIZE) * UNIT_BYTES;
        let to = ((first_unit + ((block + 1) * steps * WORKGROUP_SIZE).min(units)) * UNIT_BYTES)
            .min(output);
        let (first, count) = kept_segments(&columns, bytes.stride, from, to);
        Entry {
            block_start: first as u32,
            dst_unit: count as u32,
            ..Entry::zeroed()
        }
    });
    let mut entries = Vec::with_capacity(1 + segments.len() + num_blocks as usize);
    entries.push(header);
    entries.extend(segments);
    entries.extend(records);
    Ok(Dispatch {
        src_offset: 0,
        src_size: binding_bytes(src_bytes),
        dst_offset: 0,
        dst_size: binding_bytes(output),
        params: Params {
            num_blocks: num_blocks as u32,
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

/// The segments a block writing output bytes `from .. to` keeps at hand, as (first, count) in
/// table entries (segment `i` of `columns`, its first columns, is entry `i + 1`): the segments
/// from the one at or before its first column to the one at or before its last, or all of
/// them where its bytes cross a row's end. Every column the block writes then lies in a kept
/// segment, after the last one, or before the first one where that is segment 1: its lanes
/// need look at no other. (0, 0) where that is more than [`MAX_KEPT_SEGMENTS`] or nothing.
fn kept_segments(columns: &[u64], stride: u64, from: u64, to: u64) -> (u64, u64) {
    if columns.is_empty() || to <= from {
        return (0, 0);
    }
    let (first, count) = if from / stride == (to - 1) / stride {
        // Entry of the last segment at or before column `c`, at least 1.
        let at = |c: u64| (columns.partition_point(|&s| s <= c) as u64).max(1);
        let first = at(from % stride);
        (first, at((to - 1) % stride) - first + 1)
    } else {
        (1, columns.len() as u64)
    };
    if count > MAX_KEPT_SEGMENTS {
        return (0, 0);
    }
    (first, count)
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
            (
                h.block_start,
                h.dst_unit,
                h.first_byte,
                h.out_bytes,
                h.row_bytes
            ),
            (4, 0, 3, 64, 32)
        );
        let cols: Vec<(u32, u32, u32, u32)> = d.entries[1..3]
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
        assert_eq!((d.params.num_blocks, d.params.num_entries), (1, 4));
        assert_eq!(d.params.schedule, Schedule::Join as u32);
        // The one block crosses a row's end: it keeps both segments.
        assert_eq!((d.entries[3].block_start, d.entries[3].dst_unit), (1, 2));
        // One part alone: the units from its first byte's to its last byte's.
        let d = join_dispatch(&bytes, &parts[1..], 16, gpu(), 1 << 27).unwrap();
        assert_eq!((d.entries[0].dst_unit, d.entries[0].block_start), (1, 3));
    }

    #[test]
    fn blocks_keep_the_segments_their_columns_touch() {
        // Segments at columns 0, 100 and 200 of rows of 300 bytes (a gap at 150 .. 200).
        let columns = [0, 100, 200];
        let kept = |from, to| kept_segments(&columns, 300, from, to);
        assert_eq!(kept(0, 16), (1, 1));
        assert_eq!(kept(96, 112), (1, 2));
        assert_eq!(kept(160, 176), (2, 1), "in the gap after segment 2");
        assert_eq!(kept(192, 208), (2, 2));
        assert_eq!(kept(288, 304), (1, 3), "across a row's end: all of them");
        assert_eq!(kept(0, 0), (0, 0));
        // Before the first segment: segment 1 is kept, for the gap's end.
        assert_eq!(kept_segments(&[64], 128, 0, 16), (1, 1));
        // More than a block keeps: none, the lanes search the table.
        let many: Vec<u64> = (0..1000).map(|i| 4 * i).collect();
        assert_eq!(kept_segments(&many, 4000, 0, 1024), (1, 256));
        assert_eq!(kept_segments(&many, 4000, 0, 1028), (0, 0));
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
