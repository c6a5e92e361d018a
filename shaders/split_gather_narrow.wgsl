// ---- Rows shorter than a unit: the walk and the channels ----
//
// A unit of such rows spans several of them, so a split's runs (`copy_units`) and a concat's
// walked units (`join_walk`, in runs or a unit a step) gather each whole unit straight from
// its rows, a word or a byte at a time, with a cursor stepped from one to the next: no
// division, and no inner loop (llvmpipe counts every loop turn against a lane's budget, and a
// division by a value the shader reads is a scalar division per lane on a CPU adapter). A
// split's entry is one part a row, its rows `src_stride` apart; a concat's segment is `count`
// parts side by side, each part's rows back to back in its source, `part_step` bytes from one
// part to the next.

// A cursor over parts side by side in input binding 0, in steps of a word (parts of whole
// words from whole words) or a byte, every field counted in those steps: source step `at`,
// column `col` of part `part`'s row, parts `width` steps wide, `parts` of them a row, and the
// moves from a part's row's last step to the next part's (`to_part`) or to the next row's
// first part (`to_row`); u32 arithmetic wraps. (Binding 0 alone: 16 loads a unit through a
// binding chosen at run time made SwiftShader's compile of the multi-input build hang in
// Chromium.)
struct Walk {
    at: u32,
    col: u32,
    part: u32,
    width: u32,
    parts: u32,
    to_part: u32,
    to_row: u32,
}

// The cursor at source byte `at`, column `col` of part `part`, over `parts` parts of `width`
// bytes, `part_step` source bytes from one part to the next and `row_gap` bytes after a
// row's last part; a word a step where `words` (every argument then a multiple of 4).
fn walk_from(at: u32, col: u32, part: u32, width: u32, parts: u32, part_step: u32, row_gap: u32, words: bool) -> Walk {
    // Bytes into steps by a shift: a division by a value the shader computes costs a GPU
    // tens of instructions.
    let sh = select(0u, 2u, words);
    let step = part_step >> sh;
    let w = width >> sh;
    return Walk(at >> sh, col >> sh, part, w, parts, 1u + step - w, 1u + (row_gap >> sh) - (parts - 1u) * step);
}

// The next word (`words`, a constant at each call) or byte from the cursor, in the low bits;
// the cursor steps past it with one add, its move chosen by selects (no division, no
// multiplication).
fn walk_step(w: ptr<function, Walk>, words: bool) -> u32 {
    let at = (*w).at;
    var x: u32;
    if (words) {
        x = load_word(at);
    } else {
        x = (load_word(at >> 2u) >> ((at & 3u) * 8u)) & 0xffu;
    }
    let part_end = (*w).col + 1u == (*w).width;
    let row_end = part_end && (*w).part + 1u == (*w).parts;
    (*w).at += select(select(1u, (*w).to_part, part_end), (*w).to_row, row_end);
    (*w).col = select((*w).col + 1u, 0u, part_end);
    (*w).part = select(select((*w).part, (*w).part + 1u, part_end), 0u, row_end);
    return x;
}

// The next word from the cursor: one source word where `words`, else four bytes. `words` is
// a constant at each call: the loops that take units are written once a word and once a byte,
// as a CPU adapter runs both sides of a branch inside a loop for its whole SIMD group.
fn walk_word(w: ptr<function, Walk>, words: bool) -> u32 {
    if (words) {
        return walk_step(w, true);
    }
    let b0 = walk_step(w, false);
    let b1 = walk_step(w, false);
    let b2 = walk_step(w, false);
    let b3 = walk_step(w, false);
    return b0 | (b1 << 8u) | (b2 << 16u) | (b3 << 24u);
}

// The next unit from the cursor.
fn walk_unit(w: ptr<function, Walk>, words: bool) -> vec4<u32> {
    let w0 = walk_word(w, words);
    let w1 = walk_word(w, words);
    let w2 = walk_word(w, words);
    let w3 = walk_word(w, words);
    return vec4<u32>(w0, w1, w2, w3);
}

// The next `n` (at most 16) bytes from the cursor, as a unit's first bytes (the rest zeros):
// a word a step where `words`, else a byte. For a unit's few bytes at an edge.
fn walk_bytes(w: ptr<function, Walk>, n: u32, words: bool) -> vec4<u32> {
    var v = vec4<u32>(0u);
    if (words) {
        for (var i = 0u; i < n / 4u; i++) {
            v[i] = walk_step(w, true);
        }
    } else {
        for (var i = 0u; i < n; i++) {
            v[i / 4u] |= walk_step(w, false) << ((i % 4u) * 8u);
        }
    }
    return v;
}

// A cursor over entry `e`'s rows (one part a row, `src_stride` apart) from place `at` on.
fn walk_entry(e: Entry, at: Place, words: bool) -> Walk {
    return walk_from(at.src, at.col, 0u, e.row_bytes, 1u, 0u, e.src_stride - e.row_bytes, words);
}

// A split's whole units `first_unit .. end_unit` of entry `e`, whose rows are shorter than a
// unit, from place `at` on. Rows of one or two words: a unit holds whole rows where it starts
// at a row's start, so its words lie at the same offsets from its first word in every unit.
fn run_narrow(e: Entry, first_unit: u32, end_unit: u32, at: Place, to: u32) {
    var u = first_unit;
    if (e.mode == MODE_WORD && (e.row_bytes == 4u || e.row_bytes == 8u) && at.col == 0u) {
        let step = e.src_stride >> 2u;
        let one = e.row_bytes == 4u;
        let o = select(vec4<u32>(0u, 1u, step, step + 1u), vec4<u32>(0u, 1u, 2u, 3u) * step, one);
        // Hoisted: a division in the loop costs llvmpipe a scalar division per lane and unit.
        let next = select(2u * step, 4u * step, one);
        var w = at.src >> 2u;
        for (; u < end_unit; u++) {
            store_unit_fast_in(to, e.dst_unit + u, vec4<u32>(load_word(w + o.x), load_word(w + o.y), load_word(w + o.z), load_word(w + o.w)));
            w += next;
        }
    } else {
        let words = e.mode == MODE_WORD;
        var walk = walk_entry(e, at, words);
        for (; u < end_unit; u++) {
            store_unit_fast_in(to, e.dst_unit + u, walk_unit(&walk, words));
        }
    }
}

// A concat's units `first .. end` of one lane where the dispatch's one segment, in binding 0,
// is the whole row (`Join.walked`: equal parts packed in one buffer, such as eight f32
// columns or RGB planes, each narrower than a unit or of whole words): each unit's bytes
// walked straight from the parts (`Walk`), a word at a time where the parts are of whole
// words from whole words, else a byte. The rows start at the header's `first_unit` (a
// concat's output at unit 0, a split's part written channels-last where its window puts it).
// The whole units below the output binding's `units_end` store with no choice of binding; the
// rest store through `store_unit_n`, only the output's bytes walked (stepped on from word to
// word, the words ran `concat_columns` at three times the rate on lavapipe of each word's
// place computed from its part and row: docs/performance.md).
fn join_walk(h: Join, first: u32, end: u32) {
    let s = h.one;
    let o = h.header.first_unit;
    let r = h.header.row_bytes;
    let b = (first - o) * 16u;
    let row = b / r;
    let j = (b - row * r) / s.row_bytes;
    let t = b - row * r - j * s.row_bytes;
    let words = (s.row_bytes | s.src_offset | s.part_step) % 4u == 0u;
    var w = walk_from(s.src_offset + j * s.part_step + row * s.row_bytes + t, t, j, s.row_bytes, s.count, s.part_step, 0u, words);
    let whole = min(min(end, units_end(first)), o + h.header.end_byte / 16u);
    var u = first;
    if (words) {
        for (; u < whole; u++) {
            store_unit_fast(u, walk_unit(&w, true));
        }
    } else {
        for (; u < whole; u++) {
            store_unit_fast(u, walk_unit(&w, false));
        }
    }
    for (; u < end; u++) {
        let n = min(h.header.end_byte - (u - o) * 16u, 16u);
        store_unit_n(u, walk_bytes(&w, n, words), n);
    }
}

// ---- Channels: rows of equal parts shorter than a unit, split or joined ----
//
// Rows of 2, 3 or 4 parts of CHANNEL_WIDTH bytes side by side (0: no such pipeline; the
// host's `Channels`: parts of 1, 2 or 4 bytes). The dispatch's count of parts (a split's
// entries, a concat's segment's parts) picks one of three bodies, in each of which it is a
// constant, `c`. Each lane step takes a group of CHANNEL_ROWS rows, one unit of each part and
// `c` units of the rows: it loads the group's aligned vec4s (a split's from its input rows, a
// concat's one from each part), then stores its units, every byte picked from a place the
// constants fix, so the driver folds the picking into shifts of registers (the same picking
// at places read from the table ran at a third of the rate on llvmpipe, docs/performance.md).
// The group's loads and units are written out, not looped over: those past `c` fold away
// with their guards. A lane takes its groups in a run (LANES_IN_RUNS) or, consecutive lanes
// consecutive groups, in turn (`lane_span`); but a concat's stores go unit by unit on GPUs,
// consecutive lanes consecutive units (`join_channel_unit`).
override CHANNEL_WIDTH: u32 = 0u;
// CHANNEL_WIDTH as a divisor: 1 in the pipelines without channels, whose code folds away.
override CHANNEL_UNIT: u32 = max(CHANNEL_WIDTH, 1u);
override CHANNEL_ROWS: u32 = 16u / CHANNEL_UNIT;

// The group's vec4 `i` (one a part, `c` of them) into its words: vec4 `at + i * step` of the
// input, or with `edge` (a group past the whole units) that vec4's words that exist and zeros.
fn channel_load(w: ptr<function, array<u32, 16>>, at: u32, step: u32, i: u32, c: u32, edge: bool) {
    if (i < c) {
        var v: vec4<u32>;
        if (edge) {
            v = load_vec4_edge(at + i * step);
        } else {
            v = load_vec4(at + i * step);
        }
        (*w)[4u * i] = v.x;
        (*w)[4u * i + 1u] = v.y;
        (*w)[4u * i + 2u] = v.z;
        (*w)[4u * i + 3u] = v.w;
    }
}

// The group's vec4s (`channel_load`), written out: a split's rows follow one another
// (`step` 1), a concat's parts lie `step` vec4s apart.
fn channel_group(w: ptr<function, array<u32, 16>>, at: u32, step: u32, c: u32, edge: bool) {
    channel_load(w, at, step, 0u, c, edge); channel_load(w, at, step, 1u, c, edge); channel_load(w, at, step, 2u, c, edge); channel_load(w, at, step, 3u, c, edge);
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
fn channel_byte(w: ptr<function, array<u32, 16>>, c: u32, t: u32, j: u32, join: bool) -> u32 {
    let q = channel_place(c, t, j, join);
    return (((*w)[q >> 2u] >> ((q & 3u) * 8u)) & 0xffu) << ((j & 3u) * 8u);
}

fn channel_word(w: ptr<function, array<u32, 16>>, c: u32, t: u32, k: u32, join: bool) -> u32 {
    // Parts of whole words: the word as it is.
    if (CHANNEL_WIDTH == 4u) {
        return (*w)[channel_place(c, t, 4u * k, join) >> 2u];
    }
    return channel_byte(w, c, t, 4u * k, join) | channel_byte(w, c, t, 4u * k + 1u, join) | channel_byte(w, c, t, 4u * k + 2u, join) | channel_byte(w, c, t, 4u * k + 3u, join);
}

fn channel_unit(w: ptr<function, array<u32, 16>>, c: u32, t: u32, join: bool) -> vec4<u32> {
    return vec4<u32>(channel_word(w, c, t, 0u, join), channel_word(w, c, t, 1u, join), channel_word(w, c, t, 2u, join), channel_word(w, c, t, 3u, join));
}

// The group's unit `t` into unit `g` of part t, whose first `dsts` holds.
fn channel_store(w: ptr<function, array<u32, 16>>, dsts: ptr<function, array<u32, 4>>, g: u32, t: u32, c: u32) {
    if (t < c) {
        store_unit_fast((*dsts)[t] + g, channel_unit(w, c, t, false));
    }
}

// Part `k`'s entry: its first unit into `dsts`, and `whole` lowered to the groups whose units
// it holds whole below its binding's `units_end` (those store with no choice of binding).
fn channel_part(dsts: ptr<function, array<u32, 4>>, whole: ptr<function, u32>, k: u32, c: u32) {
    if (k < c) {
        let e = read_entry(k);
        (*dsts)[k] = e.dst_unit;
        *whole = min(*whole, min(units_below(e, units_end(e.dst_unit)), e.out_bytes / 16u));
    }
}

// A split's channels (`main_rows`), the body of its count of parts.
fn channels(block: u32, lane: u32) {
    let p = read_params();
    switch (p.num_entries) {
        case 2u: { channels_of(p, block, lane, 2u); }
        case 3u: { channels_of(p, block, lane, 3u); }
        default: { channels_of(p, block, lane, 4u); }
    }
}

// A split's channels of `c` parts: the lane's groups, from entry 0's first source byte (a
// whole vec4) on. Groups past a part's whole units below its `units_end` (the last group
// where rows are not a multiple of 16 bytes, and a binding's last units) go unit by unit
// (`copy_unit`).
fn channels_of(p: Params, block: u32, lane: u32, c: u32) {
    var dsts: array<u32, 4>;
    var whole = 0xffffffffu;
    channel_part(&dsts, &whole, 0u, c); channel_part(&dsts, &whole, 1u, c); channel_part(&dsts, &whole, 2u, c); channel_part(&dsts, &whole, 3u, c);
    let e0 = read_entry(0u);
    let span = lane_span(p, block, lane, entry_units(e0));
    let src = e0.src_offset / 16u;
    var g = span.x;
    for (; g < min(whole, span.y); g += span.z) {
        var w: array<u32, 16>;
        channel_group(&w, src + g * c, 1u, c, false);
        channel_store(&w, &dsts, g, 0u, c); channel_store(&w, &dsts, g, 1u, c); channel_store(&w, &dsts, g, 2u, c); channel_store(&w, &dsts, g, 3u, c);
    }
    for (; g < span.y; g += span.z) {
        for (var k = 0u; k < c; k++) {
            copy_unit(read_entry(k), g, false);
        }
    }
}

// The group's unit `t` into the output's unit `d + t` (`d`: the group's first).
fn join_channel_store(w: ptr<function, array<u32, 16>>, d: u32, t: u32, c: u32) {
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
        var w: array<u32, 16>;
        channel_group(&w, src + g, step, c, false);
        switch (u - g * c) {
            case 0u: { v = channel_unit(&w, c, 0u, true); }
            case 1u: { v = channel_unit(&w, c, 1u, true); }
            case 2u: { v = channel_unit(&w, c, 2u, true); }
            default: { v = channel_unit(&w, c, 3u, true); }
        }
    }
    store_unit_fast(d, v);
}

// Rows of parts side by side (`main_join`): a concat's channels, or a part of a split written
// channels-last through its view (its planes are the parts); the body of the segment's count
// of parts.
fn join_channels(p: Params, h: JoinHeader, block: u32, lane: u32) {
    let s = read_segment(1u);
    switch (s.count) {
        case 2u: { join_channels_of(p, h, s, block, lane, 2u); }
        case 3u: { join_channels_of(p, h, s, block, lane, 3u); }
        default: { join_channels_of(p, h, s, block, lane, 4u); }
    }
}

// Rows of `c` parts side by side: the dispatch's one segment, in binding 0, holds every part's
// rows from a whole vec4 on; the output's rows lie from unit `first_unit` on, `end_byte`
// bytes. In runs (CPU adapters) a lane stores its groups' units; on GPUs a block's whole
// groups go unit by unit (`join_channel_unit`). The lane's groups past the output's whole
// units below its binding's `units_end` (the last group where rows are not a multiple of 16
// bytes, a binding's last units) load and store unit by unit, each part's vec4s past the
// input's end as zeros and the output's last unit merged (`store_unit_n`).
fn join_channels_of(p: Params, h: JoinHeader, s: Segment, block: u32, lane: u32, c: u32) {
    let o = h.first_unit;
    let rows = h.end_byte / (c * CHANNEL_UNIT);
    let span = lane_span(p, block, lane, (rows + CHANNEL_ROWS - 1u) / CHANNEL_ROWS);
    // None where the output starts past its binding's units (a small window, all tail).
    let bound = units_end(o);
    let whole = select(0u, min(bound - o, h.end_byte / 16u) / c, bound > o);
    let src = s.src_offset / 16u;
    let step = s.part_step / 16u;
    let end_whole = min(whole, span.y);
    var g = span.x;
    if (LANES_IN_RUNS) {
        for (; g < end_whole; g++) {
            var w: array<u32, 16>;
            channel_group(&w, src + g, step, c, false);
            let d = o + g * c;
            join_channel_store(&w, d, 0u, c); join_channel_store(&w, d, 1u, c); join_channel_store(&w, d, 2u, c); join_channel_store(&w, d, 3u, c);
        }
    } else {
        // The block's whole groups as output units, consecutive lanes consecutive units; then
        // the lane's first group past them.
        let base = span.x - lane;
        for (var u = base * c + lane; u < end_whole * c; u += WORKGROUP_SIZE) {
            join_channel_unit(src, step, o + u, u, c);
        }
        if (g < end_whole) {
            g += (end_whole - g + span.z - 1u) / span.z * span.z;
        }
    }
    for (; g < span.y; g += span.z) {
        var w: array<u32, 16>;
        channel_group(&w, src + g, step, c, true);
        for (var t = 0u; t < c; t++) {
            let b = (g * c + t) * 16u;
            if (b < h.end_byte) {
                store_unit_n(o + g * c + t, channel_unit(&w, c, t, true), h.end_byte - b);
            }
        }
    }
}

// The steps of `count` a lane takes: (first, end, step). LANES_IN_RUNS: a run of
// `steps_per_lane` of them; else a block's lanes take `steps_per_lane` each in turn,
// consecutive lanes consecutive steps.
fn lane_span(p: Params, block: u32, lane: u32, count: u32) -> vec3<u32> {
    if (LANES_IN_RUNS) {
        let first = (block * WORKGROUP_SIZE + lane) * p.steps_per_lane;
        return vec3<u32>(first, min(first + p.steps_per_lane, count), 1u);
    }
    let base = block * p.steps_per_lane * WORKGROUP_SIZE;
    return vec3<u32>(base + lane, min(base + p.steps_per_lane * WORKGROUP_SIZE, count), WORKGROUP_SIZE);
}
