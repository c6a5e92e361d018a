//! Binding the gather's dispatches to the caller's buffers and recording them: one bind group
//! per dispatch, made once; a build that moves one side's windows (a node prepared through
//! views) binds that side at dynamic offsets, which a decode step sets again without a new
//! bind group ([`BoundDispatch::move_from`]).

use super::GatherPipeline;
use crate::error::Result;
use crate::gpu::device::scoped_async;
use crate::gpu::gather::abi::ProgramKey;
use crate::gpu::gather::binds::{Binds, Role, StandIn};
use std::num::NonZeroU64;
use wgsl_split::recording::Dispatched;

/// Which of the caller's buffers each role of a recorded dispatch binds. Natively it is
/// `Sync`, so that the futures binding through it are `Send`; in a browser wgpu's buffers
/// are not `Sync`, and nothing there needs a future to be `Send`.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) type BufferOf<'f, 'b> = dyn Fn(Role) -> Option<&'b wgpu::Buffer> + Sync + 'f;
/// Which of the caller's buffers each role of a recorded dispatch binds.
#[cfg(target_arch = "wasm32")]
pub(crate) type BufferOf<'f, 'b> = dyn Fn(Role) -> Option<&'b wgpu::Buffer> + 'f;

/// One gather dispatch bound to its buffers ([`GatherPipeline::bind_recorded`]): recorded by
/// [`record_bound`], as often as wanted.
#[derive(Debug, Clone)]
pub struct BoundDispatch {
    /// What it runs (the bench reports it).
    #[cfg_attr(not(feature = "bench"), allow(dead_code))]
    pub(crate) program: ProgramKey,
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    grid: (u32, u32),
    /// The dynamic offsets of the moving side's bindings, in binding order, as bound (none
    /// where the build moves nothing), and the window each follows (`None`: a stand-in).
    offsets: Vec<u32>,
    follows: Vec<Option<usize>>,
    /// What reaches the device, as the golden test (`bench::golden_tests`) records it.
    #[cfg(test)]
    pub(crate) golden: super::golden::Bound,
}

impl BoundDispatch {
    /// Its dynamic offsets, as bound (the golden test records them).
    #[cfg(test)]
    pub(crate) fn offsets(&self) -> &[u32] {
        &self.offsets
    }

    /// Its dynamic offsets with window `k` of the moving side moved by `shifts[k]` bytes:
    /// `None` where one would leave what a dynamic offset reaches from its binding's base
    /// (`gather::binds::dynamic_base`).
    fn moved_offsets<'s>(&'s self, shifts: &'s [i64]) -> impl Iterator<Item = Option<u32>> + 's {
        (self.offsets.iter().zip(&self.follows)).map(move |(&offset, window)| match window {
            None => Some(offset),
            Some(k) => u32::try_from(i64::from(offset).checked_add(shifts[*k])?).ok(),
        })
    }

    /// Whether `prepared`'s windows moved by `shifts` stay where dynamic offsets reach.
    pub(crate) fn moves(prepared: &BoundDispatch, shifts: &[i64]) -> bool {
        prepared.moved_offsets(shifts).all(|o| o.is_some())
    }

    /// Takes `prepared`'s dynamic offsets (this dispatch as it was prepared) with its windows
    /// moved by `shifts` ([`BoundDispatch::moves`] first): the bind group stays.
    pub(crate) fn move_from(&mut self, prepared: &BoundDispatch, shifts: &[i64]) {
        for (o, moved) in self.offsets.iter_mut().zip(prepared.moved_offsets(shifts)) {
            *o = moved.unwrap_or(*o);
        }
    }
}

/// Records `bound` into one compute pass of `encoder`; a device error (a buffer destroyed
/// since it was bound, for one) becomes [`SplitError::Device`](crate::SplitError::Device)
/// naming `op`, what is encoded.
pub async fn record_bound(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    op: &str,
    bound: &[BoundDispatch],
) -> Result<()> {
    /// What an error names, written out only for one.
    struct Encoding<'s>(&'s str);
    impl std::fmt::Display for Encoding<'_> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "encoding the {}", self.0)
        }
    }
    scoped_async(device, Encoding(op), || {
        record_unscoped(encoder, bound.iter().map(|b| (b, b.offsets.as_slice())))
    })
    .await
}

/// [`record_bound`] in the caller's error scopes, each dispatch at the dynamic offsets given
/// with it.
fn record_unscoped<'b>(
    encoder: &mut wgpu::CommandEncoder,
    bound: impl IntoIterator<Item = (&'b BoundDispatch, &'b [u32])>,
) {
    let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
        label: Some("split_gather"),
        timestamp_writes: None,
    });
    for (b, offsets) in bound {
        pass.set_pipeline(&b.pipeline);
        pass.set_bind_group(0, &b.bind_group, offsets);
        pass.dispatch_workgroups(b.grid.0, b.grid.1, 1);
    }
}

impl GatherPipeline {
    /// Binds `recorded`, a dispatch of this build of `op` (the split, the rows placed by
    /// indices, ...: what an error names), with its `table` uploaded: each role's buffer is
    /// `buffer(role)`'s.
    pub(crate) async fn bind_recorded<'b>(
        &self,
        device: &wgpu::Device,
        op: &str,
        recorded: &Dispatched,
        table: &wgpu::Buffer,
        buffer: &BufferOf<'_, 'b>,
    ) -> Result<BoundDispatch> {
        let (program, grid) = (recorded.program, recorded.workgroups);
        let binds = recorded.binds.clone();
        let bound = scoped_async(device, format!("binding the {op}"), || {
            self.bound(device, program, binds, grid, table, buffer)
        })
        .await?;
        #[cfg(test)]
        let bound = BoundDispatch {
            golden: bound.golden.clone().with_table(recorded.table.clone()),
            ..bound
        };
        Ok(bound)
    }

    /// One dispatch of `program` over `grid`, bound by `binds` with its `table`: each
    /// binding of the caller's buffers is `buffer(role)`'s, the table, the stand-ins and the
    /// trace's records this build's.
    fn bound<'b>(
        &self,
        device: &wgpu::Device,
        program: ProgramKey,
        binds: Binds,
        grid: (u32, u32),
        table: &wgpu::Buffer,
        buffer: &BufferOf<'_, 'b>,
    ) -> BoundDispatch {
        let [read_stand_in, write_stand_in] = &self.stand_ins;
        let indexed = self.indexed_stand_ins.as_deref();
        let resource = |role: Role| -> Option<&wgpu::Buffer> {
            Some(match role {
                Role::Table => table,
                Role::StandIn(StandIn::Read) => read_stand_in,
                Role::StandIn(StandIn::Write) => write_stand_in,
                Role::StandIn(StandIn::Status) => &indexed?[0],
                Role::StandIn(StandIn::Scatter) => &indexed?[1],
                #[cfg(feature = "bench")]
                Role::Trace => self.trace.as_ref()?,
                #[cfg(not(feature = "bench"))]
                Role::Trace => return None,
                caller => buffer(caller)?,
            })
        };
        let resources: Vec<wgpu::BindingResource> = binds
            .list
            .iter()
            .filter_map(|b| Some(window(resource(b.role)?, b.offset, b.size)))
            .collect();
        let entries: Vec<wgpu::BindGroupEntry> = (0u32..)
            .zip(&resources)
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding,
                resource: resource.clone(),
            })
            .collect();
        let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("split_gather"),
            layout: &self.bind_group_layout,
            entries: &entries,
        });
        BoundDispatch {
            program,
            pipeline: self.pipeline(device, program),
            bind_group,
            grid,
            #[cfg(test)]
            golden: self.golden(program, table, &resources, grid),
            offsets: binds.offsets,
            follows: binds.follows,
        }
    }
}

/// A storage binding of `size` bytes of `buffer` from `offset` (`None`: to its end).
fn window(buffer: &wgpu::Buffer, offset: u64, size: Option<u64>) -> wgpu::BindingResource<'_> {
    wgpu::BindingResource::Buffer(wgpu::BufferBinding {
        buffer,
        offset,
        size: size.and_then(NonZeroU64::new),
    })
}
