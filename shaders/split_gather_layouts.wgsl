// The gather's three layouts: the body of `shaders/split_gather.wgsl`, which declares the
// table, the bindings, the access functions and the entry points. WGSL has no include, so the
// host compiles that file followed by this one (`gpu::gather::abi::SHADER_SOURCE`).

// ---- LAYOUT_RUNS ----

// The `local_lane`-th run of entry `e`; `vec4_only` (a constant of the entry point) when every
// entry is MODE_VEC4.
fn copy_run(p: Params, e: Entry, local_lane: u32, vec4_only: bool) {
    let total_units = (e.out_bytes + 15u) / 16u;
    let first_unit = local_lane * p.units_per_lane;
    let end_unit = min(first_unit + p.units_per_lane, total_units);
    if (first_unit >= end_unit) {
        return;
    }
    let b = e.first_byte + first_unit * 16u;
    let row = b / e.row_bytes;
    let col = b - row * e.row_bytes;
    // Source offset of the next byte to read, stepped along instead of recomputed; at the end
    // of a row it jumps over the other outputs' parts of the stride.
    let s = row * e.src_stride + e.src_offset + col;
    if (vec4_only || e.mode == MODE_VEC4) {
        run_vec4(e, first_unit, end_unit, s, col);
    } else if (e.mode == MODE_WORD && e.row_bytes == 4u) {
        run_one_word_rows(e, first_unit, end_unit, s);
    } else {
        run_shifted(e, first_unit, end_unit, s, row, col);
    }
}

// Rows, stride and offset are multiples of 16: one vec4 per unit. One flat loop over the
// lane's units, stepping over the gap at each row end, keeps SIMD lanes of a CPU adapter in
// step (a loop per row segment would run each lane's row ends one after another).
fn run_vec4(e: Entry, first_unit: u32, end_unit: u32, s: u32, col0: u32) {
    var s4 = s / 16u;
    let row_units = e.row_bytes / 16u;
    let gap4 = (e.src_stride - e.row_bytes) / 16u;
    var left = row_units - col0 / 16u;
    for (var u = first_unit; u < end_unit; u++) {
        store_unit(e.dst_unit + u, load_vec4(s4));
        s4 += 1u;
        left -= 1u;
        if (left == 0u) {
            left = row_units;
            s4 += gap4;
        }
    }
}

// One word per row (a split into single 32-bit elements): a plain strided gather.
fn run_one_word_rows(e: Entry, first_unit: u32, end_unit: u32, s: u32) {
    var w = s >> 2u;
    let step = e.src_stride >> 2u;
    // Whole units first, then the output's partial last unit, if any.
    let whole_end = min(end_unit, e.out_bytes / 16u);
    var u = first_unit;
    for (; u < whole_end; u++) {
        store_unit(e.dst_unit + u, vec4<u32>(load_word(w), load_word(w + step), load_word(w + 2u * step), load_word(w + 3u * step)));
        w += 4u * step;
    }
    if (u < end_unit) {
        var v = vec4<u32>(0u);
        for (var k = 0u; k < (e.out_bytes % 16u) / 4u; k++) {
            v[k] = load_word(w + k * step);
        }
        store_unit(e.dst_unit + u, v);
    }
}

// MODE_WORD and MODE_BYTE: units that lie inside one row are funnel-shifted from a sliding
// window of aligned vec4 loads (one load per unit); a unit that crosses a row end or ends the
// output is assembled word by word.
fn run_shifted(e: Entry, first_unit: u32, end_unit: u32, s0: u32, row0: u32, col0: u32) {
    let end_byte = e.first_byte + e.out_bytes;
    let row_gap = e.src_stride - e.row_bytes;
    var u = first_unit;
    var b = e.first_byte + first_unit * 16u;
    var s = s0;
    var row = row0;
    var col = col0;
    while (u < end_unit) {
        // Whole units inside this row.
        let count = min(end_unit - u, min(e.row_bytes - col, end_byte - b) / 16u);
        let sh = s % 16u;
        let a = s / 16u;
        if (sh == 0u) {
            for (var k = 0u; k < count; k++) {
                store_unit(e.dst_unit + u + k, load_vec4(a + k));
            }
        } else if (count > 0u) {
            var lo = load_vec4(a);
            for (var k = 0u; k < count; k++) {
                let hi = load_vec4(a + k + 1u);
                store_unit(e.dst_unit + u + k, funnel(lo, hi, sh));
                lo = hi;
            }
        }
        u += count;
        b += count * 16u;
        s += count * 16u;
        col += count * 16u;
        if (col == e.row_bytes) {
            col = 0u;
            row += 1u;
            s += row_gap;
        }
        if (u < end_unit && count == 0u) {
            // This unit crosses a row end (or ends the output): word by word.
            var v = vec4<u32>(0u);
            for (var k = 0u; k < 4u; k++) {
                if (col + 4u <= e.row_bytes && b + 4u <= end_byte) {
                    let w = s >> 2u;
                    let r = (s & 3u) * 8u;
                    if (r == 0u) {
                        v[k] = load_word(w);
                    } else {
                        v[k] = (load_word(w) >> r) | (load_word(w + 1u) << (32u - r));
                    }
                } else if (b < end_byte) {
                    v[k] = global_word_bytes(e, b, row, col);
                }
                b += 4u;
                s += 4u;
                col += 4u;
                // Rows shorter than 4 bytes wrap more than once.
                while (col >= e.row_bytes) {
                    col -= e.row_bytes;
                    row += 1u;
                    s += row_gap;
                }
            }
            store_unit(e.dst_unit + u, v);
            u += 1u;
        }
    }
}

// ---- LAYOUT_LANES ----

// The block's units of entry `e`: [base, end).
fn lanes_span(p: Params, e: Entry, local_block: u32) -> vec2<u32> {
    let base = local_block * p.units_per_lane * WORKGROUP_SIZE;
    return vec2<u32>(base, min((e.out_bytes + 15u) / 16u, base + p.units_per_lane * WORKGROUP_SIZE));
}

fn copy_lanes(p: Params, e: Entry, local_block: u32, lane: u32) {
    if (e.mode == MODE_VEC4) {
        copy_lanes_vec4(p, e, local_block, lane);
        return;
    }
    let span = lanes_span(p, e, local_block);
    for (var first = span.x; first < span.y; first += WORKGROUP_SIZE) {
        stage_and_assemble(e, first, min(first + WORKGROUP_SIZE, span.y), lane);
    }
}

// Aligned rows: one vec4 per lane and step.
fn copy_lanes_vec4(p: Params, e: Entry, local_block: u32, lane: u32) {
    let span = lanes_span(p, e, local_block);
    for (var u = span.x + lane; u < span.y; u += WORKGROUP_SIZE) {
        let b = e.first_byte + u * 16u;
        let row = b / e.row_bytes;
        store_unit(e.dst_unit + u, load_vec4((row * e.src_stride + e.src_offset + (b - row * e.row_bytes)) / 16u));
    }
}

// One step's row segments in workgroup memory: rows row_a ..= row_b of the entry, the first
// from column c0. Each segment takes a slot of `slot` vec4s, enough for its aligned span, so
// a lane finds its segment by one division. The host keeps slots x rows inside the stage.
struct Segments {
    row_a: u32,
    c0: u32,
    slot: u32,
}

// First column of row `r`'s segment.
fn segment_col(g: Segments, r: u32) -> u32 {
    return select(0u, g.c0, r == g.row_a);
}

// Workgroup byte position of column 0 of row `r` (wrapping: column 0 may lie before the
// segment's first staged byte).
fn segment_pos(e: Entry, g: Segments, r: u32) -> u32 {
    let c = segment_col(g, r);
    return (r - g.row_a) * g.slot * 16u + (r * e.src_stride + e.src_offset + c) % 16u - c;
}

// Units [first, end) of an entry: their source bytes, row segment by row segment, go to
// workgroup memory with coalesced aligned vec4 loads; then each lane assembles one unit.
fn stage_and_assemble(e: Entry, first: u32, end: u32, lane: u32) {
    let end_byte = e.first_byte + e.out_bytes;
    let b0 = e.first_byte + first * 16u;
    let b1 = min(e.first_byte + end * 16u, end_byte);
    let row_a = b0 / e.row_bytes;
    let row_b = (b1 - 1u) / e.row_bytes;
    // A segment of n bytes spans at most (n + 30) / 16 aligned vec4s.
    let g = Segments(row_a, b0 - row_a * e.row_bytes, (min(e.row_bytes, b1 - b0) + 30u) / 16u);
    let staged = (row_b - row_a + 1u) * g.slot;
    var v: array<vec4<u32>, STAGE_LOADS>;
    for (var j = 0u; j < STAGE_LOADS; j++) {
        let i = lane + j * WORKGROUP_SIZE;
        if (i < staged) {
            let r = row_a + i / g.slot;
            let c = segment_col(g, r);
            let c_end = select(e.row_bytes, b1 - row_b * e.row_bytes, r == row_b);
            let s0 = r * e.src_stride + e.src_offset + c;
            let a = s0 / 16u + i % g.slot;
            if (a * 16u < s0 + (c_end - c)) {
                v[j] = load_vec4(a);
            }
        }
    }
    for (var j = 0u; j < STAGE_LOADS; j++) {
        let i = lane + j * WORKGROUP_SIZE;
        if (i < staged) {
            put_staged(i, v[j]);
        }
    }
    workgroupBarrier();
    let u = first + lane;
    if (u < end) {
        var b = e.first_byte + u * 16u;
        var row = b / e.row_bytes;
        var col = b - row * e.row_bytes;
        var v = vec4<u32>(0u);
        for (var k = 0u; k < 4u; k++) {
            if (b < end_byte) {
                if (col + 4u <= e.row_bytes && b + 4u <= end_byte) {
                    v[k] = staged_word(segment_pos(e, g, row) + col);
                } else {
                    // The word crosses a row end or ends the output: byte by byte.
                    var word = 0u;
                    var rr = row;
                    var cc = col;
                    for (var j = 0u; j < min(4u, end_byte - b); j++) {
                        word |= staged_byte(segment_pos(e, g, rr) + cc) << (8u * j);
                        cc += 1u;
                        if (cc == e.row_bytes) {
                            cc = 0u;
                            rr += 1u;
                        }
                    }
                    v[k] = word;
                }
            }
            b += 4u;
            col += 4u;
            while (col >= e.row_bytes) {
                col -= e.row_bytes;
                row += 1u;
            }
        }
        store_unit(e.dst_unit + u, v);
    }
    // The next step reuses the workgroup memory.
    workgroupBarrier();
}

// ---- LAYOUT_TILES ----

fn copy_tiles(p: Params, block: u32, lane: u32) {
    if (lane < min(p.num_entries, MAX_TILE_ENTRIES)) {
        tile_entries[lane] = read_entry(lane);
    }
    workgroupBarrier();
    // Every entry has the same stride.
    let stride = workgroupUniformLoad(&tile_entries[0].src_stride);
    for (var t = block * p.units_per_lane; t < (block + 1u) * p.units_per_lane; t++) {
        let r0 = t * p.tile_rows;
        if (r0 >= p.rows) {
            break;
        }
        let r1 = min(r0 + p.tile_rows, p.rows);
        // The tile's input rows, whole: one contiguous span.
        let s0 = r0 * stride;
        let a0 = s0 / 16u;
        let count = (r1 * stride + 15u) / 16u - a0;
        for (var i = lane; i < count; i += WORKGROUP_SIZE) {
            put_staged(i, load_vec4(a0 + i));
        }
        workgroupBarrier();
        // Workgroup byte position of input byte s0.
        let shift = s0 % 16u;
        for (var i = 0u; i < min(p.num_entries, MAX_TILE_ENTRIES); i++) {
            let e = tile_entries[i];
            // The units of this entry whose first byte lies in rows [r0, r1).
            let q0 = (r0 * e.row_bytes + 15u) / 16u;
            let q1 = min((r1 * e.row_bytes + 15u) / 16u, (e.out_bytes + 15u) / 16u);
            for (var q = q0 + lane; q < q1; q += WORKGROUP_SIZE) {
                var v = vec4<u32>(0u);
                for (var k = 0u; k < 4u; k++) {
                    let b = q * 16u + k * 4u;
                    if (b < e.out_bytes) {
                        let row = b / e.row_bytes;
                        let col = b - row * e.row_bytes;
                        if (row < r1 && col + 4u <= e.row_bytes && b + 4u <= e.out_bytes) {
                            v[k] = staged_word((row - r0) * stride + e.src_offset + col + shift);
                        } else {
                            v[k] = tile_word_bytes(e, b, r0, r1, stride, shift);
                        }
                    }
                }
                store_unit(e.dst_unit + q, v);
            }
        }
        workgroupBarrier();
    }
}

// The output word at byte `b` of entry `e`, byte by byte: from the staged rows [r0, r1), or
// from global memory for bytes of the next tile's rows.
fn tile_word_bytes(e: Entry, b: u32, r0: u32, r1: u32, stride: u32, shift: u32) -> u32 {
    var word = 0u;
    for (var j = 0u; j < min(4u, e.out_bytes - b); j++) {
        let row = (b + j) / e.row_bytes;
        let col = (b + j) - row * e.row_bytes;
        if (row < r1) {
            word |= staged_byte((row - r0) * stride + e.src_offset + col + shift) << (8u * j);
        } else {
            word |= src_byte(row * stride + e.src_offset + col) << (8u * j);
        }
    }
    return word;
}
