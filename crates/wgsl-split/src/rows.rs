//! Rows placed by indices that live on the device ([`RowsPlan`]) as a [`Recording`]
//! ([`record_rows`]): one dispatch of the indexed build's rows program. The shader checks
//! every index; the host proves every address of any index in range.

use crate::error::{Result, SplitError};
use crate::gather::binds::{IndexSides, Sides};
use crate::gather::builds::{single_output, Build, InputBindings, ScatterStores};
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
/// (i32 or i64), in the host's regions `at`, on a device of `limits` whose lanes map as
/// `tuning` says; with the bytes it binds of each region. No command where nothing moves.
pub fn record_rows(
    plan: &RowsPlan,
    dtype: DType,
    index_type: DType,
    at: RowsRegions,
    limits: &Limits,
    tuning: GatherTuning,
) -> Result<(Recording, RowsSizes)> {
    let rule = index_rule(index_type, plan.negative())?;
    let rows = plan.rows(dtype)?;
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
    let Some(dispatch) = dispatch else {
        let none = RowsSizes {
            source: 0,
            indices,
            target: 0,
        };
        return Ok((Recording::default(), none));
    };
    let sizes = RowsSizes {
        source: dispatch.src_size,
        indices,
        target: scatter.map_or(dispatch.dst_size, |t| t.1),
    };
    let build = Build {
        indexed: Some(stores),
        ..Build::plain(InputBindings::ONE, single_output(limits), None)
    };
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
    })
}

/// How the shader reads indices of `index_type` under `negative`.
pub fn index_rule(index_type: DType, negative: NegativeIndex) -> Result<IndexRule> {
    let words = match index_type {
        DType::I32 => 1,
        DType::I64 => 2,
        other => {
            return Err(SplitError::DataMismatch(format!(
                "indices of {other}: indices are i32 or i64"
            )))
        }
    };
    let negative = match negative {
        NegativeIndex::OutOfRange => 0,
        NegativeIndex::FromEnd => 1,
        NegativeIndex::Padding => 2,
    };
    Ok(IndexRule { words, negative })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::GatherMode;
    use crate::ops;
    use crate::recording::Role;

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
            for (index_type, mode) in [(DType::I32, GatherMode::Cpu), (DType::I64, GatherMode::Gpu)]
            {
                let limits = Limits::default();
                let tuning = GatherTuning::of(mode);
                let (recording, sizes) =
                    record_rows(plan, *dtype, index_type, at, &limits, tuning).unwrap();
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
                        Role::Output(0) | Role::Scatter => within(b, at.target, sizes.target),
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
