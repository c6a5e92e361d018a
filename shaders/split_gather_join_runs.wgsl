// ---- The join's units: main_join (shaders/split_gather_join.wgsl) ----

// The join: each lane `steps_per_lane` units, a run of them (LANES_IN_RUNS: CPU adapters) or,
// consecutive lanes consecutive units, in turn (GPUs: a warp stores whole sectors, as the
// split's lanes do), each unit's segment found in the table. No barrier and no segments
// kept in workgroup memory: on the H200 the runs ran every concat case at least as fast as
// 256 lanes sharing segments in workgroup memory, and on a CPU adapter such a barrier costs
// each dispatch more than the lookups it saves (`docs/performance.md`).
fn join_runs_block(block: u32, lane: u32) {
    let p = read_params();
    if (block >= p.num_blocks) {
        return;
    }
    let h = join_of(p);
    let span = lane_span(p, block, lane, h.header.units);
    var k = 0u;
    var seg = Segment(0u, 0u, 0u, 0u, 0u, 0u);
    if (LANES_IN_RUNS) {
        if (span.x < span.y) {
            join_lane(h, span.x, span.y, &k, &seg);
        }
    } else {
        for (var v = span.x; v < span.y; v += span.z) {
            join_lane(h, v, v + 1u, &k, &seg);
        }
    }
}

// The dispatch's units `first .. end` of one lane, as runs of consecutive
// output units: one run, or one per row of a band.
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

// Units `first .. end` of one lane: runs and the units between them
// (`join_runs_from`) as far as they go, and each unit they leave assembled part by part
// (`join_unit`). The general unit stays out of the runs' loop: a CPU adapter runs every
// branch of a loop's body for its whole SIMD group, masked, at every turn.
fn join_run(h: Join, first: u32, end: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    // Rows of up to a unit, or one segment (parts narrower than a unit, the whole row): no
    // unit lies inside one part's row.
    if (h.short) {
        join_narrow(h, first, end, k, seg);
        return;
    }
    let bound = units_end(first);
    var u = first;
    while (u < end) {
        u = join_runs_from(h, u, end, bound, k, seg);
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
        // The crossing unit's first `n` bytes end the part's row.
        let n = seg_end - cu;
        // The next part: the next segment, or the row's first where this one ends the row.
        let wraps = *k + 1u >= h.segments_end;
        let next = read_segment(select(*k + 1u, 1u, wraps));
        let next_row = select(row, row + 1u, wraps);
        if (next.first_byte != select(seg_end, 0u, wraps) || (wraps && seg_end != r) || next.row_bytes < 16u - n) {
            return u;
        }
        // The next part's bytes are shifted into place rather than loaded from `n` bytes before
        // them (as the split's `run_shifted` does): its source may begin its binding.
        let x = load_bytes16(e.binding, s + count * 16u);
        let y = load_bytes16(next.binding, next_row * next.row_bytes + next.src_offset);
        store_unit_fast(u, merge_bytes(x, funnel(vec4<u32>(0u), y, 16u - n), n));
        u += 1u;
    }
    return u;
}
