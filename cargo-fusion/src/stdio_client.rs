//! A minimal MCP client over stdio for `cargo fusion call`: it starts the server, speaks
//! newline-delimited JSON-RPC on its stdin and stdout, and never waits past its deadline.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::error::{CliError, CliResult};
use crate::process;

/// The protocol revision the client asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";

/// How long a server is given to exit on its own once its stdin is closed, before it is
/// killed.
const EXIT_GRACE: Duration = Duration::from_secs(1);

/// A server started as a child, with everything it says read on threads of its own.
pub(crate) struct StdioClient {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The server's stdout, a line at a time; closed when it exits.
    lines: Receiver<String>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    deadline: Instant,
    next_id: u64,
    name: String,
}

/// What a request got back.
pub(crate) enum Reply {
    /// The `result`.
    Result(Value),
    /// A JSON-RPC `error`: its `code` and `message`.
    Error(Value),
}

impl StdioClient {
    /// Starts `executable` (called `name` in errors); every later wait ends at `deadline`.
    ///
    /// # Errors
    /// When it cannot be started.
    pub(crate) fn start(executable: &Path, name: &str, deadline: Instant) -> CliResult<Self> {
        let mut child = Command::new(executable)
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
            next_id: 1,
            name: name.to_owned(),
        })
    }

    /// `initialize`, then `notifications/initialized`: the session is ready for calls.
    ///
    /// # Errors
    /// When the server refuses, dies or does not answer in time.
    pub(crate) fn initialize(&mut self) -> CliResult<()> {
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "cargo-fusion", "version": env!("CARGO_PKG_VERSION") },
        });
        match self.request("initialize", params)? {
            Reply::Result(_) => {}
            Reply::Error(error) => {
                return Err(CliError::new(format!(
                    "the server `{}` refused to initialize: {error}",
                    self.name
                )));
            }
        }
        self.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
    }

    /// Sends a request and waits for its reply, answering what the server asks meanwhile.
    ///
    /// # Errors
    /// When the server dies or does not answer before the deadline.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> CliResult<Reply> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        loop {
            let message = self.receive(method)?;
            if message.get("method").is_some() {
                self.answer_server_message(&message)?;
                continue;
            }
            if message["id"] != id {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Ok(Reply::Error(error.clone()));
            }
            return Ok(Reply::Result(message["result"].clone()));
        }
    }

    /// A request from the server (a ping, a sampling or roots request) gets an answer, so
    /// the server is not left waiting: a ping an empty result, anything else "not found",
    /// since this client declares no capabilities. Notifications need none.
    fn answer_server_message(&mut self, message: &Value) -> CliResult<()> {
        let Some(id) = message.get("id") else {
            return Ok(());
        };
        let reply = if message["method"] == "ping" {
            json!({ "jsonrpc": "2.0", "id": id, "result": {} })
        } else {
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": { "code": -32601, "message": "cargo fusion call answers no requests" },
            })
        };
        self.send(&reply)
    }

    fn send(&mut self, message: &Value) -> CliResult<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| CliError::new("the server's stdin is closed"))?;
        let mut line = message.to_string();
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|error| self.died(&format!("cannot write to it ({error})")))
    }

    /// The next JSON message from the server; lines that are not JSON are skipped (the
    /// server should not write them, but one stray line is no reason to give up).
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

impl Drop for StdioClient {
    fn drop(&mut self) {
        self.stop();
    }
}
