//! Budgets by client, fourth round (issue 57): one client's streams and connections
//! never shut out the health probes or another client, from the same address or behind a
//! proxy, and a connection over a budget is answered (`503` with `Retry-After`, the probes
//! `200`), never reset.
//!
//! Loopback has many addresses: a test binds its clients to 127.0.0.2, .3, ... to be
//! several peers, and to 127.0.0.1 to share the probes' address.

use std::{
    io::{Read as _, Write as _},
    net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use crate::support::{self, HttpServer, connect_from, exchange, nginx_proxy::Nginx};

const START: Duration = Duration::from_secs(30);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"budgets","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

fn faults(args: &[&str]) -> HttpServer {
    let mut command = Command::new(support::example_binary("faults"));
    command
        .args(["--http", "0"])
        .args(args)
        .env("RUST_LOG", "warn");
    HttpServer::start(command, START)
}

/// What one request got: the status line's code and the whole answer, or how the
/// connection ended without one (a reset, a close before the status line).
#[derive(Debug)]
enum Got {
    Answer(u16, String),
    Nothing(String),
}

impl Got {
    fn status(&self) -> Option<u16> {
        match self {
            Self::Answer(status, _) => Some(*status),
            Self::Nothing(_) => None,
        }
    }

    fn text(&self) -> &str {
        match self {
            Self::Answer(_, text) | Self::Nothing(text) => text,
        }
    }

    /// A `503` that says when to come back.
    fn is_retry_later(&self) -> bool {
        self.status() == Some(503) && self.text().to_ascii_lowercase().contains("retry-after:")
    }
}

/// One request (`Connection: close`) from `source` to `addr`, with `extra` header lines.
fn request(
    source: IpAddr,
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &str,
    body: &str,
    limit: Duration,
) -> Got {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !body.is_empty() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\n",
            body.len()
        ));
    }
    let text = format!("{head}{extra}\r\n{body}");
    match connect_from(source, addr).and_then(|stream| exchange(stream, &text, limit)) {
        Ok(answer) => match answer
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
        {
            Some(status) => Got::Answer(status, answer),
            None => Got::Nothing(format!("no status line: {answer:?}")),
        },
        Err(error) => Got::Nothing(error.to_string()),
    }
}

fn health(source: IpAddr, addr: SocketAddr) -> Got {
    request(
        source,
        addr,
        "GET",
        "/healthz",
        "",
        "",
        Duration::from_secs(10),
    )
}

fn initialize(source: IpAddr, addr: SocketAddr, extra: &str) -> Got {
    request(
        source,
        addr,
        "POST",
        "/mcp",
        extra,
        INITIALIZE,
        Duration::from_secs(10),
    )
}

/// A session opened from `source` (with `extra` header lines); its id.
fn open_session(source: IpAddr, addr: SocketAddr, extra: &str) -> String {
    let init = initialize(source, addr, extra);
    assert_eq!(init.status(), Some(200), "{init:?}");
    let id = init
        .text()
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id: {init:?}"));
    let ready = request(
        source,
        addr,
        "POST",
        "/mcp",
        &format!("{extra}Mcp-Session-Id: {id}\r\n"),
        INITIALIZED,
        Duration::from_secs(10),
    );
    assert_eq!(ready.status(), Some(202), "{ready:?}");
    id
}

/// A `GET /mcp` event stream of `session` from `source`, its headers sent, nothing read.
fn open_stream(source: IpAddr, addr: SocketAddr, session: &str, extra: &str) -> Option<TcpStream> {
    let mut stream = connect_from(source, addr).ok()?;
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\n{extra}\r\n"
    );
    stream.write_all(head.as_bytes()).ok()?;
    Some(stream)
}

/// A connection from `source` that sends half a request's headers and then nothing.
fn half_sent(source: IpAddr, addr: SocketAddr) -> Option<TcpStream> {
    let mut stream = connect_from(source, addr).ok()?;
    stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127").ok()?;
    Some(stream)
}

/// The status line of what `stream` got first, within `limit`.
fn status_line(stream: &mut TcpStream, limit: Duration) -> Result<String, String> {
    stream
        .set_read_timeout(Some(limit))
        .map_err(|error| error.to_string())?;
    let mut line = Vec::new();
    let mut byte = [0_u8; 1];
    while !line.ends_with(b"\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => return Err(format!("closed after {} bytes", line.len())),
            Ok(_) => line.push(byte[0]),
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(String::from_utf8_lossy(&line).trim_end().to_owned())
}

/// The probe of the issue: 256 idle streams over 17 sessions from one address, then
/// `/healthz` and a new client's `initialize` from that same address, at `target` (a
/// server, or nginx in front of it).
fn streams_from_the_probes_address(target: SocketAddr, server: &HttpServer) {
    let local = loopback(1);
    let sessions: Vec<String> = (0..17).map(|_| open_session(local, target, "")).collect();
    let started = Instant::now();
    let streams: Vec<TcpStream> = (0..256)
        .filter_map(|index| open_stream(local, target, &sessions[index % sessions.len()], ""))
        .collect();
    eprintln!(
        "{} streams opened from {local} in {:?}",
        streams.len(),
        started.elapsed()
    );
    assert!(streams.len() > 200, "only {} streams opened", streams.len());
    thread::sleep(Duration::from_millis(300));
    let probe = health(local, target);
    assert_eq!(
        probe.status(),
        Some(200),
        "/healthz from the streams' address: {probe:?}\n{}",
        server.stderr()
    );
    // Each session keeps its two newest streams; the ones they replaced were closed with
    // their connections, so the address holds few connections and a new client of it is
    // served, not refused.
    let init = initialize(local, target, "");
    assert_eq!(init.status(), Some(200), "initialize: {init:?}");
    assert!(init.text().contains("serverInfo"), "{init:?}");
    drop(streams);
}

fn quickstart(args: &[&str]) -> HttpServer {
    let mut command = Command::new(support::example_binary("quickstart"));
    command
        .args(["--http", "0"])
        .args(args)
        .env("RUST_LOG", "warn");
    HttpServer::start(command, START)
}

#[test]
fn one_addresss_idle_streams_leave_its_probes_and_new_clients_answered() {
    let server = faults(&[]);
    streams_from_the_probes_address(server.addr(), &server);
}

#[test]
fn the_issues_probes_against_the_quickstart_directly() {
    let server = quickstart(&[]);
    streams_from_the_probes_address(server.addr(), &server);
    flood_beside_two_clients(server.addr(), server.addr());
}

#[test]
fn the_issues_probes_against_the_quickstart_through_nginx() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let server = quickstart(&["--trusted-proxies", "127.0.0.1"]);
    let nginx = Nginx::start(&nginx_binary, &[server.addr()]);
    streams_from_the_probes_address(nginx.addr(), &server);
    flood_beside_two_clients(nginx.addr(), server.addr());
}

#[test]
fn a_peer_over_its_connections_is_answered_and_others_are_served() {
    let server = faults(&[
        "--max-connections",
        "64",
        "--max-connections-per-peer",
        "8",
        "--header-timeout-ms",
        "30000",
    ]);
    let addr = server.addr();
    let greedy = loopback(2);
    let held: Vec<TcpStream> = (0..8).filter_map(|_| half_sent(greedy, addr)).collect();
    assert_eq!(held.len(), 8);
    thread::sleep(Duration::from_millis(200));
    // Over its budget, the peer's probe is answered as usual, anything else with 503.
    let probe = health(greedy, addr);
    assert_eq!(probe.status(), Some(200), "{probe:?}");
    let init = initialize(greedy, addr, "");
    assert!(
        init.is_retry_later(),
        "initialize over the budget: {init:?}"
    );
    assert!(
        init.text()
            .to_ascii_lowercase()
            .contains("connection: close"),
        "{init:?}"
    );
    // Another peer is served as usual.
    let other = initialize(loopback(3), addr, "");
    assert_eq!(other.status(), Some(200), "{other:?}");
    // A forged X-Forwarded-For from an untrusted peer changes nothing.
    let forged = initialize(greedy, addr, "X-Forwarded-For: 198.51.100.1\r\n");
    assert!(forged.is_retry_later(), "forged header: {forged:?}");
    drop(held);
    thread::sleep(Duration::from_millis(200));
    let later = initialize(greedy, addr, "");
    assert_eq!(later.status(), Some(200), "once it let go: {later:?}");
}

#[test]
fn with_every_slot_taken_the_probes_are_answered_and_calls_refused_clearly() {
    // 32 connections: 30 usual slots and 2 in the lane.
    let server = faults(&[
        "--max-connections",
        "32",
        "--max-connections-per-peer",
        "32",
        "--header-timeout-ms",
        "30000",
    ]);
    let addr = server.addr();
    let flood: Vec<TcpStream> = (0..30)
        .filter_map(|_| half_sent(loopback(2), addr))
        .collect();
    assert_eq!(flood.len(), 30);
    thread::sleep(Duration::from_millis(300));
    let probe = health(loopback(3), addr);
    assert_eq!(probe.status(), Some(200), "{probe:?}\n{}", server.stderr());
    let init = initialize(loopback(3), addr, "");
    assert!(init.is_retry_later(), "{init:?}");
    drop(flood);
    thread::sleep(Duration::from_millis(300));
    let served = initialize(loopback(3), addr, "");
    assert_eq!(served.status(), Some(200), "{served:?}");
}

#[test]
fn two_thousand_half_open_connections_leave_a_new_client_of_their_address_an_answer() {
    let mut server = faults(&[]);
    let addr = server.addr();
    let local = loopback(1);
    let started = Instant::now();
    // As many as this process may open (a small open-file limit stops the flood early).
    let mut flood = Vec::new();
    for _ in 0..2000 {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
            Ok(mut stream) => {
                if stream
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: 1")
                    .is_ok()
                {
                    flood.push(stream);
                }
            }
            Err(_) => break,
        }
    }
    eprintln!(
        "{} half-open connections in {:?}",
        flood.len(),
        started.elapsed()
    );
    assert!(flood.len() > 600, "only {} connections", flood.len());
    let waited = Instant::now();
    let probe = request(
        local,
        addr,
        "GET",
        "/healthz",
        "",
        "",
        Duration::from_secs(60),
    );
    let init = request(
        local,
        addr,
        "POST",
        "/mcp",
        "",
        INITIALIZE,
        Duration::from_secs(60),
    );
    eprintln!(
        "answered after {:?}: {:?} / {:?}",
        waited.elapsed(),
        probe.status(),
        init.status()
    );
    assert_eq!(probe.status(), Some(200), "/healthz: {probe:?}");
    assert!(
        init.status() == Some(200) || init.is_retry_later(),
        "initialize is answered, never reset: {init:?}"
    );
    assert!(
        server.wait_exit(Duration::ZERO).is_none(),
        "the server died:\n{}",
        server.stderr()
    );
    drop(flood);
}

#[test]
fn at_256_open_files_a_half_open_flood_leaves_its_own_address_answered() {
    let mut command = Command::new("sh");
    command
        .args(["-c", "ulimit -n 256 && exec \"$0\" \"$@\""])
        .arg(support::example_binary("faults"))
        .args(["--http", "0"])
        .env("RUST_LOG", "warn");
    let server = HttpServer::start(command, START);
    let addr = server.addr();
    let local = loopback(1);
    let flood: Vec<TcpStream> = (0..300).filter_map(|_| half_sent(local, addr)).collect();
    assert!(flood.len() > 200, "only {} flood connections", flood.len());
    thread::sleep(Duration::from_millis(300));
    let probe = request(
        local,
        addr,
        "GET",
        "/healthz",
        "",
        "",
        Duration::from_secs(30),
    );
    assert_eq!(probe.status(), Some(200), "/healthz: {probe:?}");
    let init = request(
        local,
        addr,
        "POST",
        "/mcp",
        "",
        INITIALIZE,
        Duration::from_secs(30),
    );
    assert!(
        init.status() == Some(200) || init.is_retry_later(),
        "initialize from the flood's address: {init:?}"
    );
    drop(flood);
}

#[test]
fn behind_a_trusted_proxy_each_named_client_has_its_own_budget() {
    // The test's own connections from 127.0.0.1 play the proxy.
    let server = faults(&[
        "--trusted-proxies",
        "127.0.0.1",
        "--max-connections-per-peer",
        "4",
        "--max-streams-per-client",
        "2",
        "--header-timeout-ms",
        "30000",
    ]);
    let addr = server.addr();
    let proxy = loopback(1);
    // The proxy itself holds more connections than a peer may: it is not bounded so.
    let idle: Vec<TcpStream> = (0..6).filter_map(|_| half_sent(proxy, addr)).collect();
    assert_eq!(idle.len(), 6);
    thread::sleep(Duration::from_millis(200));
    let as_a = "X-Forwarded-For: 198.51.100.10\r\n";
    let as_b = "X-Forwarded-For: 198.51.100.20\r\n";
    let session = open_session(proxy, addr, as_a);
    // Client A's streams: the third replaces the first (two a client), over sessions.
    let other_session = open_session(proxy, addr, as_a);
    let mut first = open_stream(proxy, addr, &session, as_a).expect("a stream");
    assert_eq!(
        status_line(&mut first, Duration::from_secs(10)).as_deref(),
        Ok("HTTP/1.1 200 OK")
    );
    let mut second = open_stream(proxy, addr, &other_session, as_a).expect("a stream");
    assert_eq!(
        status_line(&mut second, Duration::from_secs(10)).as_deref(),
        Ok("HTTP/1.1 200 OK")
    );
    let mut third = open_stream(proxy, addr, &session, as_a).expect("a stream");
    assert_eq!(
        status_line(&mut third, Duration::from_secs(10)).as_deref(),
        Ok("HTTP/1.1 200 OK")
    );
    first
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    let mut rest = Vec::new();
    assert!(
        first.read_to_end(&mut rest).is_ok(),
        "client A's oldest stream ended"
    );
    // Client A holds two streams open; two more requests of its fill its four places,
    // and the next is refused, while client B is served.
    let _a3 = open_stream(proxy, addr, &other_session, as_a).expect("a stream");
    thread::sleep(Duration::from_millis(200));
    let hold_a: Vec<TcpStream> = (0..2)
        .filter_map(|_| {
            let mut stream = connect_from(proxy, addr).ok()?;
            // A request whose body never comes: it stays open.
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{as_a}Content-Type: application/json\r\n\
                 Content-Length: 100\r\n\r\n{{"
            );
            stream.write_all(head.as_bytes()).ok()?;
            Some(stream)
        })
        .collect();
    thread::sleep(Duration::from_millis(300));
    let over = initialize(proxy, addr, as_a);
    assert!(over.is_retry_later(), "client A over its budget: {over:?}");
    let b = initialize(proxy, addr, as_b);
    assert_eq!(b.status(), Some(200), "client B: {b:?}");
    // The proxy's own probe (no forwarded header) is its own.
    assert_eq!(health(proxy, addr).status(), Some(200));
    drop((idle, hold_a, second, third));
}

/// Calls `echo` `calls` times in a session of `client`'s through `addr` (`via` the header
/// lines a proxy would not add itself: none); the latency of each, and the failures.
fn well_behaved(client: IpAddr, addr: SocketAddr, calls: usize) -> (Vec<Duration>, Vec<String>) {
    let mut latencies = Vec::new();
    let mut failures = Vec::new();
    let init = initialize(client, addr, "");
    let Some(session) = init.text().lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    }) else {
        return (latencies, vec![format!("initialize: {init:?}")]);
    };
    let extra = format!("Mcp-Session-Id: {session}\r\n");
    let _ = request(
        client,
        addr,
        "POST",
        "/mcp",
        &extra,
        INITIALIZED,
        Duration::from_secs(10),
    );
    for id in 0..calls {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"call {id}"}}}}}}"#
        );
        let started = Instant::now();
        let got = request(
            client,
            addr,
            "POST",
            "/mcp",
            &extra,
            &body,
            Duration::from_secs(10),
        );
        latencies.push(started.elapsed());
        if got.status() != Some(200) || !got.text().contains(&format!("call {id}")) {
            failures.push(format!("call {id}: {got:?}"));
        }
    }
    (latencies, failures)
}

/// One client floods `target` with 256 idle streams over 17 sessions while two others
/// call and the probe checks `/healthz`: the well-behaved clients get every call answered,
/// p99 under 1 s, and the probe 200 throughout.
fn flood_beside_two_clients(target: SocketAddr, probe: SocketAddr) {
    let flooder = loopback(2);
    let sessions: Vec<String> = (0..17).map(|_| open_session(flooder, target, "")).collect();
    let streams: Vec<TcpStream> = (0..256)
        .filter_map(|index| open_stream(flooder, target, &sessions[index % sessions.len()], ""))
        .collect();
    assert!(streams.len() > 200, "only {} streams", streams.len());
    let (results, probes) = thread::scope(|scope| {
        let clients: Vec<_> = [loopback(3), loopback(4)]
            .into_iter()
            .map(|client| scope.spawn(move || well_behaved(client, target, 40)))
            .collect();
        let probing = scope.spawn(move || {
            let mut seen = Vec::new();
            for _ in 0..20 {
                seen.push(health(loopback(5), probe).status());
                thread::sleep(Duration::from_millis(100));
            }
            seen
        });
        let results: Vec<_> = clients
            .into_iter()
            .map(|client| client.join().expect("a client thread"))
            .collect();
        (results, probing.join().expect("the probe thread"))
    });
    assert!(
        probes.iter().all(|status| *status == Some(200)),
        "/healthz during the flood: {probes:?}"
    );
    let mut latencies: Vec<Duration> = Vec::new();
    for (client_latencies, failures) in results {
        assert!(failures.is_empty(), "{failures:#?}");
        latencies.extend(client_latencies);
    }
    latencies.sort();
    let p99 = latencies[(latencies.len() * 99).div_ceil(100) - 1];
    eprintln!(
        "{} calls beside the flood: p50 {:?}, p99 {p99:?}",
        latencies.len(),
        latencies[latencies.len() / 2]
    );
    assert!(p99 < Duration::from_secs(1), "p99 {p99:?}");
    drop(streams);
}

#[test]
fn a_stream_flood_beside_two_clients_directly() {
    let server = faults(&[]);
    flood_beside_two_clients(server.addr(), server.addr());
}

#[test]
fn a_stream_flood_beside_two_clients_through_nginx() {
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    let mut server = faults(&["--trusted-proxies", "127.0.0.1"]);
    let nginx = Nginx::start(&nginx_binary, &[server.addr()]);
    flood_beside_two_clients(nginx.addr(), server.addr());
    // nginx named each client: the flooder's streams were counted as its own.
    assert!(
        server.wait_exit(Duration::ZERO).is_none(),
        "the server died:\n{}",
        server.stderr()
    );
}

#[test]
fn a_trusted_proxy_that_is_no_address_stops_the_start_naming_it() {
    let mut child = Command::new(support::example_binary("faults"))
        .args([
            "--http",
            "0",
            "--trusted-proxies",
            "127.0.0.1,nginx.internal",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start faults");
    let deadline = Instant::now() + START;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for faults") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("faults did not stop on a bad trusted proxy");
        }
        thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    assert_eq!(status.code(), Some(78), "{stderr}");
    assert!(stderr.contains("\"nginx.internal\""), "{stderr}");
}

/// A connection from `source` whose receive window is a few KiB: what it does not read
/// backs up into the server at once.
pub(super) fn small_window(source: IpAddr, addr: SocketAddr) -> TcpStream {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let stream = runtime
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.set_recv_buffer_size(4096)?;
            socket.bind(SocketAddr::new(source, 0))?;
            tokio::time::timeout(Duration::from_secs(5), socket.connect(addr))
                .await
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::TimedOut))?
        })
        .expect("connect");
    let stream = stream.into_std().expect("a std stream");
    stream.set_nonblocking(false).expect("blocking");
    stream
}

#[test]
fn a_slow_reader_of_a_ten_megabyte_result_holds_only_its_own_connection() {
    let server = faults(&["--max-output-bytes", "16777216"]);
    let addr = server.addr();
    let slow = loopback(2);
    let session = open_session(slow, addr, "");
    let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"flood","arguments":{"megabytes":10}}}"#;
    let mut reader = small_window(slow, addr);
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nMcp-Session-Id: {session}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    reader.write_all(head.as_bytes()).expect("send the call");
    // It reads 1 KB a second, for three seconds, while another client calls.
    let read_slowly = thread::spawn(move || {
        let mut read = 0;
        let mut chunk = [0_u8; 1024];
        let _ = reader.set_read_timeout(Some(Duration::from_secs(5)));
        for _ in 0..3 {
            if let Ok(got) = reader.read(&mut chunk) {
                read += got;
            }
            thread::sleep(Duration::from_secs(1));
        }
        (reader, read)
    });
    thread::sleep(Duration::from_millis(500));
    let (latencies, failures) = well_behaved(loopback(3), addr, 20);
    assert!(failures.is_empty(), "{failures:#?}");
    // Not held behind the other client: its own answer would take hours at its pace, and
    // a call stuck behind it would hit the 10 s request bound. (Not a speed measure: the
    // bound leaves room for a loaded CI machine.)
    let slowest = latencies.iter().max().copied().unwrap_or_default();
    assert!(slowest < Duration::from_secs(5), "slowest call {slowest:?}");
    assert_eq!(health(loopback(3), addr).status(), Some(200));
    let rss = support::rss_kib(server.pid()).unwrap_or_default();
    let (reader, read) = read_slowly.join().expect("the slow reader");
    eprintln!("the slow reader read {read} bytes; server RSS {rss} KiB");
    assert!(read > 0, "the slow reader got its answer's first bytes");
    assert!(
        rss < 200 * 1024,
        "RSS {rss} KiB with a 10 MB answer waiting"
    );
    drop(reader);
}

#[test]
fn streams_that_are_never_read_cost_their_holder_and_nobody_else() {
    // Keep-alive pings every 10 ms: what the server would send an unread stream piles up
    // at once.
    let server = faults(&["--sse-keep-alive-ms", "10"]);
    let addr = server.addr();
    let deaf = loopback(2);
    let sessions: Vec<String> = (0..8).map(|_| open_session(deaf, addr, "")).collect();
    let streams: Vec<TcpStream> = sessions
        .iter()
        .flat_map(|session| {
            (0..2).map(move |_| {
                let mut stream = small_window(deaf, addr);
                let head = format!(
                    "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
                     Mcp-Session-Id: {session}\r\n\r\n"
                );
                stream.write_all(head.as_bytes()).expect("open a stream");
                stream
            })
        })
        .collect();
    let before = support::rss_kib(server.pid()).unwrap_or_default();
    thread::sleep(Duration::from_secs(3));
    let (latencies, failures) = well_behaved(loopback(3), addr, 20);
    assert!(failures.is_empty(), "{failures:#?}");
    // Not held behind the other client: its own answer would take hours at its pace, and
    // a call stuck behind it would hit the 10 s request bound. (Not a speed measure: the
    // bound leaves room for a loaded CI machine.)
    let slowest = latencies.iter().max().copied().unwrap_or_default();
    assert!(slowest < Duration::from_secs(5), "slowest call {slowest:?}");
    assert_eq!(health(loopback(3), addr).status(), Some(200));
    let after = support::rss_kib(server.pid()).unwrap_or_default();
    eprintln!(
        "{} unread streams: RSS {before} KiB, then {after} KiB after 3 s",
        streams.len()
    );
    assert!(
        after < before + 20 * 1024,
        "unread streams grew the server by {} KiB",
        after.saturating_sub(before)
    );
    drop(streams);
}
