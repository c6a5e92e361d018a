//! Coverage-guided fuzzing of parts through views as the planner lowers them: a seed draws a
//! split written through views or a concat read through them; see
//! `wgpu_split::fuzzing::check_views` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wgpu_split::fuzzing::{check_views, ViewCase};

fuzz_target!(|seed: u64| {
    check_views(&ViewCase::random(seed));
});
