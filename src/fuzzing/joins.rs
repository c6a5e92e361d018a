//! A concat's join dispatches: what each numbers and keeps ([`check_join`]), and what they
//! write, byte by byte, past one binding ([`check_join_windows`]).

use super::input::PlannerInput;
use super::routes::check_rows;
use super::shader;
use crate::gpu::gather::abi::{EntryPoint, JoinHeader, JoinTable, Segment, Table};
use crate::gpu::gather::dispatches::GatherTuning;
use crate::gpu::gather::{join_dispatch, join_parts, plan_joins, Band, Dispatch, JoinPart};
use crate::gpu::placement::PartLayout;
use crate::plan::bytes::ByteRows;

/// A concat's dispatch of all its parts, and of some of them (one buffer's inputs among
/// several: every other part, the first, the last), numbers every unit holding their bytes
/// exactly once, and its segments lie inside their rows and their source window.
pub(super) fn check_join(
    input: &PlannerInput,
    bytes: &ByteRows,
    layout: &PartLayout,
    tuning: GatherTuning,
) {
    let all = join_parts(bytes, layout);
    let subsets: [&dyn Fn(usize) -> bool; 4] = [&|_| true, &|i| i % 2 == 1, &|i| i == 0, &|i| {
        i + 1 == all.len()
    }];
    for keep in subsets {
        let parts: Vec<JoinPart> = (0..all.len())
            .filter(|&i| keep(i))
            .map(|i| all[i])
            .collect();
        let Ok(d) = join_dispatch(bytes, &parts, &[layout.total_bytes], tuning, 1 << 31) else {
            return;
        };
        check_join_dispatch(input, bytes, &parts, &d);
    }
}

/// [`check_join`] of one dispatch of `parts`; the checks walk every unit, so outputs up to
/// 16 MiB.
fn check_join_dispatch(input: &PlannerInput, bytes: &ByteRows, parts: &[JoinPart], d: &Dispatch) {
    if let Err(refusal) = d.gate() {
        panic!("{input:?}: {d:?}: {refusal}");
    }
    if bytes.input_bytes() > 1 << 24 {
        return;
    }
    let Table::Join(JoinTable {
        header: h,
        segments,
    }) = &d.table
    else {
        return check_aligned_rows(input, bytes, parts, d);
    };
    let p = d.params;
    // Each segment's parts, side by side: every part, in order, from its own source bytes.
    let expanded = expand(segments);
    assert_eq!(expanded.len(), parts.len(), "{input:?}");
    for ((_, _, src), part) in expanded.iter().zip(parts) {
        assert_eq!(*src, part.src, "{input:?}");
    }
    let lanes = d.program.workgroup_size();
    if segments.is_empty() {
        return;
    }
    let numbered = h.units as u64;
    // A lane's step is a unit, or the channels' group of rows: a unit of each part.
    let step_units = match d.program.channels {
        Some(_) => segments[0].count as u64,
        None => 1,
    };
    let block_units = p.steps_per_lane as u64 * lanes * step_units;
    assert!(p.num_blocks as u64 * block_units >= numbered, "{input:?}");
    let unit = |v: u64| numbered_unit(h, bytes.stride, v);
    // Each output unit numbered at most once; `below[u]` counts those numbered before `u`.
    let mut seen = vec![false; bytes.input_bytes().div_ceil(16) as usize];
    for u in (0..numbered).filter_map(unit) {
        let slot = seen.get_mut(u as usize);
        assert!(
            slot.as_ref().is_some_and(|s| !**s),
            "{input:?}: unit {u} twice or past the end"
        );
        if let Some(s) = slot {
            *s = true;
        }
    }
    let below: Vec<u64> = std::iter::once(0)
        .chain(seen.iter().scan(0u64, |n, &s| {
            *n += u64::from(s);
            Some(*n)
        }))
        .collect();
    let mut column = 0u64;
    for &(first_byte, row_bytes, src) in &expanded {
        assert!(first_byte >= column, "{input:?}");
        column = first_byte + row_bytes;
        assert!(column <= bytes.stride, "{input:?}");
        let end = src + bytes.rows * row_bytes;
        assert!(end <= d.src_size, "{input:?}");
        for row in 0..bytes.rows {
            let at = row * bytes.stride + first_byte;
            let (first, last) = (at / 16, (at + row_bytes - 1) / 16);
            let numbered = below[last as usize + 1] - below[first as usize];
            assert_eq!(
                numbered,
                last - first + 1,
                "{input:?}: row {row} not all numbered"
            );
        }
    }
}

/// The concat of the parts `layout` packs in one region, planned ([`plan_joins`]) for windows
/// of `limit` bytes at `align`: every dispatch's windows lie at the alignment, within the limit
/// and inside the region and the output, and, running each dispatch's numbered units byte by
/// byte as the shader does, every output byte of a part is written once, from its source byte,
/// and no other byte at all. Outputs up to 1 MiB.
pub(super) fn check_join_windows(
    input: &PlannerInput,
    bytes: &ByteRows,
    layout: &PartLayout,
    tuning: GatherTuning,
    limit: u64,
    align: u64,
) {
    let output = bytes.input_bytes();
    if output > 1 << 20 {
        return;
    }
    let parts = join_parts(bytes, layout);
    let Ok(dispatches) = plan_joins(bytes, &parts, tuning, limit, align) else {
        return;
    };
    // The source byte each output byte was written from.
    let mut written = vec![u64::MAX; output as usize];
    for d in &dispatches {
        run_join(input, d, limit, align, &mut written);
        assert!(
            d.src_offset + d.src_size <= layout.total_bytes.next_multiple_of(4),
            "{input:?}"
        );
        assert!(
            d.dst_offset + d.dst_size <= output.next_multiple_of(4),
            "{input:?}"
        );
    }
    let mut expected = vec![u64::MAX; output as usize];
    for o in &bytes.outputs {
        let src = layout.ranges[o.output].offset;
        for row in 0..bytes.rows {
            for x in 0..o.row_bytes {
                expected[(row * bytes.stride + o.offset + x) as usize] =
                    src + row * o.row_bytes + x;
            }
        }
    }
    if let Some(b) = (0..written.len()).find(|&b| written[b] != expected[b]) {
        panic!(
            "{input:?}: output byte {b} from source byte {} (expected {}) in windows of {limit}",
            written[b] as i64, expected[b] as i64
        );
    }
}

/// Runs join dispatch `d` byte by byte into `written` (output byte -> source byte, both in
/// the whole regions), checking its windows.
fn run_join(input: &PlannerInput, d: &Dispatch, limit: u64, align: u64, written: &mut [u64]) {
    assert!(
        d.src_size <= limit && d.dst_size <= limit,
        "{input:?}: {d:?}"
    );
    assert_eq!(d.src_offset % align, 0, "{input:?}");
    assert_eq!(d.dst_offset % align, 0, "{input:?}");
    if let Err(refusal) = d.gate() {
        panic!("{input:?}: {d:?}: {refusal}");
    }
    let Table::Join(JoinTable {
        header: h,
        segments,
        ..
    }) = &d.table
    else {
        return run_aligned_rows(input, d, written);
    };
    let parts = expand(segments);
    let stride = h.row_bytes as u64;
    for v in 0..h.units as u64 {
        let Some(u) = numbered_unit(h, stride, v) else {
            continue;
        };
        for b in u * 16..(u * 16 + 16).min(h.end_byte as u64) {
            let (row, c) = (b / stride, b % stride);
            let k = parts.partition_point(|&(first, _, _)| first <= c);
            let Some((first, w, src)) = k.checked_sub(1).map(|k| parts[k]) else {
                continue;
            };
            if c - first >= w {
                continue;
            }
            // As the shader sums it: u32 that wraps.
            let s = (src as u32)
                .wrapping_add((row * w) as u32)
                .wrapping_add((c - first) as u32) as u64;
            assert!(s < d.src_size && b < d.dst_size, "{input:?}: {d:?}");
            let slot = &mut written[(d.dst_offset + b) as usize];
            assert_eq!(
                *slot,
                u64::MAX,
                "{input:?}: output byte {} twice",
                d.dst_offset + b
            );
            *slot = d.src_offset + s;
        }
    }
}

/// A concat's dispatch through the split's rows: only where every part is aligned and read
/// through binding 0, in `main_rows vec4`, its entries' rows a row of the output apart in the
/// destination, writing the parts' bytes in all (which bytes: [`run_aligned_rows`]).
fn check_aligned_rows(input: &PlannerInput, bytes: &ByteRows, parts: &[JoinPart], d: &Dispatch) {
    assert_eq!(d.program.entry, EntryPoint::RowsVec4, "{input:?}");
    assert!(parts.iter().all(|p| p.binding == 0), "{input:?}");
    let entries = d.entries();
    assert!(entries.len() <= parts.len(), "{input:?}");
    for e in entries {
        assert!(e.is_vec4(), "{input:?}");
        assert_eq!(e.dst_stride as u64, bytes.stride, "{input:?}");
    }
    let written: u64 = entries.iter().map(|e| e.out_bytes as u64).sum();
    let parts_bytes: u64 = parts
        .iter()
        .map(|p| bytes.rows * bytes.outputs[p.position].row_bytes)
        .sum();
    assert_eq!(written, parts_bytes, "{input:?}");
}

/// [`run_join`] of a dispatch through the split's rows: each entry's byte `b`, of row `r`
/// and column `c`, from source byte `src_offset + r * src_stride + c` to destination byte
/// `16 * dst_unit + r * dst_stride + c`.
fn run_aligned_rows(input: &PlannerInput, d: &Dispatch, written: &mut [u64]) {
    for e in d.entries() {
        check_rows(input, e, d.src_size);
        for b in 0..e.out_bytes {
            // As the shader finds it: u32 sums that wrap.
            let at = shader::place(e, e.first_byte + b);
            let s = at.src as u64;
            let t = 16 * e.dst_unit as u64 + at.dst as u64;
            assert!(s < d.src_size && t < d.dst_size, "{input:?}: {d:?}");
            let slot = &mut written[(d.dst_offset + t) as usize];
            assert_eq!(*slot, u64::MAX, "{input:?}: output byte twice");
            *slot = d.src_offset + s;
        }
    }
}

/// The parts of a join dispatch's `segments`, side by side in each: (first column, bytes per
/// row, source offset of row 0), as the shader's `part_of` finds them.
fn expand(segments: &[Segment]) -> Vec<(u64, u64, u64)> {
    segments
        .iter()
        .flat_map(|e| {
            (0..e.count as u64).map(move |j| {
                (
                    e.first_byte as u64 + j * e.row_bytes as u64,
                    e.row_bytes as u64,
                    // The shader's u32 sum.
                    e.src_offset
                        .wrapping_add((j as u32).wrapping_mul(e.part_step))
                        as u64,
                )
            })
        })
        .collect()
}

/// The output unit of a join dispatch's numbered unit `v`, as its header `h` says (the
/// shader's `join_unit_at`): every unit from the first, or a band's (None past a row's band).
fn numbered_unit(h: &JoinHeader, stride: u64, v: u64) -> Option<u64> {
    if h.band_units == 0 {
        return Some(h.first_unit as u64 + v);
    }
    let band = Band {
        first: h.band_first as u64,
        width: h.band_width as u64,
        units_per_row: h.band_units as u64,
    };
    band.unit(stride, v)
}
