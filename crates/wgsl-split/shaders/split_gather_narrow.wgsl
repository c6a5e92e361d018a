// ---- Rows shorter than a unit: the walk ----
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
// bytes, `part_step` source bytes from one part to the next and `row_step` from a row's
// first part to the next row's; a word a step where `words` (every argument then a multiple
// of 4). Each move is a difference of steps, so one that goes back (a read view whose rows
// overlap or repeat: `row_step` below `width`) wraps in u32 as it should.
fn walk_from(at: u32, col: u32, part: u32, width: u32, parts: u32, part_step: u32, row_step: u32, words: bool) -> Walk {
    // Bytes into steps by a shift: a division by a value the shader computes costs a GPU
    // tens of instructions.
    let sh = select(0u, 2u, words);
    let step = part_step >> sh;
    let w = width >> sh;
    return Walk(at >> sh, col >> sh, part, w, parts, 1u + step - w, 1u + (row_step >> sh) - w - (parts - 1u) * step);
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
    return walk_from(at.src, at.col, 0u, e.row_bytes, 1u, 0u, e.src_stride, words);
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
// is the whole row (`Join.walked`: equal parts packed in one buffer that are not channels,
// such as sixteen f32 columns or five 7-byte parts, each narrower than a unit or of whole
// words, or RGB planes off a vec4): each unit's bytes
// walked straight from the parts (`Walk`), a word at a time where the parts are of whole
// words from whole words, else a byte. The rows start at the header's `first_unit` (a
// concat's output at unit 0, a split's part written channels-last where its window puts it).
// The whole units below the output binding's `units_end` store with no choice of binding; the
// rest store through `store_unit_n`, only the output's bytes walked (stepped on from word to
// word, the words ran eight f32 columns at three times the rate on lavapipe of each word's
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
    var w = walk_from(s.src_offset + j * s.part_step + row * s.row_bytes + t, t, j, s.row_bytes, s.count, s.part_step, s.row_bytes, words);
    let whole = min(min(end, units_end(dst_binding)), o + h.header.end_byte / 16u);
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

// The channels' part width in bytes, 1, 2 or 4 (`Channels`; 0: a pipeline without them), an
// override constant of every build (`split_gather_channels.wgsl`).
override CHANNEL_WIDTH: u32 = 0u;

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
