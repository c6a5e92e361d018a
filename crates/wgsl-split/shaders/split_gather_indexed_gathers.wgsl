// The units of entry `e` (MODE_INDEXED or MODE_SCATTER) of the lane: `a`, `b` its entry's
// block and its lane (lanes in turn), or 0 and its run (`LANES_IN_RUNS`), as `lane_span` takes
// them.
fn indexed_units(p: Params, e: Entry, a: u32, b: u32) {
    let x = read_index_rows(p, entry_index);
    if (e.mode == MODE_SCATTER) {
        scatter_units(e, x, lane_span(p, a, b, x.count * x.heads * ((e.row_bytes + 15u) / 16u)));
    } else if ((e.row_bytes | e.src_offset | e.src_stride) % 16u == 0u) {
        gather_vec4s(e, x, lane_span(p, a, b, entry_units(e)));
    } else if (gathers_elements(e, x)) {
        gather_elements(e, x, lane_span(p, a, b, entry_units(e)));
    } else {
        let span = lane_span(p, a, b, entry_units(e));
        for (var u = span.x; u < span.y; u += span.z) {
            gather_unit(e, x, u);
        }
    }
}

// The units `span` of the gather `e` whose rows, source and stride are of whole vec4s: one
// vec4 a unit, inside one row. A lane takes them a row at a time (a CPU adapter's lane a run
// of units, a GPU's lanes every 256th, one a turn): the row's index is read once, then its
// units move in a loop of loads and stores alone.
fn gather_vec4s(e: Entry, x: IndexRows, span: vec3<u32>) {
    let row_units = e.row_bytes / 16u;
    var row = span.x / row_units;
    var col = span.x - row * row_units;
    var block = row / x.count;
    var i = row - block * x.count;
    var u = span.x;
    while (u < span.y) {
        // Units `col .. col + n` of row `(block, i)`: the rest of the row in runs, one in lanes.
        let n = select(1u, min(span.y - u, row_units - col), LANES_IN_RUNS);
        let r = indexed_row(x, i);
        if (r < PADDING) {
            let first = e.src_offset / 16u + (block * x.capacity + r) * (e.src_stride / 16u) + col;
            for (var k = 0u; k < n; k++) {
                store_unit(e.dst_unit + u + k, load_vec4(first + k));
            }
        } else {
            for (var k = 0u; k < n; k++) {
                store_unit(e.dst_unit + u + k, vec4<u32>(0u));
            }
            if (r == NO_ROW && col == 0u && block == 0u && x.counts == 1u) {
                record_bad_index(i);
            }
        }
        // The lane's next unit: `n * span.z` on.
        u += n * span.z;
        col += n * span.z;
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

// ---- A gather of elements: rows of 1, 2, 4 or 8 bytes ----

// Whether the gather `e` picks rows of 1, 2, 4 or 8 bytes (ONNX Gather on a last axis),
// each from a source place of a multiple of its size, a block's rows whole units: each unit
// then holds `16 / row_bytes` whole rows of one block, the same indices in every block.
// (`x.count * e.row_bytes` is at most the output's bytes: it stays in u32.)
fn gathers_elements(e: Entry, x: IndexRows) -> bool {
    let w = e.row_bytes;
    let sizes = w == 1u || w == 2u || w == 4u || w == 8u;
    return sizes && (e.src_offset | e.src_stride) % w == 0u && (x.count * w) % 16u == 0u;
}

// The units `span` of the gather `e` of elements (`gathers_elements`), `cols` of them a
// block. A lane in runs takes them a block's row at a time; each unit reads its indices once
// and is one aligned store of its words, each word one load (rows of 4 or 8 bytes) or
// assembled from the halves or bytes it holds. Where an index is out of range or padding,
// the row's units are written again by `gather_unit`, which zeroes and counts.
fn gather_elements(e: Entry, x: IndexRows, span: vec3<u32>) {
    let w = e.row_bytes;
    let cols = x.count * w / 16u;
    let block_bytes = x.capacity * e.src_stride;
    let s = e.src_stride;
    var block = span.x / cols;
    var col = span.x - block * cols;
    var q = span.x;
    while (q < span.y) {
        // Units `col .. col + n` of block `block`'s row: the rest of it in runs, one in lanes.
        let n = select(1u, min(span.y - q, cols - col), LANES_IN_RUNS);
        let i = col * (16u / w);
        let base = vec4<u32>(e.src_offset + block * block_bytes);
        var bad = vec4<bool>(false);
        if (w == 4u) {
            for (var k = 0u; k < n; k++) {
                let r = element_rows(x, vec4<u32>(i + 4u * k) + vec4<u32>(0u, 1u, 2u, 3u));
                bad |= r >= vec4<u32>(PADDING);
                let a = (base + element_places(r, s)) >> vec4<u32>(2u);
                store_unit(e.dst_unit + q + k, vec4<u32>(load_word(a.x), load_word(a.y), load_word(a.z), load_word(a.w)));
            }
        } else if (w == 2u) {
            for (var k = 0u; k < n; k++) {
                let r0 = element_rows(x, vec4<u32>(i + 8u * k) + vec4<u32>(0u, 1u, 2u, 3u));
                let r1 = element_rows(x, vec4<u32>(i + 8u * k) + vec4<u32>(4u, 5u, 6u, 7u));
                bad |= (r0 >= vec4<u32>(PADDING)) | (r1 >= vec4<u32>(PADDING));
                let a0 = base + element_places(r0, s);
                let a1 = base + element_places(r1, s);
                store_unit(e.dst_unit + q + k, vec4<u32>(halves(a0.xy), halves(a0.zw), halves(a1.xy), halves(a1.zw)));
            }
        } else if (w == 1u) {
            for (var k = 0u; k < n; k++) {
                let j = vec4<u32>(i + 16u * k) + vec4<u32>(0u, 1u, 2u, 3u);
                let r0 = element_rows(x, j);
                let r1 = element_rows(x, j + vec4<u32>(4u));
                let r2 = element_rows(x, j + vec4<u32>(8u));
                let r3 = element_rows(x, j + vec4<u32>(12u));
                let p = vec4<u32>(PADDING);
                bad |= (r0 >= p) | (r1 >= p) | (r2 >= p) | (r3 >= p);
                let v = vec4<u32>(bytes4(base + element_places(r0, s)), bytes4(base + element_places(r1, s)),
                    bytes4(base + element_places(r2, s)), bytes4(base + element_places(r3, s)));
                store_unit(e.dst_unit + q + k, v);
            }
        } else {
            for (var k = 0u; k < n; k++) {
                let r = element_rows(x, vec4<u32>(i + 2u * k) + vec4<u32>(0u, 1u, 1u, 1u));
                bad |= r >= vec4<u32>(PADDING);
                let a = (base + element_places(r, s)) >> vec4<u32>(2u);
                store_unit(e.dst_unit + q + k, vec4<u32>(load_word(a.x), load_word(a.x + 1u), load_word(a.y), load_word(a.y + 1u)));
            }
        }
        if (any(bad)) {
            for (var k = 0u; k < n; k++) {
                gather_unit(e, x, q + k);
            }
        }
        // The lane's next unit: `n * span.z` on.
        q += n * span.z;
        col += n * span.z;
        if (col >= cols) {
            let blocks = col / cols;
            col -= blocks * cols;
            block += blocks;
        }
    }
}

// The source places of rows `r` from their block's base: 0 for an index out of range or
// padding, whose unit is written again.
fn element_places(r: vec4<u32>, stride: u32) -> vec4<u32> {
    return select(r, vec4<u32>(0u), r >= vec4<u32>(PADDING)) * stride;
}

// The rows that indices `i` name (`indexed_row`), without a branch: a CPU adapter runs
// every side of a branch.
fn element_rows(x: IndexRows, i: vec4<u32>) -> vec4<u32> {
    // An i32's high word is its sign; an i64's is read (the i32's own word read again).
    let at = i * x.index_words;
    let hi_at = at + vec4<u32>(x.index_words - 1u);
    let lo = vec4<u32>(indices[at.x], indices[at.y], indices[at.z], indices[at.w]);
    let read = vec4<u32>(indices[hi_at.x], indices[hi_at.y], indices[hi_at.z], indices[hi_at.w]);
    let sign = select(vec4<u32>(0u), vec4<u32>(0xffffffffu), lo >= vec4<u32>(0x80000000u));
    let hi = select(sign, read, x.index_words == 2u);
    let cap = vec4<u32>(x.capacity);
    let negative = (hi == vec4<u32>(0xffffffffu)) & (lo >= vec4<u32>(0x80000000u));
    let back = vec4<u32>(0u) - lo;
    var r = vec4<u32>(NO_ROW);
    r = select(r, cap - back, negative & vec4<bool>(x.negative == 1u) & (back <= cap));
    r = select(r, vec4<u32>(PADDING), negative & vec4<bool>(x.negative == 2u) & (lo == vec4<u32>(0xffffffffu)));
    return select(r, lo, (hi == vec4<u32>(0u)) & (lo < cap));
}

// The halves at byte places `a.x` and `a.y`, in one word.
fn halves(a: vec2<u32>) -> u32 {
    let h = (vec2<u32>(load_word(a.x >> 2u), load_word(a.y >> 2u)) >> ((a & vec2<u32>(2u)) * 8u)) & vec2<u32>(0xffffu);
    return h.x | (h.y << 16u);
}

// The bytes at byte places `a`, in one word.
fn bytes4(a: vec4<u32>) -> u32 {
    let q = a >> vec4<u32>(2u);
    let y = vec4<u32>(load_word(q.x), load_word(q.y), load_word(q.z), load_word(q.w));
    let b = (y >> ((a & vec4<u32>(3u)) * 8u)) & vec4<u32>(0xffu);
    return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
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

