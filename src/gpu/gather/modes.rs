//! Which of the gather's schedules a device takes ([`GatherMode`]), and the experiments: GPU
//! schedules kept only to compare with the default on a GPU (`wgpu-split bench
//! --gather-mode=shifted|tiles`), until a GPU has run them (`docs/performance.md`, "How the
//! GPU schedules were chosen"). The experiments live here alone: deleting one is deleting its
//! variant, and the compiler then points at the one question below that it answers.

/// Which of the gather's schedules a device takes: those of CPU adapters or of GPUs
/// (`GatherTuning::mode`), or an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatherMode {
    /// CPU adapters, where every invocation has a fixed cost: each lane writes a run of
    /// consecutive units (`Schedule::Runs`).
    Cpu,
    /// GPUs: consecutive lanes write consecutive units, so a warp touches memory as a plain
    /// copy does. Aligned rows load one vec4 per unit (`Schedule::Lanes`); unaligned rows are
    /// staged in workgroup memory once per block (`Schedule::Staged`); short rows of whole
    /// words are gathered by input (`Schedule::Scatter`), other short rows staged in tiles
    /// (`Schedule::Tiles`). Chosen by the traced memory figures, the only ones that meet a
    /// plain copy's for every case (see `docs/performance.md`).
    Gpu,
    /// [`GatherMode::Gpu`] with one of its schedules replaced, to compare with on a GPU.
    Experiment(GatherExperiment),
}

impl GatherMode {
    #[cfg(feature = "bench")]
    /// Its name, as `wgpu-split bench --gather-mode` takes it and its reports print it.
    pub fn name(self) -> &'static str {
        match self {
            GatherMode::Cpu => "cpu",
            GatherMode::Gpu => "gpu",
            GatherMode::Experiment(e) => e.name(),
        }
    }
}

impl std::str::FromStr for GatherMode {
    type Err = crate::SplitError;

    /// `cpu`, `gpu`, `shifted` or `tiles`, as `wgpu-split bench --gather-mode` takes them
    /// (`runs` and `coalesced`, their former names, still name `cpu` and `gpu`).
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "cpu" | "runs" => Ok(Self::Cpu),
            "gpu" | "coalesced" => Ok(Self::Gpu),
            "shifted" => Ok(Self::Experiment(GatherExperiment::Shifted)),
            "tiles" => Ok(Self::Experiment(GatherExperiment::Tiles)),
            other => Err(crate::SplitError::ConflictingInputs(format!(
                "gather mode {other:?} is not one of cpu, gpu, shifted, tiles"
            ))),
        }
    }
}

/// A variant of the GPUs' schedules ([`GatherMode::Gpu`]), selected with
/// [`GatherMode::Experiment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatherExperiment {
    /// Unaligned rows load the two aligned vec4s around each unit and funnel-shift them, with
    /// no workgroup memory (the lanes schedule instead of staged): twice the lines per load
    /// instruction, the second load a cache hit.
    Shifted,
    /// Short rows of whole words are staged in tiles as other short rows are (the tiles
    /// schedule instead of scatter).
    Tiles,
}

impl GatherExperiment {
    #[cfg(feature = "bench")]
    /// Its name, as `--gather-mode` takes it.
    pub fn name(self) -> &'static str {
        match self {
            GatherExperiment::Shifted => "shifted",
            GatherExperiment::Tiles => "tiles",
        }
    }

    /// The schedules a GPU runs in `mode` (the memory trace runs them whatever the adapter),
    /// in words.
    #[cfg(feature = "bench")]
    pub fn describe(mode: GatherMode) -> &'static str {
        match mode {
            GatherMode::Experiment(GatherExperiment::Shifted) => {
                "coalesced lanes, unaligned rows shifted, short word rows scattered"
            }
            GatherMode::Experiment(GatherExperiment::Tiles) => {
                "coalesced lanes, unaligned rows staged, short word rows in tiles"
            }
            _ => "coalesced lanes, unaligned rows staged, short word rows scattered",
        }
    }

    /// Whether `mode` stages long unaligned rows in workgroup memory (the staged schedule)
    /// rather than funnel-shifting them in the lanes schedule.
    pub(crate) fn stages_unaligned_rows(mode: GatherMode) -> bool {
        mode != GatherMode::Experiment(GatherExperiment::Shifted)
    }

    /// Whether `mode` scatters short rows of whole words (the scatter schedule) rather than
    /// staging them in tiles.
    pub(crate) fn scatters_word_rows(mode: GatherMode) -> bool {
        mode != GatherMode::Experiment(GatherExperiment::Tiles)
    }
}
