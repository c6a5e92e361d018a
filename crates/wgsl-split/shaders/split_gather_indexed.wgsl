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

