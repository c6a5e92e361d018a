//! The contract between the host and the gather shader: the table's structs, the modes,
//! schedules and entry points, the workgroup size and the unit size. The Rust side here is
//! checked against the WGSL as naga parses it (the tests below), so the two cannot drift apart
//! silently.

/// `shaders/split_gather.wgsl`: the table, the access functions and the word assembly.
/// [`super::builds::gather_source`] assembles the builds from it.
pub const GATHER_WGSL: &str = include_str!("../../../shaders/split_gather.wgsl");

/// `shaders/split_gather_schedules.wgsl`: the schedules' code.
pub const SCHEDULES_WGSL: &str = include_str!("../../../shaders/split_gather_schedules.wgsl");

/// `shaders/split_gather_join.wgsl`: the concat's schedule ([`Schedule::Join`]).
pub const JOIN_WGSL: &str = include_str!("../../../shaders/split_gather_join.wgsl");

/// Invocations per workgroup (`WORKGROUP_SIZE` in the shader).
pub const WORKGROUP_SIZE: u64 = 256;

/// Invocations per [`Schedule::Runs`] workgroup (`RUNS_WORKGROUP_SIZE`).
pub const RUNS_WORKGROUP_SIZE: u64 = 64;

/// Words of workgroup memory [`Schedule::Tiles`] and [`Schedule::Staged`] stage input rows in
/// (`STAGE_WORDS`).
pub const STAGE_WORDS: u64 = 3776;

/// Entries a [`Schedule::Tiles`] dispatch may have (`MAX_TILE_ENTRIES`).
pub const MAX_TILE_ENTRIES: u64 = 16;

/// Bytes one invocation writes per step: one `vec4<u32>` of the `dst` binding (an output's last
/// unit may be partial). Outputs start on multiples of it, so no two invocations write the
/// same word.
pub const UNIT_BYTES: u64 = 16;

/// Largest window the shader addresses: 2 GiB keeps every u32 byte offset in range.
pub const MAX_WINDOW: u64 = 1 << 31;

/// Header of the shader's table (`Params` in the shader); 32 bytes, followed by the entries
/// in the same buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Params {
    /// Workgroups with work (blocks).
    pub num_blocks: u32,
    /// Entries in the table.
    pub num_entries: u32,
    /// Steps each lane takes in its block. A step writes one unit ([`Schedule::Runs`],
    /// [`Schedule::Lanes`], [`Schedule::Staged`]), loads one input unit
    /// ([`Schedule::Scatter`]), or stages and writes one tile with the whole workgroup
    /// ([`Schedule::Tiles`]).
    pub steps_per_lane: u32,
    /// A [`Schedule`] as u32.
    pub schedule: u32,
    /// [`Schedule::Tiles`]: input rows per tile.
    pub tile_rows: u32,
    /// [`Schedule::Tiles`], [`Schedule::Scatter`]: input rows in all.
    pub rows: u32,
    /// [`Schedule::Runs`]: lanes with work.
    pub num_lanes: u32,
    /// [`Schedule::Runs`]: 1 when equal entries take lanes in turn. [`Schedule::Join`]: 1
    /// when lanes take units in turn (GPUs), 0 when each takes a run of them (CPU adapters).
    pub interleaved: u32,
}

/// How a dispatch maps lanes to units (`LAYOUT_*` in the shader).
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schedule {
    /// Each lane writes a run of consecutive units of the entry it finds itself (CPU adapters,
    /// and GPUs' short unaligned rows that no other schedule takes).
    Runs = 0,
    /// Consecutive lanes write consecutive units, step by step (GPUs).
    Lanes = 1,
    /// Workgroups stage whole input rows, then write every output's part (GPUs, short rows).
    Tiles = 2,
    /// Consecutive lanes load consecutive input units and store each word to its output
    /// (GPUs, short word-aligned rows).
    Scatter = 3,
    /// [`Schedule::Lanes`], unaligned rows staged in workgroup memory once per block (GPUs).
    Staged = 4,
    /// A concat: lanes own units of its output, read from the parts ([`super::joins`]).
    Join = 5,
}

/// The shader's entry points; each dispatch runs the one [`EntryPoint::of`] picks from its
/// table, whose pipeline the gather makes the first time a dispatch needs it.
///
/// Each schedule has its own, and the runs and lanes schedules one more for aligned entries
/// alone: a GPU sizes registers and workgroup memory for the whole entry point, and a CPU
/// adapter runs every branch of it masked in each SIMD group, so code a dispatch never takes
/// costs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryPoint {
    /// `main_lanes_vec4`: [`Schedule::Lanes`], whose entries are all [`Mode::Vec4`],
    /// [`WORKGROUP_SIZE`] lanes.
    LanesVec4 = 0,
    /// `main_tiles`: [`Schedule::Tiles`], [`WORKGROUP_SIZE`] lanes.
    Tiles = 1,
    /// `main_scatter`: [`Schedule::Scatter`], [`WORKGROUP_SIZE`] lanes.
    Scatter = 2,
    /// `main_staged`: [`Schedule::Staged`], [`WORKGROUP_SIZE`] lanes.
    Staged = 3,
    /// `main_runs`: [`Schedule::Runs`] with entries of any [`Mode`], [`RUNS_WORKGROUP_SIZE`]
    /// lanes.
    Runs = 4,
    /// `main_runs_vec4`: [`Schedule::Runs`] when every entry is [`Mode::Vec4`], without the
    /// other modes' code.
    RunsVec4 = 5,
    /// `main_join`: [`Schedule::Join`] whose lanes take units in turn (GPUs), [`WORKGROUP_SIZE`]
    /// lanes.
    Join = 6,
    /// `main_join_runs`: [`Schedule::Join`] whose lanes take runs of units (CPU adapters,
    /// `interleaved` 0), [`RUNS_WORKGROUP_SIZE`] lanes.
    JoinRuns = 7,
}

impl EntryPoint {
    /// Every entry point, in the order of their values.
    pub const ALL: [EntryPoint; 8] = [
        EntryPoint::LanesVec4,
        EntryPoint::Tiles,
        EntryPoint::Scatter,
        EntryPoint::Staged,
        EntryPoint::Runs,
        EntryPoint::RunsVec4,
        EntryPoint::Join,
        EntryPoint::JoinRuns,
    ];

    /// The entry point's name in the shader.
    pub fn name(self) -> &'static str {
        match self {
            EntryPoint::LanesVec4 => "main_lanes_vec4",
            EntryPoint::Tiles => "main_tiles",
            EntryPoint::Scatter => "main_scatter",
            EntryPoint::Staged => "main_staged",
            EntryPoint::Runs => "main_runs",
            EntryPoint::RunsVec4 => "main_runs_vec4",
            EntryPoint::Join => "main_join",
            EntryPoint::JoinRuns => "main_join_runs",
        }
    }

    /// The entry point that runs a dispatch with header `params` and `entries`: the one of
    /// its schedule, the vec4 one when every entry is aligned.
    pub fn of(params: &Params, entries: &[Entry]) -> EntryPoint {
        let vec4 = entries.iter().all(Entry::is_vec4);
        match params.schedule {
            l if l == Schedule::Tiles as u32 => EntryPoint::Tiles,
            l if l == Schedule::Scatter as u32 => EntryPoint::Scatter,
            l if l == Schedule::Staged as u32 => EntryPoint::Staged,
            l if l == Schedule::Join as u32 && params.interleaved == 0 => EntryPoint::JoinRuns,
            l if l == Schedule::Join as u32 => EntryPoint::Join,
            l if l == Schedule::Lanes as u32 => EntryPoint::LanesVec4,
            _ if vec4 => EntryPoint::RunsVec4,
            _ => EntryPoint::Runs,
        }
    }

    /// Lanes per workgroup.
    #[cfg(test)]
    fn workgroup_size(self) -> u64 {
        match self {
            EntryPoint::Runs | EntryPoint::RunsVec4 | EntryPoint::JoinRuns => RUNS_WORKGROUP_SIZE,
            _ => WORKGROUP_SIZE,
        }
    }

    /// What its stamped body calls, and the shader constant that is its workgroup size.
    pub fn block_function(self) -> (&'static str, &'static str) {
        match self {
            EntryPoint::LanesVec4 => ("lanes_vec4_block", "WORKGROUP_SIZE"),
            EntryPoint::Tiles => ("tiles_block", "WORKGROUP_SIZE"),
            EntryPoint::Scatter => ("scatter_block", "WORKGROUP_SIZE"),
            EntryPoint::Staged => ("staged_block", "WORKGROUP_SIZE"),
            EntryPoint::Runs => ("runs_block", "RUNS_WORKGROUP_SIZE"),
            EntryPoint::RunsVec4 => ("runs_vec4_block", "RUNS_WORKGROUP_SIZE"),
            EntryPoint::Join => ("join_block", "WORKGROUP_SIZE"),
            EntryPoint::JoinRuns => ("join_runs_block", "RUNS_WORKGROUP_SIZE"),
        }
    }

    /// The workgroup variables its schedule uses, and the only ones it may reach: the block's
    /// header (`wg_block`), the staged source words (`stage`), the entries at hand
    /// (`tile_entries`), the concat's header (`wg_join`) and segments at hand (in `stage`).
    /// A GPU reserves an entry point's workgroup memory whether or not a dispatch touches it.
    /// `main_join_runs` reaches `stage` through the join's lookup, but its dispatches keep no
    /// segments (they have no block records), so it never touches it.
    #[cfg(test)]
    fn workgroup_memory(self) -> &'static [&'static str] {
        match self {
            EntryPoint::Runs | EntryPoint::RunsVec4 => &[],
            EntryPoint::LanesVec4 => &["wg_block"],
            EntryPoint::Join => &["stage", "wg_join"],
            EntryPoint::JoinRuns => &["stage"],
            EntryPoint::Staged => &["wg_block", "stage"],
            EntryPoint::Scatter => &["wg_block", "tile_entries"],
            EntryPoint::Tiles => &["wg_block", "stage", "tile_entries"],
        }
    }
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
}

/// One row of the shader's table (`Entry` in the shader): one output's part in one dispatch.
/// Byte quantities.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Entry {
    /// [`Schedule::Lanes`], [`Schedule::Staged`]: first block (workgroup) of this entry.
    /// [`Schedule::Runs`]: first lane of the dispatch. [`Schedule::Tiles`], [`Schedule::Scatter`]:
    /// unused.
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

/// Bytes a storage binding of a tensor of `bytes` covers: its size rounded up to a word, as
/// WebGPU asks of every storage binding, and at least one word. The gather reads and writes
/// nothing past a tensor's bytes (`load_vec4_edge`, `store_unit_n`).
pub fn binding_bytes(bytes: u64) -> u64 {
    bytes.next_multiple_of(WORD_BYTES).max(WORD_BYTES)
}

/// The granularity of a storage binding's size, and of the shader's memory accesses.
pub const WORD_BYTES: u64 = 4;

/// The largest window a device allows the shader: its binding limit, at most [`MAX_WINDOW`].
pub fn window_limit(limits: &wgpu::Limits) -> u64 {
    limits.max_storage_buffer_binding_size.min(MAX_WINDOW)
}

/// A dispatch over several output buffers (the multi-output build,
/// [`super::builds::OutputBindings::Multi`]) keeps the output binding of an entry in the bits of
/// `dst_unit` from this one up: a window is at most [`MAX_WINDOW`] bytes, 2^27 units, so the
/// unit within the binding fits below it.
pub const DST_BINDING_SHIFT: u32 = 27;

/// Most output bindings one dispatch of the multi-output build takes: the bits of `dst_unit`
/// above [`DST_BINDING_SHIFT`].
pub const MAX_DST_BINDINGS: u32 = 1 << (32 - DST_BINDING_SHIFT);

/// Most input bindings one dispatch of the multi-input build takes (a concat's inputs in
/// several buffers; each segment names its binding in a field of its own). As many as the
/// multi-output build's outputs: devices allow fewer still.
pub const MAX_SRC_BINDINGS: u32 = MAX_DST_BINDINGS;

#[cfg(test)]
mod abi_tests;
