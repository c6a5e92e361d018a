//! Every bad argument or input of the command.

use crate::{s, save, wgpu_split};
use std::path::PathBuf;
use wgpu_split::HostTensor;

/// Every bad argument or input: exit 2, one `error:` line, nothing written.
#[test]
fn error_paths_exit_2_with_one_line_and_leave_dir_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let data: Vec<f32> = (0..24).map(|i| i as f32).collect();
    let x = save(d, "x.npy", &HostTensor::from_slice(&[4, 6], &data).unwrap());
    let scalar = save(
        d,
        "scalar.npy",
        &HostTensor::from_slice(&[], &[1.0f32]).unwrap(),
    );
    let float_axis = save(
        d,
        "fa.npy",
        &HostTensor::from_slice(&[], &[1.0f32]).unwrap(),
    );
    let axis_2d = save(
        d,
        "a2.npy",
        &HostTensor::from_slice(&[1, 1], &[1i64]).unwrap(),
    );
    let lengths_2d = save(
        d,
        "l2.npy",
        &HostTensor::from_slice(&[1, 2], &[3i32, 3]).unwrap(),
    );
    let split_2d = save(
        d,
        "s2.npy",
        &HostTensor::from_slice(&[1, 2], &[3i32, 3]).unwrap(),
    );
    let good = std::fs::read(&x).unwrap();
    let truncated = d.join("t.npy");
    std::fs::write(&truncated, &good[..good.len() - 5]).unwrap();
    let not_npy = d.join("n.npy");
    std::fs::write(&not_npy, b"this is not a numpy file at all").unwrap();
    let (t, n) = (s(&truncated), s(&not_npy));

    // An existing output directory with a file in it must come out unchanged.
    let out_dir = d.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    std::fs::write(out_dir.join("keep.txt"), b"untouched").unwrap();
    let o = s(&out_dir);

    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--op", "split", "--input", &x, "--axis=2", "--num-splits=2"],
            "axis 2 is out of range",
        ),
        (
            vec!["--op", "split", "--input", &x, "--axis=1", "--num-splits=4"],
            "num_splits 4 does not divide axis 1 of length 6",
        ),
        (
            vec!["--op", "split", "--input", &x, "--axis=1", "--num-splits=0"],
            "num_splits 0 must be at least 1",
        ),
        (
            vec!["--op", "split", "--input", &x, "--num-splits=2"],
            "needs --axis",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                &x,
                "--axis",
                &float_axis,
                "--num-splits=2",
            ],
            "axis must have an integer dtype",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis",
                &axis_2d,
                "--lengths=4",
            ],
            "axis must be a scalar or a tensor of shape [1]",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=0",
                "--lengths=2,1",
            ],
            "split_lengths [2, 1] sum to 3, but axis 0 has length 4",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=0",
                "--lengths=-1,-1",
            ],
            "at most one entry may be -1",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=0",
                "--lengths=-2,6",
            ],
            "is negative",
        ),
        (
            vec![
                "--op",
                "variadic-split",
                "--input",
                &x,
                "--axis=1",
                "--lengths",
                &lengths_2d,
            ],
            "split_lengths must be a 1-D tensor",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &x, "--split=0"],
            "split 0 must be positive",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &x, "--split=[1,1]"],
            "split [1, 1] sum to 2",
        ),
        (
            vec![
                "--op",
                "split-to-sequence",
                "--input",
                &x,
                "--split",
                &split_2d,
            ],
            "split must be a scalar or a 1-D tensor",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &x, "--keepdims=2"],
            "--keepdims must be 0 or 1",
        ),
        (
            vec!["--op", "split-to-sequence", "--input", &scalar],
            "data is a scalar (rank 0)",
        ),
        (
            vec!["--op", "split", "--input", &t, "--axis=0", "--num-splits=1"],
            "truncated",
        ),
        (
            vec!["--op", "split", "--input", &n, "--axis=0", "--num-splits=1"],
            "not a valid .npy file",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                "missing.npy",
                "--axis=0",
                "--num-splits=1",
            ],
            "missing.npy",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                &x,
                "--axis=0",
                "--num-splits=2",
                "--keepdims=1",
            ],
            "--keepdims does not apply to --op split",
        ),
        (
            vec![
                "--op",
                "split",
                "--input",
                &x,
                "--axis=0",
                "--num-splits=2",
                "--backend=quantum",
            ],
            "unknown backend",
        ),
        (
            vec!["--op", "nonsense", "--input", &x],
            "invalid value 'nonsense'",
        ),
    ];
    for (args, expect) in cases {
        let mut full = vec!["run", "--out", &o];
        full.extend(args.iter());
        let out = wgpu_split(&full);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
        assert!(lines[0].starts_with("error: "), "{args:?}: {}", lines[0]);
        assert!(
            lines[0].contains(expect),
            "{args:?}: {} lacks {expect:?}",
            lines[0]
        );
        assert!(!out.stderr.contains("panicked"));
        let names: Vec<PathBuf> = std::fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(
            names,
            vec![out_dir.join("keep.txt")],
            "{args:?} wrote into DIR"
        );
    }
    // Nothing was left beside DIR either (temporary directories are cleaned up).
    assert!(std::fs::read_dir(d).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with(".wgpu-split-")));
}
