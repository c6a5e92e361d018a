//! A concat as an engine records it: two inputs in buffers of the engine's own (a cache of
//! three positions and the new token's, `torch.cat([cache, token], dim=2)`), the concat
//! prepared once and recorded for two steps, the second after the token was rewritten; and
//! `torch.cat([x, x])`, one region passed twice. Each result is read back and compared, byte
//! for byte, with the CPU reference.
//!
//! ```sh
//! WGPU_BACKEND=vulkan cargo run --release --example concat
//! ```

use wgpu::util::DeviceExt;
use wgpu_split::{ops, wgpu, DType, DeviceChoice, GpuSplitter, HostTensor, Inputs};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An engine would pass its own device: GpuSplitter::new(device, queue).
    let gpu = GpuSplitter::open(DeviceChoice::from_env()?)?;
    let device = gpu.device();

    // Rules and shapes, once, on the CPU: [1, 2, 3, 4] f16 and [1, 2, 1, 4] f16 on axis 2.
    let (cache_shape, token_shape) = ([1, 2, 3, 4], [1, 2, 1, 4]);
    let plan = ops::concat(&[cache_shape, token_shape], 2)?;
    assert_eq!(plan.whole_shape(), &[1, 2, 4, 4]);

    // The engine's tensors, each in a buffer of its exact size (rounded up to 4 bytes).
    let tensor = |shape: &[usize], seed: u16| {
        let n = shape.iter().product::<usize>();
        let values: Vec<half::f16> = (0..n)
            .map(|i| half::f16::from_bits(seed.wrapping_mul(997).wrapping_add(i as u16)))
            .collect();
        HostTensor::from_slice(shape, &values)
    };
    let upload = |t: &HostTensor| {
        let mut bytes = t.bytes().to_vec();
        bytes.resize(bytes.len().next_multiple_of(4), 0);
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("engine tensor"),
            contents: &bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST,
        })
    };
    let cache = tensor(&cache_shape, 1)?;
    let mut token = tensor(&token_shape, 2)?;
    let (cache_buf, token_buf) = (upload(&cache), upload(&token));
    let output = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine concat output"),
        size: plan.whole_binding_size(DType::F16)?,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });

    // Prepared once: the checks, the route and the bind groups; each step only records.
    let inputs = [(&cache_buf).into(), (&token_buf).into()];
    let node = gpu.prepare(
        &plan,
        DType::F16,
        Inputs::Regions(&inputs),
        (&output).into(),
    )?;
    for step in 0..2 {
        if step > 0 {
            // The engine's kernels wrote a new token into the same buffer.
            token = tensor(&token_shape, 3)?;
            gpu.queue().write_buffer(&token_buf, 0, token.bytes());
        }
        let mut encoder = device.create_command_encoder(&Default::default());
        let encoded = node.encode(&mut encoder)?;
        let got = read(&gpu, encoder, &output, plan.whole_shape())?;
        let want = plan.reference(&[cache.clone(), token.clone()])?;
        if got != want {
            return Err(format!("step {step}: the concat differs from the reference").into());
        }
        println!(
            "concat: step {step}, {:?} + {:?} into {:?} ({} dispatch, {} copies): bit-exact",
            cache_shape,
            token_shape,
            plan.whole_shape(),
            encoded.dispatches,
            encoded.buffer_copies
        );
    }

    // torch.cat([x, x]): a concat only reads its inputs, so one region may come twice.
    let twice = ops::concat(&[cache_shape, cache_shape], 0)?;
    let doubled = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine doubled"),
        size: twice.whole_binding_size(DType::F16)?,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let same = [(&cache_buf).into(), (&cache_buf).into()];
    let mut encoder = device.create_command_encoder(&Default::default());
    let x = Inputs::Regions(&same);
    gpu.encode(&mut encoder, &twice, DType::F16, x, (&doubled).into())?;
    let got = read(&gpu, encoder, &doubled, twice.whole_shape())?;
    if got != twice.reference(&[cache.clone(), cache])? {
        return Err("cat([x, x]) differs from the reference".into());
    }
    println!(
        "concat: cat([x, x]) of one region into {:?}: bit-exact",
        twice.whole_shape()
    );
    Ok(())
}

/// Submits `encoder` with a copy of `buffer` into a readback buffer, and reads it as an f16
/// tensor of `shape`.
fn read(
    gpu: &GpuSplitter,
    mut encoder: wgpu::CommandEncoder,
    buffer: &wgpu::Buffer,
    shape: &[usize],
) -> Result<HostTensor, Box<dyn std::error::Error>> {
    let readback = gpu.device().create_buffer(&wgpu::BufferDescriptor {
        label: Some("engine readback"),
        size: buffer.size(),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    encoder.copy_buffer_to_buffer(buffer, 0, &readback, 0, buffer.size());
    gpu.queue().submit([encoder.finish()]);
    readback.map_async(wgpu::MapMode::Read, .., |_| {});
    gpu.device().poll(wgpu::PollType::wait_indefinitely())?;
    let bytes = readback.get_mapped_range(..)?;
    let n = shape.iter().product::<usize>() * 2;
    Ok(HostTensor::new(
        DType::F16,
        shape.to_vec(),
        bytes[..n].to_vec(),
    )?)
}
