//! Coverage-guided fuzzing of rows placed by indices as the host plans them: a seed draws a
//! gather, a set rows or a paged KV write; see `wgpu_split::fuzzing::check_rows` for what it
//! checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wgpu_split::fuzzing::check_rows;

fuzz_target!(|seed: u64| {
    check_rows(seed);
});
