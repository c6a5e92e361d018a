//! A concat's inputs in buffers of the engine's choosing (`Inputs::Regions`) on each adapter,
//! byte for byte against the CPU reference, with the bytes past the output kept: 1 to 64,
//! 10,000 and 100,000 inputs, in buffers of their own and in shared ones, read together by the
//! multi-input build, as many buffers per dispatch as the device binds.

#[macro_use]
mod common;

use common::concat::{check_regions, parts};
use wgpu_split::{ops, DType, GatherMode, GpuSplitter, HostTensor, SplitOptions};

/// Input buffers one dispatch reads by default: the device's storage buffers per shader stage,
/// less the table and the output's two views, halved (each input buffer is bound as words and
/// as vec4s), at most 32. 14 on lavapipe, 6 through llvmpipe GL.
fn allowed(gpu: &GpuSplitter) -> usize {
    let stage = gpu.device().limits().max_storage_buffers_per_shader_stage;
    (stage.saturating_sub(3) / 2).clamp(1, 32) as usize
}

/// Whether `gpu` is a CPU adapter, which reads together only buffers holding at most 4 KiB of
/// inputs (it runs the switch over bindings case by case): a larger one keeps a dispatch.
fn cpu(gpu: &GpuSplitter) -> bool {
    gpu.device().adapter_info().device_type == wgpu::DeviceType::Cpu
}

/// Inputs each in a buffer of its own, u8 rows at odd offsets and words, as many buffers per
/// dispatch as the device binds, then 3 and 1 (as a device with fewer bindings would take
/// them), with a CPU adapter's lanes and a GPU's. Inputs read together write whole units; a
/// dispatch writes only its own inputs' bytes of a unit it shares with another's.
fn inputs_in_their_own_buffers(gpu: &'static GpuSplitter) {
    assert_eq!(gpu.options().input_bindings.unwrap() as usize, allowed(gpu));
    let empty = wgpu::BufferUsages::empty();
    for count in [1usize, 7, 8, 64] {
        for (dtype, width) in [
            (DType::U8, 3),
            (DType::U8, 1),
            (DType::F32, 2),
            (DType::F16, 5),
        ] {
            let shapes: Vec<Vec<usize>> = (0..count).map(|i| vec![3, width + i % 3]).collect();
            let plan = ops::concat(&shapes, 1).unwrap();
            let tensors = parts(&plan, dtype);
            for bindings in [allowed(gpu), 3, 1] {
                for mode in [GatherMode::Cpu, GatherMode::Gpu] {
                    let gpu = gpu.clone().with_options(SplitOptions {
                        input_bindings: Some(bindings as u32),
                        gather_mode: Some(mode),
                        ..gpu.options()
                    });
                    let encoded = check_regions(&gpu, &plan, &tensors, empty, |i| (i, 0));
                    assert_eq!(
                        encoded.dispatches as usize,
                        count.div_ceil(bindings.min(allowed(&gpu))),
                        "{count} x {dtype}, {bindings} buffers per dispatch, {mode:?}"
                    );
                }
            }
            // Buffers the copy commands may read: at most a dispatch each.
            let copies = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
            let encoded = check_regions(gpu, &plan, &tensors, copies, |i| (i, 0));
            assert!(encoded.dispatches as usize <= count);
            // Two buffers, inputs taking turns, 256 bytes apart: one dispatch, but on a CPU
            // adapter where a buffer's inputs span more than 4 KiB.
            let encoded = check_regions(gpu, &plan, &tensors, empty, |i| {
                (i % 2, (i / 2) as u64 * 256)
            });
            let span = (count.div_ceil(2) as u64 - 1) * 256 + 64;
            let want = if cpu(gpu) && span > 4096 { 2 } else { 1 };
            assert_eq!(encoded.dispatches, want, "{count} x {dtype} in two buffers");
        }
    }
}

/// 10,000 inputs each in a buffer of its own (as many per dispatch as the device binds), and
/// 100,000 spread over 7 buffers (one dispatch; one per buffer on a CPU adapter, as each
/// buffer's inputs span 3.6 MB).
fn very_many_input_buffers(gpu: &'static GpuSplitter) {
    let empty = wgpu::BufferUsages::empty();
    let plan = ops::concat(&vec![[2, 1]; 10_000], 1).unwrap();
    let tensors = parts(&plan, DType::U8);
    let encoded = check_regions(gpu, &plan, &tensors, empty, |i| (i, 0));
    assert_eq!(
        encoded.dispatches as usize,
        10_000usize.div_ceil(allowed(gpu))
    );
    let plan = ops::concat_from_sequence(&vec![[3]; 100_000], 0, 1).unwrap();
    let tensors = parts(&plan, DType::I16);
    let encoded = check_regions(gpu, &plan, &tensors, empty, |i| {
        (i % 7, (i / 7) as u64 * 256)
    });
    assert_eq!(encoded.dispatches, if cpu(gpu) { 7 } else { 1 });
}

/// Inputs are only read, so their regions may repeat (`torch.cat([x, x])`) or overlap: `x`
/// three times from one region, and two inputs that share bytes of one buffer, in one
/// buffer and beside inputs of their own, on every route and with each lane mapping.
fn repeated_and_overlapping_input_regions(gpu: &'static GpuSplitter) {
    let copies = wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    for (dtype, shape, axis) in [
        (DType::U8, [3usize, 5], 1i64),
        (DType::U8, [3, 301], 1),
        (DType::F32, [4, 96], 0),
        (DType::F16, [2, 151], 1),
    ] {
        let x = common::concat::tensor(dtype, &shape, 1);
        let plan = ops::concat(&[shape; 3], axis).unwrap();
        let xs = vec![x.clone(), x.clone(), x];
        for usage in [wgpu::BufferUsages::empty(), copies] {
            for mode in [GatherMode::Cpu, GatherMode::Gpu] {
                let gpu = gpu.clone().with_options(SplitOptions {
                    gather_mode: Some(mode),
                    ..gpu.options()
                });
                check_regions(&gpu, &plan, &xs, usage, |_| (0, 0));
                check_regions(&gpu, &plan, &xs, usage, |i| (i % 2, 0));
            }
        }
        // Two views of one buffer's bytes, the storage offset alignment apart (less than an
        // input's size), and a third input of its own.
        let align = gpu.device().limits().min_storage_buffer_offset_alignment as usize;
        let elements = align / dtype.size();
        let whole = common::concat::tensor(dtype, &[shape[0] * shape[1] + elements], 2);
        let view = |from: usize| {
            let n = shape[0] * shape[1] * dtype.size();
            let bytes = whole.bytes()[from..from + n].to_vec();
            HostTensor::new(dtype, shape.to_vec(), bytes).unwrap()
        };
        let inputs = vec![view(0), view(align), view(align)];
        if inputs[0].bytes().len() <= align {
            continue; // too small to overlap at this alignment
        }
        for usage in [wgpu::BufferUsages::empty(), copies] {
            check_regions(gpu, &plan, &inputs, usage, |i| match i {
                0 => (0, 0),
                1 => (0, align as u64),
                _ => (1, 0),
            });
        }
    }
}

per_backend!(
    inputs_in_their_own_buffers,
    very_many_input_buffers,
    repeated_and_overlapping_input_regions
);
