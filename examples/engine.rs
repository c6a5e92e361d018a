//! An inference engine's view: its own device, a split encoded into its own command encoder,
//! then its own kernel reading output 1 where the returned layout says, all in one submit.
//!
//! ```sh
//! WGPU_BACKEND=vulkan cargo run --release --example engine
//! ```

use wgpu::util::DeviceExt;
use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, HostTensor, IntTensor, Outputs};

/// The engine's own kernel: doubles every f32 of `x` into `y`.
const DOUBLE: &str = r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&y)) {
        y[id.x] = 2.0 * x[id.x];
    }
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The engine's device, chosen its own way (here: wgpu's WGPU_BACKEND variable). On Mesa,
    // with no desktop session, set NODEVICE_SELECT=1 for a quiet stderr (docs/design.md).
    let backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::all());
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = backends;
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    let (device, queue) = pollster::block_on(adapter.request_device(&Default::default()))?;
    let splitter = GpuSplitter::new(device.clone(), queue.clone())?;

    // A [4, 6, 8] f32 tensor, split on axis 1 into 2 and 4.
    let shape = [4, 6, 8];
    let data: Vec<f32> = (0..4 * 6 * 8).map(|i| i as f32 * 0.5).collect();
    let plan = ops::variadic_split(
        &shape,
        &IntTensor::scalar(1),
        &IntTensor::vector(vec![2, 4]),
    )?;

    // The engine's buffers: the input, and one region for every output, sized by the layout
    // (padding between outputs included).
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("engine tensor"),
        contents: bytemuck::cast_slice(&data),
        usage: wgpu::BufferUsages::STORAGE,
    });
    let layout = splitter.layout(&plan, DType::F32)?;
    let outputs = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine split outputs"),
        size: layout.total_bytes,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let out1 = layout.ranges[1];
    let doubled = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine result"),
        size: out1.size,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine readback"),
        size: out1.size,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });

    // The engine's kernel binds output 1 at its offset: the layout aligns every output to
    // min_storage_buffer_offset_alignment, so this binding is valid.
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("double"),
        source: wgpu::ShaderSource::Wgsl(DOUBLE.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("double"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("double"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &outputs,
                    offset: out1.offset,
                    size: std::num::NonZeroU64::new(out1.size),
                }),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: doubled.as_entire_binding(),
            },
        ],
    });

    // One encoder, one submit: the split, then the engine's kernel.
    let mut encoder = device.create_command_encoder(&Default::default());
    let encoded = splitter.encode(
        &mut encoder,
        &plan,
        DType::F32,
        BufferRegion::from(&input),
        Outputs::Region(BufferRegion::from(&outputs)),
    )?;
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((out1.size as u32 / 4).div_ceil(64), 1, 1);
    }
    encoder.copy_buffer_to_buffer(&doubled, 0, &readback, 0, out1.size);
    queue.submit([encoder.finish()]);

    readback.map_async(wgpu::MapMode::Read, .., |_| {});
    device.poll(wgpu::PollType::wait_indefinitely())?;
    let got: Vec<f32> = bytemuck::cast_slice(&readback.get_mapped_range(..)?).to_vec();

    let want = plan.reference(&HostTensor::from_slice(&shape, &data)?)?;
    let want: Vec<f32> = want[1].to_vec::<f32>()?.iter().map(|v| 2.0 * v).collect();
    if got != want {
        return Err(format!("output 1 doubled differs: {got:?}, expected {want:?}").into());
    }
    println!(
        "engine: split into {} outputs ({} dispatch, {} buffer copies) and doubled output 1 \
         in one submit on {} ({:?}): {} values match",
        plan.num_parts(),
        encoded.dispatches,
        encoded.buffer_copies,
        adapter.get_info().name,
        adapter.get_info().backend,
        got.len()
    );
    Ok(())
}
