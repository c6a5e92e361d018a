//! Splits that move nothing: when every output is one aligned range of the input
//! (`GpuSplitter::views`), a following kernel binds the outputs as views of the input
//! buffer directly.
//!
//! ```sh
//! WGPU_BACKEND=gl cargo run --release --example views
//! ```

use wgpu::util::DeviceExt;
use wgpu_split::{ops, wgpu, DType, DeviceChoice, GpuSplitter, HostTensor, IntTensor};

/// The following kernel: sums each row of 64 f32 of `x` into `y`.
const ROW_SUMS: &str = r#"
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < arrayLength(&y)) {
        var s = 0.0;
        for (var i = 0u; i < 64u; i++) {
            s += x[id.x * 64u + i];
        }
        y[id.x] = s;
    }
}
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gpu = GpuSplitter::open(DeviceChoice::from_env()?)?;
    let (device, queue) = (gpu.device(), gpu.queue());

    // A batch of 4 rows of 64 f32, split on the batch axis into 1 and 3 rows.
    let shape = [4, 64];
    let data: Vec<f32> = (0..256).map(|i| (i % 7) as f32).collect();
    let plan = ops::variadic_split(
        &shape,
        &IntTensor::scalar(0),
        &IntTensor::vector(vec![1, 3]),
    )?;
    let views = gpu
        .views(&plan, DType::F32)?
        .ok_or("these outputs are not aligned ranges of the input")?;
    let input = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("batch"),
        contents: bytemuck::cast_slice(&data),
        usage: wgpu::BufferUsages::STORAGE,
    });

    // Output 1 is bytes [offset, offset + size) of the input: bind that range.
    let view = views[1];
    let rows = (view.size / 256) as usize;
    let sums = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("row sums"),
        size: 4 * rows as u64,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let readback = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: 4 * rows as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("row sums"),
        source: wgpu::ShaderSource::Wgsl(ROW_SUMS.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("row sums"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("row sums"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &input,
                    offset: view.offset,
                    size: std::num::NonZeroU64::new(view.size),
                }),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: sums.as_entire_binding(),
            },
        ],
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    encoder.copy_buffer_to_buffer(&sums, 0, &readback, 0, 4 * rows as u64);
    queue.submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |_| {});
    device.poll(wgpu::PollType::wait_indefinitely())?;
    let got: Vec<f32> = bytemuck::cast_slice(&readback.get_mapped_range(..)?).to_vec();

    let parts = plan.reference(&HostTensor::from_slice(&shape, &data)?)?;
    let want: Vec<f32> = parts[1]
        .to_vec::<f32>()?
        .chunks(64)
        .map(|row| row.iter().sum())
        .collect();
    if got != want {
        return Err(format!("row sums of output 1 differ: {got:?}, expected {want:?}").into());
    }
    println!(
        "views: output 1 bound as bytes {}..{} of the input, no bytes moved; {} row sums match on {} ({:?})",
        view.offset,
        view.offset + view.size,
        got.len(),
        gpu.device().adapter_info().name,
        gpu.device().adapter_info().backend
    );
    Ok(())
}
