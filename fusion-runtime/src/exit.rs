//! The process exit codes fusion documents (the guide's "Exit codes", `guide/src/exit-codes.md`), shared by the
//! transports, the server and the log.
//!
//! ```
//! assert_eq!(fusion_runtime::exit::EXIT_FATAL, 70);
//! ```

/// Exit code after a handler's fatal error (`EX_SOFTWARE`): the call was answered, the
/// event logged, and the process ends instead of limping on.
pub const EXIT_FATAL: u8 = 70;

/// Exit code when the command line cannot be read (`EX_USAGE`):
/// [`ServerBuilder::serve`](crate::ServerBuilder::serve) given `--http` without a port.
pub const EXIT_USAGE: u8 = 64;

/// Exit code when the server cannot start because of its configuration (`EX_CONFIG`).
pub const EXIT_CONFIG: u8 = 78;

/// How long, after a fatal error, the calls in flight may take to be answered before the
/// process exits (both transports).
pub(crate) const FATAL_ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
