// ---- A scatter: each row's 16-byte chunks, placed where its index says ----

// The chunks `span` (first, end, step) of the scatter `e`: chunk `k` of row `(t, h)` is
// bytes `16 * k ..` of that row, placed at its slot's row. A lane takes them a token at a
// time (a CPU adapter's lane a run of chunks, a GPU's lanes every 256th, one a turn): the
// token's slot and places are found once, then its rows' chunks move in a loop of stores
// alone (a CPU adapter runs every branch of a loop's body). A token whose index is out of
// range is recorded by its first chunk.
fn scatter_units(e: Entry, x: IndexRows, span: vec3<u32>) {
    let chunks = (e.row_bytes + 15u) / 16u;
    var row = span.x / chunks;
    var k = span.x - row * chunks;
    var t = row / x.heads;
    var h = row - t * x.heads;
    var u = span.x;
    while (u < span.y) {
        // Chunks of token `t` from `(h, k)` on: the rest of its rows in runs, one in lanes.
        let n = select(1u, min(span.y - u, (x.heads - h) * chunks - k), LANES_IN_RUNS);
        let s = indexed_row(x, t);
        if (s < PADDING) {
            let block = s / x.block_size;
            let at = x.dst_offset + block * x.dst_block_stride + (s - block * x.block_size) * x.dst_slot_stride;
            let src = e.src_offset + t * e.src_stride;
            var hk = vec2<u32>(h, k);
            for (var j = 0u; j < n; j++) {
                scatter_chunk(at + hk.x * x.dst_head_stride + hk.y * 16u, src + hk.x * x.src_head_step + hk.y * 16u, min(16u, e.row_bytes - hk.y * 16u));
                // The next chunk: the row's next, or the next row's first.
                let next = hk.y + 1u == chunks;
                hk = select(vec2<u32>(hk.x, hk.y + 1u), vec2<u32>(hk.x + 1u, 0u), next);
            }
        } else if (s == NO_ROW && k == 0u && h == 0u && x.counts == 1u) {
            record_bad_index(t);
        }
        // The lane's next chunk: `n * span.z` on.
        u += n * span.z;
        k += n * span.z;
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
