//! The contract between the host and the gather shader: the table's structs, the modes,
//! schedules and entry points, the workgroup size and the unit size. The Rust side here is
//! checked against the WGSL as naga parses it (the tests below), so the two cannot drift apart
//! silently.

/// `shaders/split_gather.wgsl`: the table, the input bindings, the access functions and the
/// word assembly. [`super::builds::gather_source`] assembles the builds from it.
pub const GATHER_WGSL: &str = include_str!("../../../shaders/split_gather.wgsl");

/// `shaders/split_gather_schedules.wgsl`: the schedules' code.
pub const SCHEDULES_WGSL: &str = include_str!("../../../shaders/split_gather_schedules.wgsl");

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
    /// [`Schedule::Runs`]: 1 when equal entries take lanes in turn.
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
    /// A concat: lanes own units of the one output and read each unit's runs of bytes from
    /// the parts its bytes come from ([`super::joins`] has the table).
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
    /// `main`: [`Schedule::Lanes`] with entries of any [`Mode`], [`WORKGROUP_SIZE`] lanes.
    Lanes = 0,
    /// `main_lanes_vec4`: [`Schedule::Lanes`] when every entry is [`Mode::Vec4`], without the
    /// other modes' code.
    LanesVec4 = 1,
    /// `main_tiles`: [`Schedule::Tiles`], [`WORKGROUP_SIZE`] lanes.
    Tiles = 2,
    /// `main_scatter`: [`Schedule::Scatter`], [`WORKGROUP_SIZE`] lanes.
    Scatter = 3,
    /// `main_staged`: [`Schedule::Staged`], [`WORKGROUP_SIZE`] lanes.
    Staged = 4,
    /// `main_runs`: [`Schedule::Runs`] with entries of any [`Mode`], [`RUNS_WORKGROUP_SIZE`]
    /// lanes.
    Runs = 5,
    /// `main_runs_vec4`: [`Schedule::Runs`] when every entry is [`Mode::Vec4`], without the
    /// other modes' code.
    RunsVec4 = 6,
    /// `main_join`: [`Schedule::Join`], [`WORKGROUP_SIZE`] lanes.
    Join = 7,
}

impl EntryPoint {
    /// Every entry point, in the order of their values.
    pub const ALL: [EntryPoint; 8] = [
        EntryPoint::Lanes,
        EntryPoint::LanesVec4,
        EntryPoint::Tiles,
        EntryPoint::Scatter,
        EntryPoint::Staged,
        EntryPoint::Runs,
        EntryPoint::RunsVec4,
        EntryPoint::Join,
    ];

    /// The entry point's name in the shader.
    pub fn name(self) -> &'static str {
        match self {
            EntryPoint::Lanes => "main",
            EntryPoint::LanesVec4 => "main_lanes_vec4",
            EntryPoint::Tiles => "main_tiles",
            EntryPoint::Scatter => "main_scatter",
            EntryPoint::Staged => "main_staged",
            EntryPoint::Runs => "main_runs",
            EntryPoint::RunsVec4 => "main_runs_vec4",
            EntryPoint::Join => "main_join",
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
            l if l == Schedule::Join as u32 => EntryPoint::Join,
            l if l == Schedule::Lanes as u32 && vec4 => EntryPoint::LanesVec4,
            l if l == Schedule::Lanes as u32 => EntryPoint::Lanes,
            _ if vec4 => EntryPoint::RunsVec4,
            _ => EntryPoint::Runs,
        }
    }

    /// Lanes per workgroup.
    #[cfg(test)]
    fn workgroup_size(self) -> u64 {
        match self {
            EntryPoint::Runs | EntryPoint::RunsVec4 => RUNS_WORKGROUP_SIZE,
            _ => WORKGROUP_SIZE,
        }
    }

    /// What its stamped body calls, and the shader constant that is its workgroup size.
    pub fn block_function(self) -> (&'static str, &'static str) {
        match self {
            EntryPoint::Lanes => ("lanes_block", "WORKGROUP_SIZE"),
            EntryPoint::LanesVec4 => ("lanes_vec4_block", "WORKGROUP_SIZE"),
            EntryPoint::Tiles => ("tiles_block", "WORKGROUP_SIZE"),
            EntryPoint::Scatter => ("scatter_block", "WORKGROUP_SIZE"),
            EntryPoint::Staged => ("staged_block", "WORKGROUP_SIZE"),
            EntryPoint::Runs => ("runs_block", "RUNS_WORKGROUP_SIZE"),
            EntryPoint::RunsVec4 => ("runs_vec4_block", "RUNS_WORKGROUP_SIZE"),
            EntryPoint::Join => ("join_block", "WORKGROUP_SIZE"),
        }
    }

    /// The workgroup variables its schedule uses, and the only ones it may reach: the block's
    /// header (`wg_block`), the staged source words (`stage`), the entries at hand
    /// (`tile_entries`). A GPU reserves an entry point's workgroup memory whether or not a
    /// dispatch touches it.
    #[cfg(test)]
    fn workgroup_memory(self) -> &'static [&'static str] {
        match self {
            EntryPoint::Runs | EntryPoint::RunsVec4 => &[],
            EntryPoint::Lanes | EntryPoint::LanesVec4 | EntryPoint::Join => &["wg_block"],
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

#[cfg(test)]
mod tests {
    use super::*;
    use naga::{Expression, Literal, Module, TypeInner};
    use std::mem::offset_of;

    fn module() -> Module {
        naga::front::wgsl::parse_str(super::super::builds::shader_source())
            .expect("the shader parses")
    }

    /// `(name, offset)` of each member of the WGSL struct `name`, and its size.
    fn wgsl_struct(module: &Module, name: &str) -> (Vec<(String, u32)>, u32) {
        let ty = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("struct {name} in the shader"))
            .1;
        let TypeInner::Struct { members, span } = &ty.inner else {
            panic!("{name} is a struct");
        };
        let members = members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
            .collect();
        (members, *span)
    }

    fn wgsl_u32_constant(module: &Module, name: &str) -> u32 {
        let c = module
            .constants
            .iter()
            .find(|(_, c)| c.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("constant {name} in the shader"))
            .1;
        match module.global_expressions[c.init] {
            Expression::Literal(Literal::U32(v)) => v,
            ref other => panic!("{name} is {other:?}, not a u32 literal"),
        }
    }

    #[test]
    fn params_and_entry_match_the_shader_structs() {
        let module = module();
        let params = [
            ("num_blocks", offset_of!(Params, num_blocks)),
            ("num_entries", offset_of!(Params, num_entries)),
            ("steps_per_lane", offset_of!(Params, steps_per_lane)),
            ("schedule", offset_of!(Params, schedule)),
            ("tile_rows", offset_of!(Params, tile_rows)),
            ("rows", offset_of!(Params, rows)),
            ("num_lanes", offset_of!(Params, num_lanes)),
            ("interleaved", offset_of!(Params, interleaved)),
        ];
        let entry = [
            ("block_start", offset_of!(Entry, block_start)),
            ("dst_unit", offset_of!(Entry, dst_unit)),
            ("first_byte", offset_of!(Entry, first_byte)),
            ("out_bytes", offset_of!(Entry, out_bytes)),
            ("row_bytes", offset_of!(Entry, row_bytes)),
            ("src_stride", offset_of!(Entry, src_stride)),
            ("src_offset", offset_of!(Entry, src_offset)),
            ("mode", offset_of!(Entry, mode)),
        ];
        for (name, rust, size) in [
            ("Params", &params[..], std::mem::size_of::<Params>()),
            ("Entry", &entry[..], std::mem::size_of::<Entry>()),
        ] {
            let rust: Vec<(String, u32)> = rust
                .iter()
                .map(|&(n, o)| (n.to_string(), o as u32))
                .collect();
            assert_eq!(wgsl_struct(&module, name), (rust, size as u32), "{name}");
        }
        // The table's entries start right after the header.
        let (table, _) = wgsl_struct(&module, "Table");
        assert_eq!(
            table[1],
            ("entries".into(), std::mem::size_of::<Params>() as u32)
        );
    }

    #[test]
    fn workgroup_memory_fits_every_device() {
        // All workgroup variables together, though each entry point uses only some: within
        // wgpu's default `max_compute_workgroup_storage_size`, which every device offers.
        let module = module();
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        let bytes: u32 = module
            .global_variables
            .iter()
            .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
            .map(|(_, g)| layouter[g.ty].size)
            .sum();
        assert!(bytes <= 16_384, "{bytes} bytes");
    }

    #[test]
    fn each_entry_point_reaches_only_its_layouts_workgroup_memory() {
        let module = module();
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::empty(),
        )
        .validate(&module)
        .expect("the shader validates");
        let workgroup: Vec<_> = module
            .global_variables
            .iter()
            .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
            .collect();
        for (i, entry) in EntryPoint::ALL.into_iter().enumerate() {
            let uses = info.get_entry_point(i);
            let reached: Vec<&str> = workgroup
                .iter()
                .filter(|(h, _)| !uses[*h].is_empty())
                .filter_map(|(_, g)| g.name.as_deref())
                .collect();
            assert_eq!(reached, entry.workgroup_memory(), "{}", entry.name());
        }
    }

    #[test]
    fn modes_workgroup_size_and_units_match_the_shader() {
        let module = module();
        for (name, mode) in [
            ("MODE_VEC4", Mode::Vec4),
            ("MODE_WORD", Mode::Word),
            ("MODE_BYTE", Mode::Byte),
        ] {
            assert_eq!(wgsl_u32_constant(&module, name), mode as u32, "{name}");
        }
        for (name, value) in [
            ("SCHEDULE_RUNS", Schedule::Runs as u64),
            ("SCHEDULE_LANES", Schedule::Lanes as u64),
            ("SCHEDULE_TILES", Schedule::Tiles as u64),
            ("SCHEDULE_SCATTER", Schedule::Scatter as u64),
            ("SCHEDULE_STAGED", Schedule::Staged as u64),
            ("SCHEDULE_JOIN", Schedule::Join as u64),
            ("WORKGROUP_SIZE", WORKGROUP_SIZE),
            ("RUNS_WORKGROUP_SIZE", RUNS_WORKGROUP_SIZE),
            ("STAGE_WORDS", STAGE_WORDS),
            ("MAX_TILE_ENTRIES", MAX_TILE_ENTRIES),
        ] {
            assert_eq!(wgsl_u32_constant(&module, name) as u64, value, "{name}");
        }
        let names: Vec<&str> = module
            .entry_points
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        assert_eq!(names, EntryPoint::ALL.map(EntryPoint::name));
        for (e, entry) in module.entry_points.iter().zip(EntryPoint::ALL) {
            let size = entry.workgroup_size() as u32;
            assert_eq!(e.workgroup_size, [size, 1, 1], "{}", e.name);
        }
        // `dst` is an array of vec4<u32>: one unit per element.
        let dst = module
            .global_variables
            .iter()
            .find(|(_, v)| v.name.as_deref() == Some("dst"))
            .expect("dst binding")
            .1;
        let TypeInner::Array { stride, .. } = module.types[dst.ty].inner else {
            panic!("dst is an array");
        };
        assert_eq!(stride as u64, UNIT_BYTES);
    }

    #[test]
    fn each_layout_takes_its_entry_point_and_aligned_entries_the_vec4_one() {
        let entry = |mode: Mode| Entry {
            mode: mode as u32,
            ..bytemuck::Zeroable::zeroed()
        };
        let params = |schedule: Schedule| Params {
            schedule: schedule as u32,
            ..bytemuck::Zeroable::zeroed()
        };
        let (vec4, word, byte) = (entry(Mode::Vec4), entry(Mode::Word), entry(Mode::Byte));
        let runs = params(Schedule::Runs);
        assert_eq!(EntryPoint::of(&runs, &[vec4, vec4]), EntryPoint::RunsVec4);
        assert_eq!(EntryPoint::of(&runs, &[vec4, word]), EntryPoint::Runs);
        assert_eq!(EntryPoint::of(&runs, &[byte]), EntryPoint::Runs);
        let lanes = params(Schedule::Lanes);
        assert_eq!(EntryPoint::of(&lanes, &[vec4, vec4]), EntryPoint::LanesVec4);
        assert_eq!(EntryPoint::of(&lanes, &[vec4, word]), EntryPoint::Lanes);
        assert_eq!(EntryPoint::of(&lanes, &[byte]), EntryPoint::Lanes);
        let tiles = params(Schedule::Tiles);
        assert_eq!(EntryPoint::of(&tiles, &[vec4]), EntryPoint::Tiles);
        assert_eq!(EntryPoint::of(&tiles, &[word]), EntryPoint::Tiles);
        let scatter = params(Schedule::Scatter);
        assert_eq!(EntryPoint::of(&scatter, &[vec4, word]), EntryPoint::Scatter);
        let staged = params(Schedule::Staged);
        assert_eq!(EntryPoint::of(&staged, &[vec4, byte]), EntryPoint::Staged);
        let join = params(Schedule::Join);
        assert_eq!(EntryPoint::of(&join, &[vec4, vec4]), EntryPoint::Join);
    }
}
