//! The paged KV write, from the fused QKV projection or from keys and values of their own:
//! every layout, block size, head width and dtype, every rule of a slot, byte for byte
//! against the CPU reference (the caches whole: slots no token names keep their bytes), the
//! status compared too. `tests/paged_sources.rs` has an engine's own buffers.

#[macro_use]
mod common;

use common::Rng;
use wgpu_split::{
    ops, BufferRegion, CacheLayout, DType, GpuSplitter, HostTensor, Outputs, PagedKvBuffers,
    PagedKvPlan, SplitError,
};

fn tensor(rng: &mut Rng, dtype: DType, shape: Vec<usize>) -> HostTensor {
    let n = shape.iter().product::<usize>() * dtype.size();
    HostTensor::new(dtype, shape, rng.bytes(n)).unwrap()
}

/// Slots for `tokens` of `slots`, as `ty` (i32, i64 or u32) holds them: distinct random
/// ones, some padding (-1; a u32's `0xffffffff`) and some out of range of every kind (the
/// capacity, past it, i32::MIN; as i64 also 2^32 + k, u32::MAX and a large negative; as u32
/// 2^31 - 1, 2^31 and 2^32 - 2, which an i32 reads as negative).
fn slot_mapping(rng: &mut Rng, tokens: usize, slots: usize, ty: DType) -> HostTensor {
    let mut free: Vec<i64> = (0..slots as i64).collect();
    let mut special = vec![-1, slots as i64, slots as i64 + 1, i32::MIN as i64];
    match ty {
        DType::I64 => special.extend([(1 << 32) + 1, u32::MAX as i64, -(1 << 40)]),
        DType::U32 => special.extend([i32::MAX as i64, 1 << 31, u32::MAX as i64 - 1]),
        _ => {}
    }
    let values: Vec<i64> = (0..tokens)
        .map(|_| match (rng.below(6), free.len()) {
            (0, _) | (_, 0) => special[rng.below(special.len() as u64) as usize],
            _ => free.swap_remove(rng.below(free.len() as u64) as usize),
        })
        .collect();
    match ty {
        DType::I64 => HostTensor::from_slice(&[tokens], &values).unwrap(),
        DType::I32 => {
            let narrow: Vec<i32> = values.iter().map(|&v| v as i32).collect();
            HostTensor::from_slice(&[tokens], &narrow).unwrap()
        }
        _ => {
            let unsigned: Vec<u32> = values.iter().map(|&v| v as u32).collect();
            HostTensor::from_slice(&[tokens], &unsigned).unwrap()
        }
    }
}

fn check(
    gpu: &GpuSplitter,
    plan: &PagedKvPlan,
    slots: &HostTensor,
    rng: &mut Rng,
    dtype: DType,
    what: &str,
) {
    let mut tensors: Vec<HostTensor> = plan
        .source_shapes()
        .into_iter()
        .map(|shape| tensor(rng, dtype, shape))
        .collect();
    let k = tensor(rng, dtype, plan.cache_shape());
    let v = tensor(rng, dtype, plan.cache_shape());
    tensors.extend([slots.clone(), k, v]);
    let want = plan.reference(&tensors).unwrap();
    let got = gpu
        .run(plan, &tensors)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    for (name, g, w) in [
        ("queries", &got.queries, &want.queries),
        ("k_cache", &got.k_cache, &want.k_cache),
        ("v_cache", &got.v_cache, &want.v_cache),
    ] {
        if let Some(i) = (0..w.bytes().len()).find(|&i| g.bytes()[i] != w.bytes()[i]) {
            panic!("{what}: {name} byte {i} of {} differs", w.bytes().len());
        }
    }
    assert_eq!(got.status, want.status, "{what}");
}

/// Tokens of 1, 2, block_size - 1, block_size and block_size + 1; blocks of 1, 5 and 16;
/// heads of 1, 3, 64, 80 and 128 elements; NHD and HND; i32, i64 and u32 slots; every width
/// of dtype; the fused projection with and without its queries, and keys and values of
/// their own at strides of their own (each in a buffer of its own: a dispatch a cache); in
/// each lane mapping.
fn paged_writes_match_the_reference(gpu: &'static GpuSplitter) {
    let mut rng = Rng(0x9a9e_d000_0001);
    let dtypes = [DType::F16, DType::F32, DType::U8, DType::BF16, DType::F64];
    let mappings = common::lane_mappings(gpu);
    let mut case = 0;
    for block_size in [1usize, 5, 16] {
        for head_dim in [1usize, 3, 64, 80, 128] {
            for tokens in [1, 2, block_size.max(2) - 1, block_size, block_size + 1] {
                let layout = [CacheLayout::Nhd, CacheLayout::Hnd][case % 2];
                let (hq, hkv) = [(4, 2), (2, 1), (1, 1)][case % 3];
                let blocks = tokens.div_ceil(block_size) + 2;
                let fused =
                    ops::paged_kv_write(tokens, hq, hkv, head_dim, blocks, block_size, layout)
                        .unwrap();
                let kv = hkv * head_dim;
                let plan = match case % 4 {
                    0 | 1 => fused,
                    2 => fused.without_queries(),
                    _ => fused.with_separate_kv(kv + case % 3, kv + 2).unwrap(),
                };
                let dtype = dtypes[case % dtypes.len()];
                let ty = [DType::I32, DType::I64, DType::U32][(case / 2) % 3];
                let slots = slot_mapping(&mut rng, tokens, plan.slots(), ty);
                let (_, mapped) = &mappings[case % mappings.len()];
                let what = format!("case {case}: {plan:?} {dtype} {slots:?}");
                check(mapped, &plan, &slots, &mut rng, dtype, &what);
                case += 1;
            }
        }
    }
}

/// Llama-3-8B's heads (32 and 8 of 128, f16) at a decode step of 64 tokens, 4 of them padding,
/// in each layout; every slot padding; no tokens; 65,537 tokens of one-element heads.
fn engine_shapes(gpu: &'static GpuSplitter) {
    let mut rng = Rng(5);
    for layout in [CacheLayout::Nhd, CacheLayout::Hnd] {
        let plan = ops::paged_kv_write(64, 32, 8, 128, 8, 16, layout).unwrap();
        let mut slots: Vec<i32> = (0..128).collect();
        for i in (1..slots.len()).rev() {
            slots.swap(i, rng.below(i as u64 + 1) as usize);
        }
        slots.truncate(64);
        slots[3..7].fill(-1);
        let slots = HostTensor::from_slice(&[64], &slots).unwrap();
        check(
            gpu,
            &plan,
            &slots,
            &mut rng,
            DType::F16,
            &format!("decode {layout:?}"),
        );
        let padding = HostTensor::from_slice(&[64], &[-1i64; 64]).unwrap();
        check(gpu, &plan, &padding, &mut rng, DType::F16, "all padding");
        // The queries heads-first, `[32, 64, 128]`, in the same dispatch.
        let heads_first = plan.with_heads_first_queries();
        assert_eq!(heads_first.q_shape(), vec![32, 64, 128]);
        check(
            gpu,
            &heads_first,
            &slots,
            &mut rng,
            DType::F16,
            &format!("heads-first {layout:?}"),
        );
    }
    let none = ops::paged_kv_write(0, 2, 1, 4, 2, 4, CacheLayout::Nhd).unwrap();
    let empty = HostTensor::from_slice::<i32>(&[0], &[]).unwrap();
    check(gpu, &none, &empty, &mut rng, DType::F32, "no tokens");
    // Heads-first queries of 5 tokens of 4 f32 a head, then of 3 f16: the second's blocks of
    // 30 bytes are refused, naming the rule.
    let plan = ops::paged_kv_write(5, 3, 1, 4, 4, 2, CacheLayout::Hnd).unwrap();
    let slots = slot_mapping(&mut rng, 5, plan.slots(), DType::I32);
    let plan = plan.with_heads_first_queries();
    check(gpu, &plan, &slots, &mut rng, DType::F32, "heads-first f32");
    let odd = ops::paged_kv_write(5, 3, 1, 3, 4, 2, CacheLayout::Nhd)
        .unwrap()
        .with_heads_first_queries();
    let qkv = tensor(&mut rng, DType::F16, odd.qkv_shape());
    let cache = tensor(&mut rng, DType::F16, odd.cache_shape());
    let e = gpu
        .run(
            &odd,
            &[qkv.clone(), slots.clone(), cache.clone(), cache.clone()],
        )
        .unwrap_err();
    assert!(
        matches!(e, SplitError::BadView(ref m) if m.contains("multiple of 16")),
        "{e}"
    );
    let many = 65_537;
    let plan =
        ops::paged_kv_write(many, 1, 1, 1, many.div_ceil(16) + 1, 16, CacheLayout::Hnd).unwrap();
    let slots = slot_mapping(&mut rng, many, plan.slots(), DType::I64);
    check(gpu, &plan, &slots, &mut rng, DType::F16, "65,537 tokens");
}

/// A node prepared once and encoded again after the slots' contents change (an engine's next
/// step): each encode moves what its slots say.
fn encoded_again_with_new_slots(gpu: &'static GpuSplitter) {
    use wgpu::util::DeviceExt;
    use wgpu::BufferUsages as U;
    let device = gpu.device();
    let align = device.limits().min_storage_buffer_offset_alignment as u64;
    let plan = ops::paged_kv_write(2, 1, 1, 4, 2, 2, CacheLayout::Nhd).unwrap();
    let qkv: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let make = |bytes: &[u8], usage| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: None,
            contents: bytes,
            usage,
        })
    };
    let qkv_buf = make(bytemuck::cast_slice(&qkv), U::STORAGE);
    let slots = make(bytemuck::cast_slice(&[0i32, 3]), U::STORAGE | U::COPY_DST);
    let queries = make(&[0; 32], U::STORAGE | U::COPY_SRC);
    let v_at = 64u64.next_multiple_of(align);
    let caches = make(&vec![0; 2 * v_at as usize], U::STORAGE | U::COPY_SRC);
    let sources = [BufferRegion::from(&qkv_buf)];
    let from = PagedKvBuffers {
        sources: &sources,
        slots: BufferRegion::from(&slots),
        index_type: DType::I32,
        status: None,
    };
    let v_cache = BufferRegion {
        buffer: &caches,
        offset: v_at,
    };
    let to = [(&queries).into(), (&caches).into(), v_cache];
    let read = |b: &wgpu::Buffer| {
        let encoder = device.create_command_encoder(&Default::default());
        let bytes = common::submit_and_read(gpu, encoder, b);
        bytemuck::pod_collect_to_vec::<u8, f32>(&bytes)
    };
    // Prepared once; each step writes new slots and records the same node again.
    let prepared = gpu
        .prepare(&plan, DType::F32, from, Outputs::Regions(&to))
        .unwrap();
    assert_eq!(prepared.recorded().dispatches, 1);
    for (step, slot_values) in [[0i32, 3], [2, -1]].iter().enumerate() {
        gpu.queue()
            .write_buffer(&slots, 0, bytemuck::cast_slice(slot_values));
        let mut encoder = device.create_command_encoder(&Default::default());
        prepared.encode(&mut encoder).unwrap();
        gpu.queue().submit([encoder.finish()]);
        let c = read(&caches);
        let k = &c[..16];
        let v = &c[v_at as usize / 4..][..16];
        match step {
            0 => {
                assert_eq!(&k[..4], &[4.0, 5.0, 6.0, 7.0]);
                assert_eq!(&k[12..], &[16.0, 17.0, 18.0, 19.0]);
                assert_eq!(&v[12..], &[20.0, 21.0, 22.0, 23.0]);
            }
            _ => {
                // Slot 2 now holds token 0's keys; token 1 is padding; slot 3 keeps step 0's.
                assert_eq!(&k[8..12], &[4.0, 5.0, 6.0, 7.0]);
                assert_eq!(&k[12..], &[16.0, 17.0, 18.0, 19.0]);
                assert_eq!(&v[8..12], &[8.0, 9.0, 10.0, 11.0]);
            }
        }
        assert_eq!(read(&queries), [0.0, 1.0, 2.0, 3.0, 12.0, 13.0, 14.0, 15.0]);
    }
    // What it writes is the projection's three parts, in their order.
    let e = gpu
        .prepare(&plan, DType::F32, from, Outputs::Regions(&to[..2]))
        .unwrap_err();
    assert!(
        matches!(e, SplitError::BadBuffer(ref m) if m.contains("three regions")),
        "{e}"
    );
    // Two regions are a plan's that leaves its queries in place.
    let keys_only = plan.without_queries();
    let e = gpu
        .prepare(&keys_only, DType::F32, from, Outputs::Regions(&to))
        .unwrap_err();
    assert!(
        matches!(e, SplitError::BadBuffer(ref m) if m.contains("two regions")),
        "{e}"
    );
    let e = gpu
        .run(&plan, &[HostTensor::from_slice(&[1], &[0i32]).unwrap()])
        .unwrap_err();
    assert!(
        matches!(e, SplitError::DataMismatch(ref m) if m.contains("[qkv, slots, k_cache, v_cache]")),
        "{e}"
    );
}

per_backend!(
    paged_writes_match_the_reference,
    engine_shapes,
    encoded_again_with_new_slots,
);
