//! [`Recording`]: what a plan asks of a host, in order. Each command names the host's
//! buffers by the role they play ([`Role`]); the host owns every buffer, compiles each
//! [`Build`] once, writes each table and records the dispatches.

use crate::error::Result;
use crate::gather::abi::ProgramKey;
use crate::gather::binds::{binds, Binds, IndexSides, Sides};
use crate::gather::builds::Build;
use crate::gather::{grid, Dispatch};
use crate::Limits;

#[doc(inline)]
pub use crate::gather::binds::{Bind, Role, StandIn};

/// The commands of a plan, in the order a host records them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    pub commands: Vec<Command>,
}

/// One command of a [`Recording`].
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A compute dispatch.
    Dispatch(Dispatched),
    /// A copy of `size` bytes from the buffer of `from.0` at `from.1` to the buffer of `to.0`
    /// at `to.1` (`copy_buffer_to_buffer`).
    Copy {
        from: (Role, u64),
        to: (Role, u64),
        size: u64,
    },
}

impl Recording {
    /// Its dispatches, in order.
    pub fn dispatches(&self) -> impl Iterator<Item = &Dispatched> {
        self.commands.iter().filter_map(|c| match c {
            Command::Dispatch(d) => Some(d),
            Command::Copy { .. } => None,
        })
    }
}

/// One dispatch: the program of `build` that `program` names, its table's bytes (bound as
/// [`Role::Table`]), its workgroups in x and y, and each binding, in binding order.
#[derive(Debug, Clone, PartialEq)]
pub struct Dispatched {
    pub build: Build,
    pub program: ProgramKey,
    pub table: Vec<u8>,
    pub workgroups: (u32, u32),
    pub binds: Binds,
}

impl Dispatched {
    /// `dispatch` in `build`, reading and writing `sides` (and `index`'s windows) on a device
    /// of `limits`: its table checked by the gate, its grid within the device's.
    pub fn new(
        build: Build,
        dispatch: &Dispatch,
        sides: (Sides<'_>, Sides<'_>),
        index: Option<IndexSides>,
        limits: &Limits,
    ) -> Result<Self> {
        let align = limits.min_storage_buffer_offset_alignment as u64;
        Ok(Dispatched {
            build,
            program: dispatch.program,
            table: dispatch.table_bytes()?,
            workgroups: grid(limits, dispatch.params.num_blocks as u64)?,
            binds: binds(&build.slots(), dispatch, sides, index, build.moving, align),
        })
    }
}
