//! What every route must keep, whatever the split: each command stays inside its buffers, and
//! every output byte is written exactly once, from the input byte the plan says.

use super::input::PlannerInput;
use super::shader;
use crate::gpu::gather::abi::{binding_bytes, Entry, Table, MAX_WINDOW};
use crate::gpu::gather::dispatches::{multi_output_dispatch, Dispatch};
use crate::gpu::placement::PartLayout;
use crate::gpu::planner::{BufferCopy, DeviceCaps, Regions, Route};
use crate::plan::bytes::{ByteRows, OutputRows, RowKind};
use crate::GatherMode;

/// The split a route is checked against.
pub(super) struct RouteCheck<'a> {
    pub(super) input: &'a PlannerInput,
    pub(super) bytes: &'a ByteRows,
    pub(super) layout: &'a PartLayout,
}

/// The output bytes written so far, as `(start, end)` offsets in the output region.
struct Coverage<'a> {
    check: &'a RouteCheck<'a>,
    /// `(offset, end)` of each non-empty output in the region, in order, beside its rows.
    outputs: Vec<(u64, u64, &'a OutputRows)>,
    written: Vec<(u64, u64)>,
}

impl<'a> Coverage<'a> {
    fn new(check: &'a RouteCheck<'a>) -> Self {
        let outputs = check
            .bytes
            .outputs
            .iter()
            .map(|o| {
                let r = check.layout.ranges[o.output];
                (r.offset, r.offset + r.size, o)
            })
            .collect();
        Self {
            check,
            outputs,
            written: Vec::new(),
        }
    }

    /// The non-empty output holding region byte `dst`: its start, end and rows.
    fn output_at(&self, dst: u64) -> (u64, u64, &'a OutputRows) {
        let i = self.outputs.partition_point(|&(start, _, _)| start <= dst);
        assert!(
            i > 0,
            "a command writes before every output: {:?}",
            self.check.input
        );
        self.outputs[i - 1]
    }

    /// Records a command that writes region bytes `[dst, dst + len)`, all of one output (no
    /// route writes a byte outside the outputs). Returns that output's rows and the offset of
    /// `dst` within the output.
    fn write(&mut self, dst: u64, len: u64) -> (&'a OutputRows, u64) {
        let input = self.check.input;
        assert!(
            dst + len <= self.check.layout.total_bytes,
            "a command writes past the output region: {input:?}"
        );
        let (start, end, rows) = self.output_at(dst);
        assert!(
            dst + len <= end,
            "a command runs past its output: {input:?}"
        );
        self.written.push((dst, dst + len));
        (rows, dst - start)
    }

    /// Every output byte was written, none twice.
    fn finish(mut self) {
        let input = self.check.input;
        self.written.sort_unstable();
        for w in self.written.windows(2) {
            assert!(w[0].1 <= w[1].0, "output bytes written twice: {input:?}");
        }
        let total: u64 = self.written.iter().map(|(s, e)| e - s).sum();
        let want: u64 = self.outputs.iter().map(|(s, e, _)| e - s).sum();
        assert_eq!(
            total, want,
            "every output byte must be written once: {input:?}"
        );
    }
}

impl RouteCheck<'_> {
    /// The input byte of byte `b` of output `o`, for an input region at byte `base`.
    fn source(&self, base: u64, o: &OutputRows, b: u64) -> u64 {
        base + self.bytes.source_of(o, b)
    }

    /// Buffer copies: word-aligned, inside both buffers, each a run that is contiguous in the
    /// input and in the output.
    pub(super) fn buffer_copies(&self, copies: &[BufferCopy], regions: &Regions) {
        let input = self.input;
        let binding = regions.input_offset + binding_bytes(self.bytes.input_bytes());
        let mut coverage = Coverage::new(self);
        for c in copies {
            assert!(
                c.src.is_multiple_of(4)
                    && c.dst.is_multiple_of(4)
                    && c.size.is_multiple_of(4)
                    && c.size > 0,
                "{input:?} {c:?}"
            );
            assert!(
                c.src + c.size <= binding,
                "a copy reads past the input: {input:?} {c:?}"
            );
            // A copy may cover several outputs that lie back to back: walk them.
            let mut done = 0;
            while done < c.size {
                let dst = c.dst - regions.output_offset + done;
                let (start, end, o) = coverage.output_at(dst);
                assert!(
                    dst < end,
                    "a copy writes outside the outputs: {input:?} {c:?}"
                );
                let b0 = dst - start;
                let useful = (self.bytes.size(o) - b0).min(c.size - done);
                coverage.write(dst, useful);
                let (first, last) = (b0, b0 + useful - 1);
                if self.bytes.kind == RowKind::Strided {
                    assert_eq!(first / o.row_bytes, last / o.row_bytes, "{input:?} {c:?}");
                }
                let base = regions.input_offset;
                assert_eq!(c.src + done, self.source(base, o, first), "{input:?} {c:?}");
                assert_eq!(
                    c.src + done + useful - 1,
                    self.source(base, o, last),
                    "{input:?}"
                );
                done += useful;
            }
        }
        coverage.finish();
    }

    /// Gather dispatches: windows inside both buffers and within the binding limit, and each
    /// entry's first and last bytes read from the right input bytes.
    pub(super) fn dispatches(&self, dispatches: &[Dispatch], window: u64) {
        let input = self.input;
        let binding = binding_bytes(self.bytes.input_bytes());
        let mut coverage = Coverage::new(self);
        for d in dispatches {
            assert!(d.src_offset + d.src_size <= binding, "{input:?} {d:?}");
            assert!(
                d.dst_offset + d.dst_size <= self.layout.total_bytes,
                "{input:?} {d:?}"
            );
            assert!(
                d.src_size <= window && d.dst_size <= window,
                "{input:?} {d:?}"
            );
            // Every table passes the gate of the trusted module.
            if let Err(refusal) = d.gate() {
                panic!("{input:?}: {d:?}: {refusal}");
            }
            // The channels: lanes in whole workgroups, whose steps take every group of rows (a
            // unit of each part).
            if let (Some(_), Some(e)) = (d.program.channels, d.entries().first()) {
                let groups = e.out_bytes.div_ceil(16) as u64;
                let p = d.params;
                let lanes = p.num_blocks as u64 * d.program.workgroup_size();
                assert!(lanes * p.steps_per_lane as u64 >= groups, "{input:?}");
                assert!(lanes >= p.num_lanes as u64, "{input:?}");
            }
            for e in d.entries() {
                // A split's entry writes one range of its output.
                assert_eq!(e.dst_stride, e.row_bytes, "{input:?} {e:?}");
                let dst = d.dst_offset + e.dst_unit as u64 * 16;
                let out = e.out_bytes as u64;
                // Byte `b` of the entry comes from window byte `source(b)`, as the shader's
                // wrapping u32 sums find it, every row's start as each loop steps to it.
                check_rows(input, e, d.src_size);
                let source = |b: u64| shader::place(e, b as u32).src as u64;
                let first = e.first_byte as u64;
                // Windows are relative to the input region.
                let at = |b| d.src_offset + source(b);
                // An entry may cover several outputs that lie back to back: walk them.
                let mut done = 0;
                while done < out {
                    let (start, end, o) = coverage.output_at(dst + done);
                    let b0 = dst + done - start;
                    let useful = (end - (dst + done)).min(out - done);
                    // The shader writes no byte past an output (`store_unit_n`).
                    coverage.write(dst + done, useful);
                    let (f, l) = (first + done, first + done + useful - 1);
                    assert_eq!(at(f), self.source(0, o, b0), "{input:?} {d:?}");
                    assert_eq!(at(l), self.source(0, o, b0 + useful - 1), "{input:?}");
                    done += useful;
                }
            }
        }
        coverage.finish();
    }

    /// A dispatch of the multi-output build with the non-empty outputs dealt, in order, into
    /// `groups` bindings, each binding's window starting at its first output: read back into
    /// the one output region (binding `j`'s units from its window's start), it must be what
    /// [`RouteCheck::dispatches`] expects of any gather.
    pub(super) fn multi_output(&self, groups: usize, mode: GatherMode) {
        let outputs = &self.bytes.outputs;
        if outputs.is_empty() || self.layout.total_bytes > MAX_WINDOW {
            return;
        }
        let per = outputs.len().div_ceil(groups);
        let mut local = self.layout.clone();
        let mut bindings = vec![0u32; self.layout.ranges.len()];
        let mut bases = Vec::new();
        for (k, o) in outputs.iter().enumerate() {
            let j = k / per;
            if bases.len() == j {
                bases.push(self.layout.ranges[o.output].offset);
            }
            bindings[o.output] = j as u32;
            local.ranges[o.output].offset -= bases[j];
        }
        let tuning = super::tuning(mode, 4);
        let Ok(mut d) = multi_output_dispatch(self.bytes, &local, &bindings, tuning, MAX_WINDOW)
        else {
            panic!("the multi-output dispatch of {:?} failed", self.input);
        };
        if let Err(refusal) = d.gate() {
            panic!("{:?}: {d:?}: {refusal}", self.input);
        }
        let Table::Split(entries) = &mut d.table else {
            panic!("the multi-output dispatch of {:?} is a split's", self.input);
        };
        // Each entry's binding as its window's place in the one output region.
        for e in entries {
            e.dst_unit += (bases[e.binding as usize] / 16) as u32;
            e.binding = 0;
        }
        d.dst_size = self.layout.total_bytes;
        self.dispatches(&[d], MAX_WINDOW);
    }

    /// Whatever [`crate::gpu::planner::choose`] picked, checked as its kind is.
    pub(super) fn route(&self, route: &Route, caps: &DeviceCaps, regions: &Regions) {
        match route {
            Route::BufferCopies(copies) => {
                assert!(
                    caps.buffer_copies,
                    "buffer copies where the caps allow none"
                );
                self.buffer_copies(copies, regions)
            }
            Route::Gather(d) => self.dispatches(d, caps.window_limit),
        }
    }
}

/// Rows checked at an entry's start and at its end (its rows between step alike).
const CHECKED_ROWS: u64 = 16;

/// Rows of entry `e` (its first and last [`CHECKED_ROWS`]) read, by `place`, their bytes of
/// the entry (from its first byte past `skip` to its end) inside the window of `src_size`
/// bytes, and every loop of the shader steps from one row to the next's first byte there
/// ([`shader::next_row_sources`]): u32 sums that wrap, as the WGSL's.
pub(super) fn check_rows(what: &impl std::fmt::Debug, e: &Entry, src_size: u64) {
    let row = e.row_bytes as u64;
    let skip = e.skip as u64;
    let (start, end) = (
        e.first_byte as u64 + skip,
        e.first_byte as u64 + e.out_bytes as u64,
    );
    // The shader counts an entry's bytes in u32.
    assert!(end <= u32::MAX as u64, "{what:?}: {e:?} ends past 2^32");
    let (first, rows) = (start / row, end.div_ceil(row));
    let checked = (first..rows.min(first + CHECKED_ROWS))
        .chain(rows.saturating_sub(CHECKED_ROWS).max(first + CHECKED_ROWS)..rows);
    for r in checked {
        let (a, b) = ((r * row).max(start), ((r + 1) * row).min(end));
        let (s, last) = (
            shader::place(e, a as u32).src,
            shader::place(e, (b - 1) as u32).src,
        );
        assert!(
            (s as u64) < src_size && (last as u64) < src_size,
            "{what:?}: row {r} of {e:?} reads bytes {s} to {last} of a window of {src_size}"
        );
        if r + 1 < rows {
            let next = shader::place(e, ((r + 1) * row) as u32).src;
            let col = (a - r * row) as u32;
            let want = s.wrapping_sub(col).wrapping_add(e.src_stride);
            assert_eq!(next, want, "{what:?}: {e:?}");
            let steps = shader::next_row_sources(e, s, col);
            for (form, pair) in steps.into_iter().enumerate() {
                if let Some((stepped, want)) = pair {
                    assert_eq!(
                        stepped, want,
                        "{what:?}: {e:?}: row {r}'s step {form} to the next row"
                    );
                }
            }
        }
    }
}
