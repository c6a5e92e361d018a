//! What the views tests share: patterned tensors and buffers, and a split through views
//! checked against the reference with every buffer read back whole.

use wgpu::util::DeviceExt;
use wgpu_split::{reference, DType, GpuSplitter, HostTensor, Inputs, Outputs, PartView, SplitPlan};

/// Bytes of a seeded pattern: data and the guard bytes around views alike.
pub fn pattern(n: usize, seed: usize) -> Vec<u8> {
    (0..n)
        .map(|i| ((i * 131 + seed * 7919 + 7) % 251) as u8)
        .collect()
}

/// A tensor of `dtype` (bools 0 or 1) filled from `seed`.
pub fn tensor(dtype: DType, shape: &[usize], seed: usize) -> HostTensor {
    let n = shape.iter().product::<usize>() * dtype.size();
    let mut bytes = pattern(n, seed);
    if dtype == DType::Bool {
        bytes.iter_mut().for_each(|b| *b &= 1);
    }
    HostTensor::new(dtype, shape.to_vec(), bytes).unwrap()
}

/// A storage buffer holding `bytes` (padded to 16), readable back.
pub fn buffer(gpu: &GpuSplitter, bytes: &[u8]) -> wgpu::Buffer {
    let mut bytes = bytes.to_vec();
    bytes.resize(bytes.len().next_multiple_of(16).max(16), 0);
    gpu.device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: &bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
        })
}

/// Reads every buffer back after `encoder`'s commands.
pub fn read_all(
    gpu: &GpuSplitter,
    encoder: wgpu::CommandEncoder,
    buffers: &[wgpu::Buffer],
) -> Vec<Vec<u8>> {
    let mut encoder = Some(encoder);
    buffers
        .iter()
        .map(|b| {
            let e = encoder
                .take()
                .unwrap_or_else(|| gpu.device().create_command_encoder(&Default::default()));
            super::submit_and_read(gpu, e, b)
        })
        .collect()
}

/// Asserts that each of `buffers`, read back now, begins with `want`'s bytes for it.
pub fn assert_buffers_hold(
    gpu: &GpuSplitter,
    what: &str,
    buffers: &[wgpu::Buffer],
    want: &[Vec<u8>],
) {
    let encoder = gpu.device().create_command_encoder(&Default::default());
    let got = read_all(gpu, encoder, buffers);
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            &g[..w.len()],
            w.as_slice(),
            "{what} on {}: buffer {k}",
            super::name(gpu)
        );
    }
}

/// What the buffers hold after output `i` of `plan` is written through `views[i]` at byte
/// `places[i].1` of buffer `places[i].0` (the reference, part by part: parts in one buffer
/// write disjoint bytes, so each part's changes merge into its buffer).
pub fn expected(
    input: &HostTensor,
    plan: &SplitPlan,
    views: &[PartView],
    places: &[(usize, u64)],
    initial: &[Vec<u8>],
) -> Vec<Vec<u8>> {
    let mut want = initial.to_vec();
    let mut regions: Vec<Vec<u8>> = places
        .iter()
        .map(|&(b, at)| initial[b][at as usize..].to_vec())
        .collect();
    reference::split_into_views(input, plan, views, &mut regions).unwrap();
    for (&(b, at), region) in places.iter().zip(&regions) {
        let old = &initial[b][at as usize..];
        for (j, (&new, &was)) in region.iter().zip(old).enumerate() {
            if new != was {
                want[b][at as usize + j] = new;
            }
        }
    }
    want
}

/// Splits `input` as `plan` says through `views` into buffers of the sizes `sizes`
/// (filled with a guard pattern), output `i` at `places[i]`; compares every buffer whole.
/// Returns the buffers and the dispatches the split recorded.
pub fn check_split(
    gpu: &GpuSplitter,
    what: &str,
    input: &HostTensor,
    plan: &SplitPlan,
    views: &[PartView],
    places: &[(usize, u64)],
    sizes: &[usize],
) -> (Vec<wgpu::Buffer>, u32) {
    let initial: Vec<Vec<u8>> = sizes
        .iter()
        .enumerate()
        .map(|(b, &n)| pattern(n.next_multiple_of(16), 100 + b))
        .collect();
    let buffers: Vec<wgpu::Buffer> = initial.iter().map(|b| buffer(gpu, b)).collect();
    let in_buf = buffer(gpu, input.bytes());
    let regions = super::regions_at(&buffers, places);
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let outputs = Outputs::Views(&regions, views);
    let dispatches = gpu
        .encode(&mut encoder, plan, input.dtype(), (&in_buf).into(), outputs)
        .unwrap_or_else(|e| panic!("{what}: {e}"))
        .dispatches;
    let got = read_all(gpu, encoder, &buffers);
    let want = expected(input, plan, views, places, &initial);
    for (b, (g, w)) in got.iter().zip(&want).enumerate() {
        if let Some(j) = g.iter().zip(w).position(|(x, y)| x != y) {
            panic!(
                "{what} on {}: buffer {b} differs at byte {j}: {} for {}",
                super::name(gpu),
                g[j],
                w[j]
            );
        }
    }
    (buffers, dispatches)
}

/// Concatenates the parts `check_split` wrote into `buffers` (output `i` at `places[i]`)
/// back through the same `views`, into a buffer with 32 guard bytes past the tensor; asserts
/// the bytes equal `input`'s and the guard bytes kept their values.
pub fn check_concat_back(
    gpu: &GpuSplitter,
    what: &str,
    input: &HostTensor,
    plan: &SplitPlan,
    views: &[PartView],
    buffers: &[wgpu::Buffer],
    places: &[(usize, u64)],
) {
    let regions = super::regions_at(buffers, places);
    let n = input.bytes().len();
    let initial = pattern(n + 32, n);
    let out = buffer(gpu, &initial);
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let inputs = Inputs::Views(&regions, views);
    gpu.encode(
        &mut encoder,
        &plan.inverse(),
        input.dtype(),
        inputs,
        (&out).into(),
    )
    .unwrap_or_else(|e| panic!("{what}: concat: {e}"));
    let got = super::submit_and_read(gpu, encoder, &out);
    assert!(got[..n] == *input.bytes(), "{what}: the concat differs");
    assert_eq!(&got[n..n + 32], &initial[n..], "{what}: past the concat");
}

/// A deterministic stream of small numbers.
pub struct Rng(pub u64);

impl Rng {
    pub fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}
