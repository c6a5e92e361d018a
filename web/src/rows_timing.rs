//! The page's rows cases, timed as the suite is ([`crate::suite_timing`]): an embedding's
//! lookup (the largest f16 table of 4096 columns that WebGPU's default binding holds), set
//! rows, and a paged KV write at a decode step and at a prefill, each prepared once on its
//! buffers and recorded `repeats` times a submission, beside the copy kernel and
//! `copyBufferToBuffer` of the bytes it moves. Every buffer it writes is then read back and
//! compared, byte for byte, with the CPU reference.

use crate::cases::Rng;
use crate::signal::read_back;
use crate::suite_timing::{submit_and_time, Yardstick};
use serde_json::{json, Value};
use wgpu_split::bench::{gbps, median, rows_suite, RowsCaseKind};
use wgpu_split::trace::copy_kernel_pipeline;
use wgpu_split::{ops, wgpu, BufferRegion, DType, GpuSplitter, HostTensor, Outputs};
use wgpu_split::{PagedKvBuffers, PagedKvPlan, Prepared, RowsBuffers, RowsPlan};

/// A case prepared on its buffers, with the bytes each buffer it writes must hold after it.
struct Ready {
    node: Node,
    moved: usize,
    buffers: Vec<wgpu::Buffer>,
    /// `(buffer, offset, bytes)`: what the CPU reference writes there.
    want: Vec<(usize, u64, Vec<u8>)>,
}

enum Node {
    Rows(Prepared<RowsPlan>),
    Paged(Prepared<PagedKvPlan>),
}

impl Node {
    async fn encode(&self, encoder: &mut wgpu::CommandEncoder) -> wgpu_split::Result<u32> {
        let encoded = match self {
            Node::Rows(n) => n.encode_async(encoder).await?,
            Node::Paged(n) => n.encode_async(encoder).await?,
        };
        Ok(encoded.dispatches)
    }
}

/// Times the page's rows cases; each one's JSON says whether its bytes equal the reference's.
pub async fn run(gpu: &GpuSplitter, repeats: u32) -> Result<Value, String> {
    let copy_kernel = copy_kernel_pipeline(gpu.device());
    let mut cases = Vec::new();
    for case in rows_suite() {
        let ready = match (case.name, &case.kind) {
            ("embedding", RowsCaseKind::Rows { index_type, .. }) => {
                let table = ops::get_rows(&[16384, 4096], &[512]).map_err(|e| e.to_string())?;
                rows(gpu, &table, case.dtype, *index_type, false).await?
            }
            ("set_rows", RowsCaseKind::Rows { plan, index_type }) => {
                rows(gpu, plan, case.dtype, *index_type, true).await?
            }
            ("paged_decode" | "paged_prefill", RowsCaseKind::Paged { plan, padding }) => {
                paged(gpu, plan, case.dtype, *padding).await?
            }
            _ => continue,
        };
        let size = (ready.moved as u64).next_multiple_of(16);
        let input = buffer(gpu, "bench rows input", &vec![0; size as usize]);
        let yardstick = Yardstick::new(gpu, &copy_kernel, &input, size);
        let (mut placed, mut kernel, mut copies) = (Vec::new(), Vec::new(), Vec::new());
        let mut dispatches = 0;
        for _ in 0..3 {
            let mut encoder = gpu.device().create_command_encoder(&Default::default());
            for _ in 0..repeats {
                dispatches = (ready.node.encode(&mut encoder).await)
                    .map_err(|e| format!("{}: {e}", case.name))?;
            }
            placed.push(submit_and_time(gpu, encoder).await);
            let (k, c) = yardstick.time(gpu, &copy_kernel, repeats).await;
            kernel.push(k);
            copies.push(c);
        }
        let mut same = true;
        for (k, offset, want) in &ready.want {
            let end = (offset + want.len() as u64).next_multiple_of(4);
            let got = read_back(gpu, &ready.buffers[*k], end, case.name).await?;
            same &= &got[*offset as usize..][..want.len()] == want.as_slice();
        }
        let (placed, kernel, copies) = (median(placed), median(kernel), median(copies));
        let moved = ready.moved * repeats as usize;
        cases.push(json!({
            "name": case.name,
            "dtype": case.dtype.name(),
            "bytes": ready.moved,
            "dispatches": dispatches,
            "same": same,
            "rows_gbps": gbps(moved, placed.max(1e-3)),
            "copy_kernel_gbps": gbps(moved, kernel.max(1e-3)),
            "copy_gbps": gbps(moved, copies.max(1e-3)),
            "rows_vs_kernel": kernel / placed.max(1e-9),
        }));
    }
    Ok(Value::Array(cases))
}

/// A buffer holding `bytes`, usage STORAGE, COPY_SRC and COPY_DST.
fn buffer(gpu: &GpuSplitter, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    use wgpu::util::DeviceExt;
    let usage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let mut contents = bytes.to_vec();
    contents.resize(bytes.len().next_multiple_of(16).max(16), 0);
    gpu.device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: &contents,
            usage,
        })
}

/// `count` distinct places of `0..len` (all of them, shuffled, where `count` is larger).
fn places(rng: &mut Rng, count: usize, len: usize) -> Vec<i64> {
    let mut all: Vec<i64> = (0..len as i64).collect();
    (0..count.min(len))
        .map(|_| all.swap_remove(rng.below(all.len())))
        .collect()
}

/// Indices of `index_type` holding `values`.
fn index_tensor(values: &[i64], index_type: DType) -> Result<HostTensor, String> {
    let shape = [values.len()];
    match index_type {
        DType::I64 => HostTensor::from_slice(&shape, values),
        DType::U32 => HostTensor::from_slice(
            &shape,
            &values.iter().map(|&v| v as u32).collect::<Vec<_>>(),
        ),
        _ => HostTensor::from_slice(
            &shape,
            &values.iter().map(|&v| v as i32).collect::<Vec<_>>(),
        ),
    }
    .map_err(|e| e.to_string())
}

/// A gather (a `scatter`) of `plan` on fresh buffers, prepared.
async fn rows(
    gpu: &GpuSplitter,
    plan: &RowsPlan,
    dtype: DType,
    index_type: DType,
    scatter: bool,
) -> Result<Ready, String> {
    let mut rng = Rng(0x0b5e_55ed);
    let len = plan.data_shape()[plan.axis()];
    let data = HostTensor::new(
        dtype,
        plan.data_shape().to_vec(),
        rng.bytes(
            plan.data_shape().iter().product::<usize>() * dtype.size(),
            dtype,
        ),
    )
    .map_err(|e| e.to_string())?;
    let ids = index_tensor(&places(&mut rng, plan.index_count(), len), index_type)?;
    let [_, _, target_bytes] = plan.bytes(dtype, index_type).map_err(|e| e.to_string())?;
    let (tensors, source, target) = match scatter {
        true => {
            let u = plan.updates_shape();
            let n = u.iter().product::<usize>() * dtype.size();
            let updates =
                HostTensor::new(dtype, u, rng.bytes(n, dtype)).map_err(|e| e.to_string())?;
            let source = updates.bytes().to_vec();
            (
                vec![data.clone(), ids.clone(), updates],
                source,
                data.bytes().to_vec(),
            )
        }
        false => (
            vec![data.clone(), ids.clone()],
            data.bytes().to_vec(),
            vec![0; target_bytes as usize],
        ),
    };
    let (want, _) = plan.reference(&tensors).map_err(|e| e.to_string())?;
    let buffers = vec![
        buffer(gpu, "bench rows source", &source),
        buffer(gpu, "bench rows ids", ids.bytes()),
        buffer(gpu, "bench rows target", &target),
    ];
    let from = RowsBuffers {
        source: BufferRegion::from(&buffers[0]),
        indices: BufferRegion::from(&buffers[1]),
        index_type,
        status: None,
    };
    let node = (gpu
        .prepare_async(plan, dtype, from, BufferRegion::from(&buffers[2]))
        .await)
        .map_err(|e| e.to_string())?;
    Ok(Ready {
        node: Node::Rows(node),
        // A gather moves its output's bytes, a scatter its updates'.
        moved: if scatter {
            source.len()
        } else {
            want.bytes().len()
        },
        want: vec![(2, 0, want.bytes().to_vec())],
        buffers,
    })
}

/// A paged write of `plan`, `padding` of its tokens padding, on fresh buffers, prepared.
async fn paged(
    gpu: &GpuSplitter,
    plan: &PagedKvPlan,
    dtype: DType,
    padding: usize,
) -> Result<Ready, String> {
    let mut rng = Rng(0x9a9e_d0c5);
    let tensor = |rng: &mut Rng, shape: Vec<usize>| {
        let n = shape.iter().product::<usize>() * dtype.size();
        HostTensor::new(dtype, shape, rng.bytes(n, dtype)).map_err(|e| e.to_string())
    };
    let qkv = tensor(&mut rng, plan.qkv_shape())?;
    let (k, v) = (
        tensor(&mut rng, plan.cache_shape())?,
        tensor(&mut rng, plan.cache_shape())?,
    );
    let mut slots = places(&mut rng, plan.tokens, plan.slots());
    slots[..padding].fill(-1);
    let slots = index_tensor(&slots, DType::I32)?;
    let tensors = [qkv.clone(), slots.clone(), k.clone(), v.clone()];
    let want = plan.reference(&tensors).map_err(|e| e.to_string())?;
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    let v_at = (k.bytes().len() as u64).next_multiple_of(align);
    let mut caches = k.bytes().to_vec();
    caches.resize(v_at as usize, 0);
    caches.extend_from_slice(v.bytes());
    let buffers = vec![
        buffer(gpu, "bench qkv", qkv.bytes()),
        buffer(gpu, "bench slots", slots.bytes()),
        buffer(gpu, "bench queries", &vec![0; want.queries.bytes().len()]),
        buffer(gpu, "bench caches", &caches),
    ];
    let sources = [BufferRegion::from(&buffers[0])];
    let from = PagedKvBuffers {
        sources: &sources,
        slots: BufferRegion::from(&buffers[1]),
        index_type: DType::I32,
        status: None,
    };
    let v_cache = BufferRegion {
        buffer: &buffers[3],
        offset: v_at,
    };
    let to = [
        BufferRegion::from(&buffers[2]),
        BufferRegion::from(&buffers[3]),
        v_cache,
    ];
    let node = (gpu
        .prepare_async(plan, dtype, from, Outputs::Regions(&to))
        .await)
        .map_err(|e| e.to_string())?;
    Ok(Ready {
        node: Node::Paged(node),
        moved: qkv.bytes().len(),
        want: vec![
            (2, 0, want.queries.bytes().to_vec()),
            (3, 0, want.k_cache.bytes().to_vec()),
            (3, v_at, want.v_cache.bytes().to_vec()),
        ],
        buffers,
    })
}
