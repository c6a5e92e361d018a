//! The channels ([`Channels`]): which dispatches of a split or a concat take them, on CPU
//! adapters, and how their lanes take groups of rows. Pure.

use super::abi::{
    Channels, Entry, Params, Segment, MAX_CHANNEL_STRIDE, RUNS_WORKGROUP_SIZE, UNIT_BYTES,
};
use super::runs::{max_steps, run_units};

/// Rows a group holds: 16 rows of `stride` bytes are `stride` whole units.
const GROUP_ROWS: u64 = 16;

/// The channels `entries` are, if they are: the parts of rows of at most
/// [`MAX_CHANNEL_STRIDE`] bytes in column order, each from the first byte of its destination
/// unit, its rows back to back there, the rows' first byte a whole vec4 of the input
/// ([`channels`]).
pub(super) fn channels_of(entries: &[Entry]) -> Option<Channels> {
    let first = entries.first()?;
    let (width, stride) = (first.row_bytes as u64, first.src_stride as u64);
    let side_by_side = entries.iter().zip(0..).all(|(e, k)| {
        (e.row_bytes, e.out_bytes, e.src_stride)
            == (first.row_bytes, first.out_bytes, first.src_stride)
            && e.src_offset as u64 == first.src_offset as u64 + k * width
            && (e.dst_stride, e.first_byte, e.skip) == (e.row_bytes, 0, 0)
    });
    let aligned = (first.src_offset as u64).is_multiple_of(UNIT_BYTES);
    channels(stride, width, entries.len() as u64).filter(|_| side_by_side && aligned)
}

/// The channels of a concat's dispatch whose `segments` are one, into rows of `stride`
/// bytes from unit 0 of its output, if they are: its parts side by side from the rows' first
/// byte, in binding 0, each part's rows from a whole vec4 on ([`channels`]).
pub(super) fn join_channels_of(stride: u64, segments: &[Segment]) -> Option<Channels> {
    let [s] = segments else { return None };
    let aligned = (s.src_offset as u64 | s.part_step as u64).is_multiple_of(UNIT_BYTES);
    let fits = (s.first_byte, s.binding) == (0, 0) && aligned;
    channels(stride, s.row_bytes as u64, s.count as u64).filter(|_| fits)
}

/// Rows of `stride` bytes as `parts` parts of `width`, if they are channels: two or more
/// parts that fill the row, not whole words (the runs move parts of 4 and 8 bytes a word at a
/// time, as fast), in rows of at most [`MAX_CHANNEL_STRIDE`] bytes.
fn channels(stride: u64, width: u64, parts: u64) -> Option<Channels> {
    let fits = parts >= 2
        && !width.is_multiple_of(4)
        && width * parts == stride
        && stride <= MAX_CHANNEL_STRIDE;
    fits.then_some(Channels {
        stride: stride as u8,
        width: width as u8,
    })
}

/// Groups per lane (a lane's steps, at most `most`) and lanes of the channels of `rows` rows.
/// Runs as long as a split's in units (2,048 units, 683 groups of 3) joined RGB planes 5%
/// slower than runs of as many groups (performance.md, session 34).
pub(super) fn channel_runs(rows: u64, most: u64) -> (u64, u64) {
    let groups = rows.div_ceil(GROUP_ROWS);
    // One loop turn a group; the groups past the whole units below a binding's end (at most
    // 17 a lane) take up to 20 turns a unit, within the other half of the lane's turns.
    let steps = run_units(groups, max_steps(most, 2));
    (steps, groups.div_ceil(steps))
}

/// The header of the channels' dispatch of a split's `entries` (each lane a run of at most
/// `most` groups).
pub(super) fn channel_params(c: Channels, entries: &mut [Entry], most: u64) -> Params {
    let rows = entries[0].out_bytes as u64 / c.width as u64;
    let (steps, lanes) = channel_runs(rows, most);
    entries.iter_mut().for_each(|e| e.block_start = 0);
    Params {
        num_blocks: lanes.div_ceil(RUNS_WORKGROUP_SIZE) as u32,
        num_entries: entries.len() as u32,
        steps_per_lane: steps as u32,
        rows: 0,
        num_lanes: lanes as u32,
        interleaved: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::gather::abi::{EntryPoint, ProgramKey};
    use crate::gpu::gather::dispatches::tests::{dispatches, BIG};
    use crate::gpu::gather::GatherMode;
    use crate::{ops, DType, IntTensor};

    /// The program and header of the first dispatch of a variadic split of `shape` along its
    /// last axis into `lengths`, on a CPU adapter at `max_units` steps a lane.
    fn split(
        shape: &[usize],
        lengths: Vec<i64>,
        dtype: DType,
        max_units: u64,
    ) -> (ProgramKey, Params) {
        let plan = ops::variadic_split(shape, &IntTensor::scalar(-1), &IntTensor::vector(lengths))
            .unwrap();
        let d = &dispatches(&plan, dtype, 16, GatherMode::Cpu, max_units, BIG).unwrap()[0];
        (d.program, d.params)
    }

    #[test]
    fn equal_parts_of_short_rows_are_channels() {
        let channels =
            |shape: &[usize], lengths, dtype| split(shape, lengths, dtype, 2048).0.channels;
        let of = |stride, width| Some(Channels { stride, width });
        // RGB planes, f16 ones, u8 pairs.
        assert_eq!(channels(&[64, 48, 3], vec![1; 3], DType::U8), of(3, 1));
        assert_eq!(channels(&[100, 3], vec![1; 3], DType::F16), of(6, 2));
        assert_eq!(channels(&[7, 10], vec![2; 5], DType::U8), of(10, 2));
        // Parts of whole words (f32 RGBA, f16 pairs); unequal parts; rows past 16 bytes;
        // parts of a unit or more; one part.
        assert_eq!(channels(&[7, 4], vec![1; 4], DType::F32), None);
        assert_eq!(channels(&[100, 6], vec![2; 3], DType::F16), None);
        assert_eq!(channels(&[64, 3], vec![1, 2], DType::U8), None);
        assert_eq!(channels(&[64, 17], vec![1; 17], DType::U8), None);
        assert_eq!(channels(&[64, 8], vec![4; 2], DType::F32), None);
        assert_eq!(channels(&[64, 1, 3], vec![3], DType::U8), None);
        // A GPU takes the channels too for parts of bytes (the scatter for whole words).
        let plan = ops::split(&[64, 3], &IntTensor::scalar(1), 3).unwrap();
        let d = &dispatches(&plan, DType::U8, 16, GatherMode::Gpu, 4, BIG).unwrap()[0];
        assert_eq!(
            (d.program.entry, d.program.channels),
            (EntryPoint::Rows, Some(of(3, 1).unwrap()))
        );
    }

    #[test]
    fn lanes_take_runs_of_groups_of_16_rows() {
        // rgb_planes: 8,294,400 pixels, 518,400 groups; at most 2,048 a lane, so 4 full
        // workgroups, in equal runs of 2,025.
        let (program, p) = split(&[4, 1080, 1920, 3], vec![1; 3], DType::U8, 2048);
        assert_eq!(
            (program.entry, program.lanes_in_runs),
            (EntryPoint::Rows, true)
        );
        assert_eq!(
            (p.steps_per_lane, p.num_lanes, p.num_blocks),
            (2025, 256, 4)
        );
        assert_eq!(p.num_entries, 3);
        // 1,000 rows: 63 groups (the last of 8 rows), in runs of at least 16.
        let (_, p) = split(&[1000, 3], vec![1; 3], DType::U8, 2048);
        assert_eq!((p.steps_per_lane, p.num_lanes, p.num_blocks), (16, 4, 1));
        // Half a lane's turns at most: 30,000 groups.
        let (_, p) = split(&[1 << 24, 2], vec![1; 2], DType::U8, 1 << 20);
        assert!(p.steps_per_lane <= 30_000, "{p:?}");
    }
}
