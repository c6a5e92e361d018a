// The gather's schedules, whose block functions `shaders/split_gather.wgsl` declares
// over the table, the bindings and the access functions there. WGSL has no include: the host
// assembles each build from both files and the pieces it adds (`gpu::gather::builds`).

// ---- The runs ----

// The runs (`rows_block` with LANES_IN_RUNS): the lane's entry, then its run; `vec4_only`
// (VEC4_ONLY: every entry MODE_VEC4) lets the driver drop the other modes' code.
fn runs(block: u32, lane: u32, vec4_only: bool) {
    let p = read_params();
    let g = block * WORKGROUP_SIZE + lane;
    if (g >= p.num_lanes) {
        return;
    }
    if (p.interleaved == 1u) {
        entry_index = g % p.num_entries;
        let e = read_entry(entry_index);
        dst_binding = e.binding;
        copy_run(p, e, g / p.num_entries, vec4_only);
    } else {
        entry_index = find_entry(p, g);
        let e = read_entry(entry_index);
        dst_binding = e.binding;
        copy_run(p, e, g - e.block_start, vec4_only);
    }
}

// The `local_lane`-th run of entry `e`; `vec4_only` (a constant of the entry point) when every
// entry is MODE_VEC4.
fn copy_run(p: Params, e: Entry, local_lane: u32, vec4_only: bool) {
    if (!vec4_only && e.mode >= MODE_INDEXED) {
        indexed_units(p, e, 0u, local_lane);
        return;
    }
    let total_units = entry_units(e);
    var first_unit = local_lane * p.steps_per_lane;
    let end_unit = min(first_unit + p.steps_per_lane, total_units);
    if (first_unit >= end_unit) {
        return;
    }
    if (!vec4_only && first_unit == 0u && e.skip > 0u) {
        store_first_unit(e);
        first_unit = 1u;
    }
    // Whole units below the output binding's `units_end` store into that binding with no
    // choice to make (`copy_units_fast` picks it once for the run); the others (a window's
    // last units, at most 16, and the entry's partial last unit) after them, one at a time.
    let below = min(units_below(e, units_end(e.binding)), e.out_bytes / 16u);
    let fast_end = clamp(below, first_unit, end_unit);
    copy_units_fast(e, first_unit, fast_end, vec4_only);
    for (var u = fast_end; u < end_unit; u++) {
        copy_unit(e, u, vec4_only);
    }
}

// Unit `u` of entry `e`, its bytes walked one by one where rows are not of whole vec4s:
// the few units past a binding's `units_end`, and the entry's partial last unit. One call of
// `store_unit`, which chooses the binding and its side, keeps the build's pipelines quick to
// compile: a CPU adapter runs every arm of that choice.
fn copy_unit(e: Entry, u: u32, vec4_only: bool) {
    let b = e.first_byte + u * 16u;
    let at = place(e, b);
    if (vec4_only || e.mode == MODE_VEC4) {
        store_unit(e.dst_unit + at.dst / 16u, load_vec4(at.src / 16u));
        return;
    }
    let n = unit_bytes(e, b);
    var w = walk_entry(e, at, false);
    store_unit_n(e.dst_unit + u, walk_bytes(&w, n, false), n);
}

// Units `first_unit .. end_unit` of entry `e`, stored into output binding `to`'s units
// (`store_unit_fast_in`). `to` is a constant in the vec4 entry point's runs
// (`copy_units_fast` passes each binding's own from an arm of its switch), so the driver
// keeps one store there: a CPU adapter runs every arm of a choice in each SIMD group.
fn copy_units(e: Entry, first_unit: u32, end_unit: u32, vec4_only: bool, to: u32) {
    if (first_unit >= end_unit) {
        return;
    }
    // The source offset of the next byte to read is stepped along from here instead of
    // recomputed; at the end of a row it jumps over the other outputs' parts of the stride.
    let at = place(e, e.first_byte + first_unit * 16u);
    if (vec4_only || e.mode == MODE_VEC4) {
        run_vec4(e, first_unit, end_unit, at, to);
    } else if (e.row_bytes < 16u) {
        run_narrow(e, first_unit, end_unit, at, to);
    } else {
        run_shifted(e, first_unit, end_unit, at.src, at.col, to);
    }
}

// Rows, strides and offsets are multiples of 16: one vec4 per unit. One flat loop over the
// lane's units, stepping over the gaps at each row end (in the source, and in the destination
// where the rows land apart), keeps SIMD lanes of a CPU adapter in step (a loop per row
// segment would run each lane's row ends one after another).
fn run_vec4(e: Entry, first_unit: u32, end_unit: u32, at: Place, to: u32) {
    var s4 = at.src / 16u;
    var d4 = e.dst_unit + at.dst / 16u;
    let row_units = e.row_bytes / 16u;
    let src_gap4 = e.src_stride / 16u - row_units;
    let dst_gap4 = (e.dst_stride - e.row_bytes) / 16u;
    var left = row_units - at.col / 16u;
    for (var u = first_unit; u < end_unit; u++) {
        store_unit_fast_in(to, d4, load_vec4(s4));
        s4 += 1u;
        d4 += 1u;
        left -= 1u;
        if (left == 0u) {
            left = row_units;
            s4 += src_gap4;
            d4 += dst_gap4;
        }
    }
}

// MODE_WORD and MODE_BYTE, whole units: units that lie inside one row are funnel-shifted from
// a sliding window of aligned vec4 loads (one load per unit); a unit that crosses a row end
// (rows are at least a unit long: it meets two rows) merges this row's last bytes with the
// next row's first, each one 16-byte load.
fn run_shifted(e: Entry, first_unit: u32, end_unit: u32, s0: u32, col0: u32, to: u32) {
    let row_gap = e.src_stride - e.row_bytes;
    var u = first_unit;
    var s = s0;
    var col = col0;
    while (u < end_unit) {
        // Whole units inside this row.
        let count = min(end_unit - u, (e.row_bytes - col) / 16u);
        if (count > 0u) {
            let sh = s % 16u;
            let a = s / 16u;
            var lo = load_vec4(a);
            let last = count - 1u;
            for (var k = 0u; k < last; k++) {
                let hi = load_vec4(a + k + 1u);
                store_unit_fast_in(to, e.dst_unit + u + k, funnel(lo, hi, sh));
                lo = hi;
            }
            // The segment's last unit: its second vec4, alone, may reach past the input's last
            // whole vec4 (every earlier one holds bytes of the next unit).
            store_unit_fast_in(to, e.dst_unit + u + last, funnel(lo, load_vec4_edge(a + count), sh));
            u += count;
            s += count * 16u;
            col += count * 16u;
        }
        if (col == e.row_bytes) {
            col = 0u;
            s += row_gap;
        } else if (u < end_unit) {
            // This unit crosses a row end: its first k bytes end this row, the rest start the
            // next, whose first byte is `next`.
            let k = e.row_bytes - col;
            let next = s + k + row_gap;
            store_unit_fast_in(to, e.dst_unit + u, merge_bytes(load_bytes16(0u, s), load_bytes16_at(next, k), k));
            u += 1u;
            s = next + 16u - k;
            col = 16u - k;
        }
    }
}

// ---- The lanes ----

// Aligned rows: one vec4 per lane and step.
fn copy_lanes_vec4(p: Params, e: Entry, local_block: u32, lane: u32) {
    let span = lane_span(p, local_block, lane, entry_units(e));
    for (var u = span.x; u < span.y; u += span.z) {
        let at = place(e, e.first_byte + u * 16u);
        store_unit(e.dst_unit + at.dst / 16u, load_vec4(at.src / 16u));
    }
}

// Bytes of entry `e`'s output in the unit from entry byte `b` on: 16, or fewer in its last.
fn unit_bytes(e: Entry, b: u32) -> u32 {
    return min(16u, e.first_byte + e.out_bytes - b);
}

// Bytes k .. 16 of a unit (k from 1 to 15) from input byte `next` on, bytes 0 .. k zeros:
// the next row's bytes of a unit that crosses a row end. Loaded from `next`, not from
// `next - k`, which lies before the input's first byte where a read view's next row starts
// among its first k bytes (rows that repeat or overlap).
fn load_bytes16_at(next: u32, k: u32) -> vec4<u32> {
    return funnel(vec4<u32>(0u), load_bytes16(0u, next), 16u - k);
}

// Bytes 0 .. k of `a`, then bytes k .. 16 of `b`.
fn merge_bytes(a: vec4<u32>, b: vec4<u32>, k: u32) -> vec4<u32> {
    let mask = byte_mask(0u, k);
    return (a & mask) | (b & ~mask);
}

// ---- The shifted lanes ----

// Unaligned rows (GPUs): the lanes, each unit funnel-shifted from the two aligned source vec4s
// its 16 bytes span (`load_bytes16`), which neighbouring lanes share in the cache; a unit that
// crosses a row end (rows of at least 64 bytes: it meets two rows) merges this row's last
// bytes with the next row's first, one shifted load each. No workgroup memory, no barrier.
fn copy_lanes_shifted(p: Params, e: Entry, local_block: u32, lane: u32) {
    if (e.mode == MODE_VEC4) {
        copy_lanes_vec4(p, e, local_block, lane);
        return;
    }
    let span = lane_span(p, local_block, lane, entry_units(e));
    var u = span.x;
    // An entry that starts inside its first unit: that unit is written byte by byte.
    if (u == 0u && e.skip > 0u) {
        store_first_unit(e);
        u += span.z;
    }
    for (; u < span.y; u += span.z) {
        let b = e.first_byte + u * 16u;
        let at = place(e, b);
        var x = load_bytes16(0u, at.src);
        // Bytes of the output in this unit, and of them in this row.
        let n = unit_bytes(e, b);
        let k = min(n, e.row_bytes - at.col);
        if (k < n) {
            // Byte j >= k of the unit is byte j - k of the next row.
            let next = (at.row + 1u) * e.src_stride + e.src_offset;
            x = merge_bytes(x, load_bytes16_at(next, k), k);
        }
        store_unit_n(e.dst_unit + u, x, n);
    }
}
