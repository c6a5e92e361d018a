// One gather dispatch for every output of a split.
//
// The host views the input as [outer, axis_len, inner] and gives each non-empty output one
// entry: where its rows start in the source, how long a row is, and where the output starts in
// the destination. All sizes are in bytes, so the shader never interprets an element: it copies
// u32 words, which keeps NaN payloads, -0.0 and denormals exactly.
//
// Work: the output is cut into 16-byte units. Each invocation writes `units_per_invocation`
// consecutive units of one entry: it finds its entry and its row once, then steps along the
// rows, so the table search and the division are paid once per run of units. The host sets
// the run length per dispatch: long runs on CPU adapters, where invocations are costly, but
// short enough that a small split still spreads over several workgroups. Entries start on 16-byte
// aligned destination offsets, so no unit spans two entries and no two invocations write the
// same word: no atomics are needed even for 1- and 2-byte dtypes.

struct Params {
    // Invocations with work in this dispatch.
    num_invocations: u32,
    // Entries in the table below.
    num_entries: u32,
    // 1 when every entry has the same size and rows (equal parts): invocations then take the
    // entries in turn, so neighbouring invocations read the same input rows for each output.
    interleaved: u32,
    // 16-byte units each invocation writes (see the note at the top).
    units_per_invocation: u32,
}

// How an entry's words are read.
const MODE_VEC4: u32 = 0u; // rows, stride and offset are multiples of 16: one vec4 per unit
const MODE_WORD: u32 = 1u; // multiples of 4: every output word is one source word
const MODE_BYTE: u32 = 2u; // anything else: words are shifted or assembled from bytes

struct Entry {
    // First invocation of this entry; entries are sorted by it.
    invocation_start: u32,
    // First 16-byte unit of this entry in `dst`.
    dst_unit: u32,
    // Byte offset of the entry's first output byte within its first row (row 0 below).
    first_byte: u32,
    // Bytes this entry writes.
    out_bytes: u32,
    // Bytes of one output row: len * inner * element size.
    row_bytes: u32,
    // Bytes between consecutive rows in the source: axis_len * inner * element size.
    src_stride: u32,
    // Byte offset in `src` of row 0 of this entry. It wraps ("negative") when the entry starts
    // mid-row and its window starts after that row's first byte: WGSL's u32 arithmetic wraps,
    // and every sum formed from it lands inside the window.
    src_offset: u32,
    // MODE_VEC4, MODE_WORD or MODE_BYTE.
    mode: u32,
}

const WORKGROUP_SIZE: u32 = 64u;

// One buffer per dispatch holds both, so a split uploads (or finds in the host's cache) a
// single small buffer. Params is 16 bytes, so the entries start at byte 16.
struct Table {
    params: Params,
    entries: array<Entry>,
}

@group(0) @binding(0) var<storage, read> table: Table;
@group(0) @binding(1) var<storage, read> src: array<u32>;
// The same source bytes as vec4 words, for MODE_VEC4.
@group(0) @binding(2) var<storage, read> src4: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<u32>>;

// The byte at source offset `s`, in the low 8 bits.
fn src_byte(s: u32) -> u32 {
    return (src[s >> 2u] >> ((s & 3u) * 8u)) & 0xffu;
}

// MODE_WORD: the source word at byte offset *s, then one output word further along the
// rows (jumping `row_gap` bytes at the end of a row).
fn next_word(s: ptr<function, u32>, col: ptr<function, u32>, row_bytes: u32, row_gap: u32) -> u32 {
    let word = src[*s >> 2u];
    *s += 4u;
    *col += 4u;
    if (*col == row_bytes) {
        *col = 0u;
        *s += row_gap;
    }
    return word;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    // Large dispatches are folded into 2-D grids (65,535 workgroups per dimension).
    let invocation = (wg.y * num_wg.x + wg.x) * WORKGROUP_SIZE + lid;
    let params = table.params;
    if (invocation >= params.num_invocations) {
        return;
    }

    var lo = 0u;
    var local_invocation = 0u;
    if (params.interleaved == 1u) {
        lo = invocation % params.num_entries;
        local_invocation = invocation / params.num_entries;
    } else {
        // The entry holding this invocation: the last one with invocation_start <= invocation.
        var hi = params.num_entries;
        while (hi - lo > 1u) {
            let mid = (lo + hi) / 2u;
            if (table.entries[mid].invocation_start <= invocation) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        local_invocation = invocation - table.entries[lo].invocation_start;
    }
    let e = table.entries[lo];

    let total_units = (e.out_bytes + 15u) / 16u;
    let first_unit = local_invocation * params.units_per_invocation;
    let end_unit = min(first_unit + params.units_per_invocation, total_units);
    let first = e.first_byte + first_unit * 16u;
    let end_byte = e.first_byte + e.out_bytes;
    let row = first / e.row_bytes;
    var col = first - row * e.row_bytes;

    // Source offset of the next byte to read, stepped along instead of recomputed; at the end
    // of a row it jumps over the other outputs' parts of the stride.
    let row_gap = e.src_stride - e.row_bytes;
    var s = row * e.src_stride + e.src_offset + col;
    if (e.mode == MODE_VEC4) {
        // Row segment by row segment: a plain vec4 copy loop inside each.
        var s4 = s / 16u;
        let gap4 = row_gap / 16u;
        var u = first_unit;
        while (u < end_unit) {
            let count = min(end_unit - u, (e.row_bytes - col) / 16u);
            for (var k = 0u; k < count; k++) {
                dst[e.dst_unit + u + k] = src4[s4 + k];
            }
            u += count;
            s4 += count + gap4;
            col = 0u;
        }
        return;
    }
    if (e.mode == MODE_WORD) {
        if (e.row_bytes == 4u) {
            // One word per row (a split into single 32-bit elements): a plain strided gather.
            var w = s >> 2u;
            let step = e.src_stride >> 2u;
            // Whole units first, then the output's partial last unit, if any.
            let whole_end = min(end_unit, e.out_bytes / 16u);
            var u = first_unit;
            for (; u < whole_end; u++) {
                dst[e.dst_unit + u] = vec4<u32>(src[w], src[w + step], src[w + 2u * step], src[w + 3u * step]);
                w += 4u * step;
            }
            if (u < end_unit) {
                var v = vec4<u32>(0u);
                for (var k = 0u; k < (e.out_bytes % 16u) / 4u; k++) {
                    v[k] = src[w + k * step];
                }
                dst[e.dst_unit + u] = v;
            }
            return;
        }
        // Every output word is one source word; only the output's last unit can be partial.
        for (var u = first_unit; u < end_unit; u++) {
            let words = min(4u, (e.out_bytes - u * 16u) / 4u);
            if (words == 4u) {
                // Constant lane indices: a dynamically indexed vector is slow on CPU adapters.
                let x = next_word(&s, &col, e.row_bytes, row_gap);
                let y = next_word(&s, &col, e.row_bytes, row_gap);
                let z = next_word(&s, &col, e.row_bytes, row_gap);
                let w = next_word(&s, &col, e.row_bytes, row_gap);
                dst[e.dst_unit + u] = vec4<u32>(x, y, z, w);
            } else {
                var v = vec4<u32>(0u);
                for (var k = 0u; k < words; k++) {
                    v[k] = next_word(&s, &col, e.row_bytes, row_gap);
                }
                dst[e.dst_unit + u] = v;
            }
        }
        return;
    }

    // MODE_BYTE. Units inside one row read 5 source words and shift them into place; units
    // that cross a row end or end the output are assembled byte by byte.
    var b = first;
    for (var u = first_unit; u < end_unit; u++) {
        var v = vec4<u32>(0u);
        if (col + 16u <= e.row_bytes && b + 16u <= end_byte) {
            let w = s >> 2u;
            let shift = (s & 3u) * 8u;
            let x = vec4<u32>(src[w], src[w + 1u], src[w + 2u], src[w + 3u]);
            if (shift == 0u) {
                v = x;
            } else {
                let next = vec4<u32>(x.yzw, src[w + 4u]);
                v = (x >> vec4<u32>(shift)) | (next << vec4<u32>(32u - shift));
            }
            b += 16u;
            s += 16u;
            col += 16u;
            if (col == e.row_bytes) {
                col = 0u;
                s += row_gap;
            }
        } else {
            for (var k = 0u; k < 4u; k++) {
                if (b < end_byte) {
                    var word = 0u;
                    var ss = s;
                    var cc = col;
                    for (var j = 0u; j < min(4u, end_byte - b); j++) {
                        word |= src_byte(ss) << (8u * j);
                        ss += 1u;
                        cc += 1u;
                        if (cc == e.row_bytes) {
                            cc = 0u;
                            ss += row_gap;
                        }
                    }
                    v[k] = word;
                }
                b += 4u;
                s += 4u;
                col += 4u;
                // Rows shorter than 4 bytes wrap more than once.
                while (col >= e.row_bytes) {
                    col -= e.row_bytes;
                    s += row_gap;
                }
            }
        }
        dst[e.dst_unit + u] = v;
    }
}
