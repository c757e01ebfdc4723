//! Idle event streams against the HTTP server (issue 35, finding 2): one client opened 17
//! sessions and then 512 `GET /mcp` streams in 2.5 s, and every later connection timed
//! out, `/healthz` and other clients' `initialize` included, for as long as it kept them.
//! Streams now have a budget below the connection cap, per session and in all, and one
//! peer holds at most a share of the connections.

use std::{
    io::{Read as _, Write as _},
    net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream},
    process::Command,
    time::{Duration, Instant},
};

use crate::support::{self, HttpServer, connect_from, post_mcp, try_raw_http};

const REQUEST: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"streams","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

/// The attacker's address: another loopback address than the other clients' 127.0.0.1.
const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

fn faults(args: &[&str]) -> HttpServer {
    let mut command = Command::new(support::example_binary("faults"));
    command
        .args(["--http", "0"])
        .args(args)
        .env("RUST_LOG", "warn");
    HttpServer::start(command, Duration::from_secs(30))
}

/// Initializes a session; its id.
pub(super) fn open_session(addr: SocketAddr) -> String {
    let init = post_mcp(addr, &[], INITIALIZE, REQUEST);
    assert_eq!(init.status, 200, "{init:?}");
    let id = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let ready = post_mcp(addr, &[("Mcp-Session-Id", &id)], INITIALIZED, REQUEST);
    assert_eq!(ready.status, 202, "{ready:?}");
    id
}

/// A `GET /mcp` event stream of `session` from `source`, its headers sent, nothing read.
pub(super) fn open_stream(source: IpAddr, addr: SocketAddr, session: &str) -> Option<TcpStream> {
    let mut stream = connect_from(source, addr).ok()?;
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\
         Mcp-Session-Id: {session}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).ok()?;
    Some(stream)
}

/// The status line and headers of what `stream` got (at most `limit`), or why there is
/// none.
fn response_head(stream: &mut TcpStream, limit: Duration) -> Result<String, String> {
    stream
        .set_read_timeout(Some(limit))
        .map_err(|error| error.to_string())?;
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => return Err(format!("closed after {} bytes", head.len())),
            Ok(_) => head.push(byte[0]),
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(String::from_utf8_lossy(&head).into_owned())
}

#[test]
fn five_hundred_idle_streams_from_one_peer_starve_neither_the_probes_nor_other_clients() {
    let server = faults(&[]);
    let addr = server.addr();
    let sessions: Vec<String> = (0..17).map(|_| open_session(addr)).collect();
    let started = Instant::now();
    let streams: Vec<TcpStream> = (0..512)
        .filter_map(|index| open_stream(ATTACKER, addr, &sessions[index % sessions.len()]))
        .collect();
    eprintln!(
        "{} streams opened from {ATTACKER} in {:?}",
        streams.len(),
        started.elapsed()
    );
    // The probes and another client, from another address, while the streams are held.
    let health = try_raw_http(addr, "GET", "/healthz", &[], b"", Duration::from_secs(10));
    assert!(
        health.as_ref().is_ok_and(|health| health.status == 200),
        "/healthz while 512 streams are held: {health:?}\n{}",
        server.stderr()
    );
    let session = open_session(addr);
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}"#;
    let answer = post_mcp(addr, &[("Mcp-Session-Id", &session)], call, REQUEST);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains("still here"), "{answer:?}");
    let rss = support::rss_kib(server.pid()).unwrap_or_default();
    eprintln!("RSS with the streams held: {rss} KiB");
    assert!(
        rss < 100 * 1024,
        "RSS {rss} KiB with 512 streams held (bound 100 MB)"
    );
    drop(streams);
}

#[test]
fn a_session_holds_two_streams_and_the_server_a_bounded_number() {
    // Every stream comes from one address here: its share is above the whole server's, so
    // that only the session's share and the total decide (budgets.rs tests a client's).
    let server = faults(&[
        "--max-streams",
        "3",
        "--max-streams-per-session",
        "2",
        "--max-streams-per-client",
        "4",
    ]);
    let addr = server.addr();
    let (first, second) = (open_session(addr), open_session(addr));
    let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let open = |session: &str| {
        let mut stream = open_stream(local, addr, session).expect("connected");
        let head = response_head(&mut stream, Duration::from_secs(10));
        (stream, head)
    };
    let (mut oldest, head) = open(&first);
    assert!(
        head.as_ref()
            .is_ok_and(|head| head.starts_with("HTTP/1.1 200")),
        "{head:?}"
    );
    let (_second_of_first, head) = open(&first);
    assert!(
        head.as_ref()
            .is_ok_and(|head| head.starts_with("HTTP/1.1 200")),
        "{head:?}"
    );
    let (_only_of_second, head) = open(&second);
    assert!(
        head.as_ref()
            .is_ok_and(|head| head.starts_with("HTTP/1.1 200")),
        "{head:?}"
    );
    // Three open: the server's budget. The second session gets no second stream.
    let (_refused, head) = open(&second);
    let head = head.expect("an answer");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(head.to_ascii_lowercase().contains("retry-after:"), "{head}");
    // A third stream of the first session takes the place of its oldest, which ends.
    let (_third_of_first, head) = open(&first);
    assert!(
        head.as_ref()
            .is_ok_and(|head| head.starts_with("HTTP/1.1 200")),
        "{head:?}"
    );
    oldest
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("a timeout");
    let mut rest = Vec::new();
    let ended = oldest.read_to_end(&mut rest);
    assert!(
        ended.is_ok(),
        "the oldest stream ended (it did not time out): {ended:?}"
    );
}
