// Rows placed by indices that live on the device (the indexed build: `indices` and
// `status`, declared by the host with the other bindings). An index the host never sees is
// checked here: one out of range moves no byte, its rows are zeros, and the status counts it
// (`status[0]`) and keeps the first place (`status[1]`, inverted, so an atomic max keeps the
// smallest and zeroed words read as none). No index is clamped, wrapped or cut to 32 bits.

// Not a row: an index out of range (a row index is below 2^31 - 1, the host's bound).
const NO_ROW: u32 = 0xffffffffu;

// The row that index `i` names, or NO_ROW: an i64 in range has the high word its low
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
    // A negative index, `-back`, counts from the end where the record says so.
    let back = 0u - lo;
    if (x.from_end == 1u && hi == 0xffffffffu && lo >= 0x80000000u && back <= x.capacity) {
        return x.capacity - back;
    }
    return NO_ROW;
}

// Index `i` out of range, recorded once (by the unit that holds its first row's first byte).
fn record_bad_index(i: u32) {
    atomicAdd(&status[0], 1u);
    atomicMax(&status[1], ~i);
}

// Unit `u` of the indexed entry `e`: its bytes of each row it meets (rows of any width, one
// byte up), each row's from its source row as `x` names it through one 16-byte load shifted
// into place, zeros for an index out of range.
fn indexed_unit(e: Entry, x: IndexRows, u: u32) {
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
        if (r != NO_ROW) {
            var y = load_bytes16(0u, e.src_offset + (block * x.capacity + r) * e.src_stride + col);
            if (k > 0u) {
                y = funnel(vec4<u32>(0u), y, 16u - k);
            }
            v |= y & byte_mask(k, take);
        } else if (col == 0u && block == 0u) {
            record_bad_index(i);
        }
        k += take;
        row += 1u;
        col = 0u;
    }
    store_unit_n(e.dst_unit + u, v, n);
}

// The units `span` (first, end, step) of the indexed entry `e`.
fn indexed_units(e: Entry, span: vec3<u32>) {
    let x = read_index_rows();
    for (var u = span.x; u < span.y; u += span.z) {
        indexed_unit(e, x, u);
    }
}
