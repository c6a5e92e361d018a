//! Which way the gather's lanes map to units ([`GatherMode`]): the one thing a device kind
//! changes in the kernel.

/// How the gather's lanes map to units: each lane a run of consecutive units (CPU adapters,
/// where every invocation has a fixed cost), or consecutive lanes to consecutive units (GPUs,
/// so a warp touches memory as a plain copy does). Either gives the same bytes on any device;
/// the tests and the memory trace run the GPU mapping on a CPU adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GatherMode {
    /// CPU adapters: each lane writes a run of consecutive units (the runs).
    Cpu,
    /// GPUs: consecutive lanes write consecutive units of a split's rows of 64 bytes or more
    /// (the lanes: one vec4 a unit where rows are aligned, funnel-shifted from two where they
    /// are not), of a concat's join (each unit shifted from its part's vec4s, or assembled
    /// where parts share it) and of the channels' groups of rows; a split's other short rows
    /// take the runs, at `max_steps_per_lane` units a lane. Chosen by the H200's figures
    /// (`docs/performance.md`).
    Gpu,
}

/// How the host spreads a split over the gather's lanes: the one choice it makes per adapter
/// ([`GatherTuning::of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GatherTuning {
    /// How lanes map to units.
    pub mode: GatherMode,
    /// The most steps one lane takes in a block (`Params::steps_per_lane`).
    pub max_steps_per_lane: u64,
}

impl GatherTuning {
    /// The defaults of a device whose lanes map as `mode` does. On CPU adapters every
    /// invocation carries a fixed cost, so each lane writes a long run of units, as long as
    /// the shader's bound allows ([`MAX_LANE_STEPS`](super::MAX_LANE_STEPS)). On GPUs
    /// consecutive lanes write consecutive units, 4 steps per lane, so a block pays for one
    /// table lookup. The figures behind each choice are in `docs/performance.md`.
    pub fn of(mode: GatherMode) -> GatherTuning {
        let max_steps_per_lane = match mode {
            GatherMode::Cpu => super::MAX_LANE_STEPS,
            GatherMode::Gpu => 4,
        };
        GatherTuning {
            mode,
            max_steps_per_lane,
        }
    }
}

impl GatherMode {
    #[cfg(feature = "bench")]
    /// Its name, as `wgpu-split bench --gather-mode` takes it and its reports print it.
    pub fn name(self) -> &'static str {
        match self {
            GatherMode::Cpu => "cpu",
            GatherMode::Gpu => "gpu",
        }
    }
}

impl std::str::FromStr for GatherMode {
    type Err = crate::SplitError;

    /// `cpu` or `gpu`, as `wgpu-split bench --gather-mode` takes them.
    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "gpu" => Ok(Self::Gpu),
            other => Err(crate::SplitError::ConflictingInputs(format!(
                "gather mode {other:?} is not one of cpu, gpu"
            ))),
        }
    }
}
