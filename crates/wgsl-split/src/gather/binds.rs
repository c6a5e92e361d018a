//! Where each binding of a dispatch points ([`binds`]): a range of a buffer the host owns,
//! named by the [`Role`] it plays, in the order of the build's [`Slot`]s. Every driver binds
//! by this one rule; wgpu-split's maps each role to a `wgpu::Buffer`.

use super::abi::UNIT_BYTES;
use super::builds::{tail_start, Slot};
use super::dispatches::Dispatch;
use crate::direction::Direction;

/// A buffer a dispatch binds, by the role it plays. The host owns each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The dispatch's table ([`Dispatch::table_bytes`]).
    Table,
    /// The buffer of input window `k`.
    Input(u32),
    /// The buffer of output window `k`.
    Output(u32),
    /// The indices of rows placed by indices.
    Indices,
    /// The count of indices out of range (two words), zeroed before the dispatches it counts.
    Status,
    /// A scatter's destination `k` (a paged write's caches in two buffers bind one each, in
    /// dispatches of their own).
    Scatter(u32),
    /// The build's own buffer bound where a view is empty, or where the caller keeps no
    /// status or the dispatch scatters nothing: never read as data.
    StandIn(StandIn),
    /// The trace build's records.
    Trace,
}

/// The build's stand-ins ([`Role::StandIn`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StandIn {
    /// 16 bytes, bound read-only in place of a window too short for one vec4.
    Read,
    /// A unit a slot, one slot for each output binding's units and one for its tail, no two
    /// sharing a range ([`write_stand_in_bytes`]).
    Write,
    /// 16 bytes in place of the status.
    Status,
    /// 16 bytes in place of a scatter's destination.
    Scatter,
}

/// Bytes of the writable stand-in of a build with `outputs` output bindings, on a device of
/// storage offset alignment `align`.
pub fn write_stand_in_bytes(outputs: u32, align: u64) -> u64 {
    2 * outputs as u64 * align.max(UNIT_BYTES)
}

/// One binding: `size` bytes of the buffer of `role` from `offset` (`None`: to its end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bind {
    pub role: Role,
    pub offset: u64,
    pub size: Option<u64>,
}

/// The windows one side of a dispatch binds: one region from `offset`, of which each dispatch
/// binds its own window; or one window (offset, size) per binding, the same for every
/// dispatch.
#[derive(Debug, Clone, Copy)]
pub enum Sides<'a> {
    Region(u64),
    PerBinding(&'a [(u64, u64)]),
}

impl Sides<'_> {
    /// Bindings they take.
    pub fn count(&self) -> u32 {
        match self {
            Sides::Region(_) => 1,
            Sides::PerBinding(w) => w.len() as u32,
        }
    }

    /// Offset and size of each binding, where a dispatch's own window is `offset .. offset +
    /// size` of the region.
    fn bound(&self, offset: u64, size: u64) -> Vec<(u64, u64)> {
        match *self {
            Sides::Region(region) => vec![(region + offset, size)],
            Sides::PerBinding(windows) => windows.to_vec(),
        }
    }
}

/// The indexed build's own windows: its indices (offset, bytes); where the caller keeps one,
/// its status (offset; 8 bytes); where the dispatch scatters, the destination (offset,
/// bytes).
#[derive(Debug, Clone, Copy)]
pub struct IndexSides {
    pub indices: (u64, u64),
    pub status: Option<u64>,
    pub scatter: Option<(u64, u64)>,
}

/// A dispatch's bindings in binding order, and the dynamic offsets of the side its build
/// moves (a node through views), each with the window it follows (`None`: a stand-in).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Binds {
    pub list: Vec<Bind>,
    pub offsets: Vec<u32>,
    pub follows: Vec<Option<usize>>,
}

impl Binds {
    /// `size` bytes of `role` from `offset`: window `moving` of the moving side, bound from
    /// its base at a dynamic offset, or a window that stays (`None`).
    fn window(&mut self, role: Role, offset: u64, size: u64, moving: Option<(usize, u64)>) {
        let base = match moving {
            Some((k, align)) => {
                let base = dynamic_base(offset, align);
                self.offsets.push((offset - base) as u32);
                self.follows.push(Some(k));
                base
            }
            None => offset,
        };
        let size = (size > 0).then_some(size);
        self.list.push(Bind {
            role,
            offset: base,
            size,
        });
    }

    /// `bind`, a stand-in, at dynamic offset 0 on the moving side (`moving`).
    fn stand_in(&mut self, bind: Bind, moving: bool) {
        if moving {
            self.offsets.push(0);
            self.follows.push(None);
        }
        self.list.push(bind);
    }
}

/// The base a binding of a moving window at `offset` is bound from: at most 2 GiB below it,
/// at a multiple of `align`, so that the dynamic offset (`offset - base`, a `u32`) moves the
/// window 2 GiB either way.
pub fn dynamic_base(offset: u64, align: u64) -> u64 {
    offset.saturating_sub(1 << 31) / align * align
}

/// Whether `slot` takes a dynamic offset in a build that moves the windows of `moving`'s
/// parts (a node through views: a split's outputs, a concat's inputs).
pub fn moves(moving: Option<Direction>, slot: Slot) -> bool {
    match moving {
        Some(Direction::Concat) => slot.input(),
        Some(Direction::Split) => slot.output(),
        None => false,
    }
}

/// The bindings of `dispatch` in a build of `slots` that moves `moving`'s windows, reading
/// `inputs` and writing `outputs` (and `index`'s windows in the indexed build), on a device
/// of storage offset alignment `align`: each input window as words and as vec4s (a window
/// too short for a vec4 binds the read stand-in there, as WebGPU binds no empty array), each
/// output window as its units and its tail (an empty one binds a slot of the write stand-in,
/// as writable bindings may not share a range).
pub fn binds(
    slots: &[Slot],
    dispatch: &Dispatch,
    (inputs, outputs): (Sides<'_>, Sides<'_>),
    index: Option<IndexSides>,
    moving: Option<Direction>,
    align: u64,
) -> Binds {
    let src = inputs.bound(dispatch.src_offset, dispatch.src_size);
    let dst = outputs.bound(dispatch.dst_offset, dispatch.dst_size);
    let whole = |role| Bind {
        role,
        offset: 0,
        size: None,
    };
    let step = align.max(UNIT_BYTES);
    let slot = |k: usize| Bind {
        role: Role::StandIn(StandIn::Write),
        offset: k as u64 * step,
        size: Some(UNIT_BYTES),
    };
    let mut binds = Binds::default();
    for &s in slots {
        let moves = moves(moving, s);
        let moving = |k: u32| moves.then_some((k as usize, align));
        match s {
            Slot::Table => binds.list.push(whole(Role::Table)),
            Slot::InputWords(k) => {
                let (offset, size) = src[k as usize];
                binds.window(Role::Input(k), offset, size, moving(k));
            }
            Slot::InputVec4s(k) => match src[k as usize] {
                (_, size) if size < UNIT_BYTES => {
                    binds.stand_in(whole(Role::StandIn(StandIn::Read)), moves)
                }
                (offset, size) => binds.window(Role::Input(k), offset, size, moving(k)),
            },
            Slot::OutputUnits(k) => {
                let (at, size) = dst[k as usize];
                match tail_start(size, align) {
                    0 => binds.stand_in(slot(k as usize), moves),
                    units => binds.window(Role::Output(k), at, units, moving(k)),
                }
            }
            Slot::OutputTail(k) => {
                let (at, size) = dst[k as usize];
                let units = tail_start(size, align);
                match size - units {
                    0 => binds.stand_in(slot(dst.len() + k as usize), moves),
                    tail => binds.window(Role::Output(k), at + units, tail, moving(k)),
                }
            }
            Slot::OutputWords => match dst[0] {
                (_, 0) => binds.stand_in(slot(0), moves),
                (offset, size) => binds.window(Role::Output(0), offset, size, moving(0)),
            },
            Slot::Indices => {
                if let Some(i) = index {
                    binds.window(Role::Indices, i.indices.0, i.indices.1, None);
                }
            }
            Slot::Status => match index.map(|i| i.status) {
                Some(Some(offset)) => binds.window(Role::Status, offset, 8, None),
                _ => binds.list.push(whole(Role::StandIn(StandIn::Status))),
            },
            Slot::OutputScatter(_) => match index.map(|i| i.scatter) {
                Some(Some((offset, size))) => binds.window(Role::Scatter(0), offset, size, None),
                _ => binds.list.push(whole(Role::StandIn(StandIn::Scatter))),
            },
            Slot::Trace => binds.list.push(whole(Role::Trace)),
        }
    }
    binds
}

#[cfg(test)]
mod tests {
    use super::dynamic_base;

    #[test]
    fn a_dynamic_base_reaches_two_gib_either_way() {
        assert_eq!(dynamic_base(4096, 256), 0);
        assert_eq!(dynamic_base(1 << 31, 256), 0);
        let far = (5u64 << 30) + 300;
        let base = dynamic_base(far, 256);
        assert_eq!(base % 256, 0);
        assert!(far - base >= 1 << 31 && far - base < (1 << 31) + 256);
    }
}
