//! A concat read from one source region, in one join dispatch or, past one binding, in
//! windows: the mirror of the split's parts ([`super::dispatches::plan_dispatches`]). Pure
//! arithmetic, tested without a device.
//!
//! Where the output and the source each fit one binding, one [`join_dispatch`] writes every
//! part. Otherwise the output is cut into runs of whole rows, each starting at the storage
//! offset alignment (so a run's row `r` is the output's row `r0 + r`, and its columns are
//! the output's); within a run, the parts are taken in column order and grouped while their
//! source bytes for those rows fit one window, one dispatch per group, which numbers only the
//! band of columns its parts cover ([`super::joins::Band`]). Where even one aligned run of
//! rows is larger than a binding, each part's row is cut into pieces, each a dispatch of one
//! row of its own whose output window starts at the alignment below the piece.
//!
//! Dispatches of one concat write different bytes of the output; those that share a unit
//! store only their own bytes of it, and run one after another.

use super::abi::{binding_bytes, UNIT_BYTES};
use super::dispatches::{Dispatch, MAX_DISPATCHES};
use super::joins::{join_dispatch, JoinPart};
use super::GatherTuning;
use crate::error::{Result, SplitError};
use crate::plan::bytes::{ByteRows, OutputRows};

/// The dispatches that write `parts` (in column order, all read through binding 0, their
/// `src` offsets in one source region) into the output of `bytes`: one where the output and
/// the source fit one window of `window_limit` bytes, else windows of both that start at
/// multiples of `offset_align` (see the module's comment). None where `parts` is empty.
/// Errors where more than [`MAX_DISPATCHES`] would be needed.
pub fn plan_joins(
    bytes: &ByteRows,
    parts: &[JoinPart],
    tuning: GatherTuning,
    window_limit: u64,
    offset_align: u64,
) -> Result<Vec<Dispatch>> {
    let Some(src_bytes) = parts.iter().map(|p| source(bytes, p, bytes.rows)).max() else {
        return Ok(Vec::new());
    };
    let output = bytes.input_bytes();
    if binding_bytes(output) <= window_limit && binding_bytes(src_bytes) <= window_limit {
        let one = join_dispatch(bytes, parts, &[src_bytes], tuning, window_limit)?;
        return Ok(vec![one]);
    }
    let align = offset_align.max(UNIT_BYTES);
    // Room for a window's start aligned down and its end rounded up.
    let usable = window_limit.saturating_sub(2 * align);
    if usable == 0 {
        return Err(SplitError::TooLarge(format!(
            "a concat past one binding needs windows of more than twice the storage offset \
             alignment ({align} bytes); the device's max_storage_buffer_binding_size is \
             {window_limit} bytes"
        )));
    }
    // Runs start at rows whose first byte lies at the alignment.
    let step = align / gcd(bytes.stride, align);
    let rows_per_run = usable / bytes.stride / step * step;
    let mut out = Windowed {
        dispatches: Vec::new(),
        tuning,
        window_limit,
        align,
    };
    if rows_per_run > 0 {
        let full = ByteRows {
            rows: rows_per_run.min(bytes.rows),
            ..bytes.clone()
        };
        for r0 in (0..bytes.rows).step_by(rows_per_run as usize) {
            let rows = rows_per_run.min(bytes.rows - r0);
            let last;
            let run = if rows == full.rows {
                &full
            } else {
                last = ByteRows {
                    rows,
                    ..bytes.clone()
                };
                &last
            };
            out.rows(run, parts, r0, usable)?;
        }
    } else {
        out.pieces(bytes, parts, usable)?;
    }
    Ok(out.dispatches)
}

/// The end of part `p`'s first `rows` rows in the source region.
fn source(bytes: &ByteRows, p: &JoinPart, rows: u64) -> u64 {
    p.src + rows * bytes.outputs[p.position].row_bytes
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The dispatches of a concat past one binding, as they are planned.
struct Windowed {
    dispatches: Vec<Dispatch>,
    tuning: GatherTuning,
    window_limit: u64,
    align: u64,
}

impl Windowed {
    /// The dispatches of the run of rows `r0 .. r0 + run.rows` (`run` is the concat's byte
    /// rows with that many rows): the parts grouped in column order while their source bytes
    /// stay within `usable` bytes of the window's aligned start.
    fn rows(&mut self, run: &ByteRows, parts: &[JoinPart], r0: u64, usable: u64) -> Result<()> {
        // Where part `p`'s rows of the run start and end in the source region.
        let row_bytes = |p: &JoinPart| run.outputs[p.position].row_bytes;
        let start = |p: &JoinPart| p.src + r0 * row_bytes(p);
        let end = |p: &JoinPart| start(p) + run.rows * row_bytes(p);
        let mut i = 0;
        while i < parts.len() {
            let (mut lo, mut hi) = (start(&parts[i]), end(&parts[i]));
            let mut j = i + 1;
            while let Some(p) = parts.get(j) {
                let (a, b) = (lo.min(start(p)), hi.max(end(p)));
                if b - a / self.align * self.align > usable {
                    break;
                }
                (lo, hi) = (a, b);
                j += 1;
            }
            let window = lo / self.align * self.align;
            let group: Vec<JoinPart> = parts[i..j]
                .iter()
                .map(|p| JoinPart {
                    src: start(p) - window,
                    ..*p
                })
                .collect();
            self.push(run, &group, window, hi - window, r0 * run.stride)?;
            i = j;
        }
        Ok(())
    }

    /// One dispatch per piece of at most `usable` bytes of each part's row, row by row.
    fn pieces(&mut self, bytes: &ByteRows, parts: &[JoinPart], usable: u64) -> Result<()> {
        let per_row: u64 = parts
            .iter()
            .map(|p| bytes.outputs[p.position].row_bytes.div_ceil(usable))
            .sum();
        let count = per_row.saturating_mul(bytes.rows);
        if count > MAX_DISPATCHES {
            return Err(SplitError::TooLarge(format!(
                "a concat of rows of {} bytes would need {count} dispatches of at most {} bytes \
                 (the device's max_storage_buffer_binding_size); the limit is {MAX_DISPATCHES}",
                bytes.stride, self.window_limit
            )));
        }
        for row in 0..bytes.rows {
            for p in parts {
                let o = &bytes.outputs[p.position];
                let mut q = 0;
                while q < o.row_bytes {
                    let len = usable.min(o.row_bytes - q);
                    let at = row * bytes.stride + o.offset + q;
                    let dst = at / self.align * self.align;
                    let src = p.src + row * o.row_bytes + q;
                    let window = src / self.align * self.align;
                    // The piece as a row of its own, from the output window's start.
                    let piece = ByteRows {
                        rows: 1,
                        stride: at - dst + len,
                        outputs: vec![OutputRows {
                            output: o.output,
                            offset: at - dst,
                            row_bytes: len,
                        }],
                        kind: bytes.kind,
                    };
                    let part = JoinPart {
                        position: 0,
                        binding: p.binding,
                        src: src - window,
                    };
                    self.push(&piece, &[part], window, src + len - window, dst)?;
                    q += len;
                }
            }
        }
        Ok(())
    }

    /// The join dispatch of `parts` into `bytes`' output, its source window `src_size` bytes
    /// from `src_offset` of the region and its output window from `dst_offset`.
    fn push(
        &mut self,
        bytes: &ByteRows,
        parts: &[JoinPart],
        src_offset: u64,
        src_size: u64,
        dst_offset: u64,
    ) -> Result<()> {
        if self.dispatches.len() as u64 == MAX_DISPATCHES {
            return Err(SplitError::TooLarge(format!(
                "this concat would need more than {MAX_DISPATCHES} dispatches of at most {} \
                 bytes (the device's max_storage_buffer_binding_size)",
                self.window_limit
            )));
        }
        let mut d = join_dispatch(bytes, parts, &[src_size], self.tuning, self.window_limit)?;
        d.src_offset = src_offset;
        d.dst_offset = dst_offset;
        self.dispatches.push(d);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gather::joins::join_parts;
    use crate::gather::GatherMode;
    use crate::placement::PartLayout;
    use crate::plan::SplitPlan;
    use crate::{ops, DType, IntTensor};

    fn tuning(mode: GatherMode) -> GatherTuning {
        GatherTuning {
            mode,
            max_steps_per_lane: 4,
        }
    }

    /// The concat of `plan`'s outputs of `dtype`, packed in one region, in windows of `limit`.
    fn joins(plan: &SplitPlan, dtype: DType, limit: u64) -> Result<(ByteRows, Vec<Dispatch>)> {
        let bytes = ByteRows::new(plan, dtype.size())?;
        let layout = PartLayout::packed(plan, dtype)?;
        let parts = join_parts(&bytes, &layout);
        let d = plan_joins(&bytes, &parts, tuning(GatherMode::Gpu), limit, 256)?;
        Ok((bytes, d))
    }

    fn concat(shape: &[usize], axis: i64, lengths: Vec<i64>) -> SplitPlan {
        ops::variadic_split(shape, &IntTensor::scalar(axis), &IntTensor::vector(lengths)).unwrap()
    }

    #[test]
    fn a_cpu_adapter_spreads_runs_as_a_split_does() {
        // (workgroups, units per lane) of the one dispatch of a concat of `shapes` on axis 1.
        let blocks = |shapes: &[[usize; 4]], max_steps_per_lane| {
            let plan = ops::concat(shapes, 1).unwrap().inverse();
            let bytes = ByteRows::new(&plan, 4).unwrap();
            let parts = join_parts(&bytes, &PartLayout::packed(&plan, DType::F32).unwrap());
            let tuning = GatherTuning {
                max_steps_per_lane,
                ..tuning(GatherMode::Cpu)
            };
            let d = plan_joins(&bytes, &parts, tuning, 1 << 27, 256).unwrap();
            assert_eq!(d.len(), 1);
            (d[0].params.num_blocks, d[0].params.steps_per_lane)
        };
        // C2f: 4 x f32 [1, 64, 80, 80], 409,600 units: runs of at most max_steps_per_lane
        // (and MAX_LANE_STEPS, 468), equal in every workgroup.
        let c2f = [[1, 64, 80, 80]; 4];
        assert_eq!(blocks(&c2f, 2048), (14, 458));
        assert_eq!(blocks(&c2f, 256), (25, 256));
        assert_eq!(blocks(&c2f, 250), (26, 247));
        // 4 x [1, 64, 10, 10], 6,400 units: spread over 96 lanes, 67 units each.
        assert_eq!(blocks(&[[1, 64, 10, 10]; 4], 2048), (2, 67));
        // 2 x [1, 4, 4, 4], 32 units: runs of at least 16.
        assert_eq!(blocks(&[[1, 4, 4, 4]; 2], 2048), (1, 16));
    }

    #[test]
    fn the_suites_cases_take_the_programs_the_gpu_evidence_chose() {
        // `docs/performance.md`, "The GPU programs rebuilt on the H200's evidence": the bench
        // cases packed in one region, planned for a GPU (4 units a lane).
        use crate::gather::dispatches::tests::{dispatches, BIG};
        let program = |d: &[Dispatch]| {
            let names: Vec<String> = d.iter().map(|d| d.program.to_string()).collect();
            names.join(", ")
        };
        let split = |shape: &[usize], axis, lengths, dtype| {
            let plan =
                ops::variadic_split(shape, &IntTensor::scalar(axis), &IntTensor::vector(lengths))
                    .unwrap();
            program(&dispatches(&plan, dtype, 256, GatherMode::Gpu, 4, BIG).unwrap())
        };
        let concat = |shape: &[usize], axis, lengths, dtype| {
            let plan =
                ops::variadic_split(shape, &IntTensor::scalar(axis), &IntTensor::vector(lengths))
                    .unwrap();
            program(&joins(&plan, dtype, BIG).unwrap().1)
        };
        let vec4_lanes = "main_rows vec4 lanes";
        assert_eq!(
            split(&[4, 512, 3072], 2, vec![1024; 3], DType::F32),
            vec4_lanes
        );
        assert_eq!(
            split(&[64, 256, 1024], 0, vec![16, 16, 32], DType::F32),
            vec4_lanes
        );
        assert_eq!(split(&[512, 4096], 1, vec![64; 64], DType::F32), vec4_lanes);
        // Unaligned rows: shifted lanes; equal short parts (tiny_runs, RGB planes): the channels.
        let odd = vec![1365; 3];
        assert_eq!(
            split(&[16384, 4095], 1, odd.clone(), DType::U8),
            "main_rows lanes"
        );
        assert_eq!(
            split(&[16384, 1023], 1, vec![341; 3], DType::F32),
            "main_rows lanes"
        );
        assert_eq!(
            split(&[1 << 22, 4], 1, vec![1; 4], DType::F32),
            "main_rows lanes channels w4"
        );
        let rgb = [4, 1080, 1920, 3];
        assert_eq!(
            split(&rgb, 3, vec![1; 3], DType::U8),
            "main_rows lanes channels w1"
        );
        // Concats of aligned parts: the split's lanes; the others: the join, in lanes too.
        assert_eq!(
            concat(&[1, 32, 4096, 128], 2, vec![4095, 1], DType::F16),
            vec4_lanes
        );
        assert_eq!(
            concat(&[1, 256, 80, 80], 1, vec![64; 4], DType::F32),
            vec4_lanes
        );
        assert_eq!(
            concat(&[4096, 2048], 0, vec![1; 4096], DType::F32),
            vec4_lanes
        );
        assert_eq!(
            concat(&[512, 4096], 1, vec![64; 64], DType::F32),
            vec4_lanes
        );
        assert_eq!(
            concat(&rgb, 3, vec![1; 3], DType::U8),
            "main_join lanes channels w1"
        );
        assert_eq!(concat(&[16384, 4095], 1, odd, DType::U8), "main_join lanes");
    }

    #[test]
    fn one_dispatch_where_the_output_and_the_source_fit() {
        let plan = concat(&[64, 300], 1, vec![100, 200]);
        let (_, d) = joins(&plan, DType::F32, 1 << 27).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].src_offset, d[0].dst_offset), (0, 0));
    }

    #[test]
    fn past_one_binding_runs_of_aligned_rows_group_the_parts_that_fit() {
        // Rows of 1,200 bytes start at the alignment every 256 / gcd(1200, 256) = 16 rows.
        // Windows of 64 KiB leave 65,024 usable bytes: runs of 48 rows, then 16; each run's
        // two parts (400 and 800 bytes per row, packed one after the other) fit one source
        // window together. Windows of 32 KiB: runs of 16 rows, whose parts' sources lie too
        // far apart for one window.
        let plan = concat(&[64, 300], 1, vec![100, 200]);
        for (limit, runs, groups) in [(1u64 << 16, vec![48, 16], 1), (1 << 15, vec![16; 4], 2)] {
            let (bytes, d) = joins(&plan, DType::F32, limit).unwrap();
            assert_eq!(d.len(), runs.len() * groups, "{limit}");
            let mut r0 = 0;
            for (run, rows) in d.chunks(groups).zip(runs) {
                for (g, x) in run.iter().enumerate() {
                    assert!(x.src_size <= limit && x.dst_size <= limit, "{x:?}");
                    assert_eq!(x.src_offset % 256, 0);
                    assert_eq!(x.dst_offset, r0 * bytes.stride);
                    assert_eq!(x.dst_size, rows * bytes.stride);
                    // The group's parts, in their columns: aligned, they take the split's
                    // rows, an entry each.
                    let columns: Vec<u32> = x
                        .entries()
                        .iter()
                        .map(|e| (16 * e.dst_unit as u64 % bytes.stride) as u32)
                        .collect();
                    let expected = if groups == 1 {
                        vec![0, 400]
                    } else {
                        vec![[0, 400][g]]
                    };
                    assert_eq!(columns, expected, "{limit} {x:?}");
                }
                r0 += rows;
            }
        }
    }

    #[test]
    fn rows_longer_than_a_window_are_cut_into_pieces() {
        // Rows of 3 x 1,000 u8 bytes at odd offsets, windows of 1 KiB: 512 usable bytes, so
        // each part's row takes two pieces; 2 rows x 3 parts x 2.
        let plan = concat(&[2, 3000], 1, vec![1000, 1000, 1000]);
        let (_, d) = joins(&plan, DType::U8, 1 << 10).unwrap();
        assert_eq!(d.len(), 12);
        for x in &d {
            assert!(x.src_size <= 1 << 10 && x.dst_size <= 1 << 10, "{x:?}");
            assert_eq!((x.src_offset % 256, x.dst_offset % 256), (0, 0));
        }
        // The second row's second part's first piece: output byte 4,000, 160 bytes past 3,840.
        assert_eq!(d[8].dst_offset, 3840);
        assert_eq!(
            d[8].join().expect("a join's table").segments[0].first_byte,
            160
        );
    }

    #[test]
    fn too_many_windows_or_no_room_for_one_are_refused() {
        let plan = concat(&[1 << 17, 3000], 1, vec![1000, 2000]);
        let e = joins(&plan, DType::U8, 1 << 10).unwrap_err();
        assert!(e.to_string().contains("786432 dispatches"), "{e}");
        // Bindings of 512 bytes leave nothing past the alignment at both ends.
        let plan = concat(&[2, 3000], 1, vec![1000, 2000]);
        let e = joins(&plan, DType::U8, 512).unwrap_err();
        assert!(e.to_string().contains("is 512 bytes"), "{e}");
    }
}
