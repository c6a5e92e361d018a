//! The contract between the host and the gather shader: the table's structs, the modes, the
//! programs (`program`: entry points, channels, keys), the workgroup size and the unit size.
//! The Rust side here is checked against the WGSL as naga parses it (the tests below), so the
//! two cannot drift apart silently.

/// `shaders/split_gather_table.wgsl`: the table and its readers, one per record type.
pub const TABLE_WGSL: &str = include_str!("../../shaders/split_gather_table.wgsl");

/// `shaders/split_gather.wgsl`: the access functions and the word assembly.
/// [`super::builds::GatherSource`] assembles the builds from it.
pub const GATHER_WGSL: &str = include_str!("../../shaders/split_gather.wgsl");

/// `shaders/split_gather_schedules.wgsl`: the schedules' code.
pub const SCHEDULES_WGSL: &str = include_str!("../../shaders/split_gather_schedules.wgsl");

/// `shaders/split_gather_narrow.wgsl`: rows shorter than a unit walked (a split's and a
/// concat's), and the lanes' spans.
pub const NARROW_WGSL: &str = include_str!("../../shaders/split_gather_narrow.wgsl");

/// `shaders/split_gather_channels.wgsl`: the channels, split and joined, in the builds that
/// hold their bodies.
pub const CHANNELS_WGSL: &str = include_str!("../../shaders/split_gather_channels.wgsl");

/// `shaders/split_gather_indexed.wgsl`: the indices read and a bad one recorded, in every
/// indexed build.
pub const INDEXED_WGSL: &str = include_str!("../../shaders/split_gather_indexed.wgsl");

/// `shaders/split_gather_indexed_gathers.wgsl`: the indexed entries' dispatcher and the
/// gathers, in the indexed builds without a conversion.
pub const INDEXED_GATHERS_WGSL: &str =
    include_str!("../../shaders/split_gather_indexed_gathers.wgsl");

/// `shaders/split_gather_indexed_scatter.wgsl`: the scatter's chunks, in the indexed builds
/// that scatter.
pub const INDEXED_SCATTER_WGSL: &str =
    include_str!("../../shaders/split_gather_indexed_scatter.wgsl");

/// `shaders/split_gather_scatter_words.wgsl`: scattered chunks stored as words, in the
/// indexed builds whose rows are not of whole vec4s.
pub const SCATTER_WORDS_WGSL: &str = include_str!("../../shaders/split_gather_scatter_words.wgsl");

/// `shaders/split_gather_scatter_bytes.wgsl`: a chunk's bytes stored onto the words they
/// meet, in the builds that store words.
pub const SCATTER_BYTES_WGSL: &str = include_str!("../../shaders/split_gather_scatter_bytes.wgsl");

/// `shaders/split_gather_join.wgsl`: the concat's program ([`EntryPoint::Join`]).
pub const JOIN_WGSL: &str = include_str!("../../shaders/split_gather_join.wgsl");

/// `shaders/split_gather_join_runs.wgsl`: the join's units in either lane mapping (a run of
/// units a lane on CPU adapters, consecutive lanes on consecutive units on GPUs).
pub const JOIN_RUNS_WGSL: &str = include_str!("../../shaders/split_gather_join_runs.wgsl");

/// Invocations per workgroup where consecutive lanes take consecutive units (the shader's
/// `WORKGROUP_SIZE` without `LANES_IN_RUNS`, its default).
pub const WORKGROUP_SIZE: u64 = 256;

/// Invocations per workgroup where each lane takes a run of units (`WORKGROUP_SIZE` with
/// `LANES_IN_RUNS`): a small split still spreads over a few of them, and so over a CPU
/// adapter's threads, while each lane writes a long run.
pub const RUNS_WORKGROUP_SIZE: u64 = 64;

/// Bytes one invocation writes per step: one `vec4<u32>` of a `dst{j}` binding (an output's last
/// unit may be partial). Outputs start on multiples of it, so no two invocations write the
/// same word.
pub const UNIT_BYTES: u64 = 16;

/// Largest window the shader addresses: 2 GiB keeps every u32 byte offset in range.
pub const MAX_WINDOW: u64 = 1 << 31;

/// Header of the shader's table (`Params` in the shader), followed by the entries in the
/// same buffer ([`HEADER_BYTES`]). Each field serves the programs its comment names.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Workgroups with work (blocks).
    pub num_blocks: u32,
    /// Entries in the table.
    pub num_entries: u32,
    /// Steps each lane takes in its block. A step writes one output unit (or, in the
    /// channels, a group of rows).
    pub steps_per_lane: u32,
    /// The rows, lanes in runs: lanes with work.
    pub num_lanes: u32,
    /// The rows, lanes in runs: 1 when equal entries take lanes in turn.
    pub interleaved: u32,
}

/// Bytes of the table's header: the program's records start here (`HEADER_BYTES` in the
/// shader).
pub const HEADER_BYTES: u64 = std::mem::size_of::<Params>() as u64;

/// A dispatch's table after its [`Params`]: a split's entries, or a concat's header and
/// segments. The shader reads it as words, each record through a reader of
/// its type, so every field has one meaning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Table {
    /// One [`Entry`] per output (or part of one), sorted by `block_start`
    /// (`Params::num_entries` of them).
    Split(Vec<Entry>),
    /// A concat's table ([`super::joins`]).
    Join(JoinTable),
    /// Rows placed by indices (the indexed build): entries of any mode, [`Mode::Indexed`]
    /// (a gather) and [`Mode::Scatter`] among them, then one [`IndexRows`] per entry, in
    /// entry order (zeros for the others).
    Indexed(Vec<Entry>, Vec<IndexRows>),
}

impl Table {
    /// The records' bytes, as the shader reads them after the header.
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Table::Split(entries) => bytemuck::cast_slice(entries).to_vec(),
            Table::Join(j) => {
                let mut bytes = bytemuck::bytes_of(&j.header).to_vec();
                bytes.extend_from_slice(bytemuck::cast_slice(&j.segments));
                bytes
            }
            Table::Indexed(entries, index) => {
                let mut bytes = bytemuck::cast_slice(entries).to_vec();
                bytes.extend_from_slice(bytemuck::cast_slice(index));
                bytes
            }
        }
    }
}

/// A concat's table: its header, then its segments in column order (`Params::num_entries`
/// of them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinTable {
    pub header: JoinHeader,
    pub segments: Vec<Segment>,
}

/// A concat's header (`JoinHeader` in the shader): the units it writes, and the band of
/// columns it numbers them in.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct JoinHeader {
    /// First unit of the output window it writes.
    pub first_unit: u32,
    /// Units the dispatch numbers.
    pub units: u32,
    /// Bytes of one output row.
    pub row_bytes: u32,
    /// Bytes of the output.
    pub end_byte: u32,
    /// Units numbered per row of a band (0: no band, every unit from `first_unit` on).
    pub band_units: u32,
    /// The band's first column.
    pub band_first: u32,
    /// The band's bytes per row.
    pub band_width: u32,
    /// Blocks of each join in a dispatch of one join repeated (at least the dispatch's
    /// blocks where it holds one join): join `j` reads `j * repeat_src` bytes and writes `j *
    /// repeat_units` units further on than the first, into output binding `binding + j *
    /// repeat_binding` (`repeat_joins`, `view_channels`).
    pub repeat_blocks: u32,
    pub repeat_src: u32,
    pub repeat_units: u32,
    /// The output binding the first join writes (0 but in the multi-output build).
    pub binding: u32,
    pub repeat_binding: u32,
}

/// One segment of a concat (`Segment` in the shader): `count` parts side by side in the
/// output's rows, each `row_bytes` of every row from column `first_byte` on, whose rows lie
/// back to back in the source from `src_offset` on, part after part `part_step` bytes apart.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Segment {
    /// First column of its first part in an output row.
    pub first_byte: u32,
    /// Bytes of one part's row.
    pub row_bytes: u32,
    /// Source offset of its first part's row 0.
    pub src_offset: u32,
    /// Input binding (0 but in the multi-input build).
    pub binding: u32,
    /// Parts side by side (at least 1).
    pub count: u32,
    /// Source bytes from one part to the next.
    pub part_step: u32,
}

/// How the shader reads an entry's words (`MODE_*` in the shader).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Rows, stride and offset are multiples of 16 bytes: one vec4 per unit.
    Vec4 = 0,
    /// Multiples of 4 bytes: one source word per output word.
    Word = 1,
    /// Anything else: shifted or byte-assembled words.
    Byte = 2,
    /// Rows picked by indices ([`IndexRows`]), of any width: each output unit's bytes of
    /// each row it meets, from that row's source (a gather).
    Indexed = 3,
    /// Rows placed by indices ([`IndexRows`]), of any width: each row's 16-byte chunks
    /// stored at the place its slot names, in `dst_scatter` (a scatter).
    Scatter = 4,
}

/// An indexed dispatch's record of one entry (`IndexRows` in the shader), after the entries,
/// one per entry. A [`Mode::Indexed`] entry's output row `r` is row `index(r % count)` of its
/// source's block `r / count`, each of `capacity` rows. A [`Mode::Scatter`] entry's row
/// `(t, h)` (`count` tokens of `heads` rows) goes to `dst_offset + (s / block_size) *
/// dst_block_stride + (s % block_size) * dst_slot_stride + h * dst_head_stride` for the slot
/// `s = index(t)` below `capacity`, from `src_offset + t * src_stride + h * src_head_step`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct IndexRows {
    /// Indices (a gather's per block, a scatter's tokens).
    pub count: u32,
    /// Rows (a gather's per block) or slots (a scatter's) an index may name: below 2^31 - 1.
    pub capacity: u32,
    /// Words of an index: 1 (i32) or 2 (i64).
    pub index_words: u32,
    /// What a negative index is: 0 out of range, 1 counted from the end, 2 padding where
    /// it is -1 (else out of range).
    pub negative: u32,
    /// A scatter's rows per token (1 for a gather).
    pub heads: u32,
    /// A scatter's source bytes from one head's row to the next.
    pub src_head_step: u32,
    /// A scatter's destination: the first row's place in `dst_scatter`, and the steps from
    /// one block of slots, one slot and one head to the next, in bytes.
    pub dst_offset: u32,
    pub block_size: u32,
    pub dst_block_stride: u32,
    pub dst_slot_stride: u32,
    pub dst_head_stride: u32,
    /// 1: the status counts this entry's indices out of range; 0: another entry of the
    /// dispatch reading the same indices counts them (a paged write's values, its keys').
    pub counts: u32,
}

/// One row of the shader's table (`Entry` in the shader): one output's part in one dispatch.
/// Byte quantities.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Entry {
    /// The rows: this entry's first lane (lanes in runs) or first block (lanes in turn).
    pub block_start: u32,
    /// First unit of this entry in the output window.
    pub dst_unit: u32,
    /// Offset of the entry's first output byte within its first row.
    pub first_byte: u32,
    /// Bytes this entry writes.
    pub out_bytes: u32,
    /// Bytes of one output row.
    pub row_bytes: u32,
    /// Bytes between rows in the source.
    pub src_stride: u32,
    /// Offset of the entry's first row in the input window.
    pub src_offset: u32,
    /// A [`Mode`] as u32.
    pub mode: u32,
    /// Bytes between rows in the destination: `row_bytes` where the entry's output is one
    /// range (a split's), more where its rows land apart (a concat's part in its columns of
    /// the output rows; every entry of such a dispatch [`Mode::Vec4`], in `main_rows vec4`).
    pub dst_stride: u32,
    /// Bytes of the entry's first unit before its first byte, which it leaves as they are: a
    /// view's entry that starts inside a unit (its `first_byte` and `src_offset` moved back
    /// by as many bytes, so that unit 0 starts on a unit). 0 for every other entry.
    pub skip: u32,
    /// The output binding it writes (0 but in the multi-output build).
    pub binding: u32,
}

impl Mode {
    /// The mode of an entry whose byte quantities (rows, strides, offsets) OR together to
    /// `all`: vec4 where all are multiples of 16, words where of 4, bytes otherwise.
    pub fn of(all: u64) -> Self {
        if all.is_multiple_of(16) {
            Mode::Vec4
        } else if all.is_multiple_of(4) {
            Mode::Word
        } else {
            Mode::Byte
        }
    }
}

impl Entry {
    /// Whether the shader reads this entry one vec4 per unit ([`Mode::Vec4`]).
    pub fn is_vec4(&self) -> bool {
        self.mode == Mode::Vec4 as u32
    }
}

/// Bytes a storage binding of a tensor covers (the gather reads and writes nothing past a
/// tensor's bytes: `load_vec4_edge`, `store_unit_n`).
pub use crate::plan::bytes::binding_bytes;

/// The largest window a device allows the shader: its binding limit, at most [`MAX_WINDOW`].
pub fn window_limit(limits: &crate::Limits) -> u64 {
    limits.max_storage_buffer_binding_size.min(MAX_WINDOW)
}

/// Units one binding's window holds at most ([`MAX_WINDOW`] bytes): a record's units within
/// its binding lie below it.
pub const WINDOW_UNITS: u64 = MAX_WINDOW / UNIT_BYTES;

/// Most output bindings one dispatch of the multi-output build takes (each record names its
/// own: `Entry::binding`, `JoinHeader::binding`); devices allow fewer.
pub const MAX_DST_BINDINGS: u32 = 32;

/// Most input bindings one dispatch of the multi-input build takes (a concat's inputs in
/// several buffers; each segment names its binding in a field of its own). As many as the
/// multi-output build's outputs: devices allow fewer still.
pub const MAX_SRC_BINDINGS: u32 = MAX_DST_BINDINGS;

mod program;
pub use program::{Channels, EntryPoint, ProgramKey};

#[cfg(test)]
mod abi_tests;
