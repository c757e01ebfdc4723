//! The process exit codes fusion documents (README, "Exit codes"), shared by the
//! transports, the server and the log.

/// Exit code after a handler's fatal error (`EX_SOFTWARE`): the call was answered, the
/// event logged, and the process ends instead of limping on.
pub const EXIT_FATAL: u8 = 70;

/// Exit code when the server cannot start because of its configuration (`EX_CONFIG`).
pub const EXIT_CONFIG: u8 = 78;
