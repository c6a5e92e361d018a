//! The ONNX backend node tests for Split (opsets 2, 11, 13, 18), on every test adapter: the
//! expected values of the ONNX test data, and the CPU reference, byte for byte.

#[macro_use]
mod common;

use wgpu_split::ops::{onnx_split, OnnxSplitParts};
use wgpu_split::{GpuSplitter, HostTensor, SplitError};

fn seq(shape: &[usize], from: f32) -> HostTensor {
    let n: usize = shape.iter().product();
    HostTensor::from_slice(shape, &(0..n).map(|i| from + i as f32).collect::<Vec<_>>()).unwrap()
}

/// Runs the case on `gpu` and compares with `expected` (shape, values) and the reference.
fn check(
    gpu: &GpuSplitter,
    input: &HostTensor,
    axis: i64,
    parts: OnnxSplitParts,
    expected: &[(&[usize], &[f32])],
) {
    let plan = onnx_split(input.shape(), axis, &parts).unwrap();
    let want = plan.reference(input).unwrap();
    assert_eq!(want.len(), expected.len());
    for (w, (shape, values)) in want.iter().zip(expected) {
        assert_eq!(w.shape(), *shape);
        assert_eq!(w.to_vec::<f32>().unwrap(), values.to_vec());
    }
    let name = common::name(gpu);
    let got = gpu
        .run(&plan, input)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(
        got == want,
        "{name}: {parts:?} differs from the CPU reference"
    );
}

fn equal_parts_1d_and_default_axis(gpu: &'static GpuSplitter) {
    let x = seq(&[6], 1.0);
    let expected: &[(&[usize], &[f32])] = &[
        (&[2], &[1.0, 2.0]),
        (&[2], &[3.0, 4.0]),
        (&[2], &[5.0, 6.0]),
    ];
    check(gpu, &x, 0, OnnxSplitParts::EqualOutputs(3), expected);
}

fn equal_parts_2d(gpu: &'static GpuSplitter) {
    let x = seq(&[2, 6], 1.0);
    let expected: &[(&[usize], &[f32])] = &[
        (&[2, 3], &[1.0, 2.0, 3.0, 7.0, 8.0, 9.0]),
        (&[2, 3], &[4.0, 5.0, 6.0, 10.0, 11.0, 12.0]),
    ];
    check(gpu, &x, 1, OnnxSplitParts::EqualOutputs(2), expected);
}

fn variable_parts_1d_2d_and_default_axis(gpu: &'static GpuSplitter) {
    let x = seq(&[6], 1.0);
    let expected: &[(&[usize], &[f32])] = &[(&[2], &[1.0, 2.0]), (&[4], &[3.0, 4.0, 5.0, 6.0])];
    check(gpu, &x, 0, OnnxSplitParts::Lengths(vec![2, 4]), expected);
    let x = seq(&[2, 6], 1.0);
    let expected: &[(&[usize], &[f32])] = &[
        (&[2, 2], &[1.0, 2.0, 7.0, 8.0]),
        (&[2, 4], &[3.0, 4.0, 5.0, 6.0, 9.0, 10.0, 11.0, 12.0]),
    ];
    check(gpu, &x, 1, OnnxSplitParts::Lengths(vec![2, 4]), expected);
}

fn zero_size_splits(gpu: &'static GpuSplitter) {
    let x = seq(&[0], 1.0);
    let expected: &[(&[usize], &[f32])] = &[(&[0], &[]), (&[0], &[]), (&[0], &[])];
    check(gpu, &x, 0, OnnxSplitParts::Lengths(vec![0, 0, 0]), expected);
}

fn uneven_splits_opset18(gpu: &'static GpuSplitter) {
    let x = seq(&[7], 1.0);
    let expected: &[(&[usize], &[f32])] = &[
        (&[2], &[1.0, 2.0]),
        (&[2], &[3.0, 4.0]),
        (&[2], &[5.0, 6.0]),
        (&[1], &[7.0]),
    ];
    check(gpu, &x, 0, OnnxSplitParts::NumOutputs(4), expected);
    let x = seq(&[2, 8], 1.0);
    let expected: &[(&[usize], &[f32])] = &[
        (&[2, 3], &[1.0, 2.0, 3.0, 9.0, 10.0, 11.0]),
        (&[2, 3], &[4.0, 5.0, 6.0, 12.0, 13.0, 14.0]),
        (&[2, 2], &[7.0, 8.0, 15.0, 16.0]),
    ];
    check(gpu, &x, 1, OnnxSplitParts::NumOutputs(3), expected);
}

#[test]
fn errors() {
    assert_eq!(
        onnx_split(&[5], 0, &OnnxSplitParts::EqualOutputs(2))
            .unwrap_err()
            .to_string(),
        "number of outputs 2 does not divide axis 0 of length 5"
    );
    // ceil(5 / 4) = 2 leaves -1 for the last chunk: refused, for that reason (Split-18 asks no
    // divisibility: 7 into 4 is 2, 2, 2, 1).
    assert_eq!(
        onnx_split(&[5], 0, &OnnxSplitParts::NumOutputs(4)),
        Err(SplitError::LastChunkNegative {
            num_outputs: 4,
            axis: 0,
            length: 5,
            chunk: 2
        })
    );
    assert!(onnx_split(&[7], 0, &OnnxSplitParts::NumOutputs(4)).is_ok());
    for n in [0, -1] {
        assert_eq!(
            onnx_split(&[5], 0, &OnnxSplitParts::NumOutputs(n)),
            Err(SplitError::CountNotPositive {
                what: "num_outputs",
                count: n
            })
        );
    }
    assert!(matches!(
        onnx_split(&[5], 0, &OnnxSplitParts::Lengths(vec![3, 3])),
        Err(SplitError::LengthsSumMismatch { .. })
    ));
    assert!(matches!(
        onnx_split(&[5], 0, &OnnxSplitParts::Lengths(vec![-1, 6])),
        Err(SplitError::BadLength { .. })
    ));
    assert!(matches!(
        onnx_split(&[5], 1, &OnnxSplitParts::Lengths(vec![5])),
        Err(SplitError::AxisOutOfRange { .. })
    ));
    assert_eq!(
        onnx_split(&[], 0, &OnnxSplitParts::EqualOutputs(1)),
        Err(SplitError::RankZero)
    );
}

per_backend!(
    equal_parts_1d_and_default_axis,
    equal_parts_2d,
    variable_parts_1d_2d_and_default_axis,
    zero_size_splits,
    uneven_splits_opset18,
);
