// ---- Rows shorter than a unit, in runs ----
//
// A unit of such rows spans several of them, so the runs (`copy_units` for a split,
// `join_run` for a concat) gather each whole unit straight from its rows, a word or a byte at
// a time, with a cursor stepped from byte to byte: no division, and no inner loop (llvmpipe
// counts every loop turn against a lane's budget, and a division by a value the shader reads
// is a scalar division per lane on a CPU adapter). A split's entry is one part a row, its rows
// `src_stride` apart; a concat's segment is `count` parts side by side, each part's rows back
// to back in its source, `part_step` bytes from one part to the next.

// What a cursor walks, in input binding 0: the part's bytes a row, the parts a row, the
// source bytes from one part's row to the next part's, and the gap in the source after a
// row's last part. (Binding 0 alone: 16 loads a unit through a binding chosen at run time
// made SwiftShader's compile of the multi-input build hang in Chromium.)
struct Walk {
    width: u32,
    parts: u32,
    part_step: u32,
    row_gap: u32,
}

// The next `n` bytes (1, or 4 where rows and offsets are whole words) from the cursor: source
// byte `*s`, its column `*col` in its part's row, its part `*part`; the cursor steps past
// them. In the low bits.
fn walk_bytes(w: Walk, s: ptr<function, u32>, col: ptr<function, u32>, part: ptr<function, u32>, n: u32) -> u32 {
    let at = *s;
    var x = load_word(at >> 2u);
    if (n == 1u) {
        x = (x >> ((at & 3u) * 8u)) & 0xffu;
    }
    let part_end = *col + n == w.width;
    let row_end = part_end && *part + 1u == w.parts;
    let next_part = at + n + w.part_step - w.width;
    let next_row = at + n + w.row_gap - (w.parts - 1u) * w.part_step;
    *s = select(select(at + n, next_part, part_end), next_row, row_end);
    *col = select(*col + n, 0u, part_end);
    *part = select(select(*part, *part + 1u, part_end), 0u, row_end);
    return x;
}

// The next word from the cursor: one source word where rows and offsets are whole words
// (`words`), else four bytes.
fn walk_word(w: Walk, s: ptr<function, u32>, col: ptr<function, u32>, part: ptr<function, u32>, words: bool) -> u32 {
    if (words) {
        return walk_bytes(w, s, col, part, 4u);
    }
    let b0 = walk_bytes(w, s, col, part, 1u);
    let b1 = walk_bytes(w, s, col, part, 1u);
    let b2 = walk_bytes(w, s, col, part, 1u);
    let b3 = walk_bytes(w, s, col, part, 1u);
    return b0 | (b1 << 8u) | (b2 << 16u) | (b3 << 24u);
}

// The next unit from the cursor.
fn walk_unit(w: Walk, s: ptr<function, u32>, col: ptr<function, u32>, part: ptr<function, u32>, words: bool) -> vec4<u32> {
    let w0 = walk_word(w, s, col, part, words);
    let w1 = walk_word(w, s, col, part, words);
    let w2 = walk_word(w, s, col, part, words);
    let w3 = walk_word(w, s, col, part, words);
    return vec4<u32>(w0, w1, w2, w3);
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
            put_unit(e.dst_unit + u, vec4<u32>(load_word(w + o.x), load_word(w + o.y), load_word(w + o.z), load_word(w + o.w)), to);
            w += next;
        }
    } else {
        let walk = Walk(e.row_bytes, 1u, 0u, e.src_stride - e.row_bytes);
        var s = at.src;
        var col = at.col;
        var part = 0u;
        for (; u < end_unit; u++) {
            put_unit(e.dst_unit + u, walk_unit(walk, &s, &col, &part, e.mode == MODE_WORD), to);
        }
    }
}

// A concat's units `first .. end` of one lane where output rows are at most a unit. Where
// one segment in binding 0 covers the rows (equal parts packed in one buffer, such as RGB
// planes), its whole units are gathered straight from the parts; the others are assembled
// part by part (`join_unit`).
fn join_narrow(h: Join, first: u32, end: u32, k: ptr<function, u32>, seg: ptr<function, Segment>) {
    let r = h.header.row_bytes;
    var u = first;
    if (segment_limit(h) == 2u) {
        let s = segment(h, 1u);
        if (s.binding == 0u && s.first_byte == 0u && s.count * s.row_bytes == r) {
            let b = first * 16u;
            let row = b / r;
            let j = (b - row * r) / s.row_bytes;
            let t = b - row * r - j * s.row_bytes;
            let walk = Walk(s.row_bytes, s.count, s.part_step, 0u);
            var src = s.src_offset + j * s.part_step + row * s.row_bytes + t;
            var col = t;
            var part = j;
            for (; u < min(end, h.header.end_byte / 16u); u++) {
                store_unit(u, walk_unit(walk, &src, &col, &part, false));
            }
        }
    }
    for (; u < end; u++) {
        join_unit(h, u, k, seg);
    }
}
