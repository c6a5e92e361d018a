//! The `wgpu-split` command: a thin layer over the library.
//!
//! - no arguments: run the spec examples on the default adapter (the demo);
//! - `info`: list adapters and the limits that matter to a split;
//! - `run`: split a `.npy` file into `DIR/output_{i}.npy`;
//! - `bench`: the benchmark suite.
//!
//! Exit codes: 0 success, 1 the GPU result differs from the CPU reference, 2 bad arguments or
//! inputs, 3 no usable adapter or a device error.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::main() {
        Ok(code) => code,
        Err(e) => {
            // One line, whatever the error held.
            eprintln!("error: {}", e.message.replace('\n', " "));
            ExitCode::from(e.code)
        }
    }
}
