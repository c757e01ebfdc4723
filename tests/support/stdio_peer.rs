//! A raw JSON-RPC peer of an example server over stdio: lines in, parsed lines out, every
//! wait bounded, the child killed when the peer is dropped.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    path::Path,
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::mpsc::{self, Receiver},
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// How long one expected answer may take.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// A server process and the client end of its stdio.
pub(crate) struct StdioPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Parsed stdout lines (a line that is not JSON arrives as `{"not_json": line}`).
    answers: Receiver<Value>,
    /// Answers read but not asked for yet.
    stash: Vec<Value>,
    /// Opens the reading of stdout, for a peer spawned with its reading held back.
    start_reading: Option<mpsc::Sender<()>>,
    stderr: super::Drain,
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl StdioPeer {
    /// Spawns `binary` with `args`, `RUST_LOG=info` unless `env` sets it, and reads its
    /// stdout from the start.
    pub(crate) fn spawn(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::spawn_with(binary, args, env, true)
    }

    /// Like [`spawn`](Self::spawn), but nothing reads the server's stdout until
    /// [`start_reading`](Self::start_reading): a client that stopped reading.
    pub(crate) fn spawn_not_reading(binary: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        Self::spawn_with(binary, args, env, false)
    }

    fn spawn_with(binary: &Path, args: &[&str], env: &[(&str, &str)], reading: bool) -> Self {
        let mut command = Command::new(binary);
        command
            .args(args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let stderr = super::drain(child.stderr.take());
        let (open, opened) = mpsc::channel::<()>();
        let (sender, answers) = mpsc::channel();
        thread::spawn(move || {
            if opened.recv().is_err() {
                return;
            }
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or_else(
                    |_| json!({"not_json": line.chars().take(300).collect::<String>()}),
                );
                if sender.send(value).is_err() {
                    break;
                }
            }
        });
        let mut peer = Self {
            stdin: child.stdin.take(),
            child,
            answers,
            stash: Vec::new(),
            start_reading: Some(open),
            stderr,
        };
        if reading {
            peer.start_reading();
        }
        peer
    }

    /// Starts reading the server's stdout.
    pub(crate) fn start_reading(&mut self) {
        if let Some(open) = self.start_reading.take() {
            let _ = open.send(());
        }
    }

    /// Closes the client's end of the server's stdout without reading it: a client that
    /// went away.
    pub(crate) fn close_stdout(&mut self) {
        // The reader thread, never told to start, drops the pipe when its sender goes.
        self.start_reading = None;
    }

    /// The server's process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What the server wrote to stderr so far.
    pub(crate) fn stderr(&self) -> String {
        let bytes = self.stderr.buf.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Writes raw bytes to the server's stdin; `false` once it is closed.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> bool {
        self.stdin
            .as_mut()
            .is_some_and(|stdin| stdin.write_all(bytes).and_then(|()| stdin.flush()).is_ok())
    }

    /// Writes one message as a line.
    pub(crate) fn send(&mut self, message: &Value) -> bool {
        let mut line = serde_json::to_vec(message).expect("a Value serializes");
        line.push(b'\n');
        self.write(&line)
    }

    /// Takes the server's stdin (to write from another thread, or to close it).
    pub(crate) fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The next answer, or `None` when none came within `timeout`.
    pub(crate) fn next(&mut self, timeout: Duration) -> Option<Value> {
        if !self.stash.is_empty() {
            return Some(self.stash.remove(0));
        }
        self.answers.recv_timeout(timeout).ok()
    }

    /// The answer whose id is `id`, within `timeout`; `None` when none came.
    pub(crate) fn answer_within(&mut self, id: &Value, timeout: Duration) -> Option<Value> {
        if let Some(at) = self.stash.iter().position(|a| &a["id"] == id) {
            return Some(self.stash.remove(at));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let answer = match self.answers.recv_timeout(left) {
                Ok(answer) => answer,
                Err(_) => return None,
            };
            if &answer["id"] == id {
                return Some(answer);
            }
            self.stash.push(answer);
        }
    }

    /// The answer whose id is `id`; panics with the server's stderr when none comes.
    pub(crate) fn answer(&mut self, id: &Value) -> Value {
        self.answer_within(id, ANSWER_TIMEOUT).unwrap_or_else(|| {
            panic!(
                "no answer for id {id} within {ANSWER_TIMEOUT:?}\n--- stderr ---\n{}",
                self.stderr()
            )
        })
    }

    /// Sends a request and waits for its answer.
    pub(crate) fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.answer(&id)
    }

    /// Calls a tool and waits for the answer.
    pub(crate) fn call(&mut self, id: Value, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
    }

    /// The MCP handshake.
    pub(crate) fn initialize(&mut self) {
        let init = self.request(
            json!("init"),
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "fusion-tests", "version": "1"}
            }),
        );
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// Proves the server still answers.
    pub(crate) fn alive(&mut self, id: &str) {
        let pong = self.request(json!(id), "ping", json!({}));
        assert_eq!(pong["result"], json!({}), "ping {id}: {pong}");
    }

    /// Sends `signal` (e.g. `"TERM"`) to the server.
    pub(crate) fn signal(&self, signal: &str) {
        super::send_signal(self.pid(), signal);
    }

    /// Waits at most `limit` for the server to exit.
    pub(crate) fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }

    /// The server's resident memory in KiB (Linux), read from `/proc`.
    pub(crate) fn rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
    }
}
