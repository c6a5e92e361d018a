//! A split's parts written channels-last through views (`Outputs::Views`: `[1, C, H, W]`
//! into `[1, H, W, C]` each), on each adapter: each part its planes joined into pixels, in
//! every lane mapping and layout, read back by the concat through the same views, and the
//! pixels that are not channels refused by name past a table's room; every buffer read back
//! whole and compared byte for byte with the CPU reference.

#[macro_use]
mod common;

use common::views::{
    assert_buffers_hold, buffer, check_concat_back, check_split, pattern, tensor, Rng,
};
use wgpu_split::{ops, reference, BufferRegion, DType, GpuSplitter, IntTensor, Outputs, PartView};

/// An image's channels split and written channels-last ([1, C, H, W] into [1, H, W, C]
/// each), in every lane mapping: each part its planes joined into pixels (RGB and RGBA of u8,
/// f16 and f32, pairs of f32 and u8; the words: 5 and 8 channels of 4 bytes, 3 of f64, pairs
/// of complex64, and planes off a unit but on words), in buffers of their own or both in one,
/// parts whose last units lie in a binding's tail or that lie in it whole, and pixels that
/// are neither (8 channels of f16, planes of f16 off a word), which take an entry a pixel;
/// then read back through the same views by the concat.
fn channels_last_parts_of_any_pixels(gpu: &'static GpuSplitter) {
    let cases: [(DType, [usize; 4]); 14] = [
        (DType::F32, [1, 8, 4, 37]),
        (DType::F32, [1, 4, 8, 6]),
        (DType::U8, [1, 4, 16, 3]),
        (DType::F32, [1, 6, 16, 16]),
        (DType::F16, [1, 8, 8, 9]),
        (DType::F16, [1, 6, 4, 28]),
        (DType::U8, [1, 6, 16, 37]),
        // Planes of 5 x 7 f32, off a unit.
        (DType::F32, [1, 6, 5, 7]),
        (DType::F32, [1, 10, 4, 9]),
        (DType::U32, [1, 16, 2, 8]),
        (DType::F64, [1, 6, 3, 5]),
        (DType::Complex64, [1, 4, 4, 4]),
        (DType::F16, [1, 16, 4, 4]),
        (DType::F16, [1, 6, 5, 7]),
    ];
    let mappings = common::lane_mappings(gpu);
    // WebGPU's storage offset alignment, 256 bytes: a window under it is all tail.
    let webgpu = common::with_limits(gpu, |l| wgpu::Limits {
        min_storage_buffer_offset_alignment: 256,
        ..l
    });
    let webgpu_mappings = common::lane_mappings(&webgpu);
    for (n, &(dtype, shape)) in cases.iter().enumerate() {
        let plan = ops::split(&shape, &IntTensor::scalar(1), 2).unwrap();
        let input = tensor(dtype, &shape, n);
        let part = plan.part_shape(0);
        let stored = [1, shape[2], shape[3], part[1]];
        let view = PartView::within(&part, &stored, &[0, 2, 3, 1], &[0; 4]).unwrap();
        let bytes = part.iter().product::<usize>() * dtype.size();
        // Moved a unit into its buffer, on a device of WebGPU's alignment: a small part's
        // window is all tail, its first unit past the window's units.
        let moved = PartView {
            offset: (16 / dtype.size()) as u64,
            ..view.clone()
        };
        // Output 1 after output 0 in its buffer, at the next multiple of 256 bytes.
        let after = bytes.next_multiple_of(256);
        let layouts = [
            (vec![(0, 0), (1, 0)], vec![bytes + 48, bytes + 48], &view),
            (
                vec![(0, 0), (0, after as u64)],
                vec![after + bytes + 48],
                &view,
            ),
            (vec![(0, 0), (1, 0)], vec![bytes + 64, bytes + 64], &moved),
        ];
        for (m, (places, sizes, view)) in layouts.iter().enumerate() {
            let views = [(*view).clone(), (*view).clone()];
            let mappings = if m == 2 { &webgpu_mappings } else { &mappings };
            let (mapping, gpu) = &mappings[(n + m) % mappings.len()];
            let what = format!(
                "{dtype:?} {shape:?} channels-last at {}, places {places:?} ({mapping})",
                view.offset
            );
            let (buffers, _) = check_split(gpu, &what, &input, &plan, &views, places, sizes);
            check_concat_back(gpu, &what, &input, &plan, &views, &buffers, places);
        }
    }
}

/// An image's channels written channels-last, each part joined from its planes in one
/// dispatch whatever its pixels, and read back by the concat; the same parts written into
/// pixels of four elements, one left as it was, take an entry a pixel: 65,536 and more
/// blocks in one table, refused by name past a binding's room.
fn channels_last_parts_of_many_pixels(gpu: &'static GpuSplitter) {
    let shape = [1, 6, 260, 256];
    let plan = ops::split(&shape, &IntTensor::scalar(1), 2).unwrap();
    let input = tensor(DType::F32, &shape, 3);
    let part = plan.part_shape(0);
    let perm = [0, 2, 3, 1];
    let view = PartView::within(&part, &[1, 260, 256, 3], &perm, &[0; 4]).unwrap();
    let bytes = 260 * 256 * 4 * 4 + 64;
    let views = [view.clone(), view];
    let what = "[1, 6, 260, 256] f32 into two channels-last parts";
    let places = [(0, 0), (1, 0)];
    let sizes = [bytes, bytes];
    let (buffers, _) = check_split(gpu, what, &input, &plan, &views, &places, &sizes);
    check_concat_back(gpu, what, &input, &plan, &views, &buffers, &places);
    // On a device whose storage binding of 4 MiB holds one part's table of pixels but not
    // both, the channels-last parts still pass; the pixels of four elements are refused, the
    // part lowered second (output 1: the buffers go in the order of their first parts) with
    // the room the first left.
    let limited = common::with_limits(gpu, |l| wgpu::Limits {
        max_storage_buffer_binding_size: 4 << 20,
        ..l
    });
    check_split(&limited, what, &input, &plan, &views, &places, &sizes);
    let four = PartView::within(&part, &[1, 260, 256, 4], &perm, &[0; 4]).unwrap();
    let views = [four.clone(), four];
    let whole = buffer(&limited, input.bytes());
    let zeros = vec![0; bytes];
    let parts = [buffer(&limited, &zeros), buffer(&limited, &zeros)];
    let regions = common::regions_at(&parts, &places);
    let mut encoder = limited.device().create_command_encoder(&Default::default());
    let outputs = Outputs::Views(&regions, &views);
    let m = limited
        .encode(&mut encoder, &plan, DType::F32, (&whole).into(), outputs)
        .map(|_| ())
        .unwrap_err()
        .to_string();
    let rule = "its view lowers to 66560 blocks of runs, past the 28764 its dispatch's table";
    assert!(m.contains(&format!("output 1: {rule}")), "{m}");
}

/// Equal parts written channels-last, each its planes joined, take one dispatch where each
/// part's view lies as far from the one before (`repeat_joins`: the parts' blocks mapped to
/// their part): three parts of RGBA f32 (the channels) and of 3 f64 channels (walked), in
/// buffers of their own, in one buffer at equal steps, and at unequal steps (the third part
/// then a dispatch of its own), in every lane mapping; read back by the concat.
fn equal_channels_last_parts_take_one_dispatch(gpu: &'static GpuSplitter) {
    let mappings = common::lane_mappings(gpu);
    for (n, (dtype, shape)) in [(DType::F32, [1, 12, 9, 20]), (DType::F64, [1, 9, 4, 6])]
        .into_iter()
        .enumerate()
    {
        let plan = ops::split(&shape, &IntTensor::scalar(1), 3).unwrap();
        let input = tensor(dtype, &shape, 7 + n);
        let part = plan.part_shape(0);
        let stored = [1, shape[2], shape[3], part[1]];
        let view = PartView::within(&part, &stored, &[0, 2, 3, 1], &[0; 4]).unwrap();
        let views = [view.clone(), view.clone(), view];
        let bytes = part.iter().product::<usize>() * dtype.size();
        let step = bytes.next_multiple_of(256);
        // Three buffers take as many dispatches as the device binds them in (each two
        // dynamic storage buffers: 2 a dispatch on SwiftShader).
        let layouts = [
            (vec![(0, 0), (1, 0), (2, 0)], vec![bytes; 3], 0),
            (vec![(0, 0), (0, step), (0, 2 * step)], vec![3 * step], 1),
            (vec![(0, 0), (0, step), (0, 3 * step)], vec![4 * step], 2),
        ];
        for (m, (places, sizes, dispatches)) in layouts.into_iter().enumerate() {
            let (mapping, gpu) = &mappings[(n + m) % mappings.len()];
            let bound = buffers_a_dispatch(gpu);
            let dispatches = if dispatches == 0 {
                3u32.div_ceil(bound)
            } else {
                dispatches
            };
            let places: Vec<(usize, u64)> = places.iter().map(|&(b, o)| (b, o as u64)).collect();
            let what =
                format!("{dtype:?} {shape:?} in 3 channels-last parts at {places:?} ({mapping})");
            let (buffers, split) = check_split(gpu, &what, &input, &plan, &views, &places, &sizes);
            check_concat_back(gpu, &what, &input, &plan, &views, &buffers, &places);
            assert_eq!(split, dispatches, "{what}");
        }
    }
}

/// A batch of images split on channels, each part written channels-last (`[N, C, H, W]` into
/// `[N, H, W, C]`): each part's images joined in one dispatch (an image a join), RGBA f32 and
/// RGB u8 (the channels) and 6 f32 channels (walked), in buffers of their own and both in
/// one; read back by the concat.
fn batches_of_images_channels_last(gpu: &'static GpuSplitter) {
    let mappings = common::lane_mappings(gpu);
    let cases = [
        (DType::F32, [3, 8, 5, 7]),
        (DType::F32, [2, 12, 6, 6]),
        (DType::U8, [4, 6, 4, 4]),
    ];
    for (n, (dtype, shape)) in cases.into_iter().enumerate() {
        let plan = ops::split(&shape, &IntTensor::scalar(1), 2).unwrap();
        let input = tensor(dtype, &shape, 11 + n);
        let part = plan.part_shape(0);
        let stored = [shape[0], shape[2], shape[3], part[1]];
        let view = PartView::within(&part, &stored, &[0, 2, 3, 1], &[0; 4]).unwrap();
        let views = [view.clone(), view];
        let bytes = part.iter().product::<usize>() * dtype.size();
        let after = bytes.next_multiple_of(256);
        let layouts = [
            (vec![(0, 0), (1, 0)], vec![bytes, bytes]),
            (vec![(0, 0), (0, after as u64)], vec![after + bytes]),
        ];
        for (m, (places, sizes)) in layouts.into_iter().enumerate() {
            let (mapping, gpu) = &mappings[(n + m) % mappings.len()];
            let what = format!("{dtype:?} {shape:?} channels-last at {places:?} ({mapping})");
            let (buffers, split) = check_split(gpu, &what, &input, &plan, &views, &places, &sizes);
            check_concat_back(gpu, &what, &input, &plan, &views, &buffers, &places);
            assert_eq!(split, 2, "{what}");
        }
    }
}

/// Random batches of images split on channels into equal parts, each written channels-last
/// (`[N, C, H, W]` into `[N, H, W, C]`): any dtype, 1 to 8 channels a part, images on a unit
/// or off it (an entry a pixel then), parts in buffers of their own or one after the other in
/// one, in every lane mapping; read back by the concat.
fn random_batches_of_images_channels_last(gpu: &'static GpuSplitter) {
    let mut rng = Rng(45);
    let mappings = common::lane_mappings(gpu);
    let dtypes = [
        DType::U8,
        DType::F16,
        DType::F32,
        DType::F64,
        DType::Complex64,
    ];
    for case in 0..common::long_run_cases().unwrap_or(24) as usize {
        let dtype = dtypes[rng.below(dtypes.len())];
        let parts = 1 + rng.below(3);
        let channels = 1 + rng.below(8);
        let shape = [
            2 + rng.below(3),
            parts * channels,
            1 + rng.below(9),
            1 + rng.below(17),
        ];
        let plan = ops::split(&shape, &IntTensor::scalar(1), parts as i64).unwrap();
        let input = tensor(dtype, &shape, 60 + case);
        let part = plan.part_shape(0);
        let stored = [shape[0], shape[2], shape[3], channels];
        let view = PartView::within(&part, &stored, &[0, 2, 3, 1], &[0; 4]).unwrap();
        let views = vec![view; parts];
        let bytes = part.iter().product::<usize>() * dtype.size();
        let (places, sizes): (Vec<(usize, u64)>, Vec<usize>) = match case % 2 {
            0 => ((0..parts).map(|k| (k, 0)).collect(), vec![bytes; parts]),
            _ => {
                let step = bytes.next_multiple_of(256);
                let places = (0..parts).map(|k| (0, (k * step) as u64)).collect();
                (places, vec![parts * step])
            }
        };
        let (mapping, gpu) = &mappings[case % mappings.len()];
        let what = format!("{dtype:?} {shape:?} in {parts} channels-last parts ({mapping})");
        let (buffers, _) = check_split(gpu, &what, &input, &plan, &views, &places, &sizes);
        check_concat_back(gpu, &what, &input, &plan, &views, &buffers, &places);
    }
}

/// A prepared split into three equal channels-last parts, each in a buffer of its own (one
/// dispatch of their joins repeated where the device binds the three together), recorded
/// again with each part moved on by a shift of its own (`Prepared::set_views`: each
/// buffer's window at a new dynamic offset, the repeated join's table as it was): every
/// buffer as the CPU reference writes the same moves.
fn a_prepared_node_moves_its_repeated_joins(gpu: &'static GpuSplitter) {
    let plan = ops::split(&[1, 12, 4, 8], &IntTensor::scalar(1), 3).unwrap();
    let view = PartView::within(&[1, 4, 4, 8], &[1, 4, 8, 4], &[0, 2, 3, 1], &[0; 4]).unwrap();
    // Each buffer holds four places of a part's 512 bytes.
    let mut want: Vec<Vec<u8>> = (0..3).map(|k| pattern(4 * 512, 30 + k)).collect();
    let parts: Vec<wgpu::Buffer> = want.iter().map(|b| buffer(gpu, b)).collect();
    let regions: Vec<BufferRegion<'_>> = parts.iter().map(Into::into).collect();
    let input = buffer(gpu, &[0; 12 * 32 * 4]);
    let first = vec![view.clone(); 3];
    let to = Outputs::Views(&regions, &first);
    let mut node = gpu.prepare(&plan, DType::F32, (&input).into(), to).unwrap();
    let bound = buffers_a_dispatch(gpu);
    for (p, places) in [[0, 0, 0], [1, 0, 3], [3, 2, 1], [2, 2, 2]]
        .iter()
        .enumerate()
    {
        let token = tensor(DType::F32, plan.whole_shape(), 40 + p);
        gpu.queue().write_buffer(&input, 0, token.bytes());
        let views: Vec<PartView> = places
            .iter()
            .map(|&place| PartView {
                offset: place * 128,
                ..view.clone()
            })
            .collect();
        let mut encoder = gpu.device().create_command_encoder(&Default::default());
        node.set_views(&views).unwrap();
        let encoded = node.encode(&mut encoder).unwrap();
        assert_eq!(
            encoded.dispatches,
            3u32.div_ceil(bound),
            "{}",
            common::name(gpu)
        );
        gpu.queue().submit([encoder.finish()]);
        reference::split_into_views(&token, &plan, &views, &mut want).unwrap();
    }
    assert_buffers_hold(gpu, "three parts moved", &parts, &want);
}

/// The part buffers one dispatch of a split through views writes on `gpu`: as many as its
/// multi-output build binds, each taking two dynamic storage buffers.
fn buffers_a_dispatch(gpu: &GpuSplitter) -> u32 {
    let dynamic = gpu
        .device()
        .limits()
        .max_dynamic_storage_buffers_per_pipeline_layout;
    gpu.options().output_bindings.unwrap().min(dynamic / 2)
}

per_backend!(
    channels_last_parts_of_any_pixels,
    channels_last_parts_of_many_pixels,
    equal_channels_last_parts_take_one_dispatch,
    batches_of_images_channels_last,
    random_batches_of_images_channels_last,
    a_prepared_node_moves_its_repeated_joins,
);
