//! Rows placed by indices on the page's adapter: a gather (ONNX Gather, one-byte rows on the
//! last axis, and an embedding's rows), a scatter (set rows, one-byte rows sharing words, and
//! ScatterND), and a paged KV write in each layout, each with indices of every rule, compared
//! byte for byte (and the status) with the CPU reference.

use serde_json::{json, Value};
use wgpu_split::{ops, CacheLayout, GpuSplitter, HostTensor, Plan, RowsPlan};

/// A pattern of `n` bytes from `seed`.
fn bytes(n: usize, seed: usize) -> Vec<u8> {
    (0..n)
        .map(|i| ((i * 37 + seed * 11 + 5) % 251) as u8)
        .collect()
}

/// Runs `plan` on `gpu` and compares it with the reference; `None` where they agree.
async fn rows(
    gpu: &GpuSplitter,
    name: &str,
    plan: &RowsPlan,
    data: &HostTensor,
    ids: &HostTensor,
    updates: Option<&HostTensor>,
) -> Option<String> {
    let mut tensors = vec![data.clone(), ids.clone()];
    tensors.extend(updates.cloned());
    let got = match gpu.run_async(plan, &tensors).await {
        Ok(got) => got,
        Err(e) => return Some(format!("{name}: {e}")),
    };
    plan.verify(&tensors, &got)
        .err()
        .map(|e| format!("{name}: {e}"))
}

/// The page's cases of rows placed by indices; the JSON has `cases` (how many ran) and
/// `errors` (one line per case that differs or failed).
pub(crate) async fn checks(gpu: &GpuSplitter) -> Value {
    let mut errors = Vec::new();
    let mut cases = 0;
    let tensor = |shape: &[usize], dtype, seed| {
        let n = shape.iter().product::<usize>() * wgpu_split::DType::size(dtype);
        HostTensor::new(dtype, shape.to_vec(), bytes(n, seed)).expect("a pattern of its bytes")
    };
    use wgpu_split::DType::{F16, F32, U8};
    // Gathers: one-byte rows on the last axis (i32, negatives from the end, one out of range),
    // and an embedding's rows by i64 ids (2^32 + 1 lands nowhere).
    let data = tensor(&[37, 50], U8, 1);
    let ids = HostTensor::from_slice(&[3, 2], &[0i32, 49, -1, -50, 50, 7]).expect("ids");
    let plan = ops::gather(&[37, 50], &[3, 2], -1).expect("a valid gather");
    errors.extend(rows(gpu, "gather of bytes", &plan, &data, &ids, None).await);
    let table = tensor(&[300, 256], F16, 2);
    let ids = HostTensor::from_slice(&[4], &[299i64, (1 << 32) + 1, 0, -1]).expect("ids");
    let plan = ops::get_rows(&[300, 256], &[4]).expect("a valid get rows");
    errors.extend(rows(gpu, "get rows", &plan, &table, &ids, None).await);
    // Scatters: one-byte rows sharing words, every slot but two; ScatterND of f32 rows.
    let dst = tensor(&[1002, 1], U8, 3);
    let slots: Vec<i32> = (0..1000).map(|i| (i * 7 + 3) % 1002).collect();
    let ids = HostTensor::from_slice(&[1000], &slots).expect("slots");
    let updates = tensor(&[1000, 1], U8, 4);
    let plan = ops::set_rows(&[1002, 1], &[1000]).expect("a valid set rows");
    errors.extend(rows(gpu, "set rows of bytes", &plan, &dst, &ids, Some(&updates)).await);
    let dst = tensor(&[64, 24], F32, 5);
    let ids = HostTensor::from_slice(&[3, 1], &[-1i64, 5, 64]).expect("ids");
    let updates = tensor(&[3, 24], F32, 6);
    let plan = ops::scatter_nd(&[64, 24], &[3, 1], &[3, 24]).expect("a valid ScatterND");
    errors.extend(rows(gpu, "ScatterND", &plan, &dst, &ids, Some(&updates)).await);
    cases += 4;
    // Paged writes: each layout, a padding token and a slot out of range.
    for layout in [CacheLayout::Nhd, CacheLayout::Hnd] {
        let plan = ops::paged_kv_write(6, 4, 2, 64, 4, 5, layout).expect("a valid paged write");
        let qkv = tensor(&plan.qkv_shape(), F16, 7);
        let k = tensor(&plan.cache_shape(), F16, 8);
        let v = tensor(&plan.cache_shape(), F16, 9);
        let slots = HostTensor::from_slice(&[6], &[3i32, -1, 19, 20, 0, 7]).expect("slots");
        let name = format!("paged write {layout:?}");
        let tensors = [qkv, slots, k, v];
        match (
            gpu.run_async(&plan, &tensors).await,
            plan.reference(&tensors),
        ) {
            (Ok(got), Ok(want)) if got == want => {}
            (Ok(_), Ok(_)) => errors.push(format!("{name}: differs from the CPU reference")),
            (Err(e), _) | (_, Err(e)) => errors.push(format!("{name}: {e}")),
        }
        cases += 1;
    }
    json!({ "cases": cases, "errors": errors })
}
