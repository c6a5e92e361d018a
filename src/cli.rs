//! Argument parsing and the subcommands.

/// `println!` that ignores a closed stdout (`wgpu-split | head`) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod args;
mod bench_command;
mod concat;
mod demo;
mod exit;
mod info;
mod outputs;
mod pipelines;
mod plot;
mod progress;
mod rows;
mod run;
mod transpose;

pub use exit::{CliError, CliResult};

use clap::Parser;
use std::process::ExitCode;

/// Parses the command line and runs the chosen subcommand.
pub fn main() -> CliResult {
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return Ok(ExitCode::SUCCESS);
            }
            // clap's first line already reads "error: ..."; keep that line alone.
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            return Err(CliError::usage(first.trim_start_matches("error: ")));
        }
    };
    match cli.command {
        None => demo::run(&cli.backend, &cli.adapter),
        Some(args::Command::Demo) => demo::run(&cli.backend, &cli.adapter),
        Some(args::Command::Info(a)) => info::run(&a),
        // The concats read several files into one output; the splits one file into several.
        Some(args::Command::Run(a)) if a.op.is_concat() => concat::run(&a),
        Some(args::Command::Run(a)) if a.op.moves_rows() => rows::run(&a),
        Some(args::Command::Run(a)) => run::run(&a),
        Some(args::Command::Bench(a)) => bench_command::run(&a),
    }
}
