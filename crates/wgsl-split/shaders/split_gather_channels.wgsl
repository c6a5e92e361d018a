// ---- Channels: rows of equal parts shorter than a unit, split or joined ----
//
// In the builds of the channels only (`gpu::gather::builds`, with the bodies' dispatchers
// `channel_bodies` and `join_channel_bodies` for their counts of parts; the other builds
// take `channels` and `join_channels` empty). Rows of 2 to 8 parts of CHANNEL_WIDTH bytes
// side by side (the host's `Channels`: parts of 1, 2 or 4 bytes). The dispatch's count of
// parts (a split's entries, a concat's segment's parts) picks one body, in each of which it
// is a constant, `c`: 2, 3 or 4, or in the wide build 5 to 8. Each lane step takes a group of
// CHANNEL_ROWS rows, one unit of each part and `c` units of the rows: it loads the group's
// aligned vec4s (a split's from its input rows, a concat's one from each part), then stores
// its units, every byte picked from a place the constants fix, so the driver folds the
// picking into shifts of registers (the same picking at places read from the table ran at a
// third of the rate on llvmpipe, docs/performance.md). The group's loads and units are
// written out, not looped over: those past `c` fold away with their guards. A lane takes its
// groups in a run (LANES_IN_RUNS) or, consecutive lanes consecutive groups, in turn
// (`lane_span`); but a concat's stores go unit by unit on GPUs, consecutive lanes consecutive
// units (`join_channel_unit`).
// CHANNEL_WIDTH as a divisor (at least 1), and the rows of a group.
override CHANNEL_UNIT: u32 = max(CHANNEL_WIDTH, 1u);
override CHANNEL_ROWS: u32 = 16u / CHANNEL_UNIT;

// The group's vec4 `i` (one a part, `c` of them) into its words: vec4 `at + i * step` of the
// input.
fn channel_load(w: ptr<function, array<u32, 32>>, at: u32, step: u32, i: u32, c: u32) {
    if (i < c) {
        let v = load_vec4(at + i * step);
        (*w)[4u * i] = v.x;
        (*w)[4u * i + 1u] = v.y;
        (*w)[4u * i + 2u] = v.z;
        (*w)[4u * i + 3u] = v.w;
    }
}

// The group's vec4s (`channel_load`), written out: a split's rows follow one another
// (`step` 1), a concat's parts lie `step` vec4s apart.
fn channel_group(w: ptr<function, array<u32, 32>>, at: u32, step: u32, c: u32) {
    channel_load(w, at, step, 0u, c); channel_load(w, at, step, 1u, c); channel_load(w, at, step, 2u, c); channel_load(w, at, step, 3u, c); channel_load(w, at, step, 4u, c); channel_load(w, at, step, 5u, c); channel_load(w, at, step, 6u, c); channel_load(w, at, step, 7u, c);
}

// The byte of the group's words that byte `j` of its unit `t` takes, in rows of `c` parts: a
// split's unit t is part t's, from the group's rows; a concat's is unit t of the group's rows,
// from the parts' units.
fn channel_place(c: u32, t: u32, j: u32, join: bool) -> u32 {
    let stride = c * CHANNEL_UNIT;
    if (join) {
        let o = 16u * t + j;
        let col = o % stride;
        return 16u * (col / CHANNEL_UNIT) + (o / stride) * CHANNEL_UNIT + col % CHANNEL_UNIT;
    }
    return (j / CHANNEL_UNIT) * stride + t * CHANNEL_UNIT + j % CHANNEL_UNIT;
}

// Byte `j` of the group's unit `t`, in its place in the unit's word.
fn channel_byte(w: ptr<function, array<u32, 32>>, c: u32, t: u32, j: u32, join: bool) -> u32 {
    let q = channel_place(c, t, j, join);
    return (((*w)[q >> 2u] >> ((q & 3u) * 8u)) & 0xffu) << ((j & 3u) * 8u);
}

fn channel_word(w: ptr<function, array<u32, 32>>, c: u32, t: u32, k: u32, join: bool) -> u32 {
    // Parts of whole words: the word as it is.
    if (CHANNEL_WIDTH == 4u) {
        return (*w)[channel_place(c, t, 4u * k, join) >> 2u];
    }
    return channel_byte(w, c, t, 4u * k, join) | channel_byte(w, c, t, 4u * k + 1u, join) | channel_byte(w, c, t, 4u * k + 2u, join) | channel_byte(w, c, t, 4u * k + 3u, join);
}

fn channel_unit(w: ptr<function, array<u32, 32>>, c: u32, t: u32, join: bool) -> vec4<u32> {
    return vec4<u32>(channel_word(w, c, t, 0u, join), channel_word(w, c, t, 1u, join), channel_word(w, c, t, 2u, join), channel_word(w, c, t, 3u, join));
}

// The group's unit `t` into unit `g` of part t, whose first unit and binding `dsts` holds.
fn channel_store(w: ptr<function, array<u32, 32>>, dsts: ptr<function, array<vec2<u32>, 8>>, g: u32, t: u32, c: u32) {
    if (t < c) {
        store_unit_fast_in((*dsts)[t].y, (*dsts)[t].x + g, channel_unit(w, c, t, false));
    }
}

// Part `k`'s entry: its first unit and binding into `dsts`, and `whole` lowered to the groups
// whose units it holds whole below its binding's `units_end` (those store with no choice of
// range).
fn channel_part(dsts: ptr<function, array<vec2<u32>, 8>>, whole: ptr<function, u32>, k: u32, c: u32) {
    if (k < c) {
        let e = read_entry(k);
        (*dsts)[k] = vec2<u32>(e.dst_unit, e.binding);
        *whole = min(*whole, min(units_below(e, units_end(e.binding)), e.out_bytes / 16u));
    }
}

// A split's channels (`main_rows`): the body of its count of parts (`channels_of`, through
// `channel_bodies`), then the lane's groups past a part's whole units below its `units_end`
// (the last group where rows are not a multiple of 16 bytes, and a binding's last units),
// unit by unit (`copy_unit`), outside the bodies: what each body repeats, a CPU adapter's
// compiler takes again.
fn channels(block: u32, lane: u32) {
    let p = read_params();
    let left = channel_bodies(p, block, lane);
    for (var g = left.x; g < left.y; g += left.z) {
        for (var k = 0u; k < p.num_entries; k++) {
            let e = read_entry(k);
            dst_binding = e.binding;
            copy_unit(e, g, false);
        }
    }
}

// A split's channels of `c` parts: the lane's whole groups, from entry 0's first source byte
// (a whole vec4) on; the lane's groups left, as a span (first, end, step).
fn channels_of(p: Params, block: u32, lane: u32, c: u32) -> vec3<u32> {
    var dsts: array<vec2<u32>, 8>;
    var whole = 0xffffffffu;
    channel_part(&dsts, &whole, 0u, c); channel_part(&dsts, &whole, 1u, c); channel_part(&dsts, &whole, 2u, c); channel_part(&dsts, &whole, 3u, c); channel_part(&dsts, &whole, 4u, c); channel_part(&dsts, &whole, 5u, c); channel_part(&dsts, &whole, 6u, c); channel_part(&dsts, &whole, 7u, c);
    let e0 = read_entry(0u);
    let span = lane_span(p, block, lane, entry_units(e0));
    let src = e0.src_offset / 16u;
    var g = span.x;
    for (; g < min(whole, span.y); g += span.z) {
        var w: array<u32, 32>;
        channel_group(&w, src + g * c, 1u, c);
        channel_store(&w, &dsts, g, 0u, c); channel_store(&w, &dsts, g, 1u, c); channel_store(&w, &dsts, g, 2u, c); channel_store(&w, &dsts, g, 3u, c); channel_store(&w, &dsts, g, 4u, c); channel_store(&w, &dsts, g, 5u, c); channel_store(&w, &dsts, g, 6u, c); channel_store(&w, &dsts, g, 7u, c);
    }
    return vec3<u32>(g, span.y, span.z);
}

// The group's unit `t` into the output's unit `d + t` (`d`: the group's first).
fn join_channel_store(w: ptr<function, array<u32, 32>>, d: u32, t: u32, c: u32) {
    if (t < c) {
        store_unit_fast(d + t, channel_unit(w, c, t, true));
    }
}

// Unit `u` of the whole groups into output unit `d`, on GPUs, where a warp's stores then cover
// whole sectors (a lane storing its group's `c` units, a warp's stores `16 * c` bytes apart,
// ran at half the copy kernel's rate on the H200; docs/performance.md): parts of a word load
// its four words, word q row q / c of part q % c; narrower parts load the unit's group and
// pick the unit's place by a switch, each case's places constants.
fn join_channel_unit(src: u32, step: u32, d: u32, u: u32, c: u32) {
    var v: vec4<u32>;
    if (CHANNEL_WIDTH == 4u) {
        let q = 4u * u;
        let a = 4u * src;
        let st = 4u * step;
        v = vec4<u32>(load_word(a + q % c * st + q / c), load_word(a + (q + 1u) % c * st + (q + 1u) / c), load_word(a + (q + 2u) % c * st + (q + 2u) / c), load_word(a + (q + 3u) % c * st + (q + 3u) / c));
    } else {
        let g = u / c;
        var w: array<u32, 32>;
        channel_group(&w, src + g, step, c);
        switch (u - g * c) {
            case 0u: { v = channel_unit(&w, c, 0u, true); }
            case 1u: { v = channel_unit(&w, c, 1u, true); }
            case 2u: { v = channel_unit(&w, c, 2u, true); }
            case 3u: { v = channel_unit(&w, c, 3u, true); }
            case 4u: { v = channel_unit(&w, c, 4u, true); }
            case 5u: { v = channel_unit(&w, c, 5u, true); }
            case 6u: { v = channel_unit(&w, c, 6u, true); }
            default: { v = channel_unit(&w, c, 7u, true); }
        }
    }
    store_unit_fast(d, v);
}

// Rows of parts side by side (`main_join`): a concat's channels, or a part of a split written
// channels-last through its view (its planes are the parts): the body of the segment's count
// of parts (`join_channels_of`, through `join_channel_bodies`), then the lane's groups left.
fn join_channels(p: Params, h: JoinHeader, block: u32, lane: u32) {
    let s = read_segment(1u);
    let left = join_channel_bodies(p, h, s, block, lane);
    // The lane's groups past the output's whole units below its binding's `units_end` (the
    // last group where rows are not a multiple of 16 bytes, a binding's last units), walked
    // (`join_walk`: the segment is the whole row): in runs at once, in turn a group a step.
    if (left.x >= left.y) {
        return;
    }
    let last = h.first_unit + (h.end_byte + 15u) / 16u;
    let walk = join_of(p, h);
    let groups = select(1u, left.y - left.x, LANES_IN_RUNS);
    for (var g = left.x; g < left.y; g += max(left.z, groups)) {
        let d = h.first_unit + g * s.count;
        join_walk(walk, d, min(d + groups * s.count, last));
    }
}

// Rows of `c` parts side by side: the dispatch's one segment, in binding 0, holds every part's
// rows from a whole vec4 on; the output's rows lie from unit `first_unit` on, `end_byte`
// bytes. In runs (CPU adapters) a lane stores its groups' units; on GPUs a block's whole
// groups go unit by unit (`join_channel_unit`). The lane's groups left, past the whole ones,
// as a span (first, end, step).
fn join_channels_of(p: Params, h: JoinHeader, s: Segment, block: u32, lane: u32, c: u32) -> vec3<u32> {
    let o = h.first_unit;
    let rows = h.end_byte / (c * CHANNEL_UNIT);
    let span = lane_span(p, block, lane, (rows + CHANNEL_ROWS - 1u) / CHANNEL_ROWS);
    // None where the output starts past its binding's units (a small window, all tail).
    let bound = units_end(dst_binding);
    let whole = select(0u, min(bound - o, h.end_byte / 16u) / c, bound > o);
    let src = s.src_offset / 16u;
    let step = s.part_step / 16u;
    let end_whole = min(whole, span.y);
    let g = join_channel_whole(o, src, step, end_whole, span, lane, c);
    return vec3<u32>(g, span.y, span.z);
}

// The lane's whole groups of `span` below `end` (LANES_IN_RUNS: the build's
// `join_channel_whole`), from the output's unit `o`, the parts' vec4 `src` on, `step` vec4s
// apart: it stores their units; the lane's first group past them.
fn join_channel_groups(o: u32, src: u32, step: u32, end: u32, span: vec3<u32>, c: u32) -> u32 {
    var g = span.x;
    for (; g < end; g++) {
        var w: array<u32, 32>;
        channel_group(&w, src + g, step, c);
        let d = o + g * c;
        join_channel_store(&w, d, 0u, c); join_channel_store(&w, d, 1u, c); join_channel_store(&w, d, 2u, c); join_channel_store(&w, d, 3u, c); join_channel_store(&w, d, 4u, c); join_channel_store(&w, d, 5u, c); join_channel_store(&w, d, 6u, c); join_channel_store(&w, d, 7u, c);
    }
    return g;
}

// `join_channel_groups` on GPUs (lanes in turn): the block's whole groups as output units,
// consecutive lanes consecutive units; then the lane's first group past them.
fn join_channel_lanes(o: u32, src: u32, step: u32, end: u32, span: vec3<u32>, lane: u32, c: u32) -> u32 {
    var g = span.x;
    let base = span.x - lane;
    for (var u = base * c + lane; u < end * c; u += WORKGROUP_SIZE) {
        join_channel_unit(src, step, o + u, u, c);
    }
    if (g < end) {
        g += (end - g + span.z - 1u) / span.z * span.z;
    }
    return g;
}

