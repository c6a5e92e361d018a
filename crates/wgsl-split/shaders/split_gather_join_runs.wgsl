// ---- The join's units: main_join (shaders/split_gather_join.wgsl) ----

// The join: each lane `steps_per_lane` units, a run of them (LANES_IN_RUNS: CPU adapters,
// `join_lane`) or, consecutive lanes consecutive units, in turn (GPUs: a warp stores whole
// sectors, as the split's lanes do; `join_lane_unit`), each unit's segment found in the table
// (the lane's last one kept); walked where the join is (`join_walk`). No barrier and no segments
// kept in workgroup memory: on the H200 the runs ran every concat case at least as fast as
// 256 lanes sharing segments in workgroup memory, and on a CPU adapter such a barrier costs
// each dispatch more than the lookups it saves (`docs/performance.md`).
fn join_runs_block(p: Params, header: JoinHeader, block: u32, lane: u32) {
    let h = join_of(p, header);
    let span = lane_span(p, block, lane, h.header.units);
    var k = 0u;
    var seg = Segment(0u, 0u, 0u, 0u, 0u, 0u);
    if (LANES_IN_RUNS) {
        // (A walked join has no band: its units from the header's first on.)
        if (h.walked) {
            join_walk(h, h.header.first_unit + span.x, h.header.first_unit + span.y);
        } else if (span.x < span.y) {
            join_lane(h, span.x, span.y, &k, &seg);
        }
    } else {
        for (var v = span.x; v < span.y; v += span.z) {
            let u = join_unit_at(h, v);
            if (h.walked) {
                join_walk(h, u, u + 1u);
            } else if (u != NO_UNIT) {
                join_lane_unit(h, u, &k, &seg);
            }
        }
    }
}

const NO_UNIT = 0xffffffffu;

// The output unit of the dispatch's unit `v`: from the header's first unit on, or in a band
// (`band_units` a row) the row's band's; NO_UNIT where that lies past its row's band.
fn join_unit_at(h: Join, v: u32) -> u32 {
    if (h.header.band_units == 0u) {
        return h.header.first_unit + v;
    }
    let row = v / h.header.band_units;
    let start = row * h.header.row_bytes + h.header.band_first;
    let u = start / 16u + v - row * h.header.band_units;
    return select(NO_UNIT, u, u * 16u < start + h.header.band_width);
}

// Output unit `u` in lanes (GPUs), straight-line: inside one part's row, one 16-byte load of
// its source shifted into place (as the split's shifted lanes do: 0.79 to 0.82 of the copy
// kernel on the H200, where the join's units through the runs' loops ran at 0.55); crossing
// from a part into the next that begins there, one load of each merged (`join_crossing`);
// else assembled part by part (`join_unit`).
fn join_lane_unit(h: Join, u: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    let b = u * 16u;
    if (!h.short && b + 16u <= h.header.end_byte) {
        let row = b / h.header.row_bytes;
        let c = b - row * h.header.row_bytes;
        join_segment(h, c, k, seg);
        let e = *seg;
        if (*k > 0u && c < e.first_byte + e.row_bytes) {
            // The part's row's bytes from the unit's first on.
            let n = e.first_byte + e.row_bytes - c;
            var v = load_bytes16(e.binding, row * e.row_bytes + e.src_offset + (c - e.first_byte));
            if (n >= 16u || join_crossing(h, *k, e, row, n, &v)) {
                store_unit(u, v);
                return;
            }
        }
    }
    join_unit(h, u, k, seg);
}

// A whole unit whose first `n` bytes (1 to 15) end row `row` of segment `k` (`e`), its 16
// bytes from there in `v`: the rest merged in, where the next part begins there and holds it
// (the next segment, or the row's first where this one ends the row). False where not.
fn join_crossing(h: Join, k: u32, e: Segment, row: u32, n: u32, v: ptr<function, vec4<u32>>) -> bool {
    let seg_end = e.first_byte + e.row_bytes;
    let wraps = k + 1u >= h.segments_end;
    let next = read_segment(select(k + 1u, 1u, wraps));
    let next_row = select(row, row + 1u, wraps);
    if (next.first_byte != select(seg_end, 0u, wraps) || (wraps && seg_end != h.header.row_bytes) || next.row_bytes < 16u - n) {
        return false;
    }
    // The next part's bytes are shifted into place rather than loaded from `n` bytes before
    // them (as the split's `run_shifted` does): its source may begin its binding.
    let y = load_bytes16(next.binding, next_row * next.row_bytes + next.src_offset);
    *v = merge_bytes(*v, funnel(vec4<u32>(0u), y, 16u - n), n);
    return true;
}

// The dispatch's units `first .. end` of one lane in runs, as runs of consecutive output
// units: one run, or one per row of a band (`join_unit_at` numbers them alike).
fn join_lane(h: Join, first: u32, end: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    var v = first;
    while (v < end) {
        // Without a band: all of them at once.
        var take = end - v;
        var a = h.header.first_unit + v;
        var b = h.header.first_unit + end;
        if (h.header.band_units != 0u) {
            let row = v / h.header.band_units;
            let j = v - row * h.header.band_units;
            take = min(take, h.header.band_units - j);
            let start = row * h.header.row_bytes + h.header.band_first;
            a = start / 16u + j;
            b = min(a + take, (start + h.header.band_width + 15u) / 16u);
        }
        if (a < b) {
            join_run(h, a, b, k, seg);
        }
        v += take;
    }
}

// Units `first .. end` of one lane: runs and the units between them (`join_runs_from`) as
// far as they go, and each unit they leave assembled part by part (`join_unit`), every unit
// so where it visits every part (`short`). The general unit stays out of the runs' loop: a
// CPU adapter runs every branch of a loop's body for its whole SIMD group, masked, at every
// turn.
fn join_run(h: Join, first: u32, end: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    let bound = units_end(dst_binding);
    var u = first;
    while (u < end) {
        if (!h.short) {
            u = join_runs_from(h, u, end, bound, k, seg);
        }
        if (u < end) {
            join_unit(h, u, k, seg);
            u += 1u;
        }
    }
}

// Units from `first` on, up to `end` or the first one left to `join_unit`, which it returns:
// the whole units inside one segment of one row move as a run, one aligned vec4 each or
// funnel-shifted from a sliding window of them (as `run_shifted` does), below the output
// binding's `units_end` with no choice of binding; a whole unit that crosses from a part
// into the next, which begins where it ends and holds the unit's other bytes, merges one
// 16-byte load of each. Units past `units_end`, the output's partial last unit, gaps and
// narrower parts are left.
fn join_runs_from(h: Join, first: u32, end: u32, bound: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) -> u32 {
    let r = h.header.row_bytes;
    var u = first;
    while (u < end) {
        let b = u * 16u;
        let row = b / r;
        let c = b - row * r;
        join_segment(h, c, k, seg);
        let e = *seg;
        let seg_end = e.first_byte + e.row_bytes;
        if (*k == 0u || c >= seg_end || u >= bound || b + 16u > h.header.end_byte) {
            return u;
        }
        let count = min(min(end, bound) - u, min(seg_end - c, h.header.end_byte - b) / 16u);
        let s = row * e.row_bytes + e.src_offset + (c - e.first_byte);
        if (count > 0u) {
            let a = s / 16u;
            let sh = s % 16u;
            var lo = load_vec4_in(e.binding, a);
            let last = count - 1u;
            for (var i = 0u; i < last; i++) {
                let hi = load_vec4_in(e.binding, a + i + 1u);
                store_unit_fast(u + i, funnel(lo, hi, sh));
                lo = hi;
            }
            // The run's last unit: its second vec4 alone may reach past the input's end.
            store_unit_fast(u + last, funnel(lo, load_vec4_edge_in(e.binding, a + count), sh));
            u += count;
        }
        // The column after the run: the part's end, or inside the next unit, which crosses it.
        let cu = c + count * 16u;
        if (cu == seg_end) {
            continue;
        }
        if (u >= end || u >= bound || u * 16u + 16u > h.header.end_byte) {
            return u;
        }
        // The crossing unit: its first `seg_end - cu` bytes end the part's row.
        var v = load_bytes16(e.binding, s + count * 16u);
        if (!join_crossing(h, *k, e, row, seg_end - cu, &v)) {
            return u;
        }
        store_unit_fast(u, v);
        u += 1u;
    }
    return u;
}
