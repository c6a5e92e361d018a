//! Buffers of the engine's size: the input and every output in a region of its exact size
//! rounded up to 4 bytes, and no byte outside an output written. Guard bytes sit right after
//! every output (and between outputs), in every gather layout and route, and must come back
//! unchanged.

#[macro_use]
mod common;

use wgpu::util::DeviceExt;
use wgpu_split::{
    ops, BufferRegion, DType, GatherMode, GpuSplitter, HostTensor, IntTensor, Outputs, RouteChoice,
    SplitError, SplitOptions, SplitPlan,
};

const GUARD: u8 = 0xA5;

/// Input bytes that differ at every offset, and never equal the guard byte's pattern.
fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8 ^ 0x3c).collect()
}

fn round4(n: u64) -> u64 {
    n.next_multiple_of(4).max(4)
}

/// An input buffer of exactly the input's size rounded up to 4, holding its bytes.
fn exact_input(gpu: &GpuSplitter, input: &HostTensor) -> wgpu::Buffer {
    let mut bytes = input.bytes().to_vec();
    bytes.resize(round4(bytes.len() as u64) as usize, GUARD);
    gpu.device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("exact input"),
            contents: &bytes,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        })
}

/// A buffer of `size` guard bytes, usable as an output and readable.
fn guarded(gpu: &GpuSplitter, size: u64) -> wgpu::Buffer {
    use wgpu::BufferUsages as U;
    gpu.device()
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("guarded output"),
            contents: &vec![GUARD; size as usize],
            usage: U::STORAGE | U::COPY_SRC | U::COPY_DST,
        })
}

fn read(gpu: &GpuSplitter, buffer: &wgpu::Buffer) -> Vec<u8> {
    let encoder = gpu.device().create_command_encoder(&Default::default());
    common::submit_and_read(gpu, encoder, buffer)
}

/// Checks `bytes` (a buffer's content) against `want`: output `i` at `offsets[i]`, and the
/// guard byte everywhere else.
fn check(what: &str, bytes: &[u8], offsets: &[u64], want: &[HostTensor]) {
    let mut expected = vec![GUARD; bytes.len()];
    for (o, w) in offsets.iter().zip(want) {
        let o = *o as usize;
        expected[o..o + w.bytes().len()].copy_from_slice(w.bytes());
    }
    if let Some(b) = (0..bytes.len()).find(|&b| bytes[b] != expected[b]) {
        let inside = offsets
            .iter()
            .zip(want)
            .position(|(&o, w)| (o as usize..o as usize + w.bytes().len()).contains(&b));
        panic!(
            "{what}: byte {b} is {:#04x}, expected {:#04x} ({})",
            bytes[b],
            expected[b],
            match inside {
                Some(i) => format!("output {i}"),
                None => "a guard byte outside every output".into(),
            }
        );
    }
}

/// Splits whose outputs end at every residue mod 16 and whose rows are aligned, word-aligned
/// and unaligned, short and long: every layout of the gather meets an output's last unit.
fn cases() -> Vec<(String, SplitPlan, DType)> {
    let mut cases = Vec::new();
    let mut add = |shape: &[usize], axis: usize, lengths: &[usize], dtype: DType| {
        let plan = SplitPlan::from_lengths(shape, axis, lengths, true).unwrap();
        cases.push((
            format!("{dtype:?} {shape:?} axis {axis} {lengths:?}"),
            plan,
            dtype,
        ));
    };
    for dtype in [DType::U8, DType::I16, DType::F32, DType::F64] {
        // Contiguous outputs (axis 0) of odd lengths.
        add(&[23, 3], 0, &[5, 11, 7], dtype);
        // Strided outputs, one to three elements a row, many rows (short rows, tiles).
        add(&[301, 6], 1, &[1, 3, 2], dtype);
        // Long rows, unaligned (staged, shifted), and one output of one element a row.
        add(&[37, 131], 1, &[64, 1, 66], dtype);
    }
    // Equal parts of short rows (the channels on CPU adapters): u8 planes whose 301 rows end
    // mid-group and mid-unit, i16 ones; u8 pairs whose 592 rows are whole groups.
    for dtype in [DType::U8, DType::I16] {
        add(&[301, 3], 1, &[1, 1, 1], dtype);
    }
    add(&[592, 4], 1, &[2, 2], DType::U8);
    // Rows of whole words (scatter), 4 and 12 bytes, and an output of 4-byte rows.
    add(&[513, 5], 1, &[1, 3, 1], DType::F32);
    // A single output that is the whole input (600 bytes: the example).
    add(&[150], 0, &[150], DType::F32);
    add(&[3, 5], 1, &[5], DType::U8);
    cases
}

fn splitters(gpu: &GpuSplitter) -> Vec<(String, GpuSplitter)> {
    let mut all = vec![("default".to_string(), gpu.clone())];
    for mode in [GatherMode::Cpu, GatherMode::Gpu] {
        let g = gpu.clone().with_options(SplitOptions {
            route: RouteChoice::Gather,
            gather_mode: Some(mode),
            ..gpu.options()
        });
        all.push((format!("gather {mode:?}"), g));
    }
    all.push((
        "copies".into(),
        gpu.clone().with_options(SplitOptions {
            route: RouteChoice::Copies,
            ..gpu.options()
        }),
    ));
    all
}

/// The patterned input of `plan` for `dtype`, and its outputs from the CPU reference.
fn input_and_want(plan: &SplitPlan, dtype: DType) -> (HostTensor, Vec<HostTensor>) {
    let size: usize = plan.whole_shape().iter().product::<usize>() * dtype.size();
    let input = HostTensor::new(dtype, plan.whole_shape().to_vec(), pattern(size)).unwrap();
    let want = plan.reference(&input).unwrap();
    (input, want)
}

/// `encode` of `plan` into one output region of exactly `layout.total_bytes` (the last
/// output's end, rounded up to 4), from an input of its exact size: the outputs at the
/// layout's offsets, guard bytes between them and after the last.
fn encode_exactly_and_check(g: &GpuSplitter, what: &str, plan: &SplitPlan, dtype: DType) {
    let (input, want) = input_and_want(plan, dtype);
    let in_buf = exact_input(g, &input);
    let layout = g.layout(plan, dtype).unwrap();
    let last = layout
        .ranges
        .iter()
        .map(|r| r.offset + r.size)
        .max()
        .unwrap();
    assert_eq!(layout.total_bytes, round4(last), "{what}");
    let out_buf = guarded(g, layout.total_bytes);
    let mut encoder = g.device().create_command_encoder(&Default::default());
    let region = |buffer| BufferRegion { buffer, offset: 0 };
    g.encode(
        &mut encoder,
        plan,
        dtype,
        region(&in_buf),
        Outputs::Region(region(&out_buf)),
    )
    .unwrap_or_else(|e| panic!("{what}: {e}"));
    g.queue().submit([encoder.finish()]);
    let offsets: Vec<u64> = layout.ranges.iter().map(|r| r.offset).collect();
    check(what, &read(g, &out_buf), &offsets, &want);
}

/// `encode` writes only the outputs, in every layout and route.
fn encode_writes_only_the_outputs(gpu: &'static GpuSplitter) {
    for (name, g) in splitters(gpu) {
        for (case, plan, dtype) in cases() {
            let what = format!("{} {name}, {case}", common::name(gpu));
            encode_exactly_and_check(&g, &what, &plan, dtype);
        }
    }
}

/// Records and submits the split of `plan` into one region per output.
fn encode_into_regions(
    g: &GpuSplitter,
    what: &str,
    plan: &SplitPlan,
    dtype: DType,
    input: BufferRegion<'_>,
    regions: &[BufferRegion<'_>],
) {
    let mut encoder = g.device().create_command_encoder(&Default::default());
    g.encode(&mut encoder, plan, dtype, input, Outputs::Regions(regions))
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    g.queue().submit([encoder.finish()]);
}

/// `Outputs::Regions` into tensors packed one after another in one buffer, each at the next
/// storage offset alignment after the one before, each of its exact size: the bytes after each
/// tensor up to the next are guards. Then each output in a buffer of its exact size.
fn one_region_per_output_writes_only_the_outputs(gpu: &'static GpuSplitter) {
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as u64;
    for (name, g) in splitters(gpu) {
        for (case, plan, dtype) in cases() {
            let what = format!("{} {name}, {case}", common::name(gpu));
            let (input, want) = input_and_want(&plan, dtype);
            let in_buf = exact_input(&g, &input);
            let in_region = BufferRegion {
                buffer: &in_buf,
                offset: 0,
            };
            // Packed in one buffer.
            let mut offsets = Vec::new();
            let mut end = 0u64;
            for w in &want {
                let offset = end.next_multiple_of(align);
                offsets.push(offset);
                end = offset + w.bytes().len() as u64;
            }
            let shared = guarded(&g, round4(end));
            let regions: Vec<BufferRegion> = offsets
                .iter()
                .map(|&offset| BufferRegion {
                    buffer: &shared,
                    offset,
                })
                .collect();
            encode_into_regions(
                &g,
                &format!("{what}, one buffer"),
                &plan,
                dtype,
                in_region,
                &regions,
            );
            check(
                &format!("{what}, one buffer"),
                &read(&g, &shared),
                &offsets,
                &want,
            );
            // One buffer each, of the output's size rounded up to 4.
            let own: Vec<wgpu::Buffer> = want
                .iter()
                .map(|w| guarded(&g, round4(w.bytes().len() as u64)))
                .collect();
            let regions: Vec<BufferRegion> = own
                .iter()
                .map(|buffer| BufferRegion { buffer, offset: 0 })
                .collect();
            encode_into_regions(
                &g,
                &format!("{what}, own buffers"),
                &plan,
                dtype,
                in_region,
                &regions,
            );
            for (i, (b, w)) in own.iter().zip(&want).enumerate() {
                let what = format!("{what}, output {i} in its own buffer");
                check(&what, &read(&g, b), &[0], std::slice::from_ref(w));
            }
        }
    }
}

/// A region one word short is refused with the rule and the numbers.
fn a_region_short_of_the_exact_size_names_the_rule(gpu: &'static GpuSplitter) {
    // Output 2 of this split is 600 bytes.
    let plan = ops::split(&[4, 150], &IntTensor::scalar(0), 4).unwrap();
    let input = HostTensor::new(DType::F32, vec![4, 150], pattern(2400)).unwrap();
    let in_buf = exact_input(gpu, &input);
    let outs: Vec<wgpu::Buffer> = [600, 600, 596, 600]
        .iter()
        .map(|&n| guarded(gpu, n))
        .collect();
    let regions: Vec<BufferRegion> = outs
        .iter()
        .map(|buffer| BufferRegion { buffer, offset: 0 })
        .collect();
    let mut encoder = gpu.device().create_command_encoder(&Default::default());
    let in_region = BufferRegion {
        buffer: &in_buf,
        offset: 0,
    };
    let e = gpu
        .encode(
            &mut encoder,
            &plan,
            DType::F32,
            in_region,
            Outputs::Regions(&regions),
        )
        .unwrap_err();
    assert_eq!(
        e,
        SplitError::BadBuffer(
            "output 2 needs 600 bytes (its 600 bytes rounded up to 4); its region has 596 \
             (a buffer of 596 bytes, from offset 0)"
                .into()
        )
    );
    // The input, one word short.
    let short = guarded(gpu, 2396);
    let e = gpu
        .encode(
            &mut encoder,
            &plan,
            DType::F32,
            BufferRegion {
                buffer: &short,
                offset: 0,
            },
            Outputs::Region(regions[0]),
        )
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "input needs 2400 bytes (its 2400 bytes rounded up to 4); its region has 2396 \
         (a buffer of 2396 bytes, from offset 0)"
    );
}

/// On a device opened with `Limits::downlevel_defaults()` (4 storage buffers per stage, so
/// the words-only build and one output binding per dispatch), the same bytes and guards.
fn a_downlevel_device_writes_only_the_outputs(gpu: &'static GpuSplitter) {
    let small = common::with_limits(gpu, |_| wgpu::Limits::downlevel_defaults());
    assert_eq!(
        small.device().limits().max_storage_buffers_per_shader_stage,
        4
    );
    assert_eq!(small.options().output_bindings.unwrap(), 1);
    for (case, plan, dtype) in cases() {
        let what = format!("downlevel {}, {case}", common::name(gpu));
        encode_exactly_and_check(&small, &what, &plan, dtype);
    }
}

/// `views` of contiguous outputs: each one's range of the input, and an empty output as
/// `{ offset: 0, size: 0 }`.
fn views_of_contiguous_outputs_and_empty_ones(gpu: &'static GpuSplitter) {
    let align = gpu.device().limits().min_storage_buffer_offset_alignment as usize;
    // Rows of `align` bytes of f32, split on axis 0 into 1, 0 and 2 rows.
    let plan = SplitPlan::from_lengths(&[3, align / 4], 0, &[1, 0, 2], true).unwrap();
    let views = gpu.views(&plan, DType::F32).unwrap().unwrap();
    let a = align as u64;
    let want = [(0, a), (0, 0), (a, 2 * a)];
    let got: Vec<(u64, u64)> = views.iter().map(|v| (v.offset, v.size)).collect();
    assert_eq!(got, want, "{}", common::name(gpu));
    // An output that does not start at the alignment: no views.
    let plan = SplitPlan::from_lengths(&[3, align / 4 + 1], 0, &[1, 2], true).unwrap();
    assert_eq!(gpu.views(&plan, DType::F32).unwrap(), None);
}

per_backend!(
    views_of_contiguous_outputs_and_empty_ones,
    a_downlevel_device_writes_only_the_outputs,
    encode_writes_only_the_outputs,
    one_region_per_output_writes_only_the_outputs,
    a_region_short_of_the_exact_size_names_the_rule,
);
