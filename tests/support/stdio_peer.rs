//! A raw JSON-RPC peer of an example server over stdio: lines in, parsed lines out, every
//! wait bounded, the child killed when the peer is dropped.
//!
//! A [`strict`](StdioPeer::strict) peer fails the test on what a well-behaved server never
//! does: a stdout line that is not JSON-RPC, stdout closing while an answer is awaited, stdin
//! refusing a write. Every answer read is counted by id ([`seen`](StdioPeer::seen)), to prove
//! "exactly once".

use std::{
    collections::HashMap,
    io::{BufRead as _, BufReader, Write as _},
    path::Path,
    process::{Child, ChildStdin, Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
        mpsc::{self, Receiver, RecvTimeoutError},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::process::{Drain, drain, send_signal, watchdog};

/// How long one expected answer may take.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// A server process and the client end of its stdio.
pub(crate) struct StdioPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Parsed stdout lines; a line that is not JSON as `Err((why, its first 300 chars))`
    /// (handed out as `{"not_json": line}` unless the peer is strict).
    answers: Receiver<Result<Value, (String, String)>>,
    /// Answers read but not asked for yet.
    stash: Vec<Value>,
    /// Opens the reading of stdout, for a peer spawned with its reading held back.
    start_reading: Option<mpsc::Sender<()>>,
    stderr: Drain,
    /// Every answer read, counted by id (`null` for id-less ones).
    seen: HashMap<String, usize>,
    /// Whether what a well-behaved server never does fails the test.
    strict: bool,
    /// Set when the peer is dropped, so that a [`kill_after`](Self::kill_after) watchdog
    /// stands down before the child is reaped (and its pid can be reused).
    dropped: Arc<AtomicBool>,
}

impl Drop for StdioPeer {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
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
        let stderr = drain(child.stderr.take());
        let (open, opened) = mpsc::channel::<()>();
        let (sender, answers) = mpsc::channel();
        thread::spawn(move || {
            if opened.recv().is_err() {
                return;
            }
            let mut stdout = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let parsed = serde_json::from_slice::<Value>(&line).map_err(|error| {
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim_end_matches(['\r', '\n']).chars().take(300);
                    (error.to_string(), text.collect::<String>())
                });
                if sender.send(parsed).is_err() {
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
            seen: HashMap::new(),
            strict: false,
            dropped: Arc::new(AtomicBool::new(false)),
        };
        if reading {
            peer.start_reading();
        }
        peer
    }

    /// Makes the peer strict: a stdout line that is not JSON-RPC, stdout closing while an
    /// answer is awaited, or a write the server's stdin refuses panics, with the server's
    /// stderr.
    pub(crate) fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// Kills the server (SIGKILL) if it still runs after `limit`, so that blocking reads and
    /// writes on its pipes fail instead of hanging the test.
    pub(crate) fn kill_after(mut self, limit: Duration) -> Self {
        self.dropped = watchdog(self.pid(), limit);
        self
    }

    /// Every answer read so far, counted by id (the id's JSON text; `null` for id-less ones).
    pub(crate) fn seen(&self) -> &HashMap<String, usize> {
        &self.seen
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

    /// Everything the server wrote to stderr, once the pipe has reached its end (after the
    /// process exited), or what came within `limit`.
    pub(crate) fn stderr_to_end(&self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        while self
            .stderr
            .thread
            .as_ref()
            .is_some_and(|thread| !thread.is_finished())
            && Instant::now() < deadline
        {
            thread::sleep(Duration::from_millis(10));
        }
        self.stderr()
    }

    /// The last `max` bytes (or a few more, to a character boundary) of the server's stderr.
    pub(crate) fn stderr_tail(&self, max: usize) -> String {
        let text = self.stderr();
        let start = (text.len().saturating_sub(max)..text.len())
            .find(|at| text.is_char_boundary(*at))
            .unwrap_or(text.len());
        text[start..].to_owned()
    }

    /// Writes raw bytes to the server's stdin; `false` once it is closed (a strict peer
    /// panics instead).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> bool {
        let written = match self.stdin.as_mut() {
            Some(stdin) => stdin.write_all(bytes).and_then(|()| stdin.flush()),
            None => Err(std::io::Error::other("stdin is closed")),
        };
        match written {
            Ok(()) => true,
            Err(error) if self.strict => panic!(
                "the server stopped reading ({error}; exit: {:?})\n--- stderr ---\n{}",
                self.child.try_wait(),
                self.stderr_tail(8_000)
            ),
            Err(_) => false,
        }
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
        self.recv(timeout)
    }

    /// Reads what arrives until nothing has for `quiet`, and returns every answer read but
    /// not asked for yet.
    pub(crate) fn unasked(&mut self, quiet: Duration) -> &[Value] {
        while let Some(answer) = self.recv(quiet) {
            self.stash.push(answer);
        }
        &self.stash
    }

    /// The next line from stdout within `timeout`, counted in [`seen`](Self::seen).
    fn recv(&mut self, timeout: Duration) -> Option<Value> {
        match self.answers.recv_timeout(timeout) {
            Ok(Ok(answer)) => {
                if self.strict && answer["jsonrpc"] != "2.0" {
                    panic!(
                        "stdout carried JSON that is not JSON-RPC: {answer}\n--- stderr ---\n{}",
                        self.stderr_tail(8_000)
                    );
                }
                *self.seen.entry(answer["id"].to_string()).or_default() += 1;
                Some(answer)
            }
            Ok(Err((error, line))) if self.strict => panic!(
                "stdout carried a line that is not JSON ({error}): {line:?}\n--- stderr ---\n{}",
                self.stderr_tail(8_000)
            ),
            Ok(Err((_, line))) => Some(json!({ "not_json": line })),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) if self.strict => panic!(
                "the server closed stdout (exit: {:?})\n--- stderr ---\n{}",
                self.child.try_wait(),
                self.stderr_tail(8_000)
            ),
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// The answer whose id is `id`, within `timeout`; `None` when none came.
    pub(crate) fn answer_within(&mut self, id: &Value, timeout: Duration) -> Option<Value> {
        if let Some(at) = self.stash.iter().position(|a| &a["id"] == id) {
            return Some(self.stash.remove(at));
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            let answer = self.recv(left)?;
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

    /// The MCP handshake; the answer to `initialize`.
    pub(crate) fn initialize(&mut self) -> Value {
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
        init
    }

    /// Proves the server still answers.
    pub(crate) fn alive(&mut self, id: &str) {
        let pong = self.request(json!(id), "ping", json!({}));
        assert_eq!(pong["result"], json!({}), "ping {id}: {pong}");
    }

    /// Sends `signal` (e.g. `"TERM"`) to the server.
    pub(crate) fn signal(&self, signal: &str) {
        send_signal(self.pid(), signal);
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
        super::process::rss_kib(self.pid())
    }

    /// The most resident memory the server has had, in KiB (Linux), read from `/proc`.
    pub(crate) fn peak_rss_kib(&self) -> Option<u64> {
        super::process::peak_rss_kib(self.pid())
    }
}
