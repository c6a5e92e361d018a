// ---- The join: a concat, the split's byte rows read the other way ----
//
// Lanes own units of the output, so no two lanes write one word whatever the inputs' byte
// offsets. The table (src/gpu/gather/joins.rs), after the header: the dispatch's
// `JoinHeader`, then its `Params.num_entries` segments in column order. Each lane takes its
// units, a run of them or in turn as the lane mapping says (`join_runs_block`), and finds
// their segments in the table.

// The header, the end of the segments (`segments_end`, past the last one's number), whether
// every unit visits every part from the first (`short`), and whether the units are walked
// from the one segment `one` (`walked`, `join_walk`), read once a lane (`join_of`).
struct Join {
    header: JoinHeader,
    segments_end: u32,
    short: bool,
    walked: bool,
    one: Segment,
}

// Entry point `main_join`: the block's join, then its schedule (`join_schedule`, which the
// build gives: the channels, or each lane its units). In a dispatch of one join repeated, the
// block's join is one division away (`repeat_blocks` blocks a join, PyTorch's direct map
// from a block to its part): the join's first unit and its segments' sources move to it, and
// the block is numbered within it.
fn join_block(block: u32, lane: u32) {
    let p = read_params();
    if (block >= p.num_blocks) {
        return;
    }
    var h = read_join_header();
    let j = block / h.repeat_blocks;
    h.first_unit += j * h.repeat_units;
    join_src_shift = j * h.repeat_src;
    dst_binding = h.binding + j * h.repeat_binding;
    join_schedule(p, h, block - j * h.repeat_blocks, lane);
}

// The dispatch's join, its header `h`, read once a lane. Every unit visits every part from
// the first (`short`) in rows of up to a unit, and in one segment of several parts; one
// segment in binding 0 that is the whole row is walked (the host merges parts into one in
// longer rows only where that is so: equal parts each narrower than a unit or of whole words).
fn join_of(p: Params, h: JoinHeader) -> Join {
    let end = p.num_entries + 1u;
    var one = Segment(0u, 0u, 0u, 0u, 0u, 0u);
    if (end == 2u) {
        one = read_segment(1u);
    }
    let short = h.row_bytes <= 16u || one.count > 1u;
    let walked = end == 2u && one.binding == 0u && one.first_byte == 0u && one.count * one.row_bytes == h.row_bytes;
    return Join(h, end, short, walked, one);
}

// Points `k` and `seg` at the last segment whose first column is at or before `c` (k = 0
// where there is none), starting from the segment they hold.
fn join_segment(h: Join, c: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    let limit = h.segments_end;
    if (*k > 0u && (*seg).first_byte <= c) {
        if (c < (*seg).first_byte + (*seg).row_bytes) {
            return;
        }
        // Walking along a row: a gap before the next segment, or the next segment, most
        // often.
        if (*k + 1u >= limit) {
            return;
        }
        let next = read_segment(*k + 1u);
        if (c < next.first_byte) {
            return;
        }
        if (c < next.first_byte + next.row_bytes) {
            *k += 1u;
            *seg = next;
            return;
        }
    }
    // 0 before the first segment.
    var lo = 0u;
    var hi = limit;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (read_segment_first_byte(mid) <= c) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *k = lo;
    if (lo > 0u) {
        *seg = read_segment(lo);
    }
}

// Where a part `w` bytes wide, from column `first` of rows of `r` bytes, first holds an
// output byte at or past `b`, which lies in row `row0` (in its first row that ends after
// `b`: `row0` or the next): that byte, its offset in the part's source from its row 0, and
// its row. No division: a CPU adapter divides lane by lane.
fn part_meets(b: u32, r: u32, first: u32, w: u32, row0: u32) -> vec3<u32> {
    let row = select(row0 + 1u, row0, row0 * r + first + w > b);
    let a = max(b, row * r + first);
    return vec3<u32>(a, row * w + a - row * r - first, row);
}

// Output unit `unit`, part by part: each part's bytes in the unit lie back to back in its
// source, so one 16-byte load takes them, and each row's run of them moves to its place; then
// the unit is stored, bytes no part of this dispatch covers keeping their values. Rows of up
// to 16 bytes visit every part from the first, so neighbouring lanes load from the same part
// at once; longer rows visit the parts from the one at the unit's first column on, round the
// row's end to the first part where the unit crosses it.
fn join_unit(h: Join, unit: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    let b = unit * 16u;
    let end = min(b + 16u, h.header.end_byte);
    let r = h.header.row_bytes;
    let row0 = b / r;
    // Whether the unit may hold bytes of the next row's parts: it passes the row's end (in a
    // band, the band's first byte in the next row).
    let wraps = end - 1u >= (row0 + 1u) * r + h.header.band_first;
    let short = h.short;
    let limit = h.segments_end;
    var kk = 0u;
    var s = Segment(0u, 0u, 0u, 0u, 0u, 0u);
    var j = 0u;
    if (!short) {
        join_segment(h, b - row0 * r, k, seg);
        kk = *k;
        s = *seg;
    }
    if (kk == 0u) {
        // Before the first segment.
        if (limit <= 1u) {
            return;
        }
        kk = 1u;
        s = read_segment(1u);
    }
    let k0 = kk;
    let j0 = j;
    var v = vec4<u32>(0u);
    var covered = vec4<u32>(0u);
    loop {
        let w = s.row_bytes;
        let first = s.first_byte + j * w;
        let start = part_meets(b, r, first, w, row0);
        if (start.x < end) {
            let x = load_bytes16(s.binding, s.src_offset + j * s.part_step + start.y);
            var i = 0u;
            for (var row = start.z; row * r + first < end; row++) {
                let o0 = max(b, row * r + first);
                let len = min(end, row * r + first + w) - o0;
                let p = o0 - b;
                // Bytes i .. i + len of x to bytes p .. p + len of the unit.
                var y = x;
                if (p > i) {
                    y = funnel(vec4<u32>(0u), x, 16u - (p - i));
                } else if (i > p) {
                    y = funnel(x, vec4<u32>(0u), i - p);
                }
                let m = byte_mask(p, len);
                v |= y & m;
                covered |= m;
                i += len;
            }
        } else if (!short && (kk != k0 || j != j0)) {
            // Parts of long rows come in the order of their first bytes in the unit, but the
            // first one, which may end before the unit's first column.
            break;
        }
        j += 1u;
        // (Segments have one part each but in short rows.)
        if (!short || j >= s.count) {
            j = 0u;
            kk += 1u;
            if (kk >= limit) {
                if (short || !wraps) {
                    break;
                }
                kk = 1u;
            }
            s = read_segment(kk);
        }
        if (kk == k0 && j == j0) {
            break;
        }
    }
    store_masked(unit, v, covered);
}
