//! The load driver: one stdio MCP server, one connection, C `tools/call` requests in
//! flight.
//!
//! [`run`] spawns the server (its stderr goes to a file), does the handshake
//! (`initialize`, `notifications/initialized`, then `tools/list` to check the tool is
//! there; a 2026-07-28 client, [`Client::Current`], sends no `initialize` and names its
//! revision, its name and its capabilities in every request's `_meta`), runs a warm-up, then the measured calls, and closes stdin. Two threads share
//! the pipe: this one writes (a batch of request lines whenever fewer than C are
//! unanswered, one `write` per batch), a reader thread parses every line the server
//! writes and records each id's first answer. Every id must be answered exactly once and
//! not with an error (a JSON-RPC error or `isError: true`); anything else is counted in
//! [`Violations`], with examples.
//!
//! The run is bounded: a watchdog kills the server with SIGKILL when the hard timeout
//! passes, which ends every blocking read and write, and the server is killed on every
//! exit path, including a panic in the driver (the guard's `Drop`).

use std::{
    fmt,
    fs::File,
    io::{self, Read as _, Seek as _, SeekFrom, Write as _},
    path::PathBuf,
    process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc,
    },
    thread::{self, JoinHandle, Thread},
    time::{Duration, Instant},
};

use serde::{Deserialize, de::IgnoredAny};
use serde_json::{Value, json};

use crate::{
    process_stats::{self, CpuTicks},
    stats::percentile,
};

/// The protocol version the driver asks for in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The revision a [`Client::Current`] names in every request's `_meta`.
pub const CURRENT_PROTOCOL_VERSION: &str = "2026-07-28";

/// How the driver speaks MCP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Client {
    /// A session opened with `initialize` on [`PROTOCOL_VERSION`]; calls carry no `_meta`.
    #[default]
    Classic,
    /// A 2026-07-28 client: no `initialize`; every request's `_meta` names the revision,
    /// the client and its capabilities (none), as that revision requires.
    Current,
}

impl Client {
    /// From its command-line name: `classic` or `current`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "classic" => Some(Self::Classic),
            "current" => Some(Self::Current),
            _ => None,
        }
    }

    /// The `_meta` every request of this client carries, if any.
    fn meta(self) -> Option<Value> {
        match self {
            Self::Classic => None,
            Self::Current => Some(json!({
                "io.modelcontextprotocol/protocolVersion": CURRENT_PROTOCOL_VERSION,
                "io.modelcontextprotocol/clientInfo":
                    {"name": "fusion-loadgen", "version": env!("CARGO_PKG_VERSION")},
                "io.modelcontextprotocol/clientCapabilities": {},
            })),
        }
    }
}

/// Request ids below this one belong to the handshake; calls start here.
const FIRST_CALL_ID: u64 = 2;

/// How long a server may take to exit after its stdin is closed before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// The longest line the reader buffers; longer ones are reported and skipped.
const MAX_LINE: usize = 64 * 1024 * 1024;

/// Examples of violations kept for the report.
const MAX_EXAMPLES: usize = 5;

/// What to run and how hard.
#[derive(Clone, Debug)]
pub struct LoadConfig {
    /// The server's program and arguments (run directly, not through a shell).
    pub command: Vec<String>,
    /// Requests kept in flight.
    pub concurrency: usize,
    /// Measured calls.
    pub calls: u64,
    /// Calls before the measured ones, excluded from every number.
    pub warmup: u64,
    /// The tool to call.
    pub tool: String,
    /// Its arguments (a JSON object).
    pub arguments: Value,
    /// How the driver speaks MCP (`initialize`d, or 2026-07-28 without it).
    pub client: Client,
    /// Hard limit for the whole run, handshake included; the server is killed then.
    pub timeout: Duration,
    /// How long calls may stay in flight with no answer at all before the run stops
    /// (a server that lost a request would otherwise hold the run until `timeout`).
    pub idle_timeout: Duration,
    /// Where the server's stderr goes (truncated first); `None`: a file in the temporary
    /// directory, removed after a clean run.
    pub stderr: Option<PathBuf>,
}

impl LoadConfig {
    /// `echo {"text":"hi"}` at C=1, 20,000 calls after 2,000 warm-up ones, 120 s limit,
    /// 10 s without any answer.
    pub fn new(command: Vec<String>) -> Self {
        Self {
            command,
            concurrency: 1,
            calls: 20_000,
            warmup: 2_000,
            tool: "echo".to_owned(),
            arguments: json!({"text": "hi"}),
            client: Client::Classic,
            timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(10),
            stderr: None,
        }
    }
}

/// The server as it introduced itself in `initialize`.
#[derive(Clone, Debug, Default)]
pub struct ServerIdentity {
    /// `serverInfo.name`.
    pub name: String,
    /// `serverInfo.version`.
    pub version: String,
    /// The negotiated `protocolVersion`.
    pub protocol_version: String,
}

/// How the server ended after its stdin was closed.
#[derive(Clone, Copy, Debug)]
pub enum Shutdown {
    /// It exited by itself, with this status.
    Exited(ExitStatus),
    /// It was still running after the grace period and was killed.
    Killed,
}

/// Answers that break "every id answered exactly once, and not with an error".
#[derive(Clone, Debug, Default)]
pub struct Violations {
    /// Ids sent and never answered.
    pub missing: u64,
    /// Second (or later) answers to the same id.
    pub duplicates: u64,
    /// Answers to ids that were never sent (or are not numbers).
    pub unknown_ids: u64,
    /// Answers with a JSON-RPC `error`.
    pub rpc_errors: u64,
    /// Results with `isError: true`.
    pub tool_errors: u64,
    /// Answers with neither `result` nor `error`, or without an id.
    pub malformed_answers: u64,
    /// Lines that are not JSON.
    pub unparseable_lines: u64,
    /// The first few offending lines, shortened, each with what was wrong.
    pub examples: Vec<String>,
}

impl Violations {
    /// How many violations in all.
    pub fn total(&self) -> u64 {
        self.missing
            + self.duplicates
            + self.unknown_ids
            + self.rpc_errors
            + self.tool_errors
            + self.malformed_answers
            + self.unparseable_lines
    }

    fn example(&mut self, what: &str, line: &[u8]) {
        if self.examples.len() < MAX_EXAMPLES {
            self.examples
                .push(format!("{what}: {}", shorten(line, 240)));
        }
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counts = [
            ("missing", self.missing),
            ("duplicate", self.duplicates),
            ("unknown id", self.unknown_ids),
            ("JSON-RPC error", self.rpc_errors),
            ("isError", self.tool_errors),
            ("malformed answer", self.malformed_answers),
            ("unparseable line", self.unparseable_lines),
        ];
        let listed: Vec<String> = counts
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(name, count)| format!("{count} {name}"))
            .collect();
        if listed.is_empty() {
            return f.write_str("none");
        }
        f.write_str(&listed.join(", "))?;
        for example in &self.examples {
            write!(f, "\n    e.g. {example}")?;
        }
        Ok(())
    }
}

/// What one run measured.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The server as it introduced itself.
    pub server: ServerIdentity,
    /// Requests kept in flight.
    pub concurrency: usize,
    /// Measured calls.
    pub calls: u64,
    /// Warm-up calls before them.
    pub warmup: u64,
    /// Wall time of the measured calls, from the first request written to the last
    /// answer read.
    pub elapsed: Duration,
    /// Median latency (request written to answer read).
    pub p50: Duration,
    /// 99th percentile latency.
    pub p99: Duration,
    /// Slowest call.
    pub max: Duration,
    /// The server's CPU time (user + system, all threads) over the measured window.
    pub server_cpu: Duration,
    /// The driver's own CPU time over the same window.
    pub driver_cpu: Duration,
    /// The server's peak resident set size (`VmHWM`) at the end of the window, in KiB.
    pub peak_rss_kib: u64,
    /// Broken promises; empty for a clean run.
    pub violations: Violations,
    /// Notifications and requests the server sent (not answers).
    pub server_messages: u64,
    /// How the server ended after stdin closed.
    pub shutdown: Shutdown,
    /// Where the server's stderr went (removed after a clean run unless
    /// [`LoadConfig::stderr`] named it).
    pub stderr_path: PathBuf,
}

impl RunReport {
    /// Measured calls per second of wall time.
    pub fn calls_per_sec(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Server CPU per call, in µs.
    pub fn server_cpu_us_per_call(&self) -> f64 {
        self.server_cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    /// Driver CPU per call, in µs.
    pub fn driver_cpu_us_per_call(&self) -> f64 {
        self.driver_cpu.as_secs_f64() * 1e6 / self.calls.max(1) as f64
    }

    /// Whether every id was answered exactly once, without an error.
    pub fn is_clean(&self) -> bool {
        self.violations.total() == 0
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "server      {} {} (protocol {})",
            self.server.name, self.server.version, self.server.protocol_version
        )?;
        writeln!(
            f,
            "load        C={}, {} calls after {} warm-up, {:.2} s",
            self.concurrency,
            self.calls,
            self.warmup,
            self.elapsed.as_secs_f64()
        )?;
        writeln!(f, "calls/s     {:.0}", self.calls_per_sec())?;
        writeln!(
            f,
            "latency     p50 {} µs, p99 {} µs, max {} µs",
            self.p50.as_micros(),
            self.p99.as_micros(),
            self.max.as_micros()
        )?;
        writeln!(
            f,
            "server CPU  {:.2} µs/call ({:.3} s in the window)",
            self.server_cpu_us_per_call(),
            self.server_cpu.as_secs_f64()
        )?;
        writeln!(
            f,
            "driver CPU  {:.2} µs/call",
            self.driver_cpu_us_per_call()
        )?;
        writeln!(
            f,
            "peak RSS    {:.1} MiB (VmHWM)",
            self.peak_rss_kib as f64 / 1024.0
        )?;
        let shutdown = match self.shutdown {
            Shutdown::Exited(status) => format!("exited after stdin closed ({status})"),
            Shutdown::Killed => format!(
                "still running {} s after stdin closed: killed",
                SHUTDOWN_GRACE.as_secs()
            ),
        };
        writeln!(f, "shutdown    {shutdown}")?;
        if self.server_messages > 0 {
            writeln!(
                f,
                "server sent {} notifications or requests",
                self.server_messages
            )?;
        }
        write!(f, "violations  {}", self.violations)
    }
}

/// Why a run stopped before it could report.
#[derive(Debug)]
pub enum RunError {
    /// The configuration cannot be run.
    Config(String),
    /// The server could not be started.
    Spawn {
        /// The program.
        program: String,
        /// Why.
        source: io::Error,
    },
    /// The stderr file could not be created.
    Stderr {
        /// Its path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The run stopped: the handshake failed, the server died, went silent past the
    /// timeout, or a write failed.
    Stopped(Box<StoppedRun>),
}

/// Where and why a run stopped, and what was seen until then.
#[derive(Debug)]
pub struct StoppedRun {
    /// Where in the run (handshake, warm-up, measured calls).
    pub phase: &'static str,
    /// What happened.
    pub reason: String,
    /// Calls answered (at least once) so far.
    pub answered: u64,
    /// Calls sent so far; `violations.missing` is those sent and not answered.
    pub sent: u64,
    /// Calls planned (warm-up and measured).
    pub planned: u64,
    /// How the server ended (it is killed when it had not).
    pub status: Option<ExitStatus>,
    /// Violations seen before the stop.
    pub violations: Violations,
    /// The end of the server's stderr.
    pub stderr_tail: String,
    /// Where the whole stderr is.
    pub stderr_path: PathBuf,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(message) => write!(f, "{message}"),
            Self::Spawn { program, source } => write!(f, "cannot start `{program}`: {source}"),
            Self::Stderr { path, source } => {
                write!(f, "cannot create {}: {source}", path.display())
            }
            Self::Stopped(stopped) => {
                let StoppedRun {
                    phase,
                    reason,
                    answered,
                    sent,
                    planned,
                    status,
                    violations,
                    stderr_tail,
                    stderr_path,
                } = stopped.as_ref();
                write!(
                    f,
                    "the run stopped during the {phase}: {reason}\n  answered {answered} of \
                     {sent} calls sent ({planned} planned)"
                )?;
                if let Some(status) = status {
                    write!(f, "; server {status}")?;
                }
                write!(f, "\n  violations: {violations}")?;
                write!(f, "\n  server stderr: {}", stderr_path.display())?;
                if !stderr_tail.is_empty() {
                    write!(f, ", ending with:\n{stderr_tail}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RunError {}

/// Runs one load test, as [the module](self) describes.
pub fn run(config: &LoadConfig) -> Result<RunReport, RunError> {
    if config.concurrency == 0 || config.calls == 0 {
        return Err(RunError::Config(
            "concurrency and calls must be at least 1".to_owned(),
        ));
    }
    let Some(program) = config.command.first() else {
        return Err(RunError::Config("the server command is empty".to_owned()));
    };
    let template = RequestTemplate::new(&config.tool, &config.arguments, config.client)?;
    // A stderr file of our own choosing is removed after a clean run; one the caller
    // named is kept.
    let (stderr_path, remove_stderr) = match &config.stderr {
        Some(path) => (path.clone(), false),
        None => (
            std::env::temp_dir().join(format!("fusion-loadgen-{}.stderr", std::process::id())),
            true,
        ),
    };
    let stderr = File::create(&stderr_path).map_err(|source| RunError::Stderr {
        path: stderr_path.clone(),
        source,
    })?;

    let total_calls = config.warmup + config.calls;
    let shared = Arc::new(Shared::new(total_calls));
    let (mut server, stdin, stdout) =
        ServerProcess::spawn(program, &config.command[1..], stderr, config, &shared)?;
    let (control_tx, control_rx) = mpsc::channel();
    let (outcome_tx, outcome_rx) = mpsc::channel();
    let reader_shared = Arc::clone(&shared);
    let reader = thread::Builder::new()
        .name("loadgen-reader".into())
        .spawn(move || {
            let outcome = read_answers(stdout, &reader_shared, &control_tx);
            reader_shared.reader_done.store(true, Ordering::Release);
            reader_shared.writer.unpark();
            drop(control_tx);
            let _ = outcome_tx.send(outcome);
        })
        .map_err(|source| RunError::Spawn {
            program: "the reader thread".into(),
            source,
        })?;

    let mut driver = Driver {
        config,
        shared: &shared,
        stdin: Some(stdin),
        template,
        next_id: FIRST_CALL_ID,
        batch: Vec::with_capacity(64 * 1024),
    };
    let measured = driver.handshake(&control_rx).and_then(|identity| {
        driver.pump(config.warmup, "warm-up")?;
        let server_before = process_stats::cpu_ticks(Some(server.pid()));
        let driver_before = process_stats::cpu_ticks(None);
        let started = Instant::now();
        driver.pump(config.calls, "measured calls")?;
        let elapsed = started.elapsed();
        let server_after = process_stats::cpu_ticks(Some(server.pid()));
        let driver_after = process_stats::cpu_ticks(None);
        let peak_rss = process_stats::peak_rss_kib(Some(server.pid()));
        let cpu = |before: io::Result<CpuTicks>, after: io::Result<CpuTicks>| match (before, after)
        {
            (Ok(before), Ok(after)) => Ok(after.since(before)),
            (Err(error), _) | (_, Err(error)) => Err(error),
        };
        Ok((
            identity,
            elapsed,
            cpu(server_before, server_after),
            cpu(driver_before, driver_after),
            peak_rss,
        ))
    });
    // Closing stdin is how a client says goodbye on stdio.
    drop(driver.stdin.take());

    match measured {
        Ok((server_identity, elapsed, server_cpu, driver_cpu, peak_rss)) => {
            let shutdown = server.wait_or_kill(SHUTDOWN_GRACE);
            let outcome = finish_reader(reader, &outcome_rx, &shared);
            let mut violations = outcome.violations;
            violations.missing = total_calls.saturating_sub(outcome.answered);
            let proc_error = |what: &str, error: io::Error| {
                RunError::Stopped(Box::new(StoppedRun {
                    phase: "measured calls",
                    reason: format!("cannot read the server's {what} in /proc: {error}"),
                    answered: outcome.answered,
                    sent: total_calls,
                    planned: total_calls,
                    status: None,
                    violations: violations.clone(),
                    stderr_tail: String::new(),
                    stderr_path: stderr_path.clone(),
                }))
            };
            let server_cpu = server_cpu.map_err(|e| proc_error("CPU time", e))?;
            let driver_cpu = driver_cpu.map_err(|e| proc_error("CPU time (driver)", e))?;
            let peak_rss_kib = peak_rss.map_err(|e| proc_error("peak RSS", e))?;
            let mut latencies: Vec<u64> = shared.latency_ns[config.warmup as usize..]
                .iter()
                .map(|latency| latency.load(Ordering::Acquire))
                .collect();
            latencies.sort_unstable();
            if remove_stderr && violations.total() == 0 {
                let _ = std::fs::remove_file(&stderr_path);
            }
            let at = |p: f64| Duration::from_nanos(percentile(&latencies, p).unwrap_or(0));
            Ok(RunReport {
                server: server_identity,
                concurrency: config.concurrency,
                calls: config.calls,
                warmup: config.warmup,
                elapsed,
                p50: at(50.0),
                p99: at(99.0),
                max: at(100.0),
                server_cpu,
                driver_cpu,
                peak_rss_kib,
                violations,
                server_messages: outcome.server_messages,
                shutdown,
                stderr_path,
            })
        }
        Err(stop) => {
            let status = server.kill();
            let outcome = finish_reader(reader, &outcome_rx, &shared);
            let mut violations = outcome.violations;
            let sent = driver.next_id - FIRST_CALL_ID;
            violations.missing = sent.saturating_sub(outcome.answered);
            let reason = if shared.timed_out.load(Ordering::Acquire) {
                format!(
                    "the hard timeout of {} s passed ({}); the server was killed",
                    config.timeout.as_secs_f64(),
                    stop.reason
                )
            } else {
                stop.reason
            };
            Err(RunError::Stopped(Box::new(StoppedRun {
                phase: stop.phase,
                reason,
                answered: outcome.answered,
                sent,
                planned: total_calls,
                status,
                violations,
                stderr_tail: tail(&stderr_path, 1500),
                stderr_path,
            })))
        }
    }
}

/// The request line, cut around its id.
struct RequestTemplate {
    prefix: &'static [u8],
    suffix: Vec<u8>,
}

impl RequestTemplate {
    fn new(tool: &str, arguments: &Value, client: Client) -> Result<Self, RunError> {
        if !arguments.is_object() {
            return Err(RunError::Config(format!(
                "the tool's arguments must be a JSON object, not `{arguments}`"
            )));
        }
        let mut params = json!({"name": tool, "arguments": arguments});
        if let Some(meta) = client.meta() {
            params["_meta"] = meta;
        }
        let suffix = format!(",\"method\":\"tools/call\",\"params\":{params}}}\n");
        Ok(Self {
            prefix: br#"{"jsonrpc":"2.0","id":"#,
            suffix: suffix.into_bytes(),
        })
    }

    fn write(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prefix);
        // Writing to a Vec cannot fail.
        let _ = write!(out, "{id}");
        out.extend_from_slice(&self.suffix);
    }
}

/// What the writer and the reader share.
struct Shared {
    epoch: Instant,
    /// When each call was written, in ns since `epoch`, by call index.
    sent_ns: Box<[AtomicU64]>,
    /// Each call's latency in ns, by call index (set on its first answer).
    latency_ns: Box<[AtomicU64]>,
    /// Call ids answered at least once.
    answered: AtomicU64,
    /// The reader has seen end of file (or a read error).
    reader_done: AtomicBool,
    /// The watchdog killed the server.
    timed_out: AtomicBool,
    /// The writing thread, woken by the reader on progress.
    writer: Thread,
}

impl Shared {
    fn new(total_calls: u64) -> Self {
        let slots = || (0..total_calls).map(|_| AtomicU64::new(0)).collect();
        Self {
            epoch: Instant::now(),
            sent_ns: slots(),
            latency_ns: slots(),
            answered: AtomicU64::new(0),
            reader_done: AtomicBool::new(false),
            timed_out: AtomicBool::new(false),
            writer: thread::current(),
        }
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// Why the writer stopped.
struct Stop {
    phase: &'static str,
    reason: String,
}

struct Driver<'a> {
    config: &'a LoadConfig,
    shared: &'a Shared,
    stdin: Option<ChildStdin>,
    template: RequestTemplate,
    next_id: u64,
    batch: Vec<u8>,
}

impl Driver<'_> {
    fn send(&mut self, bytes: &[u8], phase: &'static str) -> Result<(), Stop> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Stop {
                phase,
                reason: "stdin is closed".into(),
            });
        };
        stdin.write_all(bytes).map_err(|error| Stop {
            phase,
            reason: format!("writing to the server's stdin failed: {error}"),
        })
    }

    /// `initialize`, `notifications/initialized`, `tools/list`; for a 2026-07-28 client,
    /// `tools/list` alone (its first request opens the session).
    fn handshake(&mut self, control: &mpsc::Receiver<Value>) -> Result<ServerIdentity, Stop> {
        const PHASE: &str = "handshake";
        if let Some(meta) = self.config.client.meta() {
            let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}});
            self.send(format!("{list}\n").as_bytes(), PHASE)?;
            let answer = self.await_control(control, 1)?;
            self.check_listed(&answer)?;
            // 2026-07-28 has no `initialize` result: the server may name itself in a
            // result's `_meta`.
            let text = |pointer: &str| {
                answer
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned()
            };
            return Ok(ServerIdentity {
                name: text("/result/_meta/io.modelcontextprotocol~1serverInfo/name"),
                version: text("/result/_meta/io.modelcontextprotocol~1serverInfo/version"),
                protocol_version: CURRENT_PROTOCOL_VERSION.to_owned(),
            });
        }
        let initialize = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "fusion-loadgen", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        self.send(format!("{initialize}\n").as_bytes(), PHASE)?;
        let answer = self.await_control(control, 0)?;
        let result = answer.get("result").ok_or_else(|| Stop {
            phase: PHASE,
            reason: format!(
                "`initialize` failed: {}",
                shorten(answer.to_string().as_bytes(), 400)
            ),
        })?;
        let text = |pointer: &str| {
            result
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned()
        };
        let identity = ServerIdentity {
            name: text("/serverInfo/name"),
            version: text("/serverInfo/version"),
            protocol_version: text("/protocolVersion"),
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        self.send(format!("{initialized}\n{list}\n").as_bytes(), PHASE)?;
        let answer = self.await_control(control, 1)?;
        self.check_listed(&answer)?;
        Ok(identity)
    }

    /// The `tools/list` answer lists the tool to call.
    fn check_listed(&self, answer: &Value) -> Result<(), Stop> {
        const PHASE: &str = "handshake";
        let names: Vec<&str> = answer
            .pointer("/result/tools")
            .and_then(Value::as_array)
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                    .collect()
            })
            .unwrap_or_default();
        if !names.contains(&self.config.tool.as_str()) {
            return Err(Stop {
                phase: PHASE,
                reason: format!(
                    "`tools/list` has no tool `{}` (it lists {names:?}); answer: {}",
                    self.config.tool,
                    shorten(answer.to_string().as_bytes(), 400)
                ),
            });
        }
        Ok(())
    }

    fn await_control(&self, control: &mpsc::Receiver<Value>, id: u64) -> Result<Value, Stop> {
        let stop = |reason: String| Stop {
            phase: "handshake",
            reason,
        };
        loop {
            // The watchdog ends the wait at the deadline by killing the server, which
            // closes the channel; the timeout here only bounds a wait on a leaked pipe.
            match control.recv_timeout(self.config.timeout + Duration::from_secs(5)) {
                Ok(answer) if answer.get("id").and_then(Value::as_u64) == Some(id) => {
                    return Ok(answer);
                }
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(stop(format!("no answer to request {id}")));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(stop(format!(
                        "the server closed its stdout before answering request {id}"
                    )));
                }
            }
        }
    }

    /// Sends `count` calls, never more than C unanswered, and waits for all answers.
    fn pump(&mut self, count: u64, phase: &'static str) -> Result<(), Stop> {
        let concurrency = self.config.concurrency as u64;
        let end_id = self.next_id + count;
        // Answers expected (cumulative over phases) when this phase is done.
        let expected = end_id - FIRST_CALL_ID;
        let mut last_answered = u64::MAX;
        let mut last_progress = Instant::now();
        loop {
            let answered = self.shared.answered.load(Ordering::Acquire);
            if answered >= expected {
                return Ok(());
            }
            if answered != last_answered {
                last_answered = answered;
                last_progress = Instant::now();
            }
            let sent = self.next_id - FIRST_CALL_ID;
            let in_flight = sent.saturating_sub(answered);
            if self.next_id < end_id && in_flight < concurrency {
                let room = (concurrency - in_flight).min(end_id - self.next_id);
                let mut batch = std::mem::take(&mut self.batch);
                batch.clear();
                let now = self.shared.now_ns();
                for id in self.next_id..self.next_id + room {
                    let index = (id - FIRST_CALL_ID) as usize;
                    self.shared.sent_ns[index].store(now, Ordering::Release);
                    self.template.write(id, &mut batch);
                }
                self.next_id += room;
                let sent = self.send(&batch, phase);
                self.batch = batch;
                sent?;
                continue;
            }
            if self.shared.reader_done.load(Ordering::Acquire) {
                // One last look: the reader may have counted answers just before EOF.
                if self.shared.answered.load(Ordering::Acquire) >= expected {
                    return Ok(());
                }
                return Err(Stop {
                    phase,
                    reason: "the server closed its stdout (it exited or was killed)".into(),
                });
            }
            if last_progress.elapsed() >= self.config.idle_timeout {
                let in_flight = (self.next_id - FIRST_CALL_ID).saturating_sub(answered);
                return Err(Stop {
                    phase,
                    reason: format!(
                        "no answer for {:.1} s with {in_flight} calls in flight",
                        self.config.idle_timeout.as_secs_f64()
                    ),
                });
            }
            // The reader unparks this thread after each chunk that answered something.
            thread::park_timeout(Duration::from_millis(100).min(self.config.idle_timeout));
        }
    }
}

/// What the reader saw, when its pipe closed.
struct ReaderOutcome {
    answered: u64,
    violations: Violations,
    server_messages: u64,
}

/// The fields of a line that matter; the rest is skipped without being kept.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<ResultHead>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct ResultHead {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

fn read_answers(
    mut stdout: ChildStdout,
    shared: &Shared,
    control: &mpsc::Sender<Value>,
) -> ReaderOutcome {
    let total = shared.sent_ns.len();
    let mut seen = vec![false; total];
    let mut outcome = ReaderOutcome {
        answered: 0,
        violations: Violations::default(),
        server_messages: 0,
    };
    let mut buffer = vec![0u8; 256 * 1024];
    let (mut start, mut end) = (0usize, 0usize);
    let mut skipping = false;
    loop {
        if start > 0 {
            buffer.copy_within(start..end, 0);
            end -= start;
            start = 0;
        }
        if end == buffer.len() {
            if buffer.len() >= MAX_LINE {
                // A server that never ends its line must not eat the driver's memory:
                // report it, drop what is buffered and skip to the next newline.
                outcome.violations.unparseable_lines += 1;
                outcome
                    .violations
                    .example("a line longer than 64 MiB", &buffer[..256]);
                end = 0;
                skipping = true;
            } else {
                // A line longer than the buffer: grow it (answers are small; this is rare).
                buffer.resize(buffer.len() * 2, 0);
            }
        }
        let read = match stdout.read(&mut buffer[end..]) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(error) => {
                outcome.violations.example(
                    "reading the server's stdout failed",
                    error.to_string().as_bytes(),
                );
                break;
            }
        };
        end += read;
        if skipping {
            match memchr::memchr(b'\n', &buffer[..end]) {
                Some(newline) => {
                    start = newline + 1;
                    skipping = false;
                }
                None => {
                    end = 0;
                    continue;
                }
            }
        }
        let now = shared.now_ns();
        let before = outcome.answered;
        while let Some(newline) = memchr::memchr(b'\n', &buffer[start..end]) {
            let line = &buffer[start..start + newline];
            start += newline + 1;
            handle_line(line, now, shared, &mut seen, &mut outcome, control);
        }
        if outcome.answered > before {
            shared
                .answered
                .fetch_add(outcome.answered - before, Ordering::AcqRel);
            shared.writer.unpark();
        }
    }
    if !skipping && start < end && !buffer[start..end].iter().all(u8::is_ascii_whitespace) {
        outcome.violations.unparseable_lines += 1;
        outcome
            .violations
            .example("unterminated last line", &buffer[start..end]);
    }
    outcome
}

fn handle_line(
    line: &[u8],
    now_ns: u64,
    shared: &Shared,
    seen: &mut [bool],
    outcome: &mut ReaderOutcome,
    control: &mpsc::Sender<Value>,
) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    let violations = &mut outcome.violations;
    let message: Incoming = match serde_json::from_slice(line) {
        Ok(message) => message,
        Err(error) => {
            violations.unparseable_lines += 1;
            violations.example(&format!("not JSON ({error})"), line);
            return;
        }
    };
    if message.method.is_some() {
        outcome.server_messages += 1;
        return;
    }
    let Some(id) = message.id else {
        violations.malformed_answers += 1;
        violations.example("an answer without an id", line);
        return;
    };
    let index = match id.as_u64() {
        Some(id) if id < FIRST_CALL_ID => {
            if let Ok(value) = serde_json::from_slice(line) {
                let _ = control.send(value);
            }
            return;
        }
        Some(id) => usize::try_from(id - FIRST_CALL_ID)
            .ok()
            .filter(|&index| index < seen.len()),
        None => None,
    };
    let Some(index) = index else {
        violations.unknown_ids += 1;
        violations.example("an answer to an id never sent", line);
        return;
    };
    if seen[index] {
        violations.duplicates += 1;
        violations.example("a second answer", line);
        return;
    }
    seen[index] = true;
    outcome.answered += 1;
    let sent = shared.sent_ns[index].load(Ordering::Acquire);
    shared.latency_ns[index].store(now_ns.saturating_sub(sent), Ordering::Release);
    match (message.result, message.error) {
        (_, Some(_)) => {
            violations.rpc_errors += 1;
            violations.example("a JSON-RPC error", line);
        }
        (Some(result), None) if result.is_error == Some(true) => {
            violations.tool_errors += 1;
            violations.example("isError", line);
        }
        (Some(_), None) => {}
        (None, None) => {
            violations.malformed_answers += 1;
            violations.example("neither result nor error", line);
        }
    }
}

/// Waits for the reader to report; it ends when the server's stdout closes. A server
/// whose own children still hold the pipe open is left to them after a few seconds.
fn finish_reader(
    reader: JoinHandle<()>,
    outcome: &mpsc::Receiver<ReaderOutcome>,
    shared: &Shared,
) -> ReaderOutcome {
    match outcome.recv_timeout(SHUTDOWN_GRACE) {
        Ok(outcome) => {
            let _ = reader.join();
            outcome
        }
        Err(_) => {
            let mut violations = Violations::default();
            violations.example(
                "the server's stdout stayed open after it ended",
                b"(answers after this point were not read)",
            );
            ReaderOutcome {
                answered: shared.answered.load(Ordering::Acquire),
                violations,
                server_messages: 0,
            }
        }
    }
}

/// The server child, killed on every exit path, and its watchdog.
struct ServerProcess {
    child: Child,
    watchdog: Option<(mpsc::Sender<()>, JoinHandle<()>)>,
}

impl ServerProcess {
    fn spawn(
        program: &str,
        args: &[String],
        stderr: File,
        config: &LoadConfig,
        shared: &Arc<Shared>,
    ) -> Result<(Self, ChildStdin, ChildStdout), RunError> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .map_err(|source| RunError::Spawn {
                program: program.to_owned(),
                source,
            })?;
        let pipes = (child.stdin.take(), child.stdout.take());
        let mut server = Self {
            child,
            watchdog: None,
        };
        let (Some(stdin), Some(stdout)) = pipes else {
            return Err(RunError::Spawn {
                program: program.to_owned(),
                source: io::Error::other("the child has no stdin or stdout pipe"),
            });
        };
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        let pid = server.pid();
        let timeout = config.timeout;
        let watched = Arc::clone(shared);
        let watchdog = thread::Builder::new()
            .name("loadgen-watchdog".into())
            .spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) = stop_rx.recv_timeout(timeout) {
                    watched.timed_out.store(true, Ordering::Release);
                    // The child is not reaped while this thread runs (the owner joins
                    // it first), so the pid is still the server's.
                    if let Some(pid) = i32::try_from(pid)
                        .ok()
                        .and_then(rustix::process::Pid::from_raw)
                    {
                        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                    }
                }
            })
            .map_err(|source| RunError::Spawn {
                program: "the watchdog thread".into(),
                source,
            })?;
        server.watchdog = Some((stop_tx, watchdog));
        Ok((server, stdin, stdout))
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn stop_watchdog(&mut self) {
        if let Some((stop, handle)) = self.watchdog.take() {
            drop(stop);
            let _ = handle.join();
        }
    }

    /// Kills the server (if it still runs) and reaps it.
    fn kill(&mut self) -> Option<ExitStatus> {
        self.stop_watchdog();
        if let Ok(Some(status)) = self.child.try_wait() {
            return Some(status);
        }
        let _ = self.child.kill();
        self.child.wait().ok()
    }

    /// Gives the server `grace` to exit by itself, then kills it.
    fn wait_or_kill(&mut self, grace: Duration) -> Shutdown {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.stop_watchdog();
                    return Shutdown::Exited(status);
                }
                Ok(None) => thread::sleep(Duration::from_millis(2)),
                Err(_) => break,
            }
        }
        self.kill();
        Shutdown::Killed
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `max` bytes of a file, from a line start where possible.
fn tail(path: &std::path::Path, max: u64) -> String {
    let Ok(mut file) = File::open(path) else {
        return String::new();
    };
    let length = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(length.saturating_sub(max)));
    let mut bytes = Vec::new();
    let _ = file.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes);
    let text = match (length > max, text.find('\n')) {
        (true, Some(newline)) => &text[newline + 1..],
        _ => &text[..],
    };
    text.trim_end().to_owned()
}

/// A line for a message: lossy UTF-8, at most `max` characters.
fn shorten(line: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(line);
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], line.len()),
        None => text.into_owned(),
    }
}
