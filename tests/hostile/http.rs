//! Streamable HTTP against hostile and vanished peers, in raw HTTP/1.1 where a client
//! library would hide the behaviour: the fault server (`examples/faults.rs --http 0`)
//! with small limits set by its flags. Every wait is bounded, and every server is killed
//! when its test ends (`HttpServer` kills its process group on drop).

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpStream},
    process::Command,
    thread,
    time::{Duration, Instant},
};

use crate::support::{
    self, HttpServer, RawResponse, mcp_headers, post_mcp, raw_http, try_raw_http,
};

const START: Duration = Duration::from_secs(30);
const REQUEST: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hostile-http","version":"0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn faults(args: &[&str]) -> HttpServer {
    let mut command = Command::new(support::example_binary("faults"));
    command
        .args(["--http", "0"])
        .args(args)
        .env("RUST_LOG", "info");
    HttpServer::start(command, START)
}

fn post_to(addr: SocketAddr, session: Option<&str>, body: &str, timeout: Duration) -> RawResponse {
    let extra: Vec<(&str, &str)> = session
        .map(|id| ("Mcp-Session-Id", id))
        .into_iter()
        .collect();
    post_mcp(addr, &extra, body, timeout)
}

/// A POST of `body` on a connection of its own, left open: a client that waits for its
/// answer and never reads it. The connection closes when the value is dropped (the
/// client hangs up, which cancels the call).
fn post_and_wait(addr: SocketAddr, session: &str, body: &str) -> TcpStream {
    let mut stream = TcpStream::connect_timeout(&addr, REQUEST).expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    );
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .expect("write the request");
    stream
}

/// Starts a call of `hang` with `id` in `session` whose client keeps waiting (until the
/// returned connection is dropped); the call goes on in the server.
fn start_hanging_call(server: &HttpServer, session: &str, id: u32) -> TcpStream {
    post_and_wait(server.addr(), session, &call(id, "hang", "{}"))
}

/// [`start_hanging_call`], then waits until it runs.
fn start_running_hang(server: &HttpServer, session: &str, id: u32) -> TcpStream {
    let waiting = start_hanging_call(server, session, id);
    wait_for(Duration::from_secs(5), "the hang call runs", server, || {
        hangs_in_flight(server, 1)
    });
    waiting
}

/// Waits (at most `limit`) until `/healthz` answers 200 on a new connection.
fn wait_until_healthy(server: &HttpServer, limit: Duration, what: &str) {
    wait_for(limit, what, server, || {
        try_raw_http(
            server.addr(),
            "GET",
            "/healthz",
            &[],
            b"",
            Duration::from_secs(1),
        )
        .is_ok_and(|health| health.status == 200)
    });
}

/// Initializes a session; its id.
fn open_session(server: &HttpServer) -> String {
    let init = post_to(server.addr(), None, INITIALIZE, REQUEST);
    assert_eq!(init.status, 200, "{init:?}");
    let id = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let ready = post_to(server.addr(), Some(&id), INITIALIZED, REQUEST);
    assert_eq!(ready.status, 202, "{ready:?}");
    id
}

fn call(id: u32, name: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
    )
}

fn metrics(server: &HttpServer) -> String {
    raw_http(server.addr(), "GET", "/metrics", &[], b"", REQUEST).body
}

/// Waits (at most `limit`) until `done` holds; how long that took.
fn wait_for(
    limit: Duration,
    what: &str,
    server: &HttpServer,
    mut done: impl FnMut() -> bool,
) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < limit,
            "{what}: not within {limit:?}\n--- server stderr ---\n{}",
            server.stderr()
        );
        thread::sleep(Duration::from_millis(10));
    }
    start.elapsed()
}

fn hang_drops(server: &HttpServer) -> usize {
    server.stderr().matches("hang dropped").count()
}

/// How many `hang` calls the call log reports as `cancelled`.
fn hangs_cancelled(server: &HttpServer) -> usize {
    server
        .stderr()
        .lines()
        .filter(|line| {
            line.contains(r#""tool":"hang""#) && line.contains(r#""outcome":"cancelled""#)
        })
        .count()
}

fn hangs_in_flight(server: &HttpServer, n: usize) -> bool {
    metrics(server).contains(&format!(r#"fusion_tool_in_flight{{tool="hang"}} {n}"#))
}

#[test]
fn a_duplicate_id_in_flight_gets_an_error_and_the_first_call_its_own_answer() {
    let server = faults(&[]);
    let session = open_session(&server);
    let addr = server.addr();
    let first = {
        let session = session.clone();
        thread::spawn(move || {
            post_to(
                addr,
                Some(&session),
                &call(43, "slow", r#"{"ms":3000}"#),
                REQUEST,
            )
        })
    };
    thread::sleep(Duration::from_millis(100));
    let second = post_to(
        addr,
        Some(&session),
        &call(43, "slow", r#"{"ms":1200}"#),
        REQUEST,
    );
    // Judged by the first call, not by the clock: the error came while it still ran.
    let first_still_running = !first.is_finished();
    assert!(
        second.body.contains("-32600")
            && second.body.contains("id 43 already in use")
            && second.body.contains(r#""id":43"#),
        "the second request gets an error naming the id: {second:?}"
    );
    assert!(
        !second.body.contains("slept"),
        "the second request must not receive a call's result: {second:?}"
    );
    assert!(
        first_still_running,
        "the error comes at once, not after the first call"
    );
    let first = first.join().expect("the first request's thread");
    assert!(
        first.body.contains("slept 3000 ms") && first.body.contains(r#""id":43"#),
        "the first call gets its own answer: {first:?}"
    );
    // The id is free again once answered.
    let again = post_to(
        addr,
        Some(&session),
        &call(43, "slow", r#"{"ms":1}"#),
        REQUEST,
    );
    assert!(again.body.contains("slept 1 ms"), "{again:?}");
}

#[test]
fn two_host_headers_get_400_on_every_route() {
    let server = faults(&[]);
    for (method, path, body) in [("POST", "/mcp", INITIALIZE), ("GET", "/healthz", "")] {
        let response = raw_http(
            server.addr(),
            method,
            path,
            &mcp_headers(&[("Host", "localhost"), ("Host", "evil.com")]),
            body.as_bytes(),
            REQUEST,
        );
        assert_eq!(response.status, 400, "{method} {path}: {response:?}");
        assert!(response.body.contains("more than one Host"), "{response:?}");
    }
}

#[test]
fn an_absolute_form_target_must_name_the_host_header() {
    let server = faults(&[]);
    let host = server.addr().to_string();
    let elsewhere = raw_http(
        server.addr(),
        "POST",
        "http://evil.com/mcp",
        &mcp_headers(&[("Host", &host)]),
        INITIALIZE.as_bytes(),
        REQUEST,
    );
    assert_eq!(elsewhere.status, 400, "{elsewhere:?}");
    assert!(elsewhere.body.contains("authority"), "{elsewhere:?}");
    // The same authority in both is fine.
    let same = raw_http(
        server.addr(),
        "GET",
        &format!("http://{host}/healthz"),
        &[("Host", &host)],
        b"",
        REQUEST,
    );
    assert_eq!(same.status, 200, "{same:?}");
}

#[test]
fn slowloris_is_cut_after_the_header_timeout_while_others_are_served() {
    let server = faults(&["--header-timeout-ms", "500"]);
    let mut slow = TcpStream::connect_timeout(&server.addr(), REQUEST).expect("connect");
    slow.set_read_timeout(Some(Duration::from_millis(100))).ok();
    slow.set_write_timeout(Some(Duration::from_secs(1))).ok();
    let header = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nX-Slow: {}",
        server.addr(),
        "a".repeat(200)
    );
    let started = Instant::now();
    let mut served_meanwhile = false;
    let mut cut = None;
    for byte in header.bytes() {
        if slow.write_all(&[byte]).is_err() {
            cut = Some(started.elapsed());
            break;
        }
        let mut buffer = [0_u8; 256];
        match slow.read(&mut buffer) {
            // Closed (or answered and closed): cut off.
            Ok(_) => {
                cut = Some(started.elapsed());
                break;
            }
            Err(error)
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => {
                cut = Some(started.elapsed());
                break;
            }
        }
        if !served_meanwhile && started.elapsed() > Duration::from_millis(200) {
            // A normal client is served while the slow one is still sending.
            let health = raw_http(server.addr(), "GET", "/healthz", &[], b"", REQUEST);
            assert_eq!(health.status, 200, "{health:?}");
            served_meanwhile = true;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "never cut off");
    }
    let cut = cut.expect("the slow client was never cut off while sending its headers");
    assert!(served_meanwhile, "the normal client was not tried");
    assert!(
        // 10x the timeout: a loaded machine is late, never early; a server without the
        // timeout keeps reading until the loop's own 10 s limit.
        cut >= Duration::from_millis(400) && cut < Duration::from_secs(5),
        "cut after {cut:?}, expected about the 500 ms header timeout"
    );
}

#[test]
fn the_connection_cap_holds_new_connections_until_one_closes() {
    let server = faults(&["--max-connections", "3"]);
    let held: Vec<TcpStream> = (0..3)
        .map(|_| TcpStream::connect_timeout(&server.addr(), REQUEST).expect("connect"))
        .collect();
    // Give the server time to accept the three.
    thread::sleep(Duration::from_millis(200));
    let refused = try_raw_http(
        server.addr(),
        "GET",
        "/healthz",
        &[],
        b"",
        Duration::from_millis(700),
    );
    assert!(
        refused.is_err(),
        "a fourth connection is served while three are held: {refused:?}"
    );
    drop(held);
    wait_until_healthy(
        &server,
        Duration::from_secs(5),
        "served once the held connections closed",
    );
}

#[test]
fn sessions_are_capped_and_expire_when_idle() {
    let server = faults(&["--max-sessions", "2", "--session-idle-ms", "600"]);
    let first = open_session(&server);
    let _second = open_session(&server);
    let third = post_to(server.addr(), None, INITIALIZE, REQUEST);
    assert_eq!(third.status, 503, "{third:?}");
    assert!(
        third.body.contains("maximum of 2 sessions") && third.header("retry-after").is_some(),
        "{third:?}"
    );
    // Idle past the timeout (checked every quarter of it): the sessions end.
    thread::sleep(Duration::from_millis(1200));
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let expired = post_to(server.addr(), Some(&first), ping, REQUEST);
    assert_eq!(expired.status, 404, "{expired:?}");
    let fresh = open_session(&server);
    let pong = post_to(server.addr(), Some(&fresh), ping, REQUEST);
    assert!(
        pong.status == 200 && pong.body.contains(r#""id":2"#),
        "{pong:?}"
    );
}

#[test]
fn a_session_with_a_call_in_flight_is_not_idle() {
    let server = faults(&["--session-idle-ms", "300", "--call-timeout-ms", "5000"]);
    let session = open_session(&server);
    let _waiting = start_running_hang(&server, &session, 7);
    thread::sleep(Duration::from_millis(900));
    assert_eq!(
        hang_drops(&server),
        0,
        "the call was cut by the idle timeout"
    );
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let alive = post_to(server.addr(), Some(&session), ping, REQUEST);
    assert_eq!(alive.status, 200, "{alive:?}");
}

/// Writes `head` then `body` in pieces, stopping at the first failed write, then reads
/// the answer; the answer, and whether the whole body could be sent (a server that
/// closes while the client is still sending resets the connection).
fn send_raw(
    addr: SocketAddr,
    head: &str,
    body: impl Iterator<Item = Vec<u8>>,
) -> Result<(RawResponse, bool), String> {
    let mut stream = TcpStream::connect_timeout(&addr, REQUEST).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(REQUEST)).ok();
    stream.set_write_timeout(Some(Duration::from_secs(5))).ok();
    stream
        .write_all(head.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut sent_all = true;
    for piece in body {
        if stream.write_all(&piece).is_err() {
            sent_all = false;
            break;
        }
    }
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| format!("no HTTP response ({read:?}): {text:?}"))?;
    Ok((
        RawResponse {
            status,
            headers: Vec::new(),
            body: text,
        },
        sent_all,
    ))
}

#[test]
fn bodies_over_the_limit_get_413_before_the_connection_closes() {
    let server = faults(&["--max-body-bytes", "65536"]);
    let addr = server.addr();
    let big = 8 << 20;
    let head = |framing: &str| {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{framing}\r\n"
        )
    };
    // Content-Length over the limit, the whole body sent anyway.
    let (declared, sent_all) = send_raw(
        addr,
        &head(&format!("Content-Length: {big}\r\n")),
        (0..big / 65536).map(|_| vec![b' '; 65536]),
    )
    .expect("an answer, not a reset");
    assert_eq!(declared.status, 413, "{declared:?}");
    assert!(
        sent_all,
        "the connection was reset while the body was being sent"
    );
    // Chunked: 413 once the limit is crossed.
    let (chunked, sent_all) = send_raw(
        addr,
        &head("Transfer-Encoding: chunked\r\n"),
        (0..big / 16384)
            .map(|_| {
                let mut chunk = format!("{:x}\r\n", 16384).into_bytes();
                chunk.extend(std::iter::repeat_n(b' ', 16384));
                chunk.extend_from_slice(b"\r\n");
                chunk
            })
            .chain(std::iter::once(b"0\r\n\r\n".to_vec())),
    )
    .expect("an answer, not a reset");
    assert_eq!(chunked.status, 413, "{chunked:?}");
    assert!(
        sent_all,
        "the connection was reset while the body was being sent"
    );
    // A client that waits for `100 Continue` gets the 413 without sending the body.
    let started = Instant::now();
    let (waiting, _) = send_raw(
        addr,
        &head(&format!(
            "Content-Length: {big}\r\nExpect: 100-continue\r\n"
        )),
        std::iter::empty(),
    )
    .expect("an answer");
    assert_eq!(waiting.status, 413, "{waiting:?}");
    assert!(!waiting.body.contains("100 Continue"), "{waiting:?}");
    // A server that waited for the body would hold the answer until the client's own
    // timeout ([`REQUEST`], 20 s); half of it leaves a slow machine its margin.
    assert!(started.elapsed() < REQUEST / 2, "{:?}", started.elapsed());
    // The server still serves.
    let ok = post_to(addr, None, INITIALIZE, REQUEST);
    assert_eq!(ok.status, 200, "{ok:?}");
}

#[test]
fn a_forged_session_gets_404_on_get_post_and_delete() {
    let server = faults(&[]);
    let forged = "0123456789abcdef-forged";
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let post = post_to(server.addr(), Some(forged), ping, REQUEST);
    let get = raw_http(
        server.addr(),
        "GET",
        "/mcp",
        &[("Accept", "text/event-stream"), ("Mcp-Session-Id", forged)],
        b"",
        REQUEST,
    );
    let delete = raw_http(
        server.addr(),
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", forged)],
        b"",
        REQUEST,
    );
    for (method, response) in [("POST", post), ("GET", get), ("DELETE", delete)] {
        assert_eq!(response.status, 404, "{method}: {response:?}");
    }
    // A real session is deleted once; then it is unknown.
    let session = open_session(&server);
    let deleted = raw_http(
        server.addr(),
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", &session)],
        b"",
        REQUEST,
    );
    assert_eq!(deleted.status, 204, "{deleted:?}");
    let again = raw_http(
        server.addr(),
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", &session)],
        b"",
        REQUEST,
    );
    assert_eq!(again.status, 404, "{again:?}");
}

/// Clients that time out and retry on a new connection: 50 calls of `hang` on one
/// session, each on a connection closed right after the request is written, after one
/// whose client hangs up once it runs. Every call is cancelled when its client hangs up:
/// each handler that started is dropped, nothing stays in flight, and the session serves
/// on. (How many of the 50 start before their hang-up is seen depends on the machine's
/// load; each is cancelled either way.)
#[test]
fn calls_whose_clients_hung_up_are_cancelled_and_the_session_serves_on() {
    let server = faults(&[]);
    let session = open_session(&server);
    drop(start_running_hang(&server, &session, 99));
    wait_for(
        Duration::from_secs(10),
        "the running call is dropped once its client hangs up",
        &server,
        || hang_drops(&server) == 1,
    );
    for id in 100..150 {
        drop(post_and_wait(
            server.addr(),
            &session,
            &call(id, "hang", "{}"),
        ));
    }
    thread::sleep(Duration::from_secs(1));
    wait_for(
        Duration::from_secs(10),
        "no hang call left in flight",
        &server,
        || hangs_in_flight(&server, 0),
    );
    // The call log's line may follow the handler's drop by a moment.
    wait_for(
        Duration::from_secs(10),
        "every dropped handler's call logged as cancelled",
        &server,
        || hangs_cancelled(&server) >= hang_drops(&server),
    );
    let answer = post_to(
        server.addr(),
        Some(&session),
        &call(200, "echo", r#"{"text":"after"}"#),
        REQUEST,
    );
    assert!(
        answer.status == 200
            && answer.body.contains(r#""id":200"#)
            && answer.body.contains("after"),
        "the session no longer serves: {answer:?}"
    );
}

#[test]
fn a_call_whose_client_left_ends_at_the_call_deadline() {
    let server = faults(&["--call-timeout-ms", "500"]);
    let session = open_session(&server);
    let started = Instant::now();
    let _waiting = start_hanging_call(&server, &session, 5);
    wait_for(
        Duration::from_secs(5),
        "the hang call is dropped at its deadline",
        &server,
        || hang_drops(&server) == 1,
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450),
        "dropped before its deadline ({took:?})"
    );
    wait_for(
        Duration::from_secs(5),
        "nothing left in flight",
        &server,
        || hangs_in_flight(&server, 0),
    );
}

#[test]
fn calls_over_a_sessions_cap_wait_their_turn_and_a_full_queue_gets_429_with_the_id() {
    let mut command = Command::new(support::example_binary("faults"));
    command
        .args(["--http", "0", "--max-calls-per-session", "2"])
        .args(["--max-queued-per-session", "1"])
        // The transport's debug line says when a request waits its turn.
        .env("RUST_LOG", "info,fusion::transport=debug");
    let server = HttpServer::start(command, START);
    let session = open_session(&server);
    let mut running: Vec<TcpStream> = [10, 11]
        .into_iter()
        .map(|id| start_hanging_call(&server, &session, id))
        .collect();
    wait_for(
        Duration::from_secs(5),
        "two hang calls run",
        &server,
        || hangs_in_flight(&server, 2),
    );
    // The third waits its turn behind them.
    let addr = server.addr();
    let queued = {
        let session = session.clone();
        thread::spawn(move || {
            post_to(
                addr,
                Some(&session),
                &call(12, "echo", r#"{"text":"my turn"}"#),
                REQUEST,
            )
        })
    };
    wait_for(
        Duration::from_secs(5),
        "the third request waits in the queue",
        &server,
        || {
            server.stderr().lines().any(|line| {
                line.contains("the request waits its turn") && line.contains(r#""id":"12""#)
            })
        },
    );
    let over = post_to(addr, Some(&session), &call(14, "hang", "{}"), REQUEST);
    assert_eq!(over.status, 429, "{over:?}");
    assert_eq!(over.header("retry-after"), Some("1"), "{over:?}");
    assert!(
        over.body
            .contains("too many requests in flight in this session")
            && over.body.contains("2 running, 1 waiting")
            && over.body.contains("-32000")
            && over.body.contains(r#""id":14"#),
        "the refusal is a JSON-RPC error carrying the request's id: {over:?}"
    );
    assert!(
        !queued.is_finished(),
        "the queued call must wait while both running calls hold their turns"
    );
    assert!(
        hangs_in_flight(&server, 2),
        "the refused calls must not run"
    );
    // One running call's client hangs up: its turn passes to the queued call.
    drop(running.remove(0));
    let queued = queued.join().expect("the queued request's thread");
    assert!(
        queued.status == 200
            && queued.body.contains("my turn")
            && queued.body.contains(r#""id":12"#),
        "the queued call runs once a turn is free: {queued:?}"
    );
    // Another session has its own allowance.
    let other = open_session(&server);
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let pong = post_to(server.addr(), Some(&other), ping, REQUEST);
    assert!(
        pong.body.contains(r#""id":2"#) && pong.body.contains("result"),
        "{pong:?}"
    );
}

/// 256 calls at once on one session (the default cap runs 32 and queues the rest): every
/// call gets its own answer, none is refused, none is answered twice.
#[test]
fn a_session_with_256_calls_at_once_answers_every_one() {
    // The session's queue is under test, not the cap on one peer's connections (half of
    // the 512 by default): every caller here is 127.0.0.1.
    let server = faults(&["--max-connections-per-peer", "512"]);
    let session = open_session(&server);
    let addr = server.addr();
    let callers: Vec<_> = (1000..1256)
        .map(|id| {
            let session = session.clone();
            thread::spawn(move || {
                let answer = post_to(
                    addr,
                    Some(&session),
                    &call(id, "slow", r#"{"ms":50}"#),
                    Duration::from_secs(60),
                );
                (id, answer)
            })
        })
        .collect();
    for caller in callers {
        let (id, answer) = caller.join().expect("a caller's thread");
        assert!(
            answer.status == 200
                && answer.body.matches(r#""id":"#).count() == 1
                && answer.body.contains(&format!(r#""id":{id}"#))
                && answer.body.contains("slept 50 ms"),
            "call {id} was not answered with its own result: {answer:?}"
        );
    }
}

/// Stateless (no session): a client that hangs up cancels its call, and the disconnect is
/// no ERROR in the log.
#[test]
fn a_stateless_call_whose_client_hung_up_is_cancelled_without_an_error_line() {
    let server = faults(&["--stateless"]);
    hung_up_calls_are_cancelled_without_an_error_line(&server, &|_| Vec::new(), &call);
}

/// The same for calls of the 2026-07-28 revision (no session; served past rmcp), with
/// sessions on.
#[test]
fn a_2026_07_28_call_whose_client_hung_up_is_cancelled_without_an_error_line() {
    let server = faults(&[]);
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    hung_up_calls_are_cancelled_without_an_error_line(
        &server,
        &|name| {
            vec![
                ("MCP-Protocol-Version", "2026-07-28".to_owned()),
                ("Mcp-Method", "tools/call".to_owned()),
                ("Mcp-Name", name.to_owned()),
            ]
        },
        &|id, name, arguments| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},"_meta":{meta}}}}}"#
            )
        },
    );
}

/// Five `hang` calls without a session, each on a connection dropped once the call runs
/// (`headers` of a call of a tool added to its request, `call` writing its body): each is
/// dropped and logged as cancelled, the server answers on, and nothing is logged at ERROR.
fn hung_up_calls_are_cancelled_without_an_error_line(
    server: &HttpServer,
    headers: &dyn Fn(&str) -> Vec<(&'static str, String)>,
    call: &dyn Fn(u32, &str, &str) -> String,
) {
    for id in 0..5 {
        let mut stream = TcpStream::connect_timeout(&server.addr(), REQUEST).expect("connect");
        let body = call(id, "hang", "{}");
        let extra: String = headers("hang")
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n",
            server.addr(),
            body.len()
        );
        stream
            .write_all(format!("{head}{body}").as_bytes())
            .expect("write the request");
        wait_for(Duration::from_secs(5), "the hang call runs", server, || {
            hangs_in_flight(server, 1)
        });
        drop(stream);
        wait_for(
            Duration::from_secs(10),
            "the call is dropped once its client hangs up",
            server,
            || hang_drops(server) == id as usize + 1,
        );
    }
    let echo_headers = headers("echo");
    let echo_headers: Vec<(&str, &str)> = echo_headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect();
    let answer = support::post_mcp(
        server.addr(),
        &echo_headers,
        &call(9, "echo", r#"{"text":"x"}"#),
        REQUEST,
    );
    assert!(
        answer.body.contains(r#""id":9"#) && answer.body.contains(r#""isError":false"#),
        "the server answers on: {answer:?}"
    );
    wait_for(
        Duration::from_secs(10),
        "every dropped call logged as cancelled",
        server,
        || hangs_cancelled(server) == 5,
    );
    let stderr = server.stderr();
    let errors: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains(r#""level":"ERROR""#))
        .collect();
    assert!(
        errors.is_empty(),
        "a client that hangs up is not an error: {errors:#?}"
    );
}

#[test]
fn a_deleted_session_cancels_its_calls_at_once() {
    let server = faults(&[]);
    let session = open_session(&server);
    let _waiting = start_running_hang(&server, &session, 9);
    let deleted = raw_http(
        server.addr(),
        "DELETE",
        "/mcp",
        &[("Mcp-Session-Id", &session)],
        b"",
        REQUEST,
    );
    assert_eq!(deleted.status, 204, "{deleted:?}");
    let took = wait_for(
        Duration::from_secs(10),
        "the deleted session's call is dropped",
        &server,
        || hang_drops(&server) == 1,
    );
    // rmcp alone lets it run for 5 s more: well under that is the DELETE's doing, on a
    // loaded machine too.
    assert!(
        took < Duration::from_secs(4),
        "dropped {took:?} after the DELETE"
    );
    wait_for(
        Duration::from_secs(5),
        "nothing left in flight",
        &server,
        || hangs_in_flight(&server, 0),
    );
}

/// CPU time (user + system, in clock ticks) the process `pid` used so far.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

#[test]
fn running_out_of_file_descriptors_neither_crashes_nor_spins_and_serving_resumes() {
    // The child gets a soft and hard limit of 64 open files (a POSIX shell's `ulimit`,
    // then `exec`, so the server keeps the shell's process id and group).
    let mut command = Command::new("sh");
    command
        .args(["-c", "ulimit -n 64 && exec \"$0\" \"$@\""])
        .arg(support::example_binary("faults"))
        .args(["--http", "0", "--header-timeout-ms", "2000"])
        .env("RUST_LOG", "info");
    let mut server = HttpServer::start(command, START);
    let limits =
        std::fs::read_to_string(format!("/proc/{}/limits", server.pid())).unwrap_or_default();
    assert!(
        limits
            .lines()
            .any(|line| line.starts_with("Max open files") && line.contains(" 64 ")),
        "the child's file limit is not 64:\n{limits}"
    );
    // More connections than the server has descriptors; they send nothing.
    let flood: Vec<TcpStream> = (0..200)
        .filter_map(|_| TcpStream::connect_timeout(&server.addr(), Duration::from_secs(2)).ok())
        .collect();
    assert!(flood.len() > 64, "only {} flood connections", flood.len());
    thread::sleep(Duration::from_millis(300));
    let before = cpu_ticks(server.pid());
    thread::sleep(Duration::from_secs(1));
    let after = cpu_ticks(server.pid());
    if let (Some(before), Some(after)) = (before, after) {
        // 100 ticks a second on Linux: spinning on `accept` would use about 100.
        assert!(
            after - before < 30,
            "the server spins while out of descriptors: {} ticks in 1 s",
            after - before
        );
    }
    assert!(
        server.wait_exit(Duration::ZERO).is_none(),
        "the server died:\n{}",
        server.stderr()
    );
    drop(flood);
    wait_until_healthy(
        &server,
        Duration::from_secs(15),
        "a new client is served after the flood",
    );
    let init = post_to(server.addr(), None, INITIALIZE, REQUEST);
    assert_eq!(init.status, 200, "{init:?}");
    assert!(
        server.wait_exit(Duration::ZERO).is_none(),
        "the server died:\n{}",
        server.stderr()
    );
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

#[test]
fn a_request_whose_params_rmcp_cannot_read_gets_invalid_params_with_its_id() {
    let server = faults(&[]);
    let session = open_session(&server);
    let cases = [
        (
            7,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}"#,
        ),
        (
            8,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}"#,
        ),
        (
            9,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"text":"\ud800"}}}"#,
        ),
        (
            10,
            r#"{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo","arguments":{"text":1e999999}}}"#,
        ),
        (
            11,
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/list","params":{"cursor":-1e400}}"#,
        ),
    ];
    for (id, body) in cases {
        let answer = post_to(server.addr(), Some(&session), body, REQUEST);
        assert_eq!(answer.status, 400, "{body}: {answer:?}");
        let message = answer.message();
        assert_eq!(
            message["id"], id,
            "{body}: the answer carries the id: {message}"
        );
        assert_eq!(message["error"]["code"], -32602, "{body}: {message}");
        assert!(
            message["error"]["message"]
                .as_str()
                .is_some_and(|text| text.contains("Invalid params")),
            "{body}: {message}"
        );
    }
    // The session serves on.
    let answer = post_to(
        server.addr(),
        Some(&session),
        &call(12, "echo", r#"{"text":"ok"}"#),
        REQUEST,
    );
    assert!(answer.body.contains("\"ok\""), "{answer:?}");
}

#[test]
fn at_256_open_files_300_half_sent_connections_leave_room_for_another_client() {
    // The child gets a limit of 256 open files, as a small container would.
    let mut command = Command::new("sh");
    command
        .args(["-c", "ulimit -n 256 && exec \"$0\" \"$@\""])
        .arg(support::example_binary("faults"))
        .args(["--http", "0"])
        .env("RUST_LOG", "info");
    let server = HttpServer::start(command, START);
    let addr = server.addr();
    // Half-sent requests from 127.0.0.1 that never finish their headers.
    let flood: Vec<TcpStream> = (0..300)
        .filter_map(|_| {
            let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
            stream.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127").ok()?;
            Some(stream)
        })
        .collect();
    assert!(flood.len() > 200, "only {} flood connections", flood.len());
    thread::sleep(Duration::from_millis(300));
    assert!(
        server.stderr().contains("max_connections lowered"),
        "the cap was not fitted to the limit:\n{}",
        server.stderr()
    );
    // Another client, from another address, is served while the flood holds on.
    let other = std::net::IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 3));
    let health = support::connect_from(other, addr).and_then(|stream| {
        support::exchange(
            stream,
            &format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"),
            Duration::from_secs(5),
        )
    });
    assert!(
        health
            .as_ref()
            .is_ok_and(|health| health.starts_with("HTTP/1.1 200")),
        "/healthz from another client: {health:?}\n{}",
        server.stderr()
    );
    let initialize = support::connect_from(other, addr).and_then(|stream| {
        support::exchange(
            stream,
            &format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nConnection: close\r\n\
                 Content-Length: {}\r\n\r\n{INITIALIZE}",
                INITIALIZE.len()
            ),
            Duration::from_secs(10),
        )
    });
    assert!(
        initialize
            .as_ref()
            .is_ok_and(|answer| answer.starts_with("HTTP/1.1 200") && answer.contains("serverInfo")),
        "initialize from another client: {initialize:?}"
    );
    drop(flood);
}

#[test]
fn a_host_or_origin_whose_port_is_not_a_number_and_a_request_without_host_are_refused() {
    let server = faults(&[]);
    let addr = server.addr();
    for host in ["localhost:P.evil.com", "127.0.0.1:80x"] {
        let answer = raw_http(
            addr,
            "POST",
            "/mcp",
            &mcp_headers(&[("Host", host)]),
            INITIALIZE.as_bytes(),
            REQUEST,
        );
        assert_eq!(answer.status, 400, "Host {host}: {answer:?}");
    }
    for origin in ["http://localhost:P.evil.com", "http://127.0.0.1:80x"] {
        let answer = raw_http(
            addr,
            "POST",
            "/mcp",
            &mcp_headers(&[("Origin", origin)]),
            INITIALIZE.as_bytes(),
            REQUEST,
        );
        assert_eq!(answer.status, 403, "Origin {origin}: {answer:?}");
    }
    // An absolute-form target names the host, but HTTP/1.1 requires the header too.
    let stream = TcpStream::connect_timeout(&addr, REQUEST).expect("connect");
    let answer = support::exchange(
        stream,
        &format!(
            "POST http://{addr}/mcp HTTP/1.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nConnection: close\r\n\
             Content-Length: {}\r\n\r\n{INITIALIZE}",
            INITIALIZE.len()
        ),
        REQUEST,
    )
    .expect("an answer");
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    // A well-formed request still passes.
    let fine = post_to(addr, None, INITIALIZE, REQUEST);
    assert_eq!(fine.status, 200, "{fine:?}");
}

/// One 2026-07-28 `tools/call` of `multi_input` (no session) with `extra` params: its
/// JSON-RPC answer.
fn multi_input_round(server: &HttpServer, extra: serde_json::Value) -> serde_json::Value {
    let mut params = serde_json::json!({
        "name": "multi_input",
        "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "rounds", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    });
    if let (Some(params), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        params.extend(extra.clone());
    }
    let body =
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "multi_input"),
    ];
    post_mcp(server.addr(), &headers, &body.to_string(), REQUEST).message()
}

#[test]
fn an_answer_sealed_in_an_earlier_round_cannot_be_replaced() {
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]).env("RUST_LOG", "warn");
    let server = HttpServer::start(command, START);
    let answer = |value: &str| serde_json::json!({"action": "accept", "content": {"value": value}});
    let first = multi_input_round(&server, serde_json::json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    // Round 2 answers the first question only: the server seals it and asks the second.
    let second = multi_input_round(
        &server,
        serde_json::json!({"inputResponses": {"first": answer("sealed")},
            "requestState": first["result"]["requestState"]}),
    );
    assert_eq!(second["result"]["resultType"], "input_required", "{second}");
    let state = second["result"]["requestState"].clone();
    assert!(state.is_string(), "{second}");
    // Round 3 tries to answer the first question again, differently.
    let last = multi_input_round(
        &server,
        serde_json::json!({"inputResponses": {"first": answer("replaced"), "second": answer("two")},
            "requestState": state}),
    );
    let text = last["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.contains("sealed") && !text.contains("replaced"),
        "the sealed answer stands: {last}"
    );
}

#[test]
fn initialize_sent_as_a_2026_07_28_request_is_no_method_and_opens_no_session() {
    let server = faults(&[]);
    let answer = raw_http(
        server.addr(),
        "POST",
        "/mcp",
        &mcp_headers(&[("MCP-Protocol-Version", "2026-07-28")]),
        INITIALIZE.as_bytes(),
        REQUEST,
    );
    assert_eq!(answer.status, 404, "{answer:?}");
    assert!(answer.header("mcp-session-id").is_none(), "{answer:?}");
    let message = answer.message();
    assert_eq!(message["id"], 1, "{message}");
    assert_eq!(message["error"]["code"], -32601, "{message}");
    // Without the header, initialize opens a session as before.
    let session = open_session(&server);
    assert!(!session.is_empty());
}
