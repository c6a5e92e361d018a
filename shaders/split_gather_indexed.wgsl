// Rows placed by indices that live on the device (the indexed build: `indices`, `status` and
// `dst_scatter`, declared by the host with the other bindings, and `scatter_chunk`, which the
// build gives: a vec4 a chunk, plain word stores, or compare-and-swap where rows share
// words). An index the host never sees
// is checked here: one out of range moves no byte (a gather's rows of it are zeros), and the
// status counts it (`status[0]`) and keeps the first place (`status[1]`, inverted, so an
// atomic max keeps the smallest and zeroed words read as none). No index is clamped, wrapped
// or cut to 32 bits.

// Not a row: an index out of range (a row index is below 2^31 - 1, the host's bound), and
// padding (-1 where the record says so).
const NO_ROW: u32 = 0xffffffffu;
const PADDING: u32 = 0xfffffffeu;

// The row that index `i` names, NO_ROW or PADDING: an i64 in range has the high word its low
// word's sign gives, an i32 has it by definition.
fn indexed_row(x: IndexRows, i: u32) -> u32 {
    let lo = indices[i * x.index_words];
    var hi = select(0u, 0xffffffffu, lo >= 0x80000000u);
    if (x.index_words == 2u) {
        hi = indices[i * 2u + 1u];
    }
    if (hi == 0u && lo < x.capacity) {
        return lo;
    }
    let negative = hi == 0xffffffffu && lo >= 0x80000000u;
    if (negative && x.negative == 2u && lo == 0xffffffffu) {
        return PADDING;
    }
    // A negative index, `-back`, counts from the end where the record says so.
    let back = 0u - lo;
    if (negative && x.negative == 1u && back <= x.capacity) {
        return x.capacity - back;
    }
    return NO_ROW;
}

// Index `i` out of range, recorded once.
fn record_bad_index(i: u32) {
    atomicAdd(&status[0], 1u);
    atomicMax(&status[1], ~i);
}

// The units of entry `e` (MODE_INDEXED or MODE_SCATTER) of the lane: `a`, `b` its entry's
// block and its lane (lanes in turn), or 0 and its run (`LANES_IN_RUNS`), as `lane_span` takes
// them.
fn indexed_units(p: Params, e: Entry, a: u32, b: u32) {
    let x = read_index_rows(p, entry_index);
    if (e.mode == MODE_SCATTER) {
        scatter_units(e, x, lane_span(p, a, b, x.count * x.heads * ((e.row_bytes + 15u) / 16u)));
    } else if ((e.row_bytes | e.src_offset | e.src_stride) % 16u == 0u) {
        gather_vec4s(e, x, lane_span(p, a, b, entry_units(e)));
    } else {
        let span = lane_span(p, a, b, entry_units(e));
        for (var u = span.x; u < span.y; u += span.z) {
            gather_unit(e, x, u);
        }
    }
}

// The units `span` of the gather `e` whose rows, source and stride are of whole vec4s: one
// vec4 a unit, inside one row. The place moves along with the units (a division only where a
// step passes a row), and an index is read once per row a lane meets.
fn gather_vec4s(e: Entry, x: IndexRows, span: vec3<u32>) {
    let row_units = e.row_bytes / 16u;
    var row = span.x / row_units;
    var col = span.x - row * row_units;
    var block = row / x.count;
    var i = row - block * x.count;
    var read = 0xffffffffu;
    var r = NO_ROW;
    for (var u = span.x; u < span.y; u += span.z) {
        if (read != row) {
            read = row;
            r = indexed_row(x, i);
        }
        var v = vec4<u32>(0u);
        if (r < PADDING) {
            v = load_vec4(e.src_offset / 16u + (block * x.capacity + r) * (e.src_stride / 16u) + col);
        } else if (r == NO_ROW && col == 0u && block == 0u && x.counts == 1u) {
            record_bad_index(i);
        }
        store_unit(e.dst_unit + u, v);
        col += span.z;
        if (col >= row_units) {
            let rows = col / row_units;
            col -= rows * row_units;
            row += rows;
            i += rows;
            if (i >= x.count) {
                let blocks = i / x.count;
                block += blocks;
                i -= blocks * x.count;
            }
        }
    }
}

// ---- A gather: the output's units, each from the rows it meets ----

// Unit `u` of the gather `e`: its bytes of each row it meets (rows of any width, one byte
// up), each row's from its source row as `x` names it through one 16-byte load shifted into
// place, zeros for an index out of range, which the unit that holds the first byte of its
// row in the first block records.
fn gather_unit(e: Entry, x: IndexRows, u: u32) {
    let b = u * 16u;
    let n = min(16u, e.out_bytes - b);
    var row = b / e.row_bytes;
    var col = b - row * e.row_bytes;
    var v = vec4<u32>(0u);
    // Each turn takes at least a byte (`col` is below `row_bytes`, at least 1).
    for (var k = 0u; k < n;) {
        let take = min(n - k, e.row_bytes - col);
        let block = row / x.count;
        let i = row - block * x.count;
        let r = indexed_row(x, i);
        if (r < PADDING) {
            var y = load_bytes16(0u, e.src_offset + (block * x.capacity + r) * e.src_stride + col);
            if (k > 0u) {
                y = funnel(vec4<u32>(0u), y, 16u - k);
            }
            v |= y & byte_mask(k, take);
        } else if (r == NO_ROW && col == 0u && block == 0u && x.counts == 1u) {
            record_bad_index(i);
        }
        k += take;
        row += 1u;
        col = 0u;
    }
    store_unit_n(e.dst_unit + u, v, n);
}

// ---- A scatter: each row's 16-byte chunks, placed where its index says ----

// The chunks `span` (first, end, step) of the scatter `e`: chunk `k` of row `(t, h)` is
// bytes `16 * k ..` of that row, placed at its slot's row. The place moves along with the
// chunks (a division only where a step passes a row: a CPU adapter's lane takes a run of
// chunks, a GPU's lanes every 256th), and a token's slot is read once per token a lane meets;
// a token whose index is out of range is recorded by its first chunk.
fn scatter_units(e: Entry, x: IndexRows, span: vec3<u32>) {
    let chunks = (e.row_bytes + 15u) / 16u;
    var row = span.x / chunks;
    var k = span.x - row * chunks;
    var t = row / x.heads;
    var h = row - t * x.heads;
    var slot_of = 0xffffffffu;
    var s = NO_ROW;
    var base = 0u;
    for (var u = span.x; u < span.y; u += span.z) {
        if (slot_of != t) {
            slot_of = t;
            s = indexed_row(x, t);
            let block = s / x.block_size;
            base = x.dst_offset + block * x.dst_block_stride + (s - block * x.block_size) * x.dst_slot_stride;
        }
        if (s < PADDING) {
            let at = base + h * x.dst_head_stride + k * 16u;
            let src = e.src_offset + t * e.src_stride + h * x.src_head_step + k * 16u;
            scatter_chunk(at, src, min(16u, e.row_bytes - k * 16u));
        } else if (s == NO_ROW && k == 0u && h == 0u && x.counts == 1u) {
            record_bad_index(t);
        }
        // The next chunk of the lane: `span.z` on.
        k += span.z;
        if (k >= chunks) {
            let rows = k / chunks;
            k -= rows * chunks;
            h += rows;
            if (h >= x.heads) {
                let tokens = h / x.heads;
                t += tokens;
                h -= tokens * x.heads;
            }
        }
    }
}
