//! What ends a run of `cargo fusion`: a failure of its own (the build failed, the server
//! could not be read, a config file is malformed), as a sentence for the user.

use std::fmt;

/// A run that could not do what was asked, with the reason as the user should read it.
#[derive(Debug)]
pub(crate) struct CliError {
    message: String,
}

impl CliError {
    /// A failure saying `message`.
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<String> for CliError {
    fn from(message: String) -> Self {
        Self { message }
    }
}

/// The result of a step of `cargo fusion`.
pub(crate) type CliResult<T> = Result<T, CliError>;

/// How a subcommand that ran to its end came out: its exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Done, or the check passed: exit 0.
    Passed,
    /// The check or the call failed (a BREAKING change, a tool error): exit 1.
    Failed,
}
