//! The Streamable HTTP driver of `compare --http`: a server process started on a free
//! loopback port, C keep-alive HTTP/1.1 connections (hyper's client) each sending one
//! `tools/call echo` after another, every answer checked (its id, no JSON-RPC error, no
//! `isError: true`; JSON or SSE), and the server's CPU time and memory read from `/proc`.
//!
//! A run never panics on what a server sends: a wrong answer is counted, with an example.

use std::{
    fs::File,
    io::{BufRead as _, BufReader, Write as _},
    net::SocketAddr,
    path::Path,
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
        mpsc,
    },
    time::{Duration, Instant},
};

use http_body_util::{BodyExt as _, Full};
use hyper::{Request, body::Bytes, client::conn::http1};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use crate::process_stats;

/// How the driver talks to a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `initialize` once, then every call on that session (`Mcp-Session-Id`), from a
    /// client that declares no capabilities.
    Sessions,
    /// As [`Mode::Sessions`], from a client that declares roots, sampling and elicitation
    /// (as Claude Desktop, VS Code and Cursor do).
    SessionsAskable,
    /// No session: each call on its own, as a 2025-11-25 client sends it to a stateless
    /// server (no `initialize`).
    Stateless,
    /// No session, the 2026-07-28 revision: every call carries its `_meta` (revision,
    /// client info and capabilities) and the `MCP-Protocol-Version`, `Mcp-Method` and
    /// `Mcp-Name` headers.
    Stateless2026,
}

/// A server under load: its process (killed on drop), address and pid, and the server it
/// forwards to when it is a gateway (killed after it).
pub struct HttpServer {
    child: Child,
    addr: SocketAddr,
    upstream: Option<Box<HttpServer>>,
}

impl HttpServer {
    /// Starts `command` and waits (at most `timeout`) for the `http://ADDR/...` line it
    /// prints on stderr; the rest of its stderr goes to `log`.
    pub fn start(command: &[String], log: &Path, timeout: Duration) -> Result<Self, String> {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| "an empty server command".to_owned())?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot start {program}: {error}"))?;
        let stderr = child.stderr.take().ok_or("no stderr")?;
        let mut file = File::create(log).map_err(|error| format!("{}: {error}", log.display()))?;
        let (found, address) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(addr) = found.as_ref().and_then(|_| address_in(&line))
                    && let Some(found) = found.take()
                {
                    let _ = found.send(addr);
                }
                let _ = writeln!(file, "{line}");
            }
        });
        let mut server = Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            upstream: None,
        };
        server.addr = address
            .recv_timeout(timeout)
            .map_err(|_| format!("{program} printed no http:// address within {timeout:?}"))?;
        Ok(server)
    }

    /// The process id, for `/proc`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// This server (a gateway) with the server it forwards to: that one's CPU time is
    /// measured beside it ([`HttpReport::upstream_cpu`]), and it is stopped after it.
    pub fn with_upstream(mut self, upstream: HttpServer) -> Self {
        self.upstream = Some(Box::new(upstream));
        self
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in a line such as `serving at http://127.0.0.1:8080/mcp`. Not in a JSON
/// line: a record of the server's log may name another server (a gateway's upstream).
fn address_in(line: &str) -> Option<SocketAddr> {
    if line.trim_start().starts_with('{') {
        return None;
    }
    let rest = &line[line.find("http://")? + "http://".len()..];
    let end = rest.find(['/', ' ']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// One measured run.
#[derive(Clone, Debug, Default)]
pub struct HttpReport {
    /// Calls answered correctly in the measured window.
    pub calls: u64,
    /// The measured window.
    pub window: Duration,
    /// Per call, request sent to answer read.
    pub p50: Duration,
    /// The 99th percentile of the same.
    pub p99: Duration,
    /// The server's CPU time (all threads) in the window.
    pub server_cpu: Duration,
    /// A gateway's upstream's CPU time in the window (zero without one).
    pub upstream_cpu: Duration,
    /// The server's peak resident memory at the end, in KiB.
    pub peak_rss_kib: u64,
    /// Calls answered wrongly, or not at all.
    pub failures: u64,
    /// One failure, said.
    pub example_failure: Option<String>,
}

impl HttpReport {
    /// Calls per second.
    pub fn calls_per_second(&self) -> f64 {
        self.calls as f64 / self.window.as_secs_f64().max(1e-9)
    }

    /// Server CPU per call, in µs.
    pub fn cpu_us_per_call(&self) -> f64 {
        self.server_cpu.as_secs_f64() * 1e6 / (self.calls.max(1) as f64)
    }

    /// A gateway's upstream's CPU per call, in µs (zero without one).
    pub fn upstream_cpu_us_per_call(&self) -> f64 {
        self.upstream_cpu.as_secs_f64() * 1e6 / (self.calls.max(1) as f64)
    }
}

/// Drives `server` with `concurrency` connections calling `echo` for `warmup` (not
/// counted), then for `measure`.
pub fn run(
    server: &HttpServer,
    mode: Mode,
    concurrency: usize,
    warmup: Duration,
    measure: Duration,
) -> Result<HttpReport, String> {
    run_tool(server, mode, "echo", concurrency, warmup, measure)
}

/// [`run`], calling `tool` (an echo under another name, such as a gateway's `app_echo`)
/// with `{"text":"hi"}`.
pub fn run_tool(
    server: &HttpServer,
    mode: Mode,
    tool: &str,
    concurrency: usize,
    warmup: Duration,
    measure: Duration,
) -> Result<HttpReport, String> {
    let run = Run {
        mode,
        tool,
        concurrency: concurrency.max(1),
        warmup,
        measure,
    };
    runtime()?.block_on(drive(server, run))
}

/// What one run does.
struct Run<'a> {
    mode: Mode,
    tool: &'a str,
    concurrency: usize,
    warmup: Duration,
    measure: Duration,
}

/// The driver's runtime: one thread, so that it takes at most one core from the server.
fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("a runtime: {error}"))
}

/// What every connection of a run shares.
struct Shared {
    addr: SocketAddr,
    session: Option<String>,
    mode: Mode,
    /// The tool called, its name as a JSON string and as the `Mcp-Name` header.
    tool: String,
    tool_json: String,
    next_id: AtomicU64,
    warm_until: Instant,
    until: Instant,
}

/// What one connection measured.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    failures: u64,
    example: Option<String>,
}

async fn drive(server: &HttpServer, run: Run<'_>) -> Result<HttpReport, String> {
    let Run {
        mode,
        tool,
        concurrency,
        warmup,
        measure,
    } = run;
    let session = match mode {
        Mode::Sessions => Some(open_session(server.addr(), "{}").await?),
        Mode::SessionsAskable => Some(
            open_session(
                server.addr(),
                r#"{"roots":{"listChanged":true},"sampling":{},"elicitation":{}}"#,
            )
            .await?,
        ),
        Mode::Stateless | Mode::Stateless2026 => None,
    };
    let start = Instant::now();
    let shared = Arc::new(Shared {
        addr: server.addr(),
        session,
        mode,
        tool: tool.to_owned(),
        tool_json: serde_json::to_string(tool).map_err(|error| error.to_string())?,
        next_id: AtomicU64::new(1),
        warm_until: start + warmup,
        until: start + warmup + measure,
    });
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| tokio::spawn(connection(Arc::clone(&shared))))
        .collect();
    let upstream = server.upstream.as_deref();
    let cpu = |server: Option<&HttpServer>| match server {
        Some(server) => process_stats::cpu_ticks(Some(server.pid()))
            .map(Some)
            .map_err(|e| e.to_string()),
        None => Ok(None),
    };
    tokio::time::sleep_until(shared.warm_until.into()).await;
    let (cpu_before, upstream_before) = (cpu(Some(server))?, cpu(upstream)?);
    tokio::time::sleep_until(shared.until.into()).await;
    let (cpu_after, upstream_after) = (cpu(Some(server))?, cpu(upstream)?);
    let since = |after: Option<process_stats::CpuTicks>, before| match (after, before) {
        (Some(after), Some(before)) => after.since(before),
        _ => Duration::ZERO,
    };
    let mut report = HttpReport {
        window: measure,
        server_cpu: since(cpu_after, cpu_before),
        upstream_cpu: since(upstream_after, upstream_before),
        peak_rss_kib: process_stats::peak_rss_kib(Some(server.pid())).unwrap_or(0),
        ..HttpReport::default()
    };
    let mut latencies = Vec::new();
    for task in tasks {
        let tally = tokio::time::timeout(Duration::from_secs(30), task)
            .await
            .map_err(|_| "a connection did not end within 30 s of the run's end".to_owned())?
            .map_err(|error| format!("a connection's task failed: {error}"))?;
        latencies.extend(tally.latencies);
        report.failures += tally.failures;
        if report.example_failure.is_none() {
            report.example_failure = tally.example;
        }
    }
    latencies.sort_unstable();
    report.calls = latencies.len() as u64;
    report.p50 = percentile(&latencies, 0.50);
    report.p99 = percentile(&latencies, 0.99);
    Ok(report)
}

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let index = ((sorted.len() as f64 * fraction) as usize).min(sorted.len() - 1);
    sorted[index]
}

/// One keep-alive connection sending calls until the run ends.
async fn connection(shared: Arc<Shared>) -> Tally {
    let mut tally = Tally::default();
    let mut sender = match connect(shared.addr).await {
        Ok(sender) => sender,
        Err(error) => {
            tally.failures += 1;
            tally.example = Some(error);
            return tally;
        }
    };
    loop {
        let started = Instant::now();
        if started >= shared.until {
            return tally;
        }
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        let tool = &shared.tool_json;
        let (body, revision) = match shared.mode {
            Mode::Stateless2026 => (
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{tool},"arguments":{{"text":"hi"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"compare","version":"0"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
                ),
                Some("2026-07-28"),
            ),
            Mode::Sessions | Mode::SessionsAskable | Mode::Stateless => (
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":{tool},"arguments":{{"text":"hi"}}}}}}"#
                ),
                None,
            ),
        };
        let target = Target {
            addr: shared.addr,
            session: shared.session.as_deref(),
            revision,
            tool: &shared.tool,
        };
        let answered = post(&mut sender, &target, body).await;
        let checked = answered.and_then(|(_, body)| check_answer(&body, id));
        let counted = started >= shared.warm_until && Instant::now() <= shared.until;
        match checked {
            Ok(()) if counted => tally.latencies.push(started.elapsed()),
            Ok(()) => {}
            Err(error) => {
                tally.failures += 1;
                tally.example.get_or_insert(error);
                // The connection may be gone: a new one for the next call.
                match connect(shared.addr).await {
                    Ok(fresh) => sender = fresh,
                    Err(_) => return tally,
                }
            }
        }
    }
}

/// One keep-alive HTTP/1.1 connection's sending half.
pub type Sender = http1::SendRequest<Full<Bytes>>;

/// Opens a keep-alive connection to `addr`, TCP_NODELAY on.
pub async fn connect(addr: SocketAddr) -> Result<Sender, String> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|error| format!("connect {addr}: {error}"))?;
    stream
        .set_nodelay(true)
        .map_err(|error| format!("TCP_NODELAY: {error}"))?;
    let (sender, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| format!("HTTP handshake: {error}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

/// Where a POST goes and what it says of itself in its headers.
struct Target<'a> {
    addr: SocketAddr,
    session: Option<&'a str>,
    /// A 2026-07-28 call without a session: its revision, and `tools/call <tool>` in the
    /// `Mcp-Method` and `Mcp-Name` headers.
    revision: Option<&'a str>,
    tool: &'a str,
}

/// POSTs `body` to `/mcp`; the answer's `Mcp-Session-Id` (if any) and body.
async fn post(
    sender: &mut Sender,
    target: &Target<'_>,
    body: String,
) -> Result<(Option<String>, Bytes), String> {
    let mut headers = Vec::new();
    if let Some(session) = target.session {
        headers.push(("mcp-session-id", session));
        headers.push(("mcp-protocol-version", "2025-11-25"));
    }
    if let Some(revision) = target.revision {
        headers.push(("mcp-protocol-version", revision));
        headers.push(("mcp-method", "tools/call"));
        headers.push(("mcp-name", target.tool));
    }
    post_with(sender, target.addr, &headers, body).await
}

/// POSTs `body` to `/mcp` at `addr` with an MCP client's headers plus `headers`; the
/// answer's `Mcp-Session-Id` (if any) and body. A status other than 2xx is an error.
pub async fn post_with(
    sender: &mut Sender,
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: String,
) -> Result<(Option<String>, Bytes), String> {
    let mut request = Request::post("/mcp")
        .header("host", addr.to_string())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|error| format!("a request: {error}"))?;
    sender
        .ready()
        .await
        .map_err(|error| format!("the connection: {error}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|error| format!("POST: {error}"))?;
    let status = response.status();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| format!("the answer's body: {error}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!(
            "HTTP {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ));
    }
    Ok((session, body))
}

/// Checks the answer to call `id`: the JSON-RPC message (the body, or the SSE event that
/// carries it) answers `id`, with a result whose `isError` is not true.
fn check_answer(body: &[u8], id: u64) -> Result<(), String> {
    let message = answer_in(body).ok_or_else(|| {
        format!(
            "no JSON-RPC answer in {:?}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        )
    })?;
    if message.get("id").and_then(Value::as_u64) != Some(id) {
        return Err(format!("answered id {:?}, not {id}", message.get("id")));
    }
    match message.get("result") {
        Some(result) if result.get("isError") != Some(&Value::Bool(true)) => Ok(()),
        _ => Err(format!("not a successful result: {message}")),
    }
}

/// The JSON-RPC answer in a body: the body itself, or the `data:` of an SSE event that
/// carries an `id`.
pub fn answer_in(body: &[u8]) -> Option<Value> {
    if let Ok(message) = serde_json::from_slice::<Value>(body) {
        return Some(message);
    }
    let text = std::str::from_utf8(body).ok()?;
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
}

/// Opens a session of a client that declares `capabilities` (a JSON object): `initialize`,
/// then `notifications/initialized`; its id.
async fn open_session(addr: SocketAddr, capabilities: &str) -> Result<String, String> {
    let mut sender = connect(addr).await?;
    let initialize = format!(
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{capabilities},"clientInfo":{{"name":"compare","version":"0"}}}}}}"#
    );
    let mut target = Target {
        addr,
        session: None,
        revision: None,
        tool: "echo",
    };
    let (session, _) = post(&mut sender, &target, initialize).await?;
    let session = session.ok_or("initialize answered without an Mcp-Session-Id")?;
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    target.session = Some(&session);
    post(&mut sender, &target, initialized.to_owned()).await?;
    Ok(session)
}

/// The resident memory `sessions` more sessions cost, in KiB per 1,000 sessions: opened
/// (and initialized) one after another, measured from `VmRSS` before and after.
pub fn rss_per_thousand_sessions(server: &HttpServer, sessions: usize) -> Result<f64, String> {
    let runtime = runtime()?;
    let before = process_stats::rss_kib(Some(server.pid())).map_err(|e| e.to_string())?;
    runtime.block_on(async {
        for _ in 0..sessions {
            open_session(server.addr(), "{}").await?;
        }
        Ok::<(), String>(())
    })?;
    let after = process_stats::rss_kib(Some(server.pid())).map_err(|e| e.to_string())?;
    Ok(after.saturating_sub(before) as f64 * 1000.0 / sessions.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_read_from_the_servers_lines() {
        assert_eq!(
            address_in(
                "fusion: serving quickstart 0.1.0 over Streamable HTTP at http://127.0.0.1:41000/mcp (health: ...)"
            ),
            Some(SocketAddr::from(([127, 0, 0, 1], 41000)))
        );
        assert_eq!(address_in("no address here"), None);
        // A gateway's log names its upstream before it serves.
        assert_eq!(
            address_in(
                r#"{"level":"INFO","fields":{"message":"upstream mounted","upstream":"http://127.0.0.1:41001/mcp"}}"#
            ),
            None
        );
    }

    #[test]
    fn answers_are_found_in_json_and_in_sse() {
        let json = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"isError":false}}"#;
        assert!(check_answer(json, 7).is_ok());
        assert!(check_answer(json, 8).is_err());
        let sse = b"data: \nid: 0\nretry: 3000\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":false}}\nid: 1\n\n";
        assert!(check_answer(sse, 7).is_ok());
        let failed = br#"{"jsonrpc":"2.0","id":7,"result":{"isError":true}}"#;
        assert!(check_answer(failed, 7).is_err());
        let error = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"busy"}}"#;
        assert!(check_answer(error, 7).is_err());
    }
}
