//! What a bound dispatch hands the device (its program's source and override constants, its
//! table, each binding's window and its grid), kept in the unit tests' builds for the golden
//! test (`bench::golden_tests`), which freezes it for every bench case.

use super::GatherPipeline;
use crate::gpu::gather::abi::ProgramKey;
use crate::gpu::gather::builds::{Bodies, GatherSource};
use std::sync::Arc;

/// One bound dispatch, as the device receives it.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    source: Arc<GatherSource>,
    bodies: Bodies,
    runs: bool,
    /// The pipeline's entry point and override constants.
    pub entry: &'static str,
    pub constants: [(&'static str, f64); 4],
    /// The table's bytes: the header, then the records.
    pub table: Vec<u8>,
    /// Each binding, in order.
    pub bindings: Vec<Binding>,
    /// Workgroups in x and y.
    pub grid: (u32, u32),
}

/// What one binding of a bind group views.
#[derive(Debug, Clone)]
pub(crate) enum Binding {
    /// The dispatch's table, whole.
    Table,
    /// A buffer of the build's own, bound in place of an empty view.
    StandIn,
    /// `size` bytes (`None`: to its end) of a caller's buffer from `offset`.
    Window {
        buffer: wgpu::Buffer,
        offset: u64,
        size: Option<u64>,
    },
}

impl Bound {
    /// It with its table's bytes.
    pub(super) fn with_table(self, table: Vec<u8>) -> Bound {
        Bound { table, ..self }
    }

    /// The WGSL of its pipeline's module.
    pub(crate) fn wgsl(&self) -> String {
        self.source.with(self.bodies, self.runs)
    }
}

impl GatherPipeline {
    /// What a dispatch of `key`, bound with `table` and `resources` over `grid`, hands the
    /// device; its table's bytes are set by the caller, who has them.
    pub(super) fn golden(
        &self,
        key: ProgramKey,
        table: &wgpu::Buffer,
        resources: &[wgpu::BindingResource<'_>],
        grid: (u32, u32),
    ) -> Bound {
        let stand_ins: Vec<&wgpu::Buffer> = self
            .stand_ins
            .iter()
            .chain(self.indexed_stand_ins.iter().flat_map(|s| s.iter()))
            .collect();
        let bindings = resources
            .iter()
            .map(|r| match r {
                wgpu::BindingResource::Buffer(b) if b.buffer == table => Binding::Table,
                wgpu::BindingResource::Buffer(b) if stand_ins.contains(&b.buffer) => {
                    Binding::StandIn
                }
                wgpu::BindingResource::Buffer(b) => Binding::Window {
                    buffer: b.buffer.clone(),
                    offset: b.offset,
                    size: b.size.map(u64::from),
                },
                other => panic!("the gather binds buffers only, not {other:?}"),
            })
            .collect();
        Bound {
            source: self.source.clone(),
            bodies: Bodies::of(key),
            runs: key.lanes_in_runs,
            entry: key.entry.name(),
            constants: key.constants(),
            table: Vec::new(),
            bindings,
            grid,
        }
    }
}
