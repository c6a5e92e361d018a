//! The dispatch of rows placed by indices ([`crate::RowsPlan`]): one
//! [`Mode::Indexed`] entry over the whole output, and its [`IndexRows`], in the rows'
//! program of the indexed build. Pure.

use super::abi::{binding_bytes, Entry, IndexRows, Mode, Table, MAX_WINDOW};
use super::blocks::indexed_table;
use super::dispatches::Dispatch;
use super::modes::GatherTuning;
use crate::error::{Result, SplitError};
use crate::plan::GatherRows;

/// The dispatch of `rows` whose indices are `index_words` words each (1: i32, 2: i64),
/// negatives counting from the end where `from_end`, reading the data from the start of its
/// window and writing the output from the start of its own, each within `window_limit` bytes
/// (the device's binding); `None` where the output is empty. A plan past one window is
/// [`SplitError::TooLarge`], naming the rule and the numbers.
pub fn indexed_dispatch(
    rows: GatherRows,
    index_words: u32,
    from_end: bool,
    window_limit: u64,
    tuning: GatherTuning,
) -> Result<Option<Dispatch>> {
    let (data, out) = (rows.data_bytes()?, rows.output_bytes()?);
    if out == 0 {
        return Ok(None);
    }
    let limit = window_limit.min(MAX_WINDOW);
    for (what, bytes) in [("data", binding_bytes(data)), ("output", out)] {
        if bytes > limit {
            return Err(SplitError::TooLarge(format!(
                "the {what} of rows placed by indices takes {bytes} bytes; one binding of \
                 this device holds {limit}, and indexed rows are one dispatch"
            )));
        }
    }
    // Every count below fits u32: the output and the data lie within a window of 2^31 bytes.
    let entry = Entry {
        block_start: 0,
        dst_unit: 0,
        first_byte: 0,
        out_bytes: out as u32,
        row_bytes: rows.row_bytes as u32,
        src_stride: rows.row_bytes as u32,
        src_offset: 0,
        mode: Mode::Indexed as u32,
        dst_stride: rows.row_bytes as u32,
        skip: 0,
        binding: 0,
    };
    let index = IndexRows {
        count: rows.count as u32,
        capacity: rows.capacity as u32,
        index_words,
        from_end: u32::from(from_end),
    };
    let (program, params, entry) = indexed_table(entry, tuning);
    Ok(Some(Dispatch {
        src_offset: 0,
        src_size: binding_bytes(data).max(4),
        dst_offset: 0,
        dst_size: binding_bytes(out),
        program,
        params,
        table: Table::Indexed(entry, index),
    }))
}
