//! [`Build`]: one build of the gather, what a host compiles a module and a bind group layout
//! from ([`Build::source`], [`Build::layout`]).

use super::{
    single_output, slots, Convert, GatherSource, Hook, InputBindings, OutputBindings,
    ScatterStores, Slot,
};
use crate::direction::Direction;
use crate::error::Result;
use crate::gather::binds::moves;
use crate::limits::Limits;

/// One build of the gather: the bindings it declares (its inputs and outputs, the indexed
/// rows' and the trace's, in the order of [`slots`]) and the side whose windows it binds at
/// dynamic offsets. Its programs are its module with each [`ProgramKey`]'s override
/// constants.
///
/// [`ProgramKey`]: crate::gather::abi::ProgramKey
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Build {
    /// Input buffers it binds.
    pub inputs: InputBindings,
    /// Output buffers it binds, and how.
    pub outputs: OutputBindings,
    /// The rows placed by indices, and how its scatter stores (`None`: not indexed).
    pub indexed: Option<ScatterStores>,
    /// The conversion its rows go through (rows placed by indices only; `None`: none).
    pub convert: Option<Convert>,
    /// Whether every global access is recorded ([`Hook::Recording`]).
    pub hook: Hook,
    /// The parts' side whose windows move at dynamic offsets (a node through views).
    pub moving: Option<Direction>,
}

/// One binding of a build's bind group layout: its slot, whether the shader only reads it,
/// and whether it takes a dynamic offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutEntry {
    pub slot: Slot,
    pub read_only: bool,
    pub dynamic: bool,
}

impl Build {
    /// The build of `inputs` and `outputs` that splits or joins, its windows moving on
    /// `moving`'s side.
    pub fn plain(
        inputs: InputBindings,
        outputs: OutputBindings,
        moving: Option<Direction>,
    ) -> Self {
        Build {
            inputs,
            outputs,
            indexed: None,
            convert: None,
            hook: Hook::Silent,
            moving,
        }
    }

    /// The indexed build of one input and `limits`' single output whose scatter stores as
    /// `stores` says, through `convert` where it converts.
    pub fn indexed(stores: ScatterStores, convert: Option<Convert>, limits: &Limits) -> Self {
        Build {
            indexed: Some(stores),
            convert,
            ..Build::plain(InputBindings::ONE, single_output(limits), None)
        }
    }

    /// Its bindings, in binding order.
    pub fn slots(&self) -> Vec<Slot> {
        slots(
            self.inputs,
            self.outputs,
            self.indexed,
            self.hook == Hook::Recording,
        )
    }

    /// Its bind group layout, in binding order.
    pub fn layout(&self) -> Vec<LayoutEntry> {
        self.slots()
            .into_iter()
            .map(|slot| LayoutEntry {
                slot,
                read_only: !slot.writable(),
                dynamic: moves(self.moving, slot),
            })
            .collect()
    }

    /// Its WGSL, assembled once ([`GatherSource::with`] gives each module).
    pub fn source(&self) -> Result<GatherSource> {
        GatherSource::new(
            self.inputs,
            self.outputs,
            self.hook,
            self.indexed,
            self.convert,
        )
    }
}
