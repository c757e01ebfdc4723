//! MCP over stdio for `cargo fusion call`: the server started as a child, newline-delimited
//! JSON-RPC on its stdin and stdout, and no wait past the deadline.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use fusion_runtime::contract::CONTRACT_ENV;
use serde_json::Value;

use crate::error::{CliError, CliResult};
use crate::process;
use crate::session::Transport;

/// How long a server is given to exit on its own once its stdin is closed, before it is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// A server started as a child, with everything it says read on threads of its own. The
/// child is stopped when this is dropped.
pub(crate) struct StdioTransport {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The server's stdout, a line at a time; closed when it exits.
    lines: Receiver<String>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    deadline: Instant,
    name: String,
}

impl StdioTransport {
    /// Starts `executable` (called `name` in errors); every later wait ends at `deadline`.
    ///
    /// # Errors
    /// When it cannot be started.
    pub(crate) fn start(executable: &Path, name: &str, deadline: Instant) -> CliResult<Self> {
        let mut child = Command::new(executable)
            // Set in the user's shell, it would make the server print its contract and exit
            // instead of serving.
            .env_remove(CONTRACT_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| CliError::new(format!("cannot start the server `{name}`: {error}")))?;
        let (sender, lines) = channel();
        if let Some(stdout) = child.stdout.take() {
            thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if sender.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Self {
            stdin: child.stdin.take(),
            stderr: process::drain(child.stderr.take()),
            child,
            lines,
            deadline,
            name: name.to_owned(),
        })
    }

    /// An error for a server that is gone, with the end of what it wrote on stderr.
    fn died(&mut self, what: &str) -> CliError {
        self.stop();
        let stderr = process::tail(&process::collect(self.stderr.take()));
        let status = self
            .child
            .try_wait()
            .ok()
            .flatten()
            .map_or_else(String::new, |status| format!(" ({status})"));
        CliError::new(format!(
            "the server `{}` failed: {what}{status}\n{stderr}",
            self.name
        ))
    }

    /// Closes the server's stdin (a stdio server ends at EOF), gives it [`EXIT_GRACE`] to
    /// exit, then kills it; the child is reaped either way.
    fn stop(&mut self) {
        drop(self.stdin.take());
        // An error here means the child is already gone.
        let _ = process::wait_until(&mut self.child, Instant::now() + EXIT_GRACE);
    }
}

impl Transport for StdioTransport {
    fn send(&mut self, message: &Value) -> CliResult<()> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(CliError::new("the server's stdin is closed"));
        };
        let mut line = message.to_string();
        line.push('\n');
        let written = stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush());
        written.map_err(|error| self.died(&format!("cannot write to it ({error})")))
    }

    /// Lines that are not JSON are skipped: the server should not write them, but one
    /// stray line is no reason to give up.
    fn receive(&mut self, method: &str) -> CliResult<Value> {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Ok(message) = serde_json::from_str::<Value>(&line) {
                        return Ok(message);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(CliError::new(format!(
                        "the server `{}` did not answer `{method}` in time (see --timeout-secs)",
                        self.name
                    )));
                }
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.died(&format!("it exited before answering `{method}`")));
                }
            }
        }
    }
}

impl Drop for StdioTransport {
    fn drop(&mut self) {
        self.stop();
    }
}
