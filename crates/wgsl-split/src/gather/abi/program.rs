//! The program a dispatch runs: the shader's entry points ([`EntryPoint`]), the channels
//! ([`Channels`]) and the key that names a pipeline ([`ProgramKey`]: also the pipeline cache's
//! key), with the override constants each key sets.

use super::{Entry, RUNS_WORKGROUP_SIZE, WORKGROUP_SIZE};

/// The shader's programs by what they run: a split's rows, aligned or not, and a concat's
/// join. The rows are one entry point, `main_rows`, whose pipelines for aligned rows set its
/// override constant `VEC4_ONLY`: the driver drops the other modes' code, as a GPU sizes
/// registers for all of a pipeline's code and a CPU adapter runs every branch of it masked in
/// each SIMD group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryPoint {
    /// `main_rows` with `VEC4_ONLY`: a split whose entries are all
    /// [`Mode::Vec4`](super::Mode::Vec4): each lane a run of units, or lanes in turn, one
    /// vec4 a unit.
    RowsVec4 = 0,
    /// `main_rows`: a split whose entries are of any [`Mode`](super::Mode): each lane a run
    /// of units, or lanes in turn with unaligned rows funnel-shifted (rows of 64 bytes or
    /// more).
    Rows = 1,
    /// `main_join`: a concat ([`super::super::joins`]), either lane mapping.
    Join = 2,
}

impl EntryPoint {
    /// Every program kind, in the order of their values.
    pub const ALL: [EntryPoint; 3] = [EntryPoint::RowsVec4, EntryPoint::Rows, EntryPoint::Join];

    /// The shader's entry points, each stamped from one body ([`super::super::builds`]),
    /// with the block function it calls.
    pub const STAMPED: [(&'static str, &'static str); 2] =
        [("main_rows", "rows_block"), ("main_join", "join_block")];

    /// The name of its entry point in the shader.
    pub fn name(self) -> &'static str {
        match self {
            EntryPoint::RowsVec4 | EntryPoint::Rows => "main_rows",
            EntryPoint::Join => "main_join",
        }
    }

    /// Its name in messages and reports: the entry point's, `vec4` where aligned.
    pub fn label(self) -> &'static str {
        match self {
            EntryPoint::RowsVec4 => "main_rows vec4",
            EntryPoint::Rows => "main_rows",
            EntryPoint::Join => "main_join",
        }
    }
}

/// What one dispatch runs, and the key of its compiled pipeline: the entry point, the lane
/// mapping and the channels, which the shader takes as its override constants
/// (`LANES_IN_RUNS`, `WORKGROUP_SIZE`, `CHANNEL_WIDTH`) in a build with its channels' bodies
/// (`builds::Bodies`). The planner picks
/// it with the dispatch's table (`gather::picker`, the one place that chooses), and nothing
/// derives it later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProgramKey {
    pub entry: EntryPoint,
    /// Each lane a run of units, [`RUNS_WORKGROUP_SIZE`] lanes (CPU adapters; on GPUs short
    /// rows not of whole words and a concat's parts not of whole units); else consecutive
    /// lanes take consecutive units, [`WORKGROUP_SIZE`] lanes.
    pub lanes_in_runs: bool,
    /// The runs of a split into equal parts of rows shorter than a unit, or of a concat of
    /// them.
    pub channels: Option<Channels>,
}

impl std::fmt::Display for ProgramKey {
    /// The entry point, the lane mapping and the channels: `main_rows runs channels w1`,
    /// `main_join lanes channels w4 wide`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mapping = if self.lanes_in_runs { "runs" } else { "lanes" };
        write!(f, "{} {mapping}", self.entry.label())?;
        match self.channels {
            Some(c) => {
                let band = if c.wide { " wide" } else { "" };
                write!(f, " channels w{}{band}", c.width)
            }
            None => Ok(()),
        }
    }
}

/// Rows of 2 to 8 equal parts of `width` bytes side by side, 1, 2 or 4 bytes each (an image's
/// RGB or RGBA pixels of u8, f16 or f32, a complex number's parts, eight feature columns:
/// [`Channels::ALL`]), split or concatenated a unit of each part at a time (`16 / width`
/// rows). The width (an override constant) and the band of counts ([`Channels::NARROW`], or
/// `wide`: [`Channels::WIDE`], a build of its own) are fixed per pipeline and the dispatch's
/// parts pick one body of the band, each for its count of parts, so that the place of every
/// byte in the group is a constant the driver folds into shifts (`channels` and
/// `join_channels` in `shaders/split_gather_channels.wgsl`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Channels {
    pub width: u8,
    /// 5 to 8 parts (else 2 to 4).
    pub wide: bool,
}

impl Channels {
    /// Every channels program, in the order of their keys: parts of 1, 2 or 4 bytes, 2 to 4
    /// of them, then 5 to 8.
    pub const ALL: [Channels; 6] = [
        Channels::new(1, false),
        Channels::new(2, false),
        Channels::new(4, false),
        Channels::new(1, true),
        Channels::new(2, true),
        Channels::new(4, true),
    ];

    /// The parts a row may have in the narrow channels' pipelines, and in the wide ones.
    pub const NARROW: std::ops::RangeInclusive<u64> = 2..=4;
    pub const WIDE: std::ops::RangeInclusive<u64> = 5..=8;

    const fn new(width: u8, wide: bool) -> Channels {
        Channels { width, wide }
    }

    /// Rows of `stride` bytes as `parts` parts of `width`, if they are channels.
    pub fn of(stride: u64, width: u64, parts: u64) -> Option<Channels> {
        let wide = Channels::WIDE.contains(&parts);
        Channels::ALL
            .into_iter()
            .find(|c| (c.width as u64, c.wide) == (width, wide))
            .filter(|_| (wide || Channels::NARROW.contains(&parts)) && width * parts == stride)
    }

    /// Its place in [`Channels::ALL`].
    fn place(self) -> usize {
        Channels::ALL.iter().position(|&c| c == self).unwrap_or(0)
    }
}

impl ProgramKey {
    /// Every key, in the order of [`ProgramKey::index`]: each entry point in either mapping,
    /// then the channels of a split's rows and of a join, in either mapping.
    pub const COUNT: usize = 2 * EntryPoint::ALL.len() + 4 * Channels::ALL.len();

    /// The program of a split's rows (`main_rows vec4`, `VEC4_ONLY`, where every entry is aligned, else
    /// `main_rows`) in either lane mapping.
    pub fn rows(entries: &[Entry], lanes_in_runs: bool) -> ProgramKey {
        let entry = if entries.iter().all(Entry::is_vec4) {
            EntryPoint::RowsVec4
        } else {
            EntryPoint::Rows
        };
        ProgramKey {
            entry,
            lanes_in_runs,
            channels: None,
        }
    }

    /// Its place among the [`ProgramKey::COUNT`] keys.
    pub fn index(self) -> usize {
        match self.channels {
            None => 2 * self.entry as usize + usize::from(self.lanes_in_runs),
            Some(c) => {
                let join = usize::from(self.entry == EntryPoint::Join);
                let program = 2 * join + usize::from(self.lanes_in_runs);
                2 * EntryPoint::ALL.len() + Channels::ALL.len() * program + c.place()
            }
        }
    }

    /// Lanes per workgroup.
    pub fn workgroup_size(self) -> u64 {
        if self.lanes_in_runs {
            RUNS_WORKGROUP_SIZE
        } else {
            WORKGROUP_SIZE
        }
    }

    /// The shader's override constants for this program.
    pub fn constants(self) -> [(&'static str, f64); 4] {
        let width = self.channels.map_or(0, |c| c.width);
        let vec4_only = self.entry == EntryPoint::RowsVec4;
        [
            ("LANES_IN_RUNS", f64::from(u8::from(self.lanes_in_runs))),
            ("WORKGROUP_SIZE", self.workgroup_size() as f64),
            ("CHANNEL_WIDTH", f64::from(width)),
            ("VEC4_ONLY", f64::from(u8::from(vec4_only))),
        ]
    }

    /// A label for its pipeline.
    pub fn label(self) -> &'static str {
        match (self.channels, self.lanes_in_runs) {
            (Some(_), _) => "split_gather channels",
            (None, true) => "split_gather runs",
            (None, false) => "split_gather lanes",
        }
    }
}
