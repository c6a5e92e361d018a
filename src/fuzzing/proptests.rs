//! The planner never panics and keeps its invariants on arbitrary inputs, extreme i64 values
//! included ([`check_planner`]), and the .npy reader never panics on any bytes. CI runs a few
//! thousand cases of each; set `WGPU_SPLIT_FUZZ_CASES` for a long run. The coverage-guided run
//! of the planner lives in `fuzz/`.

use super::rows::check_rows;
use super::views::{check_views, ViewCase};
use super::{check_planner, PlannerInput};
use proptest::prelude::*;

fn dim() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..8,
        // Rows of whole 256-byte blocks: long rows that the copy route takes.
        1 => Just(64),
        1 => Just(256),
        1 => 0u64..100_000,
        1 => Just(u64::MAX),
        1 => Just(1 << 32),
        1 => Just(1 << 62),
        1 => any::<u64>(),
    ]
}

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => -3i64..10,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => Just(-1),
        1 => any::<i64>(),
    ]
}

fn input() -> impl Strategy<Value = PlannerInput> {
    (
        prop::collection::vec(dim(), 0..6),
        int(),
        0u8..3,
        0u8..9,
        int(),
        prop::collection::vec(int(), 0..8),
        any::<bool>(),
        any::<u8>(),
    )
        .prop_map(
            |(shape, axis, axis_form, op, scalar, lengths, keepdims, dtype)| PlannerInput {
                shape,
                axis,
                axis_form,
                op,
                scalar,
                lengths,
                keepdims,
                dtype,
            },
        )
}

/// Cases per property: `WGPU_SPLIT_FUZZ_CASES`, or 4,000. A value that is not a number fails
/// by name rather than run the default unnoticed.
fn cases() -> u32 {
    match std::env::var("WGPU_SPLIT_FUZZ_CASES") {
        Ok(value) => value
            .parse()
            .unwrap_or_else(|_| panic!("WGPU_SPLIT_FUZZ_CASES={value:?} is not a number of cases")),
        Err(_) => 4000,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn planner_keeps_its_invariants(input in input()) {
        check_planner(&input);
    }

    #[test]
    fn indexed_rows_stay_in_their_windows(seed in any::<u64>()) {
        check_rows(seed);
    }

    #[test]
    fn views_lower_to_the_bytes_they_name(seed in any::<u64>()) {
        check_views(&ViewCase::random(seed));
    }
}

/// Inputs that once mattered, replayed every run (the fuzz corpus keeps the rest).
#[test]
fn known_edge_cases() {
    let base = PlannerInput {
        shape: vec![6],
        axis: 0,
        axis_form: 0,
        op: 0,
        scalar: 3,
        lengths: vec![],
        keepdims: true,
        dtype: 9,
    };
    let cases = [
        PlannerInput {
            shape: vec![0, u64::MAX],
            axis: 1,
            op: 2,
            ..base.clone()
        },
        PlannerInput {
            shape: vec![0, 1 << 62],
            axis: 1,
            op: 0,
            scalar: 2,
            dtype: 14,
            ..base.clone()
        },
        PlannerInput {
            shape: vec![6],
            op: 1,
            lengths: vec![i64::MAX, i64::MAX, -1],
            ..base.clone()
        },
        PlannerInput {
            shape: vec![6],
            op: 1,
            lengths: vec![i64::MIN, -1],
            ..base.clone()
        },
        PlannerInput {
            shape: vec![5],
            op: 7,
            scalar: i64::MAX,
            ..base.clone()
        },
        PlannerInput {
            shape: vec![5],
            op: 3,
            scalar: i64::MIN,
            ..base.clone()
        },
        PlannerInput {
            shape: vec![1 << 32, 1 << 32],
            axis: -1,
            op: 6,
            scalar: 1,
            ..base.clone()
        },
        PlannerInput {
            shape: vec![3, 5000],
            axis: 1,
            op: 5,
            lengths: vec![4999, 1],
            dtype: 2,
            ..base.clone()
        },
        // Channels: five 2-byte parts of 10-byte rows, split and concatenated back.
        PlannerInput {
            shape: vec![256, 5],
            axis: -1,
            op: 2,
            scalar: 0,
            keepdims: false,
            dtype: 18,
            ..base.clone()
        },
        PlannerInput {
            shape: vec![],
            axis: i64::MIN,
            op: 4,
            ..base
        },
    ];
    for c in &cases {
        check_planner(c);
    }
}

#[cfg(feature = "npy")]
proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// Any bytes after a valid .npy preamble give a result or an error, never a panic.
    #[test]
    fn npy_reader_never_panics(header in "\\{'descr': '[<>|]?[biufcUS]?[0-9]{0,3}', 'fortran_order': (True|False), 'shape': \\(([0-9]{1,20}, ?){0,4}\\), \\}", tail in prop::collection::vec(any::<u8>(), 0..64), raw in prop::collection::vec(any::<u8>(), 0..80)) {
        let mut file = b"\x93NUMPY\x01\x00".to_vec();
        file.extend_from_slice(&(header.len() as u16 + 1).to_le_bytes());
        file.extend_from_slice(header.as_bytes());
        file.push(b'\n');
        file.extend_from_slice(&tail);
        let _ = crate::npy::from_bytes(&file, "fuzz.npy");
        let _ = crate::npy::from_bytes(&raw, "raw.npy");
    }
}
