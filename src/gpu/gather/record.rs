//! Recording the gather: the pipelines (one per entry point, made once per device when a
//! dispatch first needs it), one bind group per dispatch, and the dispatches themselves.

use super::abi::{EntryPoint, SHADER_SOURCE};
use super::builds::{multi_output_source, traced_source};
use super::plan::Dispatch;
use crate::error::{Result, SplitError};
use crate::gpu::device::{scoped, scoped_async};
use crate::gpu::region::BufferRegion;
use std::num::NonZeroU64;
use std::sync::{Arc, OnceLock};

/// The gather shader compiled for one device, with its bind group layout; each entry point's
/// pipeline is made the first time a dispatch needs it.
#[derive(Debug, Clone)]
pub struct GatherPipeline {
    module: wgpu::ShaderModule,
    bind_group_layout: wgpu::BindGroupLayout,
    layout: wgpu::PipelineLayout,
    /// One pipeline per entry point, in the order of [`EntryPoint::ALL`], made on first use
    /// and shared by clones: a CPU adapter never runs the GPUs' layouts, nor a GPU the runs,
    /// and on lavapipe the seven pipelines took 76 ms of the 107 a splitter took to open.
    pipelines: Arc<[OnceLock<wgpu::ComputePipeline>; EntryPoint::ALL.len()]>,
    /// Whether this is the trace build, with the trace buffer at binding 4.
    traced: bool,
    /// Output bindings: 1, or more in the multi-output build.
    dst_bindings: u32,
}

/// Where a gather's dispatches write.
#[derive(Debug, Clone, Copy)]
pub enum Outputs<'a> {
    /// One output region; each dispatch binds its own window of it.
    Region(&'a BufferRegion<'a>),
    /// The multi-output build: one window (region and size) per output binding, the same
    /// for every dispatch.
    Windows(&'a [(BufferRegion<'a>, u64)]),
}

/// One gather dispatch bound to its buffers ([`GatherPipeline::bind`]): recorded by
/// [`record_bound`], as often as wanted.
#[derive(Debug, Clone)]
pub struct BoundDispatch {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    grid: (u32, u32),
}

/// Records `bound` into one compute pass of `encoder`; a device error (a buffer destroyed
/// since it was bound, for one) becomes [`SplitError::Device`].
pub async fn record_bound(
    device: &wgpu::Device,
    encoder: &mut wgpu::CommandEncoder,
    bound: &[BoundDispatch],
) -> Result<()> {
    scoped_async(device, "encoding the split", || {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("split_gather"),
            timestamp_writes: None,
        });
        for b in bound {
            pass.set_pipeline(&b.pipeline);
            pass.set_bind_group(0, &b.bind_group, &[]);
            pass.dispatch_workgroups(b.grid.0, b.grid.1, 1);
        }
    })
    .await
}

impl GatherPipeline {
    /// Compiles the shader on `device`; a device error becomes [`SplitError::Device`].
    pub fn new(device: &wgpu::Device) -> Result<Self> {
        scoped(device, "compiling the split pipeline", || {
            Self::build(device, SHADER_SOURCE, false, 1)
        })
    }

    /// Compiles the multi-output build ([`multi_output_source`]) with `bindings` output
    /// bindings: one dispatch writes into that many buffers.
    pub async fn multi_output(device: &wgpu::Device, bindings: u32) -> Result<Self> {
        let source = multi_output_source(SHADER_SOURCE, bindings)?;
        scoped_async(device, "compiling the multi-output split pipeline", || {
            Self::build(device, &source, false, bindings)
        })
        .await
    }

    /// Compiles the trace build of the shader ([`traced_source`]): the same
    /// shader, whose every global access also writes a record into a buffer at binding 4.
    pub fn traced(device: &wgpu::Device) -> Result<Self> {
        let source = traced_source(SHADER_SOURCE, 4)?;
        scoped(device, "compiling the traced split pipeline", || {
            Self::build(device, &source, true, 1)
        })
    }

    fn build(device: &wgpu::Device, source: &str, traced: bool, dst_bindings: u32) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("split_gather.wgsl"),
            source: wgpu::ShaderSource::Wgsl(source.into()),
        });
        let entry = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        // table, src, src4 (read-only), dst (one or more); the trace build's records.
        let mut entries = vec![entry(0, true), entry(1, true), entry(2, true)];
        entries.extend((0..dst_bindings).map(|j| entry(3 + j, false)));
        if traced {
            entries.push(entry(3 + dst_bindings, false));
        }
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("split_gather"),
            entries: &entries,
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("split_gather"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        Self {
            module,
            bind_group_layout,
            layout,
            pipelines: Arc::new(std::array::from_fn(|_| OnceLock::new())),
            traced,
            dst_bindings,
        }
    }

    /// The pipeline of `entry`, made now if no dispatch needed it before; call it inside an
    /// error scope.
    fn pipeline(&self, device: &wgpu::Device, entry: EntryPoint) -> wgpu::ComputePipeline {
        let made = self.pipelines[entry as usize].get_or_init(|| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry.name()),
                layout: Some(&self.layout),
                module: &self.module,
                entry_point: Some(entry.name()),
                // The shader writes every word of workgroup memory before it reads it, so
                // zeroing it first (16 KiB per workgroup) would be pure cost.
                compilation_options: wgpu::PipelineCompilationOptions {
                    zero_initialize_workgroup_memory: false,
                    ..Default::default()
                },
                cache: None,
            })
        });
        made.clone()
    }

    /// Records `dispatches` (with their `tables`, one buffer each) into one compute pass of
    /// `encoder`, reading `input` and writing `outputs`; the trace build also writes its
    /// records into `trace`. [`GatherPipeline::bind`], then [`record_bound`].
    #[allow(clippy::too_many_arguments)]
    pub async fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        input: &BufferRegion<'_>,
        outputs: Outputs<'_>,
        trace: Option<&wgpu::Buffer>,
    ) -> Result<()> {
        let bound = self
            .bind(device, dispatches, tables, input, outputs, trace)
            .await?;
        record_bound(device, encoder, &bound).await
    }

    /// Binds `dispatches` (with their `tables`, one buffer each) to `input` and `outputs`, and
    /// the trace build to `trace`: each one's pipeline, bind group and grid, ready to record
    /// as often as wanted. Fails, with nothing made, if a grid exceeds the device's limits, if
    /// `trace` is given to the plain build or missing for the trace build, if `outputs` does
    /// not match the build's output bindings, or if wgpu refuses a bind group.
    pub async fn bind(
        &self,
        device: &wgpu::Device,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        input: &BufferRegion<'_>,
        outputs: Outputs<'_>,
        trace: Option<&wgpu::Buffer>,
    ) -> Result<Vec<BoundDispatch>> {
        if self.traced != trace.is_some() {
            return Err(SplitError::Device(
                "a trace buffer goes with the trace build of the pipeline, and only there".into(),
            ));
        }
        let windows = match outputs {
            Outputs::Region(_) => 1,
            Outputs::Windows(w) => w.len() as u32,
        };
        if windows != self.dst_bindings {
            return Err(SplitError::Device(format!(
                "{windows} output windows for a build with {} output bindings",
                self.dst_bindings
            )));
        }
        let limits = device.limits();
        let grids = dispatches
            .iter()
            .map(|d| grid(&limits, d.params.num_blocks as u64))
            .collect::<Result<Vec<_>>>()?;
        scoped_async(device, "binding the split", || {
            dispatches
                .iter()
                .zip(tables)
                .zip(grids)
                .map(|((dispatch, table), grid)| BoundDispatch {
                    pipeline: self
                        .pipeline(device, EntryPoint::of(&dispatch.params, &dispatch.entries)),
                    bind_group: self.bind_group(device, dispatch, table, input, outputs, trace),
                    grid,
                })
                .collect()
        })
        .await
    }

    /// The bind group of one dispatch: its table, its windows of the caller's buffers, and
    /// the trace buffer of the trace build.
    fn bind_group(
        &self,
        device: &wgpu::Device,
        dispatch: &Dispatch,
        table: &wgpu::Buffer,
        input: &BufferRegion<'_>,
        outputs: Outputs<'_>,
        trace: Option<&wgpu::Buffer>,
    ) -> wgpu::BindGroup {
        let window = |buffer, offset, size| {
            wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer,
                offset,
                size: NonZeroU64::new(size),
            })
        };
        // `src` and `src4` view the same window, whole units (`abi::input_binding`).
        let src_offset = input.offset + dispatch.src_offset;
        let mut resources = vec![
            table.as_entire_binding(),
            window(input.buffer, src_offset, dispatch.src_size),
            window(input.buffer, src_offset, dispatch.src_size),
        ];
        match outputs {
            Outputs::Region(output) => resources.push(window(
                output.buffer,
                output.offset + dispatch.dst_offset,
                dispatch.dst_size,
            )),
            Outputs::Windows(windows) => resources.extend(
                windows
                    .iter()
                    .map(|(region, size)| window(region.buffer, region.offset, *size)),
            ),
        }
        resources.extend(trace.map(|t| t.as_entire_binding()));
        let entries: Vec<wgpu::BindGroupEntry> = resources
            .into_iter()
            .enumerate()
            .map(|(binding, resource)| wgpu::BindGroupEntry {
                binding: binding as u32,
                resource,
            })
            .collect();
        device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("split_gather"),
            layout: &self.bind_group_layout,
            entries: &entries,
        })
    }
}

/// Grid for `groups` workgroups: as wide as the device allows, then folded into rows (the
/// shaders rebuild the flat index).
pub fn grid(limits: &wgpu::Limits, groups: u64) -> Result<(u32, u32)> {
    let max = limits.max_compute_workgroups_per_dimension as u64;
    let x = groups.min(max);
    let y = groups.div_ceil(x.max(1));
    if y > max {
        return Err(SplitError::TooLarge(format!(
            "{groups} workgroups exceed {max} x {max}, the device's dispatch grid"
        )));
    }
    Ok((x as u32, y as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_fold_into_rows_within_the_limit() {
        let limits = wgpu::Limits {
            max_compute_workgroups_per_dimension: 100,
            ..wgpu::Limits::default()
        };
        assert_eq!(grid(&limits, 7).unwrap(), (7, 1));
        assert_eq!(grid(&limits, 250).unwrap(), (100, 3));
        assert!(matches!(
            grid(&limits, 10_001),
            Err(SplitError::TooLarge(_))
        ));
    }
}
