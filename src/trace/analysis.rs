//! Memory figures from traced accesses: the records grouped into warp instructions, and the
//! sectors and lines those touch. Pure, tested without a device.
//!
//! A *warp instruction* is the set of accesses of one kind that the lanes of one warp (32 or
//! 64 consecutive lanes of a workgroup) make with the same sequence number: the n-th access of
//! that kind by each lane. Within one, useful bytes are the bytes the lanes ask for (each byte
//! once), a sector is an aligned 32-byte span and a line an aligned 128-byte span touched.

use std::collections::{BTreeSet, HashMap, HashSet};

/// What a traced access touched (`TRACE_*` in the shaders).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// The dispatch's table.
    Table = 0,
    /// The input.
    Load = 1,
    /// The output.
    Store = 2,
}

/// One traced access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The traced workgroup it came from (any number unique per workgroup).
    pub workgroup: u32,
    /// The lane in the workgroup (`local_invocation_index`).
    pub lane: u32,
    /// The lane's accesses of the same kind before this one.
    pub seq: u32,
    /// What it touched.
    pub kind: Kind,
    /// Byte address in its binding.
    pub address: u64,
    /// Bytes.
    pub size: u32,
}

/// The memory figures of one traced kernel for one warp width.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryFigures {
    /// Lanes per warp.
    pub warp: u32,
    /// Useful bytes over sectors touched x 32, over every load instruction.
    pub load_efficiency: f64,
    /// The same for stores.
    pub store_efficiency: f64,
    /// 128-byte lines loads touch per 512 bytes stored, summed over load instructions.
    pub load_lines_per_512: f64,
    /// The same, each line counted once per warp however many of its load instructions touch
    /// it: the lines a warp brings in if every line it touched stayed in its cache. Equal to
    /// `load_lines_per_512` where no two load instructions of a warp share a line.
    pub load_lines_once_per_512: f64,
    /// 128-byte lines stores touch per 512 bytes stored.
    pub store_lines_per_512: f64,
    /// Table bytes read per 512 bytes stored, each warp's (a warp's lanes reading the same
    /// word read it once).
    pub table_bytes_per_512: f64,
    /// Bytes stored by the traced workgroups.
    pub stored_bytes: u64,
}

/// Sums over the warp instructions of one kind.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    useful: u64,
    sectors: u64,
    lines: u64,
}

/// A warp instruction: (workgroup, warp, sequence number, kind).
type Instruction = (u32, u32, u32, Kind);

/// The figures of `accesses` for warps of `warp` lanes.
pub fn figures(accesses: &[Access], warp: u32) -> MemoryFigures {
    let mut instructions: HashMap<Instruction, Vec<(u64, u32)>> = HashMap::new();
    for a in accesses {
        let key = (a.workgroup, a.lane / warp, a.seq, a.kind);
        instructions
            .entry(key)
            .or_default()
            .push((a.address, a.size));
    }
    let mut totals: HashMap<Kind, Totals> = HashMap::new();
    // The lines each warp's loads touch, as (workgroup, warp, line).
    let mut warp_load_lines = HashSet::new();
    for ((workgroup, warp, _, kind), spans) in &instructions {
        let t = totals.entry(*kind).or_default();
        let (useful, sectors, lines) = touched(spans);
        t.useful += useful;
        t.sectors += sectors;
        t.lines += lines.len() as u64;
        if *kind == Kind::Load {
            warp_load_lines.extend(lines.into_iter().map(|l| (*workgroup, *warp, l)));
        }
    }
    let get = |k| totals.get(&k).copied().unwrap_or_default();
    let (loads, stores, table) = (get(Kind::Load), get(Kind::Store), get(Kind::Table));
    let per_512 = |x: u64| x as f64 * 512.0 / stores.useful.max(1) as f64;
    let efficiency = |t: Totals| t.useful as f64 / (t.sectors.max(1) * 32) as f64;
    MemoryFigures {
        warp,
        load_efficiency: efficiency(loads),
        store_efficiency: efficiency(stores),
        load_lines_per_512: per_512(loads.lines),
        load_lines_once_per_512: per_512(warp_load_lines.len() as u64),
        store_lines_per_512: per_512(stores.lines),
        table_bytes_per_512: per_512(table.useful),
        stored_bytes: stores.useful,
    }
}

/// Useful bytes, sectors and lines (their numbers) of one warp instruction's `(address, size)`
/// accesses.
fn touched(spans: &[(u64, u32)]) -> (u64, u64, BTreeSet<u64>) {
    let mut bytes: Vec<(u64, u64)> = spans.iter().map(|&(a, s)| (a, a + s as u64)).collect();
    bytes.sort_unstable();
    let mut useful = 0;
    let mut covered_to = 0;
    let mut sectors = BTreeSet::new();
    let mut lines = BTreeSet::new();
    for (start, end) in bytes {
        let from = start.max(covered_to);
        if end > from {
            useful += end - from;
            covered_to = end;
        }
        for s in start / 32..end.div_ceil(32) {
            sectors.insert(s);
        }
        for l in start / 128..end.div_ceil(128) {
            lines.insert(l);
        }
    }
    (useful, sectors.len() as u64, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lanes` lanes of workgroup 0, each making the accesses `f(lane)` in order.
    fn trace(lanes: u32, f: impl Fn(u32) -> Vec<(Kind, u64, u32)>) -> Vec<Access> {
        (0..lanes)
            .flat_map(|lane| {
                f(lane)
                    .into_iter()
                    .enumerate()
                    .map(move |(seq, (kind, address, size))| Access {
                        workgroup: 0,
                        lane,
                        seq: seq as u32,
                        kind,
                        address,
                        size,
                    })
            })
            .collect()
    }

    #[test]
    fn a_plain_copy_is_the_reference() {
        let copy = trace(256, |l| {
            vec![
                (Kind::Load, l as u64 * 16, 16),
                (Kind::Store, l as u64 * 16, 16),
            ]
        });
        for warp in [32, 64] {
            let f = figures(&copy, warp);
            assert_eq!((f.load_efficiency, f.store_efficiency), (1.0, 1.0));
            assert_eq!((f.load_lines_per_512, f.store_lines_per_512), (4.0, 4.0));
            assert_eq!(f.load_lines_once_per_512, 4.0);
            assert_eq!((f.table_bytes_per_512, f.stored_bytes), (0.0, 4096));
        }
    }

    #[test]
    fn lanes_64_bytes_apart_use_half_of_each_sector() {
        // Each lane copies 16 bytes at a 64-byte stride: its 16 bytes sit alone in their
        // 32-byte sector, and the warp spans 16 lines.
        let strided = trace(32, |l| {
            vec![
                (Kind::Load, l as u64 * 64, 16),
                (Kind::Store, l as u64 * 64, 16),
            ]
        });
        let f = figures(&strided, 32);
        assert_eq!(f.load_efficiency, 0.5);
        assert_eq!(f.load_lines_per_512, 16.0);
        assert_eq!(f.load_lines_once_per_512, 16.0);
    }

    #[test]
    fn a_line_two_loads_of_a_warp_share_counts_once_per_warp() {
        // Each lane loads its 16-byte unit and the next one, as a funnel shift does: the
        // second instruction touches the first's 4 lines and one more.
        let shifted = trace(32, |l| {
            vec![
                (Kind::Load, l as u64 * 16, 16),
                (Kind::Load, l as u64 * 16 + 16, 16),
                (Kind::Store, l as u64 * 16, 16),
            ]
        });
        let f = figures(&shifted, 32);
        assert_eq!(
            (f.load_lines_per_512, f.load_lines_once_per_512),
            (9.0, 5.0)
        );
    }

    #[test]
    fn uniform_table_reads_count_once_per_warp() {
        // Every lane reads the same 32-byte entry, then stores 16 bytes.
        let t = trace(64, |l| {
            vec![(Kind::Table, 32, 32), (Kind::Store, l as u64 * 16, 16)]
        });
        assert_eq!(figures(&t, 32).table_bytes_per_512, 32.0);
        assert_eq!(figures(&t, 64).table_bytes_per_512, 16.0);
    }
}
