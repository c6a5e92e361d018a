//! The dispatches of rows placed by indices ([`crate::RowsPlan`], [`crate::PagedKvPlan`]):
//! entries of the rows' program in the indexed build, each [`Mode::Indexed`] (a gather),
//! [`Mode::Scatter`] or plain, with one [`IndexRows`] record each. Every address any index in
//! range can reach is proved here, before the gate checks the table again. Pure.

use super::abi::{binding_bytes, Entry, IndexRows, Mode, Table, MAX_WINDOW};
use super::blocks::{indexed_table, units};
use super::builds::ScatterStores;
use super::dispatches::Dispatch;
use super::modes::GatherTuning;
use crate::error::{Result, SplitError};
use crate::plan::{GatherRows, MAX_GATHER_AXIS};

/// How the shader reads an index: its words (1: i32, 2: i64) and what a negative one is (0
/// out of range, 1 from the end, 2 padding where it is -1), as [`IndexRows`] holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexRule {
    pub words: u32,
    pub negative: u32,
}

/// The dispatch of a gather of `rows` whose indices `rule` reads, from the start of the data
/// window into the start of the output's, each within `window_limit` bytes; `None` where the
/// output is empty.
pub fn gather_dispatch(
    rows: GatherRows,
    rule: IndexRule,
    window_limit: u64,
    tuning: GatherTuning,
) -> Result<Option<Dispatch>> {
    let (data, out) = (rows.data_bytes()?, rows.output_bytes()?);
    if out == 0 {
        return Ok(None);
    }
    fits("data", binding_bytes(data), window_limit)?;
    fits("output", out, window_limit)?;
    // Every count below fits u32: the output and the data lie within a window of 2^31 bytes.
    let entry = Entry {
        out_bytes: out as u32,
        row_bytes: rows.row_bytes as u32,
        src_stride: rows.row_bytes as u32,
        mode: Mode::Indexed as u32,
        dst_stride: rows.row_bytes as u32,
        ..Entry::default()
    };
    let index = IndexRows {
        count: rows.count as u32,
        capacity: rows.capacity as u32,
        index_words: rule.words,
        negative: rule.negative,
        heads: 1,
        counts: 1,
        ..IndexRows::default()
    };
    let mut entries = vec![entry];
    let (program, params) = indexed_table(&mut entries, &[units(out)], tuning);
    Ok(Some(Dispatch {
        src_offset: 0,
        src_size: binding_bytes(data).max(4),
        dst_offset: 0,
        dst_size: binding_bytes(out),
        program,
        params,
        table: Table::Indexed(entries, vec![index]),
    }))
}

/// Rows of tokens placed at their slots: `heads` rows of `row_bytes` a token. Row `(t, h)`
/// is read at `src_offset + t * src_stride + h * src_head_step` of the source window and
/// written, for the slot `s` of token `t`, at `dst_offset + (s / block_size) *
/// dst_block_stride + (s % block_size) * dst_slot_stride + h * dst_head_stride` of the
/// destination window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScatterRows {
    pub src_offset: u64,
    pub src_stride: u64,
    pub src_head_step: u64,
    pub heads: u64,
    pub row_bytes: u64,
    pub dst_offset: u64,
    pub block_size: u64,
    pub dst_block_stride: u64,
    pub dst_slot_stride: u64,
    pub dst_head_stride: u64,
}

/// A scatter's dispatch: `tokens` indices of `rule` naming slots below `capacity`, each part
/// of `parts` placed through them, reading a source window of `src_bytes` and writing a
/// destination window (`dst_scatter`) of `dst_bytes`; and `copy`, plain entries written into
/// the output window (`dst`) in the same dispatch (the queries of a paged write).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScatterJob {
    pub tokens: u64,
    pub capacity: u64,
    pub rule: IndexRule,
    pub src_bytes: u64,
    pub dst_bytes: u64,
    pub parts: Vec<ScatterRows>,
    pub copy: Vec<Entry>,
    /// Whether the status counts its indices out of range (its first part's); `false` for a
    /// dispatch whose indices another one counts (a paged write's values' own).
    pub counts: bool,
}

impl ScatterRows {
    /// One past the last source byte any token reads.
    fn src_end(&self, tokens: u64) -> u64 {
        self.src_offset
            + (tokens - 1) * self.src_stride
            + (self.heads - 1) * self.src_head_step
            + self.row_bytes
    }

    /// One past the last destination byte any slot below `capacity` takes (a bound: the
    /// largest block and the largest slot within a block, as if one slot had both).
    fn dst_end(&self, capacity: u64) -> u64 {
        let last = capacity.max(1) - 1;
        self.dst_offset
            + last / self.block_size * self.dst_block_stride
            + last.min(self.block_size - 1) * self.dst_slot_stride
            + (self.heads - 1) * self.dst_head_stride
            + self.row_bytes
    }
}

/// The dispatch of `job` within windows of `window_limit` bytes; `None` where it moves
/// nothing. A part whose rows reach past its windows, or counts past the shader's words, is
/// [`SplitError::TooLarge`] naming the rule and the numbers.
pub fn scatter_dispatch(
    job: &ScatterJob,
    window_limit: u64,
    tuning: GatherTuning,
) -> Result<Option<Dispatch>> {
    let parts: Vec<&ScatterRows> = job
        .parts
        .iter()
        .filter(|p| p.row_bytes > 0 && p.heads > 0)
        .collect();
    let copy: Vec<Entry> = job
        .copy
        .iter()
        .copied()
        .filter(|c| c.out_bytes > 0)
        .collect();
    if job.tokens == 0 || (parts.is_empty() && copy.is_empty()) {
        return Ok(None);
    }
    if job.capacity > MAX_GATHER_AXIS as u64 {
        return Err(SplitError::TooLarge(format!(
            "{} slots; indexed rows take at most {MAX_GATHER_AXIS} (2^31 - 1)",
            job.capacity
        )));
    }
    fits("source", binding_bytes(job.src_bytes), window_limit)?;
    fits("destination", binding_bytes(job.dst_bytes), window_limit)?;
    let mut entries = Vec::new();
    let mut index = Vec::new();
    let mut work = Vec::new();
    for &c in &copy {
        entries.push(c);
        index.push(IndexRows::default());
        work.push(units(c.out_bytes as u64));
    }
    for (k, p) in parts.iter().enumerate() {
        if p.block_size == 0 {
            return Err(SplitError::TooLarge(format!(
                "part {k}: a block of 0 slots"
            )));
        }
        let (src_end, dst_end) = (p.src_end(job.tokens), p.dst_end(job.capacity));
        if src_end > job.src_bytes || dst_end > job.dst_bytes {
            return Err(SplitError::TooLarge(format!(
                "part {k} of the scatter reads to byte {src_end} of a source of {} and writes \
                 to byte {dst_end} of a destination of {}",
                job.src_bytes, job.dst_bytes
            )));
        }
        let chunks = p.row_bytes.div_ceil(16);
        let steps = job.tokens * p.heads * chunks;
        fits("scatter's chunks", steps * 16, MAX_WINDOW)?;
        let u = |x: u64| x as u32;
        entries.push(Entry {
            out_bytes: u(job.tokens * p.heads * p.row_bytes),
            row_bytes: u(p.row_bytes),
            src_stride: u(p.src_stride),
            src_offset: u(p.src_offset),
            mode: Mode::Scatter as u32,
            dst_stride: u(p.row_bytes),
            ..Entry::default()
        });
        index.push(IndexRows {
            count: u(job.tokens),
            capacity: u(job.capacity),
            index_words: job.rule.words,
            negative: job.rule.negative,
            heads: u(p.heads),
            src_head_step: u(p.src_head_step),
            dst_offset: u(p.dst_offset),
            block_size: u(p.block_size),
            dst_block_stride: u(p.dst_block_stride),
            dst_slot_stride: u(p.dst_slot_stride),
            dst_head_stride: u(p.dst_head_stride),
            counts: u32::from(k == 0 && job.counts),
        });
        work.push(steps);
    }
    let (program, params) = indexed_table(&mut entries, &work, tuning);
    let end = |c: &Entry| binding_bytes((c.dst_unit as u64) * 16 + c.out_bytes as u64);
    let dst_size = copy.iter().map(end).max().unwrap_or(0);
    Ok(Some(Dispatch {
        src_offset: 0,
        src_size: binding_bytes(job.src_bytes).max(4),
        dst_offset: 0,
        dst_size,
        program,
        params,
        table: Table::Indexed(entries, index),
    }))
}

impl ScatterJob {
    /// How its scatter stores: a vec4 a chunk where every part's rows, sources and places
    /// are of whole vec4s; plain word stores where its rows and places are of whole words
    /// (no two rows share a word); else by compare-and-swap.
    pub fn stores(&self) -> ScatterStores {
        let all = |f: fn(&ScatterRows) -> u64, by: u64| {
            self.parts.iter().all(|p| f(p).is_multiple_of(by))
        };
        let places = |p: &ScatterRows| {
            p.row_bytes | p.dst_offset | p.dst_block_stride | p.dst_slot_stride | p.dst_head_stride
        };
        let sources = |p: &ScatterRows| p.src_offset | p.src_stride | p.src_head_step;
        if all(places, 16) && all(sources, 16) {
            ScatterStores::Units
        } else if all(places, 4) {
            ScatterStores::Words
        } else {
            ScatterStores::Shared
        }
    }
}

/// Refuses a window of `bytes` past `limit` (and past the shader's 2 GiB).
fn fits(what: &str, bytes: u64, limit: u64) -> Result<()> {
    let limit = limit.min(MAX_WINDOW);
    match bytes > limit {
        true => Err(SplitError::TooLarge(format!(
            "the {what} of rows placed by indices takes {bytes} bytes; one binding of this \
             device holds {limit}, and indexed rows are one dispatch"
        ))),
        false => Ok(()),
    }
}
