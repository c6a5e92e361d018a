// ---- The join: a concat, the split's byte rows read the other way ----
//
// Lanes own units of the output, so no two lanes write one word whatever the inputs' byte
// offsets. The table (src/gpu/gather/joins.rs), after the header: the dispatch's
// `JoinHeader`, its `Params.num_entries` segments in column order, then (GPUs) one
// `BlockRecord` per block: the segments the block's columns touch, which its lanes copy into
// workgroup memory (`stage`, six words each) once and look up there.

// The header with what a block knows: the end of the segments (`segments_end`, past the
// last one's number) and the segments `cached_first .. cached_first + cached_count` at hand
// in `stage` (none: lanes search the table).
struct Join {
    header: JoinHeader,
    segments_end: u32,
    cached_first: u32,
    cached_count: u32,
}

// No unit: a band's numbered unit past the band's end in its row.
const NO_UNIT: u32 = 0xffffffffu;

// The output unit of the dispatch's unit `v` (NO_UNIT where a band's row ends before it).
fn join_unit_at(h: Join, v: u32) -> u32 {
    if (h.header.band_units == 0u) {
        return h.header.first_unit + v;
    }
    let row = v / h.header.band_units;
    let start = row * h.header.row_bytes + h.header.band_first;
    let u = start / 16u + (v - row * h.header.band_units);
    if (u * 16u >= start + h.header.band_width) {
        return NO_UNIT;
    }
    return u;
}

// The columns segment `s` covers in a row: its parts side by side. Lanes in runs (CPU
// adapters) get one part per segment where rows are longer than a unit (the host merges none
// for them: the division costs them more than the table reads it saves), and come here only
// for such rows.
fn segment_width(s: Segment) -> u32 {
    if (LANES_IN_RUNS) {
        return s.row_bytes;
    }
    return s.count * s.row_bytes;
}

// The part of segment `s` that holds column `c` (at or after its first), as a segment of its
// own; its last part where `c` lies past its columns.
fn part_of(s: Segment, c: u32) -> Segment {
    if (LANES_IN_RUNS || s.count <= 1u) {
        return s;
    }
    let j = min((c - s.first_byte) / s.row_bytes, s.count - 1u);
    return Segment(s.first_byte + j * s.row_bytes, s.row_bytes, s.src_offset + j * s.part_step, s.binding, 1u, 0u);
}

// What lane 0 reads for the block: the dispatch's params and header, and the block's record.
struct JoinBlock {
    params: Params,
    header: JoinHeader,
    kept: BlockRecord,
}

var<workgroup> wg_join: JoinBlock;

// Segment `k`: from workgroup memory when the block keeps it, else from the table.
fn segment(h: Join, k: u32) -> Segment {
    let i = k - h.cached_first;
    if (i < h.cached_count) {
        let w = SEGMENT_WORDS * i;
        return Segment(stage[w], stage[w + 1u], stage[w + 2u], stage[w + 3u], stage[w + 4u], stage[w + 5u]);
    }
    return read_segment(k);
}

// The first column of segment `k`, as `segment` finds it.
fn segment_first_byte(h: Join, k: u32) -> u32 {
    let i = k - h.cached_first;
    if (i < h.cached_count) {
        return stage[SEGMENT_WORDS * i];
    }
    return read_segment_first_byte(k);
}

// The end of the segments a lane of this block may look at: the cached ones' end where the
// block keeps them (its columns touch no segment past them), else the table's.
fn segment_limit(h: Join) -> u32 {
    return select(h.segments_end, h.cached_first + h.cached_count, h.cached_count > 0u);
}

// The dispatch's header `j`, with its `p.num_entries` segments and the block's `kept`.
fn join_view(p: Params, j: JoinHeader, kept: BlockRecord) -> Join {
    return Join(j, p.num_entries + 1u, kept.first, kept.count);
}

// Entry point `main_join`: the channels, each lane a run of units (LANES_IN_RUNS), or lanes
// in turn.
fn join_block(block: u32, lane: u32) {
    if (CHANNEL_STRIDE > 0u) {
        join_channels(block, lane);
    } else if (LANES_IN_RUNS) {
        join_runs_block(block, lane);
    } else {
        join_lanes_block(block, lane);
    }
}

// The join on GPUs: WORKGROUP_SIZE lanes take the block's units in turn, the block's
// segments at hand in `stage`.
fn join_lanes_block(block: u32, lane: u32) {
    if (lane == 0u) {
        let p = read_params();
        wg_join.params = p;
        wg_join.header = read_join_header();
        var kept = BlockRecord(0u, 0u);
        if (block < p.num_blocks) {
            kept = read_block_record(p.num_entries, block);
        }
        wg_join.kept = kept;
    }
    let found = workgroupUniformLoad(&wg_join);
    let p = found.params;
    let h = join_view(p, found.header, found.kept);
    // At most one segment per lane (MAX_KEPT_SEGMENTS in src/gpu/gather/joins.rs).
    if (lane < h.cached_count) {
        let s = read_segment(h.cached_first + lane);
        let w = SEGMENT_WORDS * lane;
        stage[w] = s.first_byte;
        stage[w + 1u] = s.row_bytes;
        stage[w + 2u] = s.src_offset;
        stage[w + 3u] = s.binding;
        stage[w + 4u] = s.count;
        stage[w + 5u] = s.part_step;
    }
    workgroupBarrier();
    if (block >= p.num_blocks) {
        return;
    }
    // The segment of the lane's last run (0: none yet), kept from unit to unit.
    var k = 0u;
    var seg = Segment(0u, 0u, 0u, 0u, 0u, 0u);
    for (var step = 0u; step < p.steps_per_lane; step++) {
        let v0 = (block * p.steps_per_lane + step) * WORKGROUP_SIZE;
        if (v0 >= h.header.units) {
            break;
        }
        if (h.header.staged != 0u) {
            let step_end = h.header.first_unit + min(v0 + WORKGROUP_SIZE, h.header.units);
            stage_step(h, (h.header.first_unit + v0) * 16u, min(step_end * 16u, h.header.end_byte), lane);
            workgroupBarrier();
        }
        let v = v0 + lane;
        if (v < h.header.units) {
            let u = join_unit_at(h, v);
            if (u != NO_UNIT) {
                join_unit(h, u, &k, &seg);
            }
        }
        if (h.header.staged != 0u) {
            workgroupBarrier();
        }
    }
}

// The staged join (GPUs, parts narrow or unaligned, at most MAX_STAGED_PARTS of them):
// `stage` holds the block's segments, each one's first part number, each part's offset, then
// each step's source bytes.
const MAX_STAGED_PARTS: u32 = 128u;
const PART_NUMBERS_AT: u32 = SEGMENT_WORDS * MAX_STAGED_PARTS;
const PART_OFFSETS_AT: u32 = PART_NUMBERS_AT + MAX_STAGED_PARTS;
const STAGED_DATA_AT: u32 = PART_OFFSETS_AT + MAX_STAGED_PARTS;

// The source bytes of the step's output bytes `b0 .. b1`: each kept part's, which lie back
// to back in its source, loaded by consecutive lanes as aligned vec4s, each once; a part's
// offset is where its source byte `s` lies in `stage`, less `s`.
fn stage_step(h: Join, b0: u32, b1: u32, lane: u32) {
    let r = h.header.row_bytes;
    let row0 = b0 / r;
    var base = STAGED_DATA_AT / 4u;
    var number = 0u;
    for (var i = 0u; i < h.cached_count; i++) {
        let s = segment(h, h.cached_first + i);
        if (lane == 0u) {
            stage[PART_NUMBERS_AT + i] = number;
        }
        for (var j = 0u; j < s.count; j++) {
            let w = s.row_bytes;
            let first = s.first_byte + j * w;
            let start = part_meets(b0, r, first, w, row0);
            if (start.x < b1) {
                let rz = (b1 - 1u - first) / r;
                let src = s.src_offset + j * s.part_step;
                let q0 = (src + start.y) / 16u;
                let n = (src + rz * w + (min(b1, rz * r + first + w) - rz * r - first) + 15u) / 16u - q0;
                for (var t = lane; t < n; t += WORKGROUP_SIZE) {
                    put_staged(base + t, load_vec4_edge_in(s.binding, q0 + t));
                }
                if (lane == 0u) {
                    stage[PART_OFFSETS_AT + number + j] = 16u * (base - q0);
                }
                base += n;
            }
        }
        number += s.count;
    }
}

// Points `k` and `seg` at the last segment whose first column is at or before `c` (k = 0
// where there is none), starting from the segment they hold.
fn join_segment(h: Join, c: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    let limit = segment_limit(h);
    if (*k > 0u && (*seg).first_byte <= c) {
        if (c < (*seg).first_byte + segment_width(*seg)) {
            return;
        }
        // Walking along a row: a gap before the next segment, or the next segment, most
        // often.
        if (*k + 1u >= limit) {
            return;
        }
        let next = segment(h, *k + 1u);
        if (c < next.first_byte) {
            return;
        }
        if (c < next.first_byte + segment_width(next)) {
            *k += 1u;
            *seg = next;
            return;
        }
    }
    // Cached: the answer is among them, or 0 before the first segment (cached_first = 1).
    var lo = 0u;
    if (h.cached_count > 0u) {
        lo = h.cached_first - 1u;
    }
    var hi = limit;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (segment_first_byte(h, mid) <= c) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *k = lo;
    if (lo > 0u) {
        *seg = segment(h, lo);
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
    let short = r <= 16u;
    let limit = segment_limit(h);
    var kk = 0u;
    var s = Segment(0u, 0u, 0u, 0u, 0u, 0u);
    var j = 0u;
    if (!short) {
        join_segment(h, b - row0 * r, k, seg);
        kk = *k;
        s = *seg;
        if (kk > 0u && !LANES_IN_RUNS && s.count > 1u) {
            j = min((b - row0 * r - s.first_byte) / s.row_bytes, s.count - 1u);
        }
    }
    if (kk == 0u) {
        // Before the first segment (which the block keeps, if it keeps any).
        if (limit <= 1u) {
            return;
        }
        kk = 1u;
        s = segment(h, 1u);
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
            let src = s.src_offset + j * s.part_step + start.y;
            var x: vec4<u32>;
            if (!LANES_IN_RUNS && h.header.staged != 0u) { // (the runs' pipelines fold it away)
                let number = stage[PART_NUMBERS_AT + kk - h.cached_first] + j;
                x = staged16(stage[PART_OFFSETS_AT + number] + src);
            } else {
                x = load_bytes16(s.binding, src);
            }
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
        // (Lanes in runs have one part per segment but in short rows.)
        if ((LANES_IN_RUNS && !short) || j >= s.count) {
            j = 0u;
            kk += 1u;
            if (kk >= limit) {
                if (short || !wraps) {
                    break;
                }
                kk = 1u;
            }
            s = segment(h, kk);
        }
        if (kk == k0 && j == j0) {
            break;
        }
    }
    store_masked(unit, v, covered);
}
