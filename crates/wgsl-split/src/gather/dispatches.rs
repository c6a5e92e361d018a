//! The gather's dispatches: each one a window of the input, a window of the output region,
//! and a table. Pure arithmetic, tested without a device.

use super::abi::{
    binding_bytes, Entry, Mode, Params, ProgramKey, Table, HEADER_BYTES, MAX_WINDOW, UNIT_BYTES,
    WINDOW_UNITS,
};
use super::blocks::{split_table, SplitTable};
pub use super::modes::GatherTuning;
use crate::error::{Result, SplitError};
use crate::placement::PartLayout;
use crate::plan::bytes::{ByteRows, OutputRows, RowKind};

/// Most dispatches one split is cut into (each has its own table and bind group).
pub const MAX_DISPATCHES: u64 = 1 << 16;

/// One dispatch: a window of the input, a window of the output region, and its table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatch {
    /// Start of the input window, relative to the input region; a multiple of the offset alignment.
    pub src_offset: u64,
    /// Size of the input window, a multiple of 4.
    pub src_size: u64,
    /// Start of the output window, relative to the output region; a multiple of the alignment.
    pub dst_offset: u64,
    /// Size of the output window, a multiple of 4: its last output's end, rounded up to 4.
    pub dst_size: u64,
    /// What it runs: the entry point and lane mapping its table was made for.
    pub program: ProgramKey,
    /// The table's header.
    pub params: Params,
    /// The program's records after it.
    pub table: Table,
}

impl Dispatch {
    /// The bytes of the shader's table: the header, then the records. A table that breaks a
    /// precondition of the trusted module ([`super::gate`]) is refused: no dispatch runs it.
    pub fn table_bytes(&self) -> Result<Vec<u8>> {
        if let Err(refusal) = self.gate() {
            return Err(SplitError::Device(format!(
                "the gather's {} table breaks a precondition of its trusted module \
                 (docs/design.md, \"Trusted modules\"): {refusal}",
                self.program
            )));
        }
        let records = self.table.bytes();
        let mut bytes = Vec::with_capacity(HEADER_BYTES as usize + records.len());
        bytes.extend_from_slice(bytemuck::bytes_of(&self.params));
        bytes.extend_from_slice(&records);
        Ok(bytes)
    }

    /// Whether the dispatch keeps every precondition of the trusted module
    /// ([`super::gate::check`] of its program, header and records).
    pub fn gate(&self) -> Result<(), super::gate::Refusal> {
        super::gate::check(self.program, self.params, &self.table)
    }

    /// A split's entries (none for a concat's join).
    pub fn entries(&self) -> &[Entry] {
        match &self.table {
            Table::Split(entries) => entries,
            Table::Indexed(entries, _) => entries,
            Table::Join(_) => &[],
        }
    }
}

/// Whether an input of `input_bytes` and an output region of `output_bytes` each fit one
/// window of `window_limit` bytes, so that one dispatch covers the whole split.
pub fn fits_one_dispatch(input_bytes: u64, output_bytes: u64, window_limit: u64) -> bool {
    binding_bytes(input_bytes) <= window_limit && output_bytes <= window_limit
}

/// Builds the entry for bytes `[b0, b1)` of output `o`, whose rows are `stride` bytes apart,
/// reading from an input window that starts at `window` and writing at unit `dst_unit` of the
/// output window.
fn entry(stride: u64, o: &OutputRows, (b0, b1): (u64, u64), window: u64, dst_unit: u64) -> Entry {
    // Rebase on the dispatch's first row. When a dispatch starts mid-row its window starts
    // after that row's first byte, so `src_offset` is "negative": it is stored wrapped to u32,
    // and the shader's wrapping u32 sums `row * stride + src_offset + col` land inside it.
    let r0 = b0 / o.row_bytes;
    let first_byte = b0 - r0 * o.row_bytes;
    let src_offset = (o.offset + r0 * stride).wrapping_sub(window) & u32::MAX as u64;
    let mode = Mode::of(o.row_bytes | stride | src_offset | first_byte);
    Entry {
        // Numbered by `number_blocks`.
        block_start: 0,
        dst_unit: dst_unit as u32,
        first_byte: first_byte as u32,
        out_bytes: (b1 - b0) as u32,
        row_bytes: o.row_bytes as u32,
        src_stride: stride as u32,
        src_offset: src_offset as u32,
        mode: mode as u32,
        dst_stride: o.row_bytes as u32,
        skip: 0,
        binding: 0,
    }
}

/// The entry of one of several dispatches: bytes `[b0, b1)` of output `o`, read from a
/// window at `window`.
fn part_entry(bytes: &ByteRows, o: &OutputRows, (b0, b1): (u64, u64), window: u64) -> Entry {
    if b0 / o.row_bytes == (b1 - 1) / o.row_bytes {
        // Inside one row, which may be longer than u32 counts: describe the part as a single
        // row of its own.
        let part = OutputRows {
            output: o.output,
            offset: bytes.source_of(o, b0),
            row_bytes: b1 - b0,
        };
        return entry(b1 - b0, &part, (0, b1 - b0), window, 0);
    }
    entry(bytes.stride, o, (b0, b1), window, 0)
}

/// The entries of a split whose outputs are each one range of the input: one entry per run of
/// outputs that lie back to back in both the input and the output region (a sequence of
/// aligned slices is one entry, so its blocks need no table search).
fn contiguous_entries(bytes: &ByteRows, layout: &PartLayout) -> Vec<Entry> {
    layout
        .contiguous_runs(bytes)
        .into_iter()
        .map(|r| {
            let run = OutputRows {
                output: r.output,
                offset: r.src,
                row_bytes: r.len,
            };
            entry(r.len, &run, (0, r.len), 0, r.dst / UNIT_BYTES)
        })
        .collect()
}

/// The table of one dispatch over the whole input that writes every output of `bytes` at its
/// offset in `layout`.
fn whole_table(bytes: &ByteRows, layout: &PartLayout, tuning: GatherTuning) -> SplitTable {
    let entries = match bytes.kind {
        RowKind::Contiguous => contiguous_entries(bytes, layout),
        RowKind::Strided => bytes
            .outputs
            .iter()
            .map(|o| {
                let range = layout.ranges[o.output];
                entry(
                    bytes.stride,
                    o,
                    (0, range.size),
                    0,
                    range.offset / UNIT_BYTES,
                )
            })
            .collect(),
    };
    split_table(Some(bytes), entries, tuning)
}

/// One dispatch of the multi-output build ([`super::builds::OutputBindings::Units`]): output
/// `o` of `bytes` goes to output binding `bindings[o]`, at `layout.ranges[o].offset` within
/// that binding's window. Each binding's window and the input must fit `window_limit`;
/// `dst_offset` and `dst_size` are 0, as each binding has a window of its own.
pub fn multi_output_dispatch(
    bytes: &ByteRows,
    layout: &PartLayout,
    bindings: &[u32],
    tuning: GatherTuning,
    window_limit: u64,
) -> Result<Dispatch> {
    let limit = window_limit.min(MAX_WINDOW);
    // Planned as if the bindings' windows lay end to end, each MAX_WINDOW bytes, so no entry
    // spans two; each entry's binding is then the window its first unit lies in.
    let mut placed = layout.clone();
    for o in &bytes.outputs {
        let range = &mut placed.ranges[o.output];
        let binding = bindings[o.output];
        if binding >= super::abi::MAX_DST_BINDINGS || range.offset + range.size > limit {
            return Err(SplitError::TooLarge(format!(
                "output {} at binding {binding}, bytes {} to {}, is past the {} bindings of \
                 {limit} bytes one dispatch takes",
                o.output,
                range.offset,
                range.offset + range.size,
                super::abi::MAX_DST_BINDINGS
            )));
        }
        range.offset += binding as u64 * MAX_WINDOW;
    }
    if binding_bytes(bytes.input_bytes()) > limit {
        return Err(SplitError::TooLarge(format!(
            "an input of {} bytes is past one binding of {limit} bytes",
            bytes.input_bytes()
        )));
    }
    let (program, params, mut entries) = whole_table(bytes, &placed, tuning);
    for e in &mut entries {
        e.binding = (e.dst_unit as u64 / WINDOW_UNITS) as u32;
        e.dst_unit = (e.dst_unit as u64 % WINDOW_UNITS) as u32;
    }
    Ok(Dispatch {
        program,
        src_offset: 0,
        src_size: binding_bytes(bytes.input_bytes()),
        dst_offset: 0,
        dst_size: 0,
        params,
        table: Table::Split(entries),
    })
}

/// Plans the gather for the outputs of `bytes`, placed by `layout`.
///
/// `tuning` maps lanes to units ([`GatherTuning`]); each lane writes up to its
/// `max_steps_per_lane` units (fewer for small splits). `window_limit` is the largest window
/// the device allows ([`super::abi::window_limit`]) and `offset_align` its storage offset
/// alignment. When the input and the output region each fit one window
/// ([`fits_one_dispatch`]), this is **one** dispatch for all outputs. Otherwise each output is
/// cut into parts of whole units whose input and output windows fit, one dispatch per part.
/// No dispatch at all when every output is empty.
pub fn plan_dispatches(
    bytes: &ByteRows,
    layout: &PartLayout,
    tuning: GatherTuning,
    window_limit: u64,
    offset_align: u64,
) -> Result<Vec<Dispatch>> {
    if bytes.outputs.is_empty() {
        return Ok(vec![]);
    }
    let size = |o: &OutputRows| layout.ranges[o.output].size;

    if fits_one_dispatch(bytes.input_bytes(), layout.total_bytes, window_limit) {
        let (program, params, entries) = whole_table(bytes, layout, tuning);
        // One dispatch over the whole input and output region.
        return Ok(vec![Dispatch {
            program,
            src_offset: 0,
            src_size: binding_bytes(bytes.input_bytes()),
            dst_offset: 0,
            dst_size: layout.total_bytes,
            params,
            table: Table::Split(entries),
        }]);
    }

    // Parts: output byte ranges of `step` bytes (a multiple of the layout alignment, so
    // parts never share a unit) whose input window fits `window_limit`.
    let align = layout.alignment.max(offset_align);
    let usable = window_limit.saturating_sub(2 * align);
    let mut steps = Vec::with_capacity(bytes.outputs.len());
    let mut count = 0u64;
    for o in &bytes.outputs {
        let one_row = size(o) <= o.row_bytes;
        // A part of `step` bytes touches at most step / row + 2 rows of the input.
        let step = if one_row {
            usable
        } else {
            (usable / bytes.stride).saturating_sub(2) * o.row_bytes
        };
        let step = step / align * align;
        if step == 0 {
            return Err(SplitError::TooLarge(format!(
                "output rows of {} bytes, {} bytes apart in the input, cannot be cut into parts that fit \
                 the device's max_storage_buffer_binding_size of {window_limit} bytes",
                o.row_bytes, bytes.stride
            )));
        }
        steps.push(step);
        count += size(o).div_ceil(step);
    }
    if count > MAX_DISPATCHES {
        return Err(SplitError::TooLarge(format!(
            "this split would need {count} dispatches of at most {window_limit} bytes; the limit is {MAX_DISPATCHES}"
        )));
    }
    let binding = binding_bytes(bytes.input_bytes());
    let mut dispatches = Vec::with_capacity(count as usize);
    for (o, step) in bytes.outputs.iter().zip(steps) {
        let range = layout.ranges[o.output];
        let mut b0 = 0;
        while b0 < range.size {
            let b1 = (b0 + step).min(range.size);
            let window = bytes.source_of(o, b0) / offset_align * offset_align;
            let src_end = (bytes.source_of(o, b1 - 1) + 1)
                .next_multiple_of(UNIT_BYTES)
                .min(binding);
            let entry = part_entry(bytes, o, (b0, b1), window);
            let (program, params, entries) = split_table(None, vec![entry], tuning);
            dispatches.push(Dispatch {
                program,
                src_offset: window,
                src_size: src_end - window,
                dst_offset: range.offset + b0,
                dst_size: binding_bytes(b1 - b0),
                params,
                table: Table::Split(entries),
            });
            b0 = b1;
        }
    }
    Ok(dispatches)
}

#[cfg(test)]
impl Dispatch {
    /// A concat's join table (none for the split's rows).
    pub fn join(&self) -> Option<&super::abi::JoinTable> {
        match &self.table {
            Table::Join(j) => Some(j),
            Table::Split(_) | Table::Indexed(..) => None,
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
