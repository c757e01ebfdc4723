//! Child processes that cannot hang `cargo fusion`: every wait has a deadline, and a child
//! past it is killed and reaped.

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::error::{CliError, CliResult};

/// How often a wait looks at the child again: short enough that a quick child costs no
/// noticeable time, long enough not to spin.
const POLL_INTERVAL: Duration = Duration::from_millis(10);

/// A child that ran to its end: its exit status and everything it wrote.
pub(crate) struct Finished {
    /// How it exited.
    pub(crate) status: ExitStatus,
    /// Its standard output.
    pub(crate) stdout: Vec<u8>,
    /// Its standard error.
    pub(crate) stderr: Vec<u8>,
}

/// Runs `command` with no input and its output captured, killing it if it has not exited
/// within `timeout`; `what` names it in errors ("the server `demo`").
pub(crate) fn run_to_end(
    mut command: Command,
    timeout: Duration,
    what: &str,
) -> CliResult<Finished> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|error| CliError::new(format!("cannot start {what}: {error}")))?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_until(&mut child, Instant::now() + timeout)
        .map_err(|error| CliError::new(format!("cannot wait for {what}: {error}")))?;
    let stdout = collect(stdout);
    let stderr = collect(stderr);
    match status {
        Some(status) => Ok(Finished {
            status,
            stdout,
            stderr,
        }),
        None => Err(CliError::new(format!(
            "{what} did not finish within {} s and was killed",
            timeout.as_secs()
        ))),
    }
}

/// Waits for `child` until `deadline`: its status, or `None` when the deadline passed (the
/// child is then killed and reaped, so no zombie is left).
pub(crate) fn wait_until(
    child: &mut Child,
    deadline: Instant,
) -> std::io::Result<Option<ExitStatus>> {
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            // It may have exited between the two looks; either way it is gone after this.
            let _ = child.kill();
            child.wait()?;
            return Ok(None);
        }
        thread::sleep(POLL_INTERVAL);
    }
}

/// Reads `pipe` to its end on a thread of its own, so that a child filling one pipe never
/// blocks on it while the other is being read.
pub(crate) fn drain(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
    pipe.map(|mut pipe| {
        thread::spawn(move || {
            let mut bytes = Vec::new();
            // What was read before an error is still worth showing.
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    })
}

/// What a [`drain`] thread read.
pub(crate) fn collect(reader: Option<JoinHandle<Vec<u8>>>) -> Vec<u8> {
    reader
        .and_then(|handle| handle.join().ok())
        .unwrap_or_default()
}

/// The last lines of a child's standard error, for an error message: the end is where a
/// failing program says why.
pub(crate) fn tail(stderr: &[u8]) -> String {
    const SHOWN_LINES: usize = 20;
    let text = String::from_utf8_lossy(stderr);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(SHOWN_LINES);
    lines[start..].join("\n")
}
