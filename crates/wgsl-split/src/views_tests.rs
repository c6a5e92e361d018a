//! Tests of `record_views`.

use super::*;
use crate::gather::GatherMode;
use crate::recording::Role;
use crate::tensor::IntTensor;

/// A split of `[4, 6]` f32 into three parts through contiguous views, each in a buffer of
/// its own (numbered 1 to 3; the whole tensor's is 0), on WebGPU's limits.
fn record(regions: &[HostRegion<u32>]) -> Result<ViewsRecording<u32>> {
    let plan = crate::ops::split(&[4, 6], &IntTensor::scalar(1), 3).unwrap();
    let views: Vec<PartView> = (0..3)
        .map(|k| PartView::contiguous(&plan.part_shape(k)))
        .collect();
    let whole = HostRegion {
        buffer: 0,
        offset: 0,
        buffer_size: 96,
    };
    let limits = Limits::default();
    let tuning = (GatherTuning::of(GatherMode::Gpu), 8);
    record_views(
        Direction::Split,
        &plan,
        DType::F32,
        whole,
        regions,
        &views,
        &limits,
        tuning,
    )
}

/// Each window binds its own buffer from its region, holding what its part's view
/// reaches, in batches as the device's dynamic bindings allow; a region that breaks a
/// rule is refused, naming it.
#[test]
fn a_recording_of_views_binds_its_windows_and_refuses_bad_regions() {
    let region = |buffer, offset| HostRegion {
        buffer,
        offset,
        buffer_size: 1024,
    };
    let regions = [region(1, 0), region(2, 256), region(3, 512)];
    let recorded = record(&regions).unwrap();
    // WebGPU's 4 dynamic storage buffers bind two outputs' buffers a dispatch.
    let windows: Vec<Vec<(u32, u64, Vec<usize>)>> = (recorded.batches.iter())
        .map(|b| {
            (b.windows.iter())
                .map(|w| (w.buffer, w.offset, w.parts.clone()))
                .collect()
        })
        .collect();
    let want = [
        vec![(1, 0, vec![0]), (2, 256, vec![1])],
        vec![(3, 512, vec![2])],
    ];
    assert_eq!(windows, want);
    for batch in &recorded.batches {
        assert!(batch.recording.dispatches().count() > 0);
        for d in batch.recording.dispatches() {
            for b in &d.binds.list {
                if let Role::Output(k) = b.role {
                    let w = &batch.windows[k as usize];
                    assert!(b.size.is_some_and(|size| size <= w.size), "{b:?} {w:?}");
                }
            }
        }
    }
    assert_eq!(recorded.reach, [8, 8, 8]);
    let refused = |regions: &[HostRegion<u32>]| record(regions).unwrap_err().to_string();
    let e = refused(&[region(1, 0), region(2, 100), region(3, 512)]);
    assert!(e.contains("output 1 offset 100"), "{e}");
    let e = refused(&[region(1, 0), region(0, 256), region(3, 512)]);
    assert!(e.contains("output 1 is in the input's buffer"), "{e}");
    let small = HostRegion {
        buffer: 3,
        offset: 0,
        buffer_size: 16,
    };
    let e = refused(&[region(1, 0), region(2, 256), small]);
    assert!(e.contains("output 2") && e.contains("which holds 4"), "{e}");
    let e = refused(&[region(1, 0), region(1, 16), region(3, 512)]);
    assert!(e.contains("output"), "{e}");
}
