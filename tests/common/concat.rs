//! What the concat tests share: patterned inputs, and a concat recorded from inputs where a
//! test places them, read back and checked against the reference.

use super::submit_and_read;
use wgpu::util::DeviceExt;
use wgpu_split::{BufferRegion, ConcatPlan, DType, Encoded, GpuSplitter, HostTensor, Inputs};

pub fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n)
        .map(|i| ((i * 131 + seed * 17 + 7) % 251) as u8)
        .collect()
}

pub fn tensor(dtype: DType, shape: &[usize], seed: usize) -> HostTensor {
    let n: usize = shape.iter().product::<usize>() * dtype.size();
    HostTensor::new(dtype, shape.to_vec(), pattern(n, seed)).unwrap()
}

/// The parts of `plan` (a concat's inputs) filled with patterns.
pub fn parts(plan: &ConcatPlan, dtype: DType) -> Vec<HostTensor> {
    (0..plan.num_parts())
        .map(|i| tensor(dtype, &plan.part_shape(i), i))
        .collect()
}

/// Concatenates `inputs` from the regions `place(i)` gives (buffer index, offset), in buffers
/// of the sizes needed with `usage` besides STORAGE, into an output buffer that holds 0xA5 in
/// every byte the concat does not own; reads it back and checks it against the reference and
/// those bytes. Returns what was recorded.
pub fn check_regions(
    gpu: &GpuSplitter,
    plan: &ConcatPlan,
    inputs: &[HostTensor],
    usage: wgpu::BufferUsages,
    place: impl Fn(usize) -> (usize, u64),
) -> Encoded {
    let device = gpu.device();
    let places: Vec<(usize, u64)> = (0..inputs.len()).map(place).collect();
    let count = places.iter().map(|p| p.0 + 1).max().unwrap_or(0);
    let mut contents = vec![Vec::new(); count];
    for (&(b, offset), t) in places.iter().zip(inputs) {
        let c = &mut contents[b];
        let end = offset as usize + t.bytes().len().next_multiple_of(16);
        c.resize(c.len().max(end).max(16), 0x5A);
        c[offset as usize..offset as usize + t.bytes().len()].copy_from_slice(t.bytes());
    }
    let buffers: Vec<wgpu::Buffer> = contents
        .iter()
        .map(|c| {
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: None,
                contents: c,
                usage: wgpu::BufferUsages::STORAGE | usage,
            })
        })
        .collect();
    let regions = super::regions_at(&buffers, &places);
    encode_and_read(gpu, plan, inputs, Inputs::Regions(&regions), usage)
}

/// Records the concat from `inputs` into an output buffer of 0xA5 bytes (its size rounded up
/// to 16, with 16 more), reads it back, and checks the output against the reference and the
/// bytes after it.
pub fn encode_and_read(
    gpu: &GpuSplitter,
    plan: &ConcatPlan,
    tensors: &[HostTensor],
    inputs: Inputs<'_>,
    usage: wgpu::BufferUsages,
) -> Encoded {
    let device = gpu.device();
    let want = plan.reference(tensors).unwrap();
    let size = want.bytes().len();
    let out_size = (size.next_multiple_of(16) + 16) as u64;
    let output = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: None,
        contents: &vec![0xA5; out_size as usize],
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | usage,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    let region = BufferRegion {
        buffer: &output,
        offset: 0,
    };
    let dtype = want.dtype();
    let encoded = gpu
        .encode(&mut encoder, plan, dtype, inputs, region)
        .unwrap();
    let data = submit_and_read(gpu, encoder, &output);
    let name = super::name(gpu);
    if let Some(b) = data[..size]
        .iter()
        .zip(want.bytes())
        .position(|(a, b)| a != b)
    {
        panic!(
            "{name}: {:?} concat differs at byte {b} of {size}: {:#04x}, expected {:#04x} ({encoded:?})",
            plan.whole_shape(),
            data[b],
            want.bytes()[b]
        );
    }
    assert!(
        data[size..].iter().all(|&b| b == 0xA5),
        "{name}: bytes past the output changed"
    );
    encoded
}
