// One gather dispatch for every output of a split.
//
// The host views the input as [outer, axis_len, inner] and gives each non-empty output one
// entry: where its rows start in the source, how long a row is, and where the output starts in
// the destination buffer. All sizes are in bytes, so the shader never interprets an element:
// it copies u32 words, which keeps NaN payloads, -0.0 and denormals exactly.
//
// Work unit: one invocation writes 16 bytes (4 words) of one output. Outputs start at
// 16-byte-aligned offsets, so a unit never spans two outputs and no two invocations write the
// same word: no atomics are needed even for 1- and 2-byte dtypes.

struct Params {
    // Units in the whole dispatch.
    num_units: u32,
    // Entries in the table below.
    num_entries: u32,
    _pad0: u32,
    _pad1: u32,
}

struct Entry {
    // First global unit of this output; entries are sorted by it.
    unit_start: u32,
    // First u32 word of this output in `dst`.
    dst_word: u32,
    // Size of this output in bytes.
    out_bytes: u32,
    // Bytes of one output row: len * inner * element size.
    row_bytes: u32,
    // Bytes between consecutive rows of the source: axis_len * inner * element size.
    src_stride: u32,
    // Byte offset of this output's first row in the source: start * inner * element size.
    src_offset: u32,
    // 1 when row_bytes, src_stride and src_offset are multiples of 4: every output word is
    // then one source word.
    word_aligned: u32,
    _pad: u32,
}

const WORKGROUP_SIZE: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> entries: array<Entry>;
@group(0) @binding(2) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;

// The byte at source offset `s`, in the low 8 bits.
fn src_byte(s: u32) -> u32 {
    return (src[s >> 2u] >> ((s & 3u) * 8u)) & 0xffu;
}

// The 4 bytes at source offset `s`, any alignment; all 4 must lie inside the source.
fn src_word_unaligned(s: u32) -> u32 {
    let shift = (s & 3u) * 8u;
    let lo = src[s >> 2u];
    if (shift == 0u) {
        return lo;
    }
    return (lo >> shift) | (src[(s >> 2u) + 1u] << (32u - shift));
}

// Output word starting at (row, col) of entry `e`, holding `n` (1..4) bytes of the output.
fn gather_word(e: Entry, row: u32, col: u32, n: u32) -> u32 {
    if (e.word_aligned == 1u) {
        return src[(row * e.src_stride + e.src_offset + col) >> 2u];
    }
    if (n == 4u && col + 4u <= e.row_bytes) {
        return src_word_unaligned(row * e.src_stride + e.src_offset + col);
    }
    // The word crosses a row boundary (or ends the output): assemble it byte by byte.
    var r = row;
    var c = col;
    var word = 0u;
    for (var j = 0u; j < n; j++) {
        word |= src_byte(r * e.src_stride + e.src_offset + c) << (8u * j);
        c += 1u;
        if (c == e.row_bytes) {
            c = 0u;
            r += 1u;
        }
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
    let unit = (wg.y * num_wg.x + wg.x) * WORKGROUP_SIZE + lid;
    if (unit >= params.num_units) {
        return;
    }

    // The entry whose unit range holds this unit: the last one with unit_start <= unit.
    var lo = 0u;
    var hi = params.num_entries;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (entries[mid].unit_start <= unit) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let e = entries[lo];

    let local = unit - e.unit_start;
    let first_byte = local * 16u;
    var row = first_byte / e.row_bytes;
    var col = first_byte - row * e.row_bytes;
    let dst_base = e.dst_word + local * 4u;
    for (var k = 0u; k < 4u; k++) {
        let b = first_byte + 4u * k;
        if (b >= e.out_bytes) {
            break;
        }
        dst[dst_base + k] = gather_word(e, row, col, min(4u, e.out_bytes - b));
        // Step 4 bytes along the output; rows shorter than 4 bytes wrap more than once.
        col += 4u;
        while (col >= e.row_bytes) {
            col -= e.row_bytes;
            row += 1u;
        }
    }
}
