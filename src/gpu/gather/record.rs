//! Recording the gather: the pipeline (compiled once per device), one bind group per
//! dispatch, and the dispatches themselves.

use super::abi::{SHADER_SOURCE, WORKGROUP_SIZE};
use super::plan::Dispatch;
use crate::error::{Result, SplitError};
use crate::gpu::device::scoped;
use crate::gpu::region::BufferRegion;
use std::num::NonZeroU64;

/// The gather shader compiled for one device, with its bind group layout.
#[derive(Debug, Clone)]
pub struct GatherPipeline {
    bind_group_layout: wgpu::BindGroupLayout,
    pipeline: wgpu::ComputePipeline,
}

impl GatherPipeline {
    /// Compiles the shader on `device`; a device error becomes [`SplitError::Device`].
    pub fn new(device: &wgpu::Device) -> Result<Self> {
        scoped(device, "compiling the split pipeline", || {
            Self::build(device)
        })
    }

    fn build(device: &wgpu::Device) -> Self {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("split_gather.wgsl"),
            source: wgpu::ShaderSource::Wgsl(SHADER_SOURCE.into()),
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
        // table, src, src4 (read-only), dst.
        let bind_group_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("split_gather"),
            entries: &[
                entry(0, true),
                entry(1, true),
                entry(2, true),
                entry(3, false),
            ],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("split_gather"),
            bind_group_layouts: &[Some(&bind_group_layout)],
            immediate_size: 0,
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("split_gather"),
            layout: Some(&layout),
            module: &module,
            entry_point: Some("main"),
            // The shader writes every word of workgroup memory before it reads it, so zeroing
            // it first (16 KiB per workgroup) would be pure cost.
            compilation_options: wgpu::PipelineCompilationOptions {
                zero_initialize_workgroup_memory: false,
                ..Default::default()
            },
            cache: None,
        });
        Self {
            bind_group_layout,
            pipeline,
        }
    }

    /// Records `dispatches` (with their `tables`, one buffer each) into one compute pass of
    /// `encoder`, reading `input` and writing `output`. Fails before recording anything if a
    /// grid exceeds the device's limits.
    pub fn record(
        &self,
        device: &wgpu::Device,
        encoder: &mut wgpu::CommandEncoder,
        dispatches: &[Dispatch],
        tables: &[wgpu::Buffer],
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
    ) -> Result<()> {
        let limits = device.limits();
        let grids = dispatches
            .iter()
            .map(|d| grid(&limits, d.params.num_blocks as u64 * WORKGROUP_SIZE, WORKGROUP_SIZE))
            .collect::<Result<Vec<_>>>()?;
        scoped(device, "encoding the split", || {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("split_gather"),
                timestamp_writes: None,
            });
            pass.set_pipeline(&self.pipeline);
            for ((dispatch, table), &(x, y)) in dispatches.iter().zip(tables).zip(&grids) {
                let bind_group = self.bind(device, dispatch, table, input, output);
                pass.set_bind_group(0, &bind_group, &[]);
                pass.dispatch_workgroups(x, y, 1);
            }
        })
    }

    /// The bind group of one dispatch: its table, and its windows of the caller's buffers.
    fn bind(
        &self,
        device: &wgpu::Device,
        dispatch: &Dispatch,
        table: &wgpu::Buffer,
        input: &BufferRegion<'_>,
        output: &BufferRegion<'_>,
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
        let resources = [
            table.as_entire_binding(),
            window(input.buffer, src_offset, dispatch.src_size),
            window(input.buffer, src_offset, dispatch.src_size),
            window(
                output.buffer,
                output.offset + dispatch.dst_offset,
                dispatch.dst_size,
            ),
        ];
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

/// Workgroup grid for `invocations` in workgroups of `workgroup_size`: as wide as the device
/// allows, then folded into rows (the shader rebuilds the flat index).
pub fn grid(limits: &wgpu::Limits, invocations: u64, workgroup_size: u64) -> Result<(u32, u32)> {
    let groups = invocations.div_ceil(workgroup_size);
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
        assert_eq!(grid(&limits, 64 * 7, 64).unwrap(), (7, 1));
        assert_eq!(grid(&limits, 64 * 250, 64).unwrap(), (100, 3));
        assert!(matches!(
            grid(&limits, 64 * 10_001, 64),
            Err(SplitError::TooLarge(_))
        ));
    }
}
