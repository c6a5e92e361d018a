//! Every rule of the operators and of the GPU entry points returns a typed error, never a panic.

#[macro_use]
mod common;

use wgpu_split::ops::{self, OnnxSplitParts};
use wgpu_split::{
    BackendChoice, BufferRegion, DType, GpuSplitter, HostTensor, IntTensor, Outputs, RowsBuffers,
    SplitError,
};

fn v(l: &[i64]) -> IntTensor {
    IntTensor::vector(l.to_vec())
}

#[test]
fn rank_zero_data_is_refused_by_every_operator() {
    let s = IntTensor::scalar(0);
    assert_eq!(ops::split(&[], &s, 1), Err(SplitError::RankZero));
    assert_eq!(
        ops::variadic_split(&[], &s, &v(&[1])),
        Err(SplitError::RankZero)
    );
    assert_eq!(
        ops::split_to_sequence(&[], 0, None, true),
        Err(SplitError::RankZero)
    );
    assert_eq!(
        ops::onnx_split(&[], 0, &OnnxSplitParts::EqualOutputs(1)),
        Err(SplitError::RankZero)
    );
}

#[test]
fn axis_rules() {
    let e = ops::split(&[2, 3], &IntTensor::scalar(2), 1).unwrap_err();
    assert_eq!(e, SplitError::AxisOutOfRange { axis: 2, rank: 2 });
    assert_eq!(
        e.to_string(),
        "axis 2 is out of range for data of rank 2: it must lie in [-2, 1]"
    );
    assert!(matches!(
        ops::split(&[2, 3], &IntTensor::scalar(-3), 1),
        Err(SplitError::AxisOutOfRange { .. })
    ));
    assert!(matches!(
        ops::split(&[2, 3], &IntTensor::scalar(i64::MIN), 1),
        Err(SplitError::AxisOutOfRange { .. })
    ));
    // Split-1 takes a scalar axis only; VariadicSplit-1 also a shape-[1] tensor.
    let e = ops::split(&[2, 3], &v(&[0]), 1).unwrap_err();
    assert_eq!(e.to_string(), "axis must be a scalar, got shape [1]");
    assert!(ops::variadic_split(&[2, 3], &v(&[0]), &v(&[2])).is_ok());
    let e = ops::variadic_split(&[2, 3], &v(&[0, 1]), &v(&[2])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "axis must be a scalar or a tensor of shape [1], got shape [2]"
    );
    let float_axis = HostTensor::from_slice(&[], &[1.0f32]).unwrap();
    assert!(matches!(
        IntTensor::from_host(&float_axis, "axis"),
        Err(SplitError::BadIntegerInput { input: "axis", .. })
    ));
}

#[test]
fn split_rules() {
    let a = IntTensor::scalar(0);
    assert_eq!(
        ops::split(&[6], &a, 0),
        Err(SplitError::NumSplitsNotPositive { num_splits: 0 })
    );
    assert_eq!(
        ops::split(&[6], &a, 4),
        Err(SplitError::NotDivisible {
            what: "num_splits",
            parts: 4,
            axis: 0,
            length: 6
        })
    );
}

#[test]
fn variadic_split_rules() {
    let a = IntTensor::scalar(0);
    let e = ops::variadic_split(&[6], &a, &v(&[2, 2])).unwrap_err();
    assert_eq!(
        e.to_string(),
        "split_lengths [2, 2] sum to 4, but axis 0 has length 6"
    );
    assert!(matches!(
        ops::variadic_split(&[6], &a, &v(&[-1, -1])),
        Err(SplitError::BadLength { .. })
    ));
    assert!(matches!(
        ops::variadic_split(&[6], &a, &v(&[-3, 9])),
        Err(SplitError::BadLength { .. })
    ));
    assert!(matches!(
        ops::variadic_split(&[6], &a, &v(&[7, -1])),
        Err(SplitError::LengthsSumMismatch { .. })
    ));
    let two_d = IntTensor::new(vec![1, 2], vec![3, 3]).unwrap();
    let e = ops::variadic_split(&[6], &a, &two_d).unwrap_err();
    assert_eq!(
        e.to_string(),
        "split_lengths must be a 1-D tensor, got shape [1, 2]"
    );
}

#[test]
fn split_to_sequence_rules() {
    assert_eq!(
        ops::split_to_sequence(&[6], 0, Some(&IntTensor::scalar(0)), true),
        Err(SplitError::SplitNotPositive { split: 0 })
    );
    assert!(matches!(
        ops::split_to_sequence(&[6], 0, Some(&v(&[1, 2])), true),
        Err(SplitError::LengthsSumMismatch { .. })
    ));
    assert!(matches!(
        ops::split_to_sequence(&[6], 0, Some(&v(&[-1, 7])), true),
        Err(SplitError::BadLength { .. })
    ));
    assert!(matches!(
        ops::split_to_sequence(&[6], -2, None, true),
        Err(SplitError::AxisOutOfRange { .. })
    ));
}

fn data_that_does_not_match_its_plan(gpu: &'static GpuSplitter) {
    assert!(matches!(
        HostTensor::new(DType::F32, vec![2, 3], vec![0; 23]),
        Err(SplitError::DataMismatch(_))
    ));
    let t = HostTensor::from_slice(&[4], &[1u8, 2, 3, 4]).unwrap();
    let plan = ops::split(&[2, 2], &IntTensor::scalar(0), 2).unwrap();
    assert!(matches!(
        plan.reference(&t),
        Err(SplitError::DataMismatch(_))
    ));
    assert!(matches!(
        gpu.run(&plan, &t),
        Err(SplitError::DataMismatch(_))
    ));
}

fn caller_buffers_are_checked_before_encoding(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
    let dev = gpu.device();
    let buffer = |size, usage| {
        dev.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage,
            mapped_at_creation: false,
        })
    };
    let storage = wgpu::BufferUsages::STORAGE;
    let good_in = buffer(128, storage);
    let good_out = buffer(gpu.layout(&plan, DType::F32).unwrap().total_bytes, storage);
    let mut enc = dev.create_command_encoder(&Default::default());
    let r = |b| BufferRegion {
        buffer: b,
        offset: 0,
    };

    let small_in = buffer(64, storage);
    let e = gpu
        .encode(
            &mut enc,
            &plan,
            DType::F32,
            r(&small_in),
            Outputs::Region(r(&good_out)),
        )
        .unwrap_err();
    assert!(matches!(e, SplitError::BadBuffer(_)), "{name}: {e}");
    assert_eq!(
        e.to_string(),
        "input needs 128 bytes (its 128 bytes rounded up to 4); its region has 64 (a buffer of \
         64 bytes, from offset 0)"
    );

    let no_storage = buffer(128, wgpu::BufferUsages::COPY_DST);
    let e = gpu
        .encode(
            &mut enc,
            &plan,
            DType::F32,
            r(&no_storage),
            Outputs::Region(r(&good_out)),
        )
        .unwrap_err();
    assert!(
        e.to_string().starts_with("input buffer has usage"),
        "{name}: {e}"
    );

    let small_out = buffer(16, storage);
    let e = gpu
        .encode(
            &mut enc,
            &plan,
            DType::F32,
            r(&good_in),
            Outputs::Region(r(&small_out)),
        )
        .unwrap_err();
    assert!(
        e.to_string().starts_with("output needs ")
            && e.to_string()
                .contains("its region has 16 (a buffer of 16 bytes"),
        "{name}: {e}"
    );

    let misaligned = BufferRegion {
        buffer: &good_in,
        offset: 4,
    };
    let e = gpu
        .encode(
            &mut enc,
            &plan,
            DType::F32,
            misaligned,
            Outputs::Region(r(&good_out)),
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("storage offset alignment"),
        "{name}: {e}"
    );

    // Input and output in one buffer (arena style, regions apart): refused before recording.
    let arena = buffer(
        4096,
        storage | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    );
    let at = |offset| BufferRegion {
        buffer: &arena,
        offset,
    };
    let e = gpu
        .encode(
            &mut enc,
            &plan,
            DType::F32,
            at(0),
            Outputs::Region(at(1024)),
        )
        .unwrap_err();
    assert!(matches!(e, SplitError::BadBuffer(_)), "{name}: {e}");
    assert!(e.to_string().contains("in one buffer"), "{name}: {e}");

    // A destroyed buffer passes the host checks; wgpu's validation error comes back typed.
    let destroyed = buffer(128, storage);
    destroyed.destroy();
    let e = gpu
        .encode(
            &mut enc,
            &plan,
            DType::F32,
            r(&destroyed),
            Outputs::Region(r(&good_out)),
        )
        .unwrap_err();
    assert!(matches!(e, SplitError::Device(_)), "{name}: {e}");
}

/// The misuses wgpu gives `encode` no way to see, with the symptoms its docs name: an encoder
/// of another device of the same instance is reported by that device at `finish` (caught here
/// with an error scope; the default handler panics), and an encoder or a buffer of another
/// `wgpu::Instance` panics in wgpu-core inside `encode`. If wgpu starts reporting any of them,
/// this test fails and the docs want updating.
fn misuse_wgpu_cannot_report_has_the_documented_symptoms(gpu: &'static GpuSplitter) {
    let name = &common::name(gpu);
    let backend = BackendChoice::from_backend(gpu.device().adapter_info().backend);
    let (adapter, device, queue) = wgpu_split::DeviceChoice::from(backend).open().unwrap();
    let ours = GpuSplitter::new(device, queue).unwrap();
    let plan = ops::split(&[4, 8], &IntTensor::scalar(1), 2).unwrap();
    let buffer = |dev: &wgpu::Device, size| {
        dev.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        })
    };
    let r = |b| BufferRegion {
        buffer: b,
        offset: 0,
    };
    let out_size = ours.layout(&plan, DType::F32).unwrap().total_bytes;
    let (input, output) = (buffer(ours.device(), 128), buffer(ours.device(), out_size));

    // An encoder of another device of the same instance: encode records, the other device
    // reports it at finish.
    let (sibling, _sibling_queue) =
        pollster::block_on(adapter.request_device(&Default::default())).unwrap();
    let mut foreign = sibling.create_command_encoder(&Default::default());
    let recorded = ours.encode(
        &mut foreign,
        &plan,
        DType::F32,
        r(&input),
        Outputs::Region(r(&output)),
    );
    assert!(recorded.is_ok(), "{name}: {recorded:?}");
    let scope = sibling.push_error_scope(wgpu::ErrorFilter::Validation);
    drop(foreign.finish());
    let error = pollster::block_on(scope.pop());
    assert!(error.is_some(), "{name}: finish reported nothing");

    // A buffer of another device of the same instance: wgpu refuses the bind group or the
    // copy inside encode's error scope, so encode returns the error.
    let (theirs_in, theirs_out) = (buffer(&sibling, 128), buffer(&sibling, out_size));
    let mut enc = ours.device().create_command_encoder(&Default::default());
    for (input, output) in [(&theirs_in, &output), (&input, &theirs_out)] {
        let e = ours
            .encode(
                &mut enc,
                &plan,
                DType::F32,
                r(input),
                Outputs::Region(r(output)),
            )
            .unwrap_err();
        assert!(matches!(e, SplitError::Device(_)), "{name}: {e}");
    }
    // Rows placed by indices from a buffer of the other device: the error names the rows.
    let rows = ops::get_rows(&[4, 8], &[4]).unwrap();
    let ids = buffer(ours.device(), 16);
    let from = RowsBuffers {
        source: r(&theirs_in),
        indices: r(&ids),
        index_type: DType::I32,
        status: None,
    };
    let e = ours
        .prepare(&rows, DType::F32, from, r(&output))
        .unwrap_err();
    assert!(
        matches!(e, SplitError::Device(ref m) if m.contains("binding the rows placed by indices")),
        "{name}: {e}"
    );

    // An encoder of another instance: wgpu-core looks the pipeline up in that instance's
    // registry, finds nothing there and panics inside encode.
    let (_, elsewhere, _elsewhere_queue) = wgpu_split::DeviceChoice::from(backend).open().unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut enc = elsewhere.create_command_encoder(&Default::default());
        let _ = ours.encode(
            &mut enc,
            &plan,
            DType::F32,
            r(&input),
            Outputs::Region(r(&output)),
        );
    }));
    assert!(
        outcome.is_err(),
        "{name}: an encoder of another instance did not panic"
    );

    // A buffer of another instance is looked up by its index in this instance's registry:
    // a panic where no buffer has that index, otherwise another buffer of this device,
    // silently. Either way nothing can report it, which is what the docs say.
    let alien = buffer(&elsewhere, 128);
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut enc = ours.device().create_command_encoder(&Default::default());
        ours.encode(
            &mut enc,
            &plan,
            DType::F32,
            r(&alien),
            Outputs::Region(r(&output)),
        )
    }));
    assert!(
        !matches!(outcome, Ok(Err(_))),
        "{name}: wgpu now reports a buffer of another instance; encode's docs want updating"
    );
}

per_backend!(
    data_that_does_not_match_its_plan,
    caller_buffers_are_checked_before_encoding,
    misuse_wgpu_cannot_report_has_the_documented_symptoms,
);
