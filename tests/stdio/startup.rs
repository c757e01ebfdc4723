//! The first messages after a server starts, on a machine kept busy (issue 31).
//!
//! MCP clients spawn a stdio server and write at once; an HTTP client sends its first
//! request as soon as the server reports its URL. Each test here starts one real binary
//! (the quickstart, the demo, `faults`) [`starts`] times (1,000; `FUSION_STARTUP_STARTS`
//! changes it) while busy loops hold every core, and checks that every request of the
//! opening is answered exactly once and that the server still answers afterwards.
//!
//! Each stdio start writes one [`Opening`], chosen at random (seeded: `FUSION_STARTUP_SEED`),
//! right after the spawn or after a random 0–50 ms, in one write: `initialize` alone;
//! `initialize` with `notifications/initialized`, a `ping` and a `tools/call`; a 2026-07-28
//! `server/discover` followed by a notification before the `initialize`; a 2026-07-28
//! request whose `_meta` lacks required keys, followed by a notification. In the last two,
//! rmcp answers and stays in its handshake, where a notification ends the service: the
//! transport must not pass one on before rmcp has left the handshake. Before the fix it
//! took the discover (or any request naming a version) for the end of the handshake, and
//! the server exited with code 1 without answering the `initialize`.
//!
//! The tests of this file run one at a time (they share the busy loops).

use crate::support;

use std::{
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    process::{Child, Command, Stdio},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, Ordering},
        mpsc,
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// How long one start may take to answer its opening, on a busy machine.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server may take to report its URL.
const URL_TIMEOUT: Duration = Duration::from_secs(30);

/// Client threads starting servers at once.
const CLIENTS: usize = 2;

/// The tests of this file one at a time: each keeps every core busy.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// How many starts each test makes.
fn starts() -> usize {
    std::env::var("FUSION_STARTUP_STARTS")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1000)
}

fn seed() -> u64 {
    std::env::var("FUSION_STARTUP_SEED")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..))
}

/// A busy loop on every core, stopped (and joined) when dropped.
struct Busy {
    stop: Arc<AtomicBool>,
    loops: Vec<thread::JoinHandle<()>>,
}

impl Busy {
    fn every_core() -> Self {
        let cores = thread::available_parallelism().map_or(2, usize::from);
        let stop = Arc::new(AtomicBool::new(false));
        let loops = (0..cores)
            .map(|_| {
                let stop = Arc::clone(&stop);
                thread::spawn(move || {
                    let mut spin = 0_u64;
                    while !stop.load(Ordering::Relaxed) {
                        spin = std::hint::black_box(spin.wrapping_add(1));
                    }
                })
            })
            .collect();
        Self { stop, loops }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for spinning in self.loops.drain(..) {
            let _ = spinning.join();
        }
    }
}

/// What a stdio start writes first, in one write.
#[derive(Debug, Clone, Copy)]
enum Opening {
    InitializeAlone,
    Pipelined,
    DiscoverFirst,
    InlineMissingMeta,
}

impl Opening {
    const ALL: [Self; 4] = [
        Self::InitializeAlone,
        Self::Pipelined,
        Self::DiscoverFirst,
        Self::InlineMissingMeta,
    ];

    /// The bytes written, and the ids that must each be answered once.
    fn write(self) -> (String, Vec<u64>) {
        let initialize = |id: u64| {
            json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "startup", "version": "1"}}})
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ping = |id: u64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        let messages = match self {
            Self::InitializeAlone => vec![initialize(1)],
            Self::Pipelined => vec![
                initialize(1),
                initialized.clone(),
                ping(2),
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                       "params": {"name": "echo", "arguments": {"text": "hi"}}}),
            ],
            Self::DiscoverFirst => vec![
                json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover", "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "startup", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}}}}),
                initialized.clone(),
                initialize(1),
                initialized.clone(),
                ping(2),
            ],
            Self::InlineMissingMeta => vec![
                json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
                initialized.clone(),
                initialize(1),
                ping(2),
            ],
        };
        let ids = messages
            .iter()
            .filter_map(|message| message.get("id").and_then(Value::as_u64))
            .collect();
        let text = messages.iter().map(|m| format!("{m}\n")).collect();
        (text, ids)
    }
}

/// One stdio start: the server spawned, the opening written after `delay`, every answer
/// read. `Err` says what went wrong.
fn stdio_start(binary: &std::path::Path, opening: Opening, delay: Duration) -> Result<(), String> {
    let mut child = Command::new(binary)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
    let result = stdio_exchange(&mut child, opening, delay);
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn stdio_exchange(child: &mut Child, opening: Opening, delay: Duration) -> Result<(), String> {
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    // Lines on a thread, so that every wait has a deadline; it ends with the child.
    let (lines, answers) = mpsc::channel::<String>();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    thread::sleep(delay);
    let (text, mut awaited) = opening.write();
    stdin
        .write_all(text.as_bytes())
        .map_err(|error| format!("writing the opening: {error}"))?;
    // A last ping proves the server still serves, and that nothing answered twice came
    // before its answer.
    awaited.push(99);
    let mut seen = Vec::new();
    let mut last_ping_sent = false;
    let deadline = Instant::now() + ANSWER_TIMEOUT;
    while !awaited.iter().all(|id| seen.contains(id)) {
        if !last_ping_sent
            && awaited
                .iter()
                .filter(|id| **id != 99)
                .all(|id| seen.contains(id))
        {
            last_ping_sent = true;
            stdin
                .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}\n")
                .map_err(|error| format!("writing the last ping: {error}"))?;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match answers.recv_timeout(left) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "no answer within {ANSWER_TIMEOUT:?}: answered {seen:?} of {awaited:?}"
                ));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(format!(
                    "stdout closed ({status}): answered {seen:?} of {awaited:?}"
                ));
            }
        };
        let answer: Value =
            serde_json::from_str(&line).map_err(|error| format!("{error}: {line}"))?;
        let Some(id) = answer.get("id").and_then(Value::as_u64) else {
            if answer.get("method").is_some() {
                continue; // a notification from the server
            }
            return Err(format!("an answer without a known id: {line}"));
        };
        if seen.contains(&id) {
            return Err(format!("id {id} answered twice: {line}"));
        }
        if !awaited.contains(&id) {
            return Err(format!("an answer to id {id}, never asked: {line}"));
        }
        seen.push(id);
    }
    Ok(())
}

/// `starts()` starts of `binary`, from [`CLIENTS`] threads, under busy loops. Panics with
/// the failures (at most 10 shown) and their count.
fn many_starts(name: &str, start: impl Fn(&mut fastrand::Rng) -> Result<(), String> + Sync) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let seed = seed();
    let total = starts();
    let _busy = Busy::every_core();
    let failures = Mutex::new(Vec::new());
    thread::scope(|scope| {
        for client in 0..CLIENTS {
            let (start, failures) = (&start, &failures);
            scope.spawn(move || {
                let mut rng = fastrand::Rng::with_seed(seed.wrapping_add(client as u64));
                for _ in (client..total).step_by(CLIENTS) {
                    if let Err(failure) = start(&mut rng) {
                        failures
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .push(failure);
                    }
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
    assert!(
        failures.is_empty(),
        "{name}: {} of {total} starts failed (FUSION_STARTUP_SEED={seed}); the first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A random delay: none for half the starts, else 0–50 ms.
fn delay(rng: &mut fastrand::Rng) -> Duration {
    if rng.bool() {
        Duration::ZERO
    } else {
        Duration::from_micros(rng.u64(0..50_000))
    }
}

fn stdio_starts(name: &str, binary: std::path::PathBuf) {
    many_starts(name, |rng| {
        let opening = Opening::ALL[rng.usize(..Opening::ALL.len())];
        let delay = delay(rng);
        stdio_start(&binary, opening, delay)
            .map_err(|failure| format!("{opening:?}, {delay:?}: {failure}"))
    });
}

#[test]
fn the_quickstart_answers_its_first_messages_over_stdio() {
    stdio_starts("quickstart", support::example_binary("quickstart"));
}

#[test]
fn the_demo_answers_its_first_messages_over_stdio() {
    stdio_starts("fusion-demo", support::package_binary("fusion-demo"));
}

#[test]
fn faults_answers_its_first_messages_over_stdio() {
    stdio_starts("faults", support::example_binary("faults"));
}

/// One HTTP start: the server on a free port, its first request (an `initialize`) sent as
/// soon as it reports its URL, or after `delay`.
fn http_start(binary: &std::path::Path, delay: Duration) -> Result<(), String> {
    let mut child = Command::new(binary)
        .args(["--http", "0"])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start {}: {error}", binary.display()))?;
    let result = http_exchange(&mut child, delay);
    let _ = child.kill();
    let _ = child.wait();
    result
}

fn http_exchange(child: &mut Child, delay: Duration) -> Result<(), String> {
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (found, url) = mpsc::channel::<String>();
    thread::spawn(move || {
        let mut reported = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !reported && let Some(rest) = line.split("over Streamable HTTP at ").nth(1) {
                reported = true;
                let _ = found.send(
                    rest.split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                );
            }
        }
    });
    let url = url
        .recv_timeout(URL_TIMEOUT)
        .map_err(|_| format!("no URL reported within {URL_TIMEOUT:?}"))?;
    let addr: SocketAddr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .and_then(|authority| authority.parse().ok())
        .ok_or_else(|| format!("bad URL {url:?}"))?;
    thread::sleep(delay);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "startup", "version": "1"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect_timeout(&addr, ANSWER_TIMEOUT)
        .map_err(|error| format!("connect to {addr}: {error}"))?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT)).ok();
    stream.set_write_timeout(Some(ANSWER_TIMEOUT)).ok();
    stream
        .write_all(request.as_bytes())
        .map_err(|error| format!("writing the request: {error}"))?;
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response);
    let answered = response.starts_with("HTTP/1.1 200")
        && response.contains("\"id\":1")
        && response.contains("\"protocolVersion\"");
    if answered {
        Ok(())
    } else {
        Err(format!("the first request was not answered: {response:?}"))
    }
}

fn http_starts(name: &str, binary: std::path::PathBuf) {
    many_starts(name, |rng| {
        let delay = delay(rng);
        http_start(&binary, delay).map_err(|failure| format!("{delay:?}: {failure}"))
    });
}

#[test]
fn the_quickstart_answers_its_first_request_over_http() {
    http_starts("quickstart --http", support::example_binary("quickstart"));
}

#[test]
fn the_demo_answers_its_first_request_over_http() {
    http_starts("fusion-demo --http", support::package_binary("fusion-demo"));
}

#[test]
fn faults_answers_its_first_request_over_http() {
    http_starts("faults --http", support::example_binary("faults"));
}
