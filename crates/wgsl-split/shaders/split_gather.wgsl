// One gather dispatch for every output of a split.
//
// The host views the input as [outer, axis_len, inner] and gives each non-empty output one
// entry: where its rows start in the source, how long a row is, and where the output starts in
// the destination. All sizes are in bytes, so the shader never interprets an element: it copies
// u32 words, which keeps NaN payloads, -0.0 and denormals exactly.
//
// Work is cut into blocks, one per workgroup. Outputs are written in 16-byte units; entries
// start on 16-byte aligned destination offsets, so no unit spans two entries and no two
// invocations write the same word (no atomics, even for 1- and 2-byte dtypes). No byte outside
// an output is written: an output's last unit, where the output ends inside it, stores only
// its whole words and merges its last bytes into the word there (`store_unit_n`), so tensors
// packed right after an output keep their bytes, and the bindings need only each tensor's
// size rounded up to 4 bytes (as WebGPU asks of a storage binding). Loads of unaligned rows
// past the input's last whole vec4 take its last words instead (`load_vec4_edge`). The host
// picks one program per dispatch, an entry point and a lane mapping (`ProgramKey` in
// src/gpu/gather/abi.rs), and with it one of these schedules:
//
// - The runs (CPU adapters, where every invocation has a fixed cost, and GPUs' short rows
//   not of whole words; `LANES_IN_RUNS` pipelines of the
//   entry point `main_rows`, no barrier and no workgroup memory): each
//   lane writes a run of consecutive units of one entry, one per step, stepping along the
//   rows, and finds its entry itself (entries get whole lanes, numbered by `block_start`;
//   equal entries take lanes in turn), so small outputs share workgroups. Unaligned rows are
//   funnel-shifted from a sliding window of aligned vec4 loads, one load per unit; rows
//   shorter than a unit are gathered word by word (rows of one or two words) or byte by byte.
// - The lanes (GPUs, rows of 64 bytes or more): entries get whole blocks (numbered by
//   `block_start`), and every lane finds its block's entry (the same words of the table for
//   the whole block, so every later branch is uniform). Step by step, consecutive lanes
//   write consecutive units, so a warp's stores cover whole sectors. Aligned rows load one
//   vec4 a unit, coalesced the same way; unaligned rows funnel-shift each unit from the two
//   aligned vec4s its bytes span, which neighbouring lanes share, and a unit that crosses a
//   row end merges two such loads.
// - The join (a concat, the split read the other way): the destination is one tensor,
//   viewed as rows whose column bands are the parts ("segments"), and the source holds each
//   part's rows. Lanes own output units, a run of them each or in turn, as the lane mapping
//   says. A unit inside one part moves as one aligned or funnel-shifted vec4; one that
//   several parts share takes each part's bytes in it, which lie back to back in the part's
//   source, with one 16-byte load. A dispatch may write only
//   some parts (inputs in several buffers take a dispatch per buffer): a unit's bytes of other
//   parts keep their values.
//
// This file holds the access functions and the word assembly; the table and its readers are
// in split_gather_table.wgsl, the schedules' code in split_gather_schedules.wgsl, the join's
// in split_gather_join.wgsl, and the runs of rows shorter than a unit (a split's and a
// concat's) in split_gather_narrow.wgsl. WGSL has no include: the host (src/gpu/gather/builds.rs)
// assembles each build from named pieces: the table, this file, the input bindings with their three
// access functions (`load_word_in`, `load_vec4_in`, `input_words`), the output bindings with
// theirs (`store_unit`, `store_word`, `load_dst_word`), the trace hook, the schedules, and
// the entry points it stamps from one body.
//
// Every global access goes through an access function, which calls `trace(kind, address,
// size)`. The plain builds' hook is empty; the trace build's records the access, so the memory
// figures come from the addresses this very shader computes.

// How lanes map to units, and lanes per workgroup: set per pipeline, as the host's program
// key says (src/gpu/gather/abi.rs). With LANES_IN_RUNS (CPU adapters, where every invocation
// has a fixed cost; on GPUs short rows not of whole words and the join) each lane
// writes a run of units, in workgroups of 64, so a small split still spreads over a few of
// them (and so over a CPU adapter's threads); otherwise (GPUs) consecutive lanes take
// consecutive units, in workgroups of 256. Every entry point serves both: the branch a
// pipeline does not take is folded away with its constant.
override LANES_IN_RUNS: bool = false;
override WORKGROUP_SIZE: u32 = 256u;

// Every entry of the dispatch MODE_VEC4 (aligned rows): a constant of the rows' pipeline, so
// the driver drops the other modes' code, as a GPU sizes registers for all the code of a
// pipeline and a CPU adapter runs every branch masked in each SIMD group.
override VEC4_ONLY: bool = false;

// No workgroup memory and no barrier: each lane reads what it needs of the table itself.

// ---- Global accesses, each through the trace hook ----

const TRACE_TABLE: u32 = 0u;
const TRACE_SRC: u32 = 1u;
const TRACE_DST: u32 = 2u;

// Who is accessing: set by `start`, read by the trace build's hook.
var<private> trace_lane: u32;
var<private> trace_block: u32;
var<private> trace_seq: u32;

// The output binding the lane writes (0 but in the multi-output build): its entry's
// (`Entry.binding`) or its join's (`JoinHeader.binding`), set as the lane takes it; the
// output access functions store into it.
var<private> dst_binding: u32;

// The build's input access functions, for input binding `b` (0 but in the joins of the
// multi-input build): `load_word_in(b, w)` loads word `w`, `load_vec4_in(b, i)` vec4 `i`, and
// `input_words(b)` gives the binding's length in words. The split's schedules read binding 0.

fn load_word(w: u32) -> u32 {
    return load_word_in(0u, w);
}

// A vec4 that lies wholly inside the input (every load of aligned rows).
fn load_vec4(i: u32) -> vec4<u32> {
    return load_vec4_in(0u, i);
}

fn load_vec4_edge(i: u32) -> vec4<u32> {
    return load_vec4_edge_in(0u, i);
}

// A vec4 of input binding `b` that may reach past the input's end (the aligned loads around
// unaligned rows): past the input's last whole vec4, its words that exist and zeros. The
// binding holds the input rounded up to 4 bytes, so only the last 4 to 12 bytes are read
// this way.
fn load_vec4_edge_in(b: u32, i: u32) -> vec4<u32> {
    // Judged by the words: an input under 16 bytes binds its vec4 view to a stand-in (WebGPU
    // binds no array of vec4s shorter than one), which must never be read.
    let words = input_words(b);
    if (i * 4u + 4u <= words) {
        return load_vec4_in(b, i);
    }
    var v = vec4<u32>(0u);
    if (i * 4u < words) {
        v.x = load_word_in(b, i * 4u);
    }
    if (i * 4u + 1u < words) {
        v.y = load_word_in(b, i * 4u + 1u);
    }
    if (i * 4u + 2u < words) {
        v.z = load_word_in(b, i * 4u + 2u);
    }
    return v;
}

// The build's output access functions, of output binding `dst_binding`: `store_unit(i, v)`
// stores unit `i`, `store_word(i, j, x)` word `j` (0 to 3) of unit `i`, and `load_dst_word(i,
// j)` reads that word as it is (the bytes around an output's last bytes). An output window is
// bound as units up to a multiple of the offset alignment and as words past it (two ranges,
// as WebGPU asks), so each of them chooses its range; `units_end(b)` gives the first unit past
// binding `b`'s units range, and `store_unit_fast(i, v)` stores a unit below it with no choice
// to make (`store_unit_fast_in(b, i, v)` into output binding `b`; `copy_units_fast` runs a
// split's run into its binding, picked once). The runs' loops stop at `units_end` and store so, and take the rest unit by unit
// (`copy_unit`, `join_unit`): a CPU adapter runs both sides of a choice in every SIMD group.

// Unit `i`, of whose bytes only the first `n` belong to the output (at least 1; 16 or more:
// all): a whole unit at once, else its bytes of the output (`store_masked`). The other bytes
// of its last word are another tensor's (or padding), which no lane of this dispatch writes.
// Whole units take no mask: the shifted lanes store every unit through here (on a GPU).
fn store_unit_n(i: u32, v: vec4<u32>, n: u32) {
    if (n >= 16u) {
        store_unit(i, v);
        return;
    }
    store_masked(i, v, byte_mask(0u, n));
}

// ---- Word assembly ----

// The 16 bytes at byte `sh` (0 to 15) of the 32 bytes `lo ++ hi`. Constant lane indices only:
// a dynamically indexed vector is slow on CPU adapters.
fn funnel(lo: vec4<u32>, hi: vec4<u32>, sh: u32) -> vec4<u32> {
    // Words q .. q + 4 of lo ++ hi, by selects rather than branches (lanes of a SIMD group
    // may differ in q).
    let q = sh / 4u;
    let c1 = vec4<u32>(lo.yzw, hi.x);
    let c2 = vec4<u32>(lo.zw, hi.xy);
    let c3 = vec4<u32>(lo.w, hi.xyz);
    let w = select(select(lo, c1, q == 1u), select(c2, c3, q == 3u), q >= 2u);
    // Words q + 1 .. q + 4: w's last three, then word q of hi.
    let after = select(select(hi.x, hi.y, q == 1u), select(hi.z, hi.w, q == 3u), q >= 2u);
    let next = vec4<u32>(w.yzw, after);
    let r = (sh % 4u) * 8u;
    // A shift by 32 would wrap to 0, hence the select for r = 0.
    return select((w >> vec4<u32>(r)) | (next << vec4<u32>(32u - r)), w, r == 0u);
}

// The 16 bytes from byte `s` on of input binding `b` (those past its end read as zeros).
fn load_bytes16(b: u32, s: u32) -> vec4<u32> {
    let x = load_vec4_edge_in(b, s / 16u);
    if (s % 16u == 0u) {
        return x;
    }
    return funnel(x, load_vec4_edge_in(b, s / 16u + 1u), s % 16u);
}

// The byte mask of bytes `first .. first + len` of a unit, per word.
fn byte_mask(first: u32, len: u32) -> vec4<u32> {
    let w = vec4<u32>(0u, 4u, 8u, 12u);
    let lo = clamp(vec4<u32>(first), w, w + 4u) - w;
    let hi = clamp(vec4<u32>(first + len), w, w + 4u) - w;
    let ones = vec4<u32>(0xffffffffu);
    // A shift by 32 would wrap to 0, hence the selects for whole words.
    let below_hi = select((vec4<u32>(1u) << (hi * 8u)) - 1u, ones, hi >= vec4<u32>(4u));
    let below_lo = select((vec4<u32>(1u) << (lo * 8u)) - 1u, ones, lo >= vec4<u32>(4u));
    return below_hi & ~below_lo;
}

// Stores the bytes of unit `i` that `covered` marks, whole words as they are and partial
// ones merged into the word as it is; the others keep their values.
fn store_masked(i: u32, v: vec4<u32>, covered: vec4<u32>) {
    if (all(covered == vec4<u32>(0xffffffffu))) {
        store_unit(i, v);
        return;
    }
    let words = array<u32, 4>(v.x, v.y, v.z, v.w);
    let masks = array<u32, 4>(covered.x, covered.y, covered.z, covered.w);
    for (var j = 0u; j < 4u; j++) {
        let m = masks[j];
        if (m == 0xffffffffu) {
            store_word(i, j, words[j]);
        } else if (m != 0u) {
            store_word(i, j, (words[j] & m) | (load_dst_word(i, j) & ~m));
        }
    }
}

// Where byte `b` of entry `e` lies: its row, its column in that row, its source offset, and
// its destination offset from the entry's first unit.
struct Place {
    row: u32,
    col: u32,
    src: u32,
    dst: u32,
}

fn place(e: Entry, b: u32) -> Place {
    let row = b / e.row_bytes;
    let col = b - row * e.row_bytes;
    return Place(row, col, row * e.src_stride + e.src_offset + col, row * e.dst_stride + col - e.first_byte);
}

// Entry `e`'s units, the last one partial where its bytes end inside it.
fn entry_units(e: Entry) -> u32 {
    return (e.out_bytes + 15u) / 16u;
}

// The first of entry `e`'s units whose destination unit is at or past `bound` (all of them
// where none is).
fn units_below(e: Entry, bound: u32) -> u32 {
    let total = entry_units(e);
    let last = place(e, e.first_byte + e.out_bytes - 1u);
    if (bound > e.dst_unit + last.dst / 16u) {
        return total;
    }
    if (bound <= e.dst_unit) {
        return 0u;
    }
    // The entry's byte whose destination is the bound's first byte, or the next row's first.
    let d = (bound - e.dst_unit) * 16u + e.first_byte;
    let row = d / e.dst_stride;
    let col = min(d - row * e.dst_stride, e.row_bytes);
    return min((row * e.row_bytes + col - e.first_byte + 15u) / 16u, total);
}

// Unit 0 of an entry that starts `skip` bytes into it (rows back to back in the
// destination): its bytes of the entry, walked from the entry's first on; the others keep
// their values.
fn store_first_unit(e: Entry) {
    let n = min(16u, e.out_bytes);
    var w = walk_entry(e, place(e, e.first_byte + e.skip), false);
    let v = walk_bytes(&w, n - e.skip, false);
    store_masked(e.dst_unit, funnel(vec4<u32>(0u), v, 16u - e.skip), byte_mask(e.skip, n - e.skip));
}

// ---- The schedules' blocks ----

// The workgroup's flat index (large dispatches are folded into 2-D grids of 65,535 workgroups
// per dimension); also tells the trace hook who is accessing.
fn start(wg: vec3<u32>, num_wg: vec3<u32>, lane: u32) -> u32 {
    let block = wg.y * num_wg.x + wg.x;
    trace_lane = lane;
    trace_block = block;
    trace_seq = 0u;
    return block;
}

// The host stamps every entry point from one body (`ENTRY_POINT` in
// src/gpu/gather/builds.rs): `start`, then its block function, `rows_block` or `join_block`.
// Each build's piece of the channels gives `rows_block` and `join_schedule`: in a build with
// the channels' bodies, the channels alone; else the runs or the lanes (of vec4s alone where
// VEC4_ONLY, else shifted where rows are not aligned) and the join's units. So no pipeline
// holds the other's code, which a driver would translate before folding it away (it took a
// third of the channels' pipelines' creation on lavapipe).

// The lanes: the block's entry, then its units; `vec4_only` (every entry MODE_VEC4, a
// constant of the entry point) lets the driver drop the shifted rows' code.
fn lanes(block: u32, lane: u32, vec4_only: bool) {
    let p = read_params();
    if (block < p.num_blocks) {
        entry_index = find_entry(p, block);
        let e = read_entry(entry_index);
        dst_binding = e.binding;
        if (vec4_only) {
            copy_lanes_vec4(p, e, block - e.block_start, lane);
        } else if (e.mode >= MODE_INDEXED) {
            indexed_units(p, e, block - e.block_start, lane);
        } else {
            copy_lanes_shifted(p, e, block - e.block_start, lane);
        }
    }
}

// The entry holding block (or lane) `n`: the last one with block_start <= n.
fn find_entry(p: Params, n: u32) -> u32 {
    var lo = 0u;
    var hi = p.num_entries;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (read_block_start(mid) <= n) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}
