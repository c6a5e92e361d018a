//! Rows placed by indices that live on the device ([`RowsPlan`]) as a [`Recording`]
//! ([`record_rows`]): one dispatch of the indexed build's rows program. The shader checks
//! every index; the host proves every address of any index in range.

use crate::error::{Result, SplitError};
use crate::gather::binds::{IndexSides, Sides};
use crate::gather::builds::{Build, ScatterStores};
use crate::gather::{
    binding_bytes, gather_dispatch, scatter_dispatch, window_limit, GatherTuning, IndexRule,
    ScatterJob, ScatterRows,
};
use crate::plan::{GatherRows, NegativeIndex, RowsKind, RowsPlan};
use crate::recording::{Command, Dispatched, Recording};
use crate::{DType, Limits};

/// Where rows placed by indices lie in the host's buffers: each region's byte offset in the
/// buffer of its role (`Role::Input(0)` the source, `Role::Indices`, `Role::Output(0)` the
/// target, also `Role::Scatter` for a scatter; `Role::Status`, where the host keeps one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsRegions {
    pub source: u64,
    pub indices: u64,
    pub target: u64,
    pub status: Option<u64>,
}

/// The bytes a recording of rows binds of each region, from its offset: what the host's
/// buffers must hold there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsSizes {
    pub source: u64,
    pub indices: u64,
    pub target: u64,
}

/// The recording of the rows `plan` places, elements of `dtype`, by indices of `index_type`
/// (i32, i64 or u32), in the host's regions `at`, on a device of `limits` whose lanes map as
/// `tuning` says; with the bytes it binds of each region. No command where nothing moves.
pub fn record_rows(
    plan: &RowsPlan,
    dtype: DType,
    index_type: DType,
    at: RowsRegions,
    limits: &Limits,
    tuning: GatherTuning,
) -> Result<(Recording, RowsSizes)> {
    // Through a conversion, every source address is a byte of the view, in the dtype written.
    let (convert, written) = plan.conversion(dtype)?;
    let rows = plan.rows(written)?;
    let rule = index_rule(index_type, plan.negative(), rows.capacity)?;
    let limit = window_limit(limits);
    let indices = rows.count * 4 * rule.words as u64;
    let (dispatch, scatter, stores) = match plan.kind() {
        RowsKind::Gather => (
            gather_dispatch(rows, rule, limit, tuning)?,
            None,
            ScatterStores::Words,
        ),
        RowsKind::Scatter => {
            let data = binding_bytes(rows.data_bytes()?);
            let job = set_rows_job(rows, rule)?;
            let stores = job.stores();
            let dispatch = scatter_dispatch(&job, limit, tuning)?;
            (dispatch, Some((at.target, data)), stores)
        }
    };
    let Some(mut dispatch) = dispatch else {
        let none = RowsSizes {
            source: 0,
            indices,
            target: 0,
        };
        return Ok((Recording::default(), none));
    };
    if let Some(c) = convert {
        // The input's bytes behind the view, bound as they are.
        let view = match plan.kind() {
            RowsKind::Gather => rows.data_bytes()?,
            RowsKind::Scatter => rows.output_bytes()?,
        };
        dispatch.src_size = binding_bytes(c.input_bytes(view)).max(4);
    }
    let sizes = RowsSizes {
        source: dispatch.src_size,
        indices,
        target: scatter.map_or(dispatch.dst_size, |t| t.1),
    };
    let build = Build::indexed(stores, convert, limits);
    let index = IndexSides {
        indices: (at.indices, indices),
        status: at.status,
        scatter,
    };
    let sides = (Sides::Region(at.source), Sides::Region(at.target));
    let dispatched = Dispatched::new(build, &dispatch, sides, Some(index), limits)?;
    let commands = vec![Command::Dispatch(dispatched)];
    Ok((Recording { commands }, sizes))
}

/// The scatter of `rows` whose indices `rule` reads: each row of the updates to its row of
/// the data. Pure.
pub fn set_rows_job(rows: GatherRows, rule: IndexRule) -> Result<ScatterJob> {
    Ok(ScatterJob {
        tokens: rows.count,
        capacity: rows.capacity,
        rule,
        src_bytes: rows.output_bytes()?,
        dst_bytes: rows.data_bytes()?,
        parts: vec![ScatterRows {
            src_offset: 0,
            src_stride: rows.row_bytes,
            src_head_step: 0,
            heads: 1,
            row_bytes: rows.row_bytes,
            dst_offset: 0,
            block_size: 1,
            dst_block_stride: rows.row_bytes,
            dst_slot_stride: 0,
            dst_head_stride: 0,
        }],
        copy: Vec::new(),
        counts: true,
    })
}

impl RowsPlan {
    /// The bytes each region binds from its offset for data of `dtype` placed by indices of
    /// `index_type`, `[source, indices, target]`: the source is a gather's data or a
    /// scatter's updates (of [`RowsPlan::rows_dtype`]), the target a gather's output (of it
    /// too) or a scatter's data, each rounded up
    /// to 4 (at least 4 for the source). A host's region holds at least so many; the status
    /// takes `RowsStatus::BYTES`.
    ///
    /// ```
    /// use wgsl_split::{ops, DType};
    /// let plan = ops::get_rows(&[32000, 4096], &[512])?; // an embedding, 512 ids
    /// let [table, ids, out] = plan.bytes(DType::F16, DType::U32)?;
    /// assert_eq!((table, ids, out), (32000 * 4096 * 2, 512 * 4, 512 * 4096 * 2));
    /// # Ok::<(), wgsl_split::SplitError>(())
    /// ```
    pub fn bytes(&self, dtype: DType, index_type: DType) -> Result<[u64; 3]> {
        let (convert, written) = self.conversion(dtype)?;
        let rows = self.rows(written)?;
        let rule = index_rule(index_type, self.negative(), rows.capacity)?;
        let (source, target) = match self.kind() {
            RowsKind::Gather => (rows.data_bytes()?, rows.output_bytes()?),
            RowsKind::Scatter => (rows.output_bytes()?, rows.data_bytes()?),
        };
        let source = convert.map_or(source, |c| c.input_bytes(source));
        let indices = rows.count * 4 * rule.words as u64;
        Ok([binding_bytes(source).max(4), indices, binding_bytes(target)])
    }
}

/// How the shader reads indices of `index_type` under `negative`, into `capacity` rows (or
/// slots).
///
/// A u32 index is never negative: the shader reads it as an i32 whose negatives are out of
/// range (`0xffffffff` is the padding of a paged write, as -1 is), which holds for every
/// value where the capacity is at most `i32::MAX`; a larger capacity is refused.
pub fn index_rule(index_type: DType, negative: NegativeIndex, capacity: u64) -> Result<IndexRule> {
    let words = match index_type {
        DType::I32 | DType::U32 => 1,
        DType::I64 => 2,
        other => {
            return Err(SplitError::DataMismatch(format!(
                "indices of {other}: indices are i32, i64 or u32"
            )))
        }
    };
    if index_type == DType::U32 && capacity > i32::MAX as u64 {
        return Err(SplitError::TooLarge(format!(
            "u32 indices into {capacity} rows: the shader reads a u32 index as an i32, so it \
             addresses at most {} rows; take i64 indices",
            i32::MAX
        )));
    }
    let negative = match (negative, index_type) {
        (NegativeIndex::OutOfRange, _) | (NegativeIndex::FromEnd, DType::U32) => 0,
        (NegativeIndex::FromEnd, _) => 1,
        (NegativeIndex::Padding, _) => 2,
    };
    Ok(IndexRule { words, negative })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::GatherMode;
    use crate::ops;
    use crate::recording::Role;

    /// u32 indices read as i32s address at most `i32::MAX` rows: a larger axis is refused,
    /// naming the rule (the plans refuse one for every index type too); `FromEnd` takes no
    /// u32 from the end, padding stays `0xffffffff`.
    #[test]
    fn u32_indices_keep_to_the_rows_an_i32_addresses() {
        let rule = |negative, capacity| index_rule(DType::U32, negative, capacity);
        let most = i32::MAX as u64;
        assert_eq!(rule(NegativeIndex::FromEnd, most).unwrap().negative, 0);
        assert_eq!(rule(NegativeIndex::OutOfRange, most).unwrap().negative, 0);
        assert_eq!(rule(NegativeIndex::Padding, most).unwrap().negative, 2);
        assert_eq!(rule(NegativeIndex::Padding, most).unwrap().words, 1);
        let e = rule(NegativeIndex::OutOfRange, most + 1).unwrap_err();
        assert!(
            matches!(e, SplitError::TooLarge(ref m) if m.contains("u32 indices into 2147483648 rows")),
            "{e}"
        );
        assert!(index_rule(DType::U16, NegativeIndex::Padding, 4).is_err());
    }

    /// Every binding of a recording of rows lies in the regions it states, from their
    /// offsets; its table is whole, and its workgroups cover the table's blocks.
    #[test]
    fn a_recording_binds_within_the_regions_it_states() {
        let at = RowsRegions {
            source: 256,
            indices: 4096,
            target: 8192,
            status: Some(16384),
        };
        let plans = [
            (ops::get_rows(&[100, 24], &[7]).unwrap(), DType::F16),
            (ops::gather(&[8, 40], &[16], 1).unwrap(), DType::U8),
            (ops::gather(&[3, 5, 7], &[4], 1).unwrap(), DType::F64),
            (ops::set_rows(&[64, 12], &[9]).unwrap(), DType::F32),
            (ops::set_rows(&[50, 3], &[5]).unwrap(), DType::U8),
        ];
        for (plan, dtype) in &plans {
            let types = [
                (DType::I32, GatherMode::Cpu),
                (DType::I64, GatherMode::Gpu),
                (DType::U32, GatherMode::Gpu),
            ];
            for (index_type, mode) in types {
                let limits = Limits::default();
                let tuning = GatherTuning::of(mode);
                let (recording, sizes) =
                    record_rows(plan, *dtype, index_type, at, &limits, tuning).unwrap();
                let bytes = [sizes.source, sizes.indices, sizes.target];
                assert_eq!(plan.bytes(*dtype, index_type).unwrap(), bytes, "{plan:?}");
                let [Command::Dispatch(d)] = &recording.commands[..] else {
                    panic!("one dispatch for {plan:?}: {recording:?}");
                };
                let within = |b: &crate::recording::Bind, from: u64, bytes: u64| {
                    let size = b.size.expect("a window of the host's has its size");
                    assert!(
                        b.offset >= from && b.offset + size <= from + bytes,
                        "{b:?} outside {bytes} bytes from {from} ({plan:?})"
                    );
                };
                for b in &d.binds.list {
                    match b.role {
                        Role::Input(0) => within(b, at.source, sizes.source),
                        Role::Indices => within(b, at.indices, sizes.indices),
                        Role::Output(0) | Role::Scatter(0) => within(b, at.target, sizes.target),
                        Role::Status => within(b, 16384, 8),
                        Role::Table => assert_eq!((b.offset, b.size), (0, None)),
                        Role::StandIn(_) => {}
                        other => panic!("{other:?} in a recording of rows"),
                    }
                }
                let blocks = u32::from_le_bytes(d.table[..4].try_into().unwrap());
                let (x, y) = d.workgroups;
                assert!(x * y >= blocks && x * (y - 1) < blocks.max(1), "{plan:?}");
                assert!(d.build.indexed.is_some());
            }
        }
    }
}
