// The gather's table: one buffer per dispatch, so a split uploads (or finds in the host's
// cache) a single small buffer. The header (`Params`), then the program's records: a split's
// entries, or a concat's header and segments. The shader reads it as words,
// each record through a reader of its type (the structs below, in the order of their words),
// so no field has two meanings; src/gpu/gather/abi.rs is the host's side, checked against
// this file through naga. The host declares `table`, at binding 0, with the other bindings
// (`gather::builds`, `Slot::Table`).

// ---- The header, and a split's entries ----

struct Params {
    // Workgroups with work (blocks).
    num_blocks: u32,
    // Entries in the table below.
    num_entries: u32,
    // Steps each lane takes in its block. A step writes one output unit (or, in the
    // channels, a group of rows).
    steps_per_lane: u32,
    // The rows, lanes in runs: lanes with work.
    num_lanes: u32,
    // The rows, lanes in runs: 1 when every entry has the same size and rows: lane g then
    // serves entry g % num_entries, so neighbouring lanes read neighbouring bytes of the same
    // input rows.
    interleaved: u32,
}

// Bytes of Params: the program's records start here.
const HEADER_BYTES: u32 = 20u;

// How an entry's words are read.
const MODE_VEC4: u32 = 0u; // rows, stride and offset are multiples of 16: one vec4 per unit
const MODE_WORD: u32 = 1u; // multiples of 4: every output word is one source word
const MODE_BYTE: u32 = 2u; // anything else: words are shifted or assembled from bytes
const MODE_INDEXED: u32 = 3u; // rows picked by indices (`IndexRows`, the indexed build)
const MODE_SCATTER: u32 = 4u; // rows placed by indices (`IndexRows`, the indexed build)

// A split's record: one output's part in one dispatch.
struct Entry {
    // The lanes: first block of this entry. The runs: first lane (in the whole
    // dispatch). Entries are sorted by it.
    block_start: u32,
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
    // Bytes between consecutive rows in `dst`: `row_bytes` (a split's output is one range),
    // or more where the rows land apart (a concat's part in its columns of the output rows;
    // every entry then MODE_VEC4, and its pipeline VEC4_ONLY).
    dst_stride: u32,
    // Bytes of the entry's first unit before its first byte, left as they are: a view's
    // entry that starts inside a unit, whose `first_byte` and `src_offset` the host moves
    // back by as many bytes so that unit 0 starts on a unit (`store_first_unit`). 0 for
    // every other entry, and for every MODE_VEC4 one.
    skip: u32,
    // The output binding it writes (0 but in the multi-output build: `dst_binding`).
    binding: u32,
}

fn read_params() -> Params {
    trace(TRACE_TABLE, 0u, HEADER_BYTES);
    return Params(table[0], table[1], table[2], table[3], table[4]);
}

// Words of an entry.
const ENTRY_WORDS: u32 = 11u;

// Entry `i`'s first word in the table.
fn entry_at(i: u32) -> u32 {
    return HEADER_BYTES / 4u + ENTRY_WORDS * i;
}

fn read_block_start(i: u32) -> u32 {
    trace(TRACE_TABLE, 4u * entry_at(i), 4u);
    return table[entry_at(i)];
}

fn read_entry(i: u32) -> Entry {
    let w = entry_at(i);
    trace(TRACE_TABLE, 4u * w, 4u * ENTRY_WORDS);
    return Entry(
        table[w], table[w + 1u], table[w + 2u], table[w + 3u],
        table[w + 4u], table[w + 5u], table[w + 6u], table[w + 7u], table[w + 8u], table[w + 9u],
        table[w + 10u]
    );
}

// An indexed dispatch's records after its entries: one per entry, in entry order (zeros for
// an entry of another mode). A MODE_INDEXED entry (a gather, rows back to back in the
// output): its output row `r` is row `index(r % count)` of its source's block `r / count`, of
// `capacity` rows `src_stride` bytes apart from `src_offset` on. A MODE_SCATTER entry (rows
// placed in the destination, `dst_scatter`): `count` tokens of `heads` rows each, row `(t, h)`
// read from `src_offset + t * src_stride + h * src_head_step` and written at `dst_offset +
// (s / block_size) * dst_block_stride + (s % block_size) * dst_slot_stride + h *
// dst_head_stride` for the slot `s = index(t)` below `capacity`. Each index `index_words`
// words (1: i32, 2: i64, low word first) in the build's `indices`; a negative one is out of
// range (`negative` 0), counts from the end (1), or is padding where it is -1, whose rows
// are left as they are and not counted (2). The status counts the entry's indices out of
// range where `counts` is 1 (one entry of those that read the same indices).
struct IndexRows {
    count: u32,
    capacity: u32,
    index_words: u32,
    negative: u32,
    heads: u32,
    src_head_step: u32,
    dst_offset: u32,
    block_size: u32,
    dst_block_stride: u32,
    dst_slot_stride: u32,
    dst_head_stride: u32,
    counts: u32,
}

const INDEX_ROWS_WORDS: u32 = 12u;

// The lane's entry's place in the table, set as it takes it (with `dst_binding`).
var<private> entry_index: u32;

// The record of entry `i` of a dispatch of `p.num_entries`.
fn read_index_rows(p: Params, i: u32) -> IndexRows {
    let w = entry_at(p.num_entries) + INDEX_ROWS_WORDS * i;
    trace(TRACE_TABLE, 4u * w, 4u * INDEX_ROWS_WORDS);
    return IndexRows(
        table[w], table[w + 1u], table[w + 2u], table[w + 3u], table[w + 4u], table[w + 5u],
        table[w + 6u], table[w + 7u], table[w + 8u], table[w + 9u], table[w + 10u], table[w + 11u]
    );
}

// ---- A concat's records (the join: shaders/split_gather_join.wgsl) ----

// A concat's header: the units the dispatch writes, from `first_unit` of `dst` on, and the
// output's row bytes and bytes in all. A dispatch whose segments are a narrow band of the
// columns (one buffer's inputs among several) numbers only the band's units: `band_units`
// per row (0: every unit from `first_unit` on), from the unit of row `r`'s byte
// `band_first`; those past the row's `band_width` bytes are not written. No unit holds two
// rows' bands (the host leaves at least 16 bytes between them). A dispatch of one join
// repeated (equal parts of a split written channels-last, a batch's images) takes
// `repeat_blocks` blocks a join: the blocks of join `j` read `j * repeat_src` bytes and write
// `j * repeat_units` units further on, into output binding `binding + j * repeat_binding`
// (`join_block`); one join's `repeat_blocks` is at least its blocks.
struct JoinHeader {
    first_unit: u32,
    units: u32,
    row_bytes: u32,
    end_byte: u32,
    band_units: u32,
    band_first: u32,
    band_width: u32,
    repeat_blocks: u32,
    repeat_src: u32,
    repeat_units: u32,
    binding: u32,
    repeat_binding: u32,
}

// One segment: `count` parts side by side (equal inputs, such as attention heads, take one
// segment), each `row_bytes` of every output row from column `first_byte` on, whose rows lie
// back to back in the source from `src_offset` on, part after part `part_step` bytes apart;
// and its input binding (0 but in the multi-input build). `part_of` gives the part of a
// column as a segment of its own (`count` 1). Segments are numbered from 1 in column order:
// the walk keeps 0 for "none yet".
struct Segment {
    first_byte: u32,
    row_bytes: u32,
    src_offset: u32,
    binding: u32,
    count: u32,
    part_step: u32,
}

// Words of the concat's records.
const JOIN_HEADER_WORDS: u32 = 12u;
const SEGMENT_WORDS: u32 = 6u;

// Where the join's header and its segments start in the table, in words.
const JOIN_HEADER_AT: u32 = HEADER_BYTES / 4u;
const SEGMENTS_AT: u32 = JOIN_HEADER_AT + JOIN_HEADER_WORDS;

// The segments' sources moved to the block's join in a dispatch of one join repeated
// (`join_block` sets it, `read_segment` adds it).
var<private> join_src_shift: u32;

fn read_join_header() -> JoinHeader {
    let w = JOIN_HEADER_AT;
    trace(TRACE_TABLE, 4u * w, 4u * JOIN_HEADER_WORDS);
    return JoinHeader(
        table[w], table[w + 1u], table[w + 2u], table[w + 3u],
        table[w + 4u], table[w + 5u], table[w + 6u], table[w + 7u], table[w + 8u], table[w + 9u],
        table[w + 10u], table[w + 11u]
    );
}

// Segment `k`'s first word in the table.
fn segment_at(k: u32) -> u32 {
    return SEGMENTS_AT + SEGMENT_WORDS * (k - 1u);
}

fn read_segment(k: u32) -> Segment {
    let w = segment_at(k);
    trace(TRACE_TABLE, 4u * w, 4u * SEGMENT_WORDS);
    return Segment(table[w], table[w + 1u], table[w + 2u] + join_src_shift, table[w + 3u], table[w + 4u], table[w + 5u]);
}

fn read_segment_first_byte(k: u32) -> u32 {
    trace(TRACE_TABLE, 4u * segment_at(k), 4u);
    return table[segment_at(k)];
}
