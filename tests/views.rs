//! Parts through views (`Outputs::Views`, `Inputs::Views`) on each adapter: random views of
//! every numeric dtype, the attention layouts (heads transposed, K and V into caches at a
//! position), a concat reading transposed heads, and the misuse refused by name; every
//! buffer read back whole and compared byte for byte with the CPU reference, so a byte written
//! outside a view fails too.

#[macro_use]
mod common;

use common::views::{assert_buffers_hold, buffer, check_split, pattern, tensor};
use wgpu_split::ops::Attention;
use wgpu_split::{
    ops, reference, BufferRegion, DType, GpuSplitter, Inputs, IntTensor, Outputs, PartView,
    Prepared, SplitError, SplitPlan,
};

/// A concat whose input 0 is read through a view whose rows repeat (a stride of 0
/// broadcasts one row) or overlap (a sliding window: strides [1, 1], [2, 1]) and whose input 1
/// is plain, on axis 0 and 1, rows of 3 to 100 elements, as a rows' program of each lane
/// mapping moves them: the reference's bytes, and nothing past the output. (Rows stepping
/// back once gave wrong bytes: the shader's gaps were unsigned.)
fn a_concat_reads_rows_that_repeat_or_overlap(gpu: &'static GpuSplitter) {
    let mappings = common::lane_mappings(gpu);
    let mut case = 0;
    for dtype in [DType::U8, DType::F16, DType::F32, DType::Complex128] {
        for width in [3, 12, 25, 50, 100] {
            for (rows, axis) in [(64, 0), (64, 1), (1000, 0)] {
                for strides in [[0, 1], [1, 1], [2, 1]] {
                    let (mapping, gpu) = &mappings[case % mappings.len()];
                    case += 1;
                    let shape = [rows, width];
                    let plan = ops::concat(&[shape, shape], axis).unwrap();
                    let view = PartView {
                        offset: 0,
                        strides: strides.to_vec(),
                    };
                    let views = [view, PartView::contiguous(&shape)];
                    let region = 2 * rows + width;
                    let data = [tensor(dtype, &[region], case), tensor(dtype, &shape, 7)];
                    let buffers = [buffer(gpu, data[0].bytes()), buffer(gpu, data[1].bytes())];
                    let regions = [(&buffers[0]).into(), (&buffers[1]).into()];
                    let bytes = [data[0].bytes(), data[1].bytes()];
                    let want = reference::concat_from_views(&plan, dtype, &views, &bytes).unwrap();
                    let initial = pattern(want.bytes().len() + 32, 9);
                    let out = buffer(gpu, &initial);
                    let mut encoder = gpu.device().create_command_encoder(&Default::default());
                    let inputs = Inputs::Views(&regions, &views);
                    gpu.encode(&mut encoder, &plan, dtype, inputs, (&out).into())
                        .unwrap();
                    let got = common::submit_and_read(gpu, encoder, &out);
                    let n = want.bytes().len();
                    let what = format!("{mapping}: {dtype:?} {shape:?} axis {axis} {strides:?}");
                    if let Some(b) = (0..n).find(|&b| got[b] != want.bytes()[b]) {
                        panic!("{what}: byte {b} of {n} differs");
                    }
                    assert_eq!(&got[n..initial.len()], &initial[n..], "{what}: past it");
                }
            }
        }
    }
}

fn heads_of_odd_bytes_interleave_in_one_buffer(gpu: &'static GpuSplitter) {
    // [S, 2, D] split on axis 1 into two heads [S, 1, D], written back interleaved into one
    // region through views, D of 3, 5 and 9 f16: each head's rows start and end inside units
    // the other head's rows share, so the heads take dispatches of their own, in turn.
    for d in [3, 5, 9] {
        let shape = [7, 2, d];
        let plan = ops::split(&shape, &IntTensor::scalar(1), 2).unwrap();
        let input = tensor(DType::F16, &shape, d);
        let head = |h: usize| PartView {
            offset: (h * d) as u64 + 1,
            strides: vec![(2 * d) as u64, d as u64, 1],
        };
        let size = (7 * 2 * d + 2) * 2;
        for (mapping, gpu) in &common::lane_mappings(gpu) {
            let what = format!("heads of {d} ({mapping})");
            let views = [head(0), head(1)];
            check_split(
                gpu,
                &what,
                &input,
                &plan,
                &views,
                &[(0, 0), (0, 0)],
                &[size],
            );
        }
    }
}

fn views_on_devices_of_wgpu_limits(gpu: &'static GpuSplitter) {
    // A device of 4 storage buffers per stage (the words-only build, one output buffer a
    // dispatch) and one of wgpu's defaults (8: two output buffers a dispatch): the decode
    // step's three buffers, and odd heads interleaved in one buffer.
    let layer = Attention {
        batch: 2,
        seq: 3,
        q_heads: 4,
        kv_heads: 2,
        head_dim: 24,
    };
    let (plan, views) = layer.split_qkv(7, 4).unwrap();
    let input = tensor(DType::F16, plan.whole_shape(), 11);
    let sizes = [2 * 4 * 3 * 24 * 2, 2 * 2 * 7 * 24 * 2, 2 * 2 * 7 * 24 * 2];
    let odd = ops::split(&[7, 2, 5], &IntTensor::scalar(1), 2).unwrap();
    let odd_input = tensor(DType::U8, &[7, 2, 5], 12);
    let head = |h: u64| PartView {
        offset: 5 * h + 3,
        strides: vec![10, 5, 1],
    };
    for limits in [wgpu::Limits::downlevel_defaults(), wgpu::Limits::default()] {
        let limited = common::with_limits(gpu, |_| limits.clone());
        let what = format!(
            "{} storage buffers",
            limits.max_storage_buffers_per_shader_stage
        );
        // The decode step's buffers take 3 dispatches, then 2, at dynamic offsets.
        decode_loop(&limited);
        let places = [(0, 0), (1, 0), (2, 0)];
        check_split(&limited, &what, &input, &plan, &views, &places, &sizes);
        let views = [head(0), head(1)];
        check_split(
            &limited,
            &what,
            &odd_input,
            &odd,
            &views,
            &[(0, 0), (0, 0)],
            &[80],
        );
    }
    // A device that allows no dynamic offsets is refused by name.
    let none = common::with_limits(gpu, |adapter| wgpu::Limits {
        max_dynamic_storage_buffers_per_pipeline_layout: 0,
        ..adapter
    });
    let input = buffer(&none, &vec![0; input.bytes().len()]);
    let parts: Vec<wgpu::Buffer> = sizes.iter().map(|&n| buffer(&none, &vec![0; n])).collect();
    let regions: Vec<BufferRegion<'_>> = parts.iter().map(Into::into).collect();
    let to = Outputs::Views(&regions, &views);
    let m = none
        .prepare(&plan, DType::F16, (&input).into(), to)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("binds each output's buffer at 2 dynamic offsets; the device allows 0"),
        "{m}"
    );
}

fn attention_heads_and_caches_at_a_position(gpu: &'static GpuSplitter) {
    // Packed QKV [B, S, (4 + 2 * 2) * D] f16 split into Q [B, 4, S, D], and K and V into
    // caches [B, 2, S_max, D] at p (`ops::Attention`).
    for (b, s, d, s_max, p) in [
        (1, 5, 8, 16, 3),
        (2, 7, 64, 9, 2),
        (1, 1, 128, 32, 31),
        (3, 3, 8, 3, 0),
    ] {
        let layer = Attention {
            batch: b,
            seq: s,
            q_heads: 4,
            kv_heads: 2,
            head_dim: d,
        };
        let (plan, views) = layer.split_qkv(s_max, p).unwrap();
        let input = tensor(DType::F16, plan.whole_shape(), s + d);
        let sizes = [
            b * 4 * s * d * 2,
            b * 2 * s_max * d * 2,
            b * 2 * s_max * d * 2,
        ];
        for (mapping, gpu) in &common::lane_mappings(gpu) {
            let what = format!("B {b}, S {s}, D {d}, S_max {s_max}, p {p} ({mapping})");
            let places = [(0, 0), (1, 0), (2, 0)];
            check_split(gpu, &what, &input, &plan, &views, &places, &sizes);
        }
    }
}

fn source_rows_of_any_alignment_land_back_to_back(gpu: &'static GpuSplitter) {
    // f32 [3, 5, 9] split on axis 2 at 4 and 5: output 0's rows of 16 bytes lie 36 bytes
    // apart in the input; stored as [5, 3, 4], each block of 3 rows is back to back. Output
    // 1 plain.
    let plan = ops::variadic_split(
        &[3, 5, 9],
        &IntTensor::scalar(2),
        &IntTensor::vector(vec![4, 5]),
    )
    .unwrap();
    let input = tensor(DType::F32, &[3, 5, 9], 5);
    let t = PartView::within(&[3, 5, 4], &[5, 3, 4], &[1, 0, 2], &[0; 3]).unwrap();
    let views = [t, PartView::contiguous(&[3, 5, 5])];
    check_split(
        gpu,
        "[3, 5, 9] at 4",
        &input,
        &plan,
        &views,
        &[(0, 0), (1, 0)],
        &[240, 300],
    );
}

fn a_concat_reads_transposed_heads(gpu: &'static GpuSplitter) {
    // The attention output [1, H, S, D] read as [1, S, H, D]: one input, transposed, into
    // [1, S, H * D]; and two halves of the heads as two inputs of one buffer. A batch is 512
    // bytes, a multiple of every device's storage offset alignment (at most 256), so the
    // prepared node moves to the next batch by dynamic offsets.
    let (h, s, d) = (4, 8, 8);
    let heads = tensor(DType::F16, &[1, h, s, d], 3);
    let heads_buf = buffer(gpu, heads.bytes());
    let layer = Attention {
        batch: 1,
        seq: s,
        q_heads: h,
        kv_heads: h,
        head_dim: d,
    };
    let (one, [all]) = layer.merge_heads().unwrap();
    let half = |first: usize| PartView {
        offset: (first * s * d) as u64,
        ..PartView::within(&[1, s, h / 2, d], &[1, h, s, d], &[0, 2, 1, 3], &[0; 4]).unwrap()
    };
    let two_halves = ops::concat(&[[1, s, h / 2, d], [1, s, h / 2, d]], 2).unwrap();
    let halves = vec![half(0), half(h / 2)];
    for (plan, views) in [(one, vec![all]), (two_halves.clone(), halves)] {
        let regions = vec![BufferRegion::from(&heads_buf); views.len()];
        let bytes: Vec<&[u8]> = vec![heads.bytes(); views.len()];
        let want = reference::concat_from_views(&plan, DType::F16, &views, &bytes).unwrap();
        let initial = pattern(want.bytes().len() + 32, 9);
        let out = buffer(gpu, &initial);
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        gpu.encode(
            &mut encoder,
            &plan,
            DType::F16,
            Inputs::Views(&regions, &views),
            (&out).into(),
        )
        .unwrap();
        let got = common::submit_and_read(gpu, encoder, &out);
        let n = want.bytes().len();
        assert_eq!(
            &got[..n],
            want.bytes(),
            "{}: {} inputs",
            common::name(gpu),
            views.len()
        );
        assert_eq!(&got[n..initial.len()], &initial[n..], "past the output");
    }
    // The halves prepared in the first of two batches, then moved to the second: each input
    // window moves by the dynamic offset alone.
    let batches = tensor(DType::F16, &[2, h, s, d], 4);
    let batches_buf = buffer(gpu, batches.bytes());
    let first = [half(0), half(h / 2)];
    let regions = [BufferRegion::from(&batches_buf); 2];
    let out = buffer(gpu, &pattern(s * h * d * 2, 5));
    let from = Inputs::Views(&regions, &first);
    let mut node = gpu
        .prepare(&two_halves, DType::F16, from, (&out).into())
        .unwrap();
    let moved = first.clone().map(|v| PartView {
        offset: v.offset + (h * s * d) as u64,
        ..v
    });
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    node.set_views(&moved).unwrap();
    node.encode(&mut encoder).unwrap();
    let got = common::submit_and_read(gpu, encoder, &out);
    let bytes = [batches.bytes(); 2];
    let want = reference::concat_from_views(&two_halves, DType::F16, &moved, &bytes).unwrap();
    let n = want.bytes().len();
    assert_eq!(&got[..n], want.bytes(), "{}: moved", common::name(gpu));
}

/// What [`decode_loop`] gives: the plan, its first views, the prepared node, and its input
/// and output buffers.
type Decoded = (
    SplitPlan,
    [PartView; 3],
    Prepared<SplitPlan>,
    wgpu::Buffer,
    Vec<wgpu::Buffer>,
);

/// A decode step of one token, prepared at position 0 and moved through 5 positions with
/// `set_views`: Q [1, 4, 1, 128] f16, and K, V into caches of 6 positions at p; every
/// buffer compared whole with the reference's.
fn decode_loop(gpu: &GpuSplitter) -> Decoded {
    let layer = Attention {
        batch: 1,
        seq: 1,
        q_heads: 4,
        kv_heads: 2,
        head_dim: 128,
    };
    let (plan, first) = layer.split_qkv(6, 0).unwrap();
    let input = buffer(gpu, &vec![0; 8 * 128 * 2]);
    let mut want: Vec<Vec<u8>> = [4 * 128 * 2, 2 * 6 * 128 * 2, 2 * 6 * 128 * 2]
        .iter()
        .enumerate()
        .map(|(k, &n)| pattern(n, 50 + k))
        .collect();
    let parts: Vec<wgpu::Buffer> = want.iter().map(|b| buffer(gpu, b)).collect();
    let regions: Vec<BufferRegion<'_>> = parts.iter().map(Into::into).collect();
    let to = Outputs::Views(&regions, &first);
    let mut node = gpu.prepare(&plan, DType::F16, (&input).into(), to).unwrap();
    for p in [0, 1, 2, 5, 3] {
        let token = tensor(DType::F16, plan.whole_shape(), 70 + p);
        gpu.queue().write_buffer(&input, 0, token.bytes());
        let views = layer.split_qkv(6, p).unwrap().1;
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        node.set_views(&views).unwrap();
        let encoded = node.encode(&mut encoder).unwrap();
        assert_eq!(encoded.parts.ranges[1].offset, (p * 128 * 2) as u64);
        gpu.queue().submit([encoder.finish()]);
        reference::split_into_views(&token, &plan, &views, &mut want).unwrap();
    }
    let dynamic = gpu
        .device()
        .limits()
        .max_dynamic_storage_buffers_per_pipeline_layout;
    let what = format!("the decode step on {dynamic} dynamic storage buffers");
    assert_buffers_hold(gpu, &what, &parts, &want);
    (plan, first, node, input, parts)
}

fn a_prepared_decode_step_moves_through_the_caches(gpu: &'static GpuSplitter) {
    let (plan, first, mut node, input, parts) = decode_loop(gpu);

    // What a prepared node cannot move to; a refused move leaves it where it was (the decode
    // loop's last position, 3).
    let before = node.recorded();
    assert_eq!(before.parts.ranges[1].offset, 3 * 128 * 2);
    let mut moved = first.clone();
    moved[1].strides[2] = 3 * 128;
    let m = node.set_views(&moved).unwrap_err().to_string();
    assert!(
        m.contains("output 1's view has strides [1536, 128, 384, 1]"),
        "{m}"
    );
    let mut moved = first.clone();
    moved[2].offset += 6 * 128;
    let m = node.set_views(&moved).unwrap_err().to_string();
    assert!(
        m.contains("output 2's view moved to offset 768: its last element"),
        "{m}"
    );
    assert_eq!(node.recorded(), before);
    let mut plain = gpu
        .prepare(
            &plan,
            DType::F16,
            (&input).into(),
            Outputs::Region((&parts[1]).into()),
        )
        .unwrap();
    let m = plain.set_views(&first).unwrap_err().to_string();
    assert!(m.contains("prepared without views"), "{m}");
}

fn misuse_is_refused_by_name(gpu: &'static GpuSplitter) {
    let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
    let input = buffer(gpu, &pattern(4 * 8 * 4, 1));
    let out = buffer(gpu, &[0; 512]);
    let fail = |views: &[PartView], regions: &[BufferRegion<'_>]| -> String {
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        let to = Outputs::Views(regions, views);
        match gpu.encode(&mut encoder, &plan, DType::F32, (&input).into(), to) {
            Err(e @ (SplitError::BadView(_) | SplitError::BadBuffer(_))) => e.to_string(),
            other => panic!("expected a refusal, got {other:?}"),
        }
    };
    let region = BufferRegion::from(&out);
    let plain = PartView::contiguous(&[4, 4]);
    // Both outputs on the same bytes.
    let m = fail(&[plain.clone(), plain.clone()], &[region, region]);
    assert!(
        m.contains("output 0 (bytes 0 to 16 of its buffer) and output 1"),
        "{m}"
    );
    // Past the region's end: 512 bytes hold 128 f32.
    let far = PartView {
        offset: 120,
        ..plain.clone()
    };
    let m = fail(&[plain.clone(), far], &[region, region]);
    assert!(
        m.contains("output 1 of shape [4, 4], viewed at offset 120"),
        "{m}"
    );
    // A view per output.
    let m = fail(&[plain], &[region, region]);
    assert!(m.contains("2 regions and 1 views for 2 outputs"), "{m}");
}

per_backend!(
    a_concat_reads_rows_that_repeat_or_overlap,
    attention_heads_and_caches_at_a_position,
    heads_of_odd_bytes_interleave_in_one_buffer,
    views_on_devices_of_wgpu_limits,
    source_rows_of_any_alignment_land_back_to_back,
    a_concat_reads_transposed_heads,
    a_prepared_decode_step_moves_through_the_caches,
    misuse_is_refused_by_name,
);
