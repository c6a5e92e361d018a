//! [`CliError`]: an error as the command reports it.

use std::process::ExitCode;
use wgpu_split::SplitError;

/// An error as the command reports it: a one-line message and an exit code.
#[derive(Debug)]
pub struct CliError {
    /// Process exit code.
    pub code: u8,
    /// The message, printed after `error: `.
    pub message: String,
}

impl CliError {
    /// Bad arguments or inputs: exit code 2.
    pub fn usage(message: impl Into<String>) -> Self {
        Self {
            code: 2,
            message: message.into(),
        }
    }
}

impl From<SplitError> for CliError {
    fn from(e: SplitError) -> Self {
        let code = match e {
            SplitError::Mismatch(_) => 1,
            SplitError::NoAdapter(_) | SplitError::Device(_) => 3,
            _ => 2,
        };
        Self {
            code,
            message: e.to_string(),
        }
    }
}

/// Result of a subcommand.
pub type CliResult<T = ExitCode> = Result<T, CliError>;
