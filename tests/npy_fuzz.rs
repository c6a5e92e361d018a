//! The .npy reader never panics on any bytes. CI runs a few thousand cases; set
//! `WGPU_SPLIT_FUZZ_CASES` for a long run.
use proptest::prelude::*;

fn cases() -> u32 {
    std::env::var("WGPU_SPLIT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000)
}

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
        let _ = wgpu_split::npy::from_bytes(&file, "fuzz.npy");
        let _ = wgpu_split::npy::from_bytes(&raw, "raw.npy");
    }
}
