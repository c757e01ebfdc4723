//! Streamable HTTP below any client library: raw HTTP/1.1 requests against the fault server
//! (`examples/faults.rs --http 0`) for what the transport adds around rmcp's service: Host
//! and Origin validation, the bearer token, the body limit, answers to bodies that are not
//! JSON-RPC, `/healthz`, `/readyz`, `/metrics`, the graceful drain on SIGTERM and the exit
//! after a fatal error.
//!
//! Needs the built example (`cargo build --examples`). Each server is killed when its test
//! ends, whatever the outcome; every request has a timeout.

use crate::support;

use std::{process::Command, time::Duration};

use support::{HttpServer, RawResponse, raw_http};

const START: Duration = Duration::from_secs(30);
const REQUEST: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-http-test","version":"0"}}}"#;

fn faults(args: &[&str]) -> HttpServer {
    let mut command = Command::new(support::example_binary("faults"));
    command
        .args(["--http", "0"])
        .args(args)
        .env("RUST_LOG", "info");
    HttpServer::start(command, START)
}

/// A POST to the MCP endpoint with the headers a client sends, plus `extra`.
fn post(server: &HttpServer, extra: &[(&str, &str)], body: &str) -> RawResponse {
    support::post_mcp(server.addr(), extra, body, REQUEST)
}

fn get(server: &HttpServer, path: &str, headers: &[(&str, &str)]) -> RawResponse {
    raw_http(server.addr(), "GET", path, headers, b"", REQUEST)
}

/// Initializes a session on `server` and says it is initialized; its id.
fn open_session(server: &HttpServer) -> String {
    let init = post(server, &[], INITIALIZE);
    assert_eq!(init.status, 200, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let initialized = post(
        server,
        &[("Mcp-Session-Id", &session)],
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    session
}

fn tool_call(id: u32, name: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments}}}}}"#
    )
}

/// Starts a 1.5 s call on its own connection, waits until it runs, then sends SIGTERM.
/// The thread returns the call's response.
fn start_slow_call_then_terminate(
    server: &HttpServer,
    id: u32,
) -> std::thread::JoinHandle<RawResponse> {
    let addr = server.addr();
    let slow = std::thread::spawn(move || {
        raw_http(
            addr,
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            tool_call(id, "slow", r#"{"ms":1500}"#).as_bytes(),
            REQUEST,
        )
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !get(server, "/metrics", &[])
        .body
        .contains(r#"fusion_tool_in_flight{tool="slow"} 1"#)
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the slow call never started\n{}",
            server.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    server.signal("TERM");
    slow
}

/// Waits (at most 5 s) until `/readyz` says 503: the server is draining.
fn wait_until_draining(server: &HttpServer) {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let ready = get(server, "/readyz", &[]);
        if ready.status == 503 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "/readyz never said 503 while draining: {ready:?}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn health_and_readiness_answer_without_checks() {
    let server = faults(&["--bearer-token", "s3cret"]);
    let health = get(&server, "/healthz", &[("Host", "anything.example")]);
    assert_eq!(health.status, 200, "{health:?}");
    let ready = get(&server, "/readyz", &[]);
    let lines: Vec<&str> = ready.body.lines().collect();
    assert_eq!((ready.status, lines[0]), (200, "ready"), "{ready:?}");
    // The second line says which tool surface this replica serves.
    let digest = lines.get(1).and_then(|line| line.strip_prefix("surface "));
    assert!(digest.is_some_and(|digest| digest.len() == 64), "{ready:?}");
    let missing = get(&server, "/nope", &[]);
    assert_eq!(missing.status, 404, "{missing:?}");
}

#[test]
fn hosts_and_origins_are_validated() {
    let server = faults(&[]);
    let evil = post(&server, &[("Host", "evil.example.com")], INITIALIZE);
    assert_eq!(evil.status, 403, "Host evil.example.com: {evil:?}");
    let evil_port = post(&server, &[("Host", "evil.example.com:80")], INITIALIZE);
    assert_eq!(evil_port.status, 403, "{evil_port:?}");

    let port = server.addr().port();
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let ok = post(&server, &[("Host", &host)], INITIALIZE);
        assert_eq!(ok.status, 200, "Host {host}: {ok:?}");
        assert!(ok.header("mcp-session-id").is_some(), "a session: {ok:?}");
    }

    let bad_origin = post(
        &server,
        &[("Origin", "http://evil.example.com")],
        INITIALIZE,
    );
    assert_eq!(bad_origin.status, 403, "{bad_origin:?}");
    let local_origin = post(&server, &[("Origin", "http://localhost:6274")], INITIALIZE);
    assert_eq!(local_origin.status, 200, "{local_origin:?}");

    let metrics = get(&server, "/metrics", &[("Host", "evil.example.com")]);
    assert_eq!(
        metrics.status, 403,
        "/metrics checks the Host too: {metrics:?}"
    );
}

#[test]
fn the_bearer_token_is_required_where_it_matters() {
    let server = faults(&["--bearer-token", "s3cret"]);
    let missing = post(&server, &[], INITIALIZE);
    assert_eq!(missing.status, 401, "{missing:?}");
    assert_eq!(missing.header("www-authenticate"), Some("Bearer"));
    let wrong = post(&server, &[("Authorization", "Bearer guess")], INITIALIZE);
    assert_eq!(wrong.status, 401, "{wrong:?}");
    let right = post(&server, &[("Authorization", "Bearer s3cret")], INITIALIZE);
    assert_eq!(right.status, 200, "{right:?}");

    assert_eq!(get(&server, "/metrics", &[]).status, 401);
    let metrics = get(&server, "/metrics", &[("Authorization", "Bearer s3cret")]);
    assert_eq!(metrics.status, 200, "{metrics:?}");
}

#[test]
fn bodies_are_limited_and_must_be_json_rpc() {
    let server = faults(&["--max-body-bytes", "2048"]);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(4096)
    );
    let too_large = post(&server, &[], &big);
    assert_eq!(too_large.status, 413, "{too_large:?}");

    let not_json = post(&server, &[], "{this is not json");
    assert_eq!(not_json.status, 400, "{not_json:?}");
    assert!(
        not_json.body.contains("-32700") && not_json.body.contains(r#""id":null"#),
        "a JSON-RPC parse error: {not_json:?}"
    );
    let not_rpc = post(&server, &[], r#"{"hello":"world"}"#);
    assert_eq!(not_rpc.status, 400, "{not_rpc:?}");
    assert!(not_rpc.body.contains("-32600"), "{not_rpc:?}");

    // The server is still fine.
    assert_eq!(post(&server, &[], INITIALIZE).status, 200);
}

#[test]
fn a_session_calls_a_tool_and_metrics_count_it() {
    let server = faults(&[]);
    let init = post(&server, &[], INITIALIZE);
    assert_eq!(init.status, 200, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let with_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    let initialized = post(
        &server,
        &with_session,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    let call = post(
        &server,
        &with_session,
        &tool_call(2, "echo", r#"{"text":"over http"}"#),
    );
    assert_eq!(call.status, 200, "{call:?}");
    assert!(
        call.body.contains("over http") && call.body.contains(r#""id":2"#),
        "the result on the response stream: {call:?}"
    );

    let metrics = get(&server, "/metrics", &[]);
    assert_eq!(metrics.status, 200, "{metrics:?}");
    assert!(
        metrics
            .header("content-type")
            .is_some_and(|value| value.starts_with("text/plain")),
        "{metrics:?}"
    );
    assert!(
        metrics
            .body
            .contains(r#"fusion_tool_calls_total{tool="echo",outcome="ok"} 1"#),
        "{}",
        metrics.body
    );
}

#[test]
fn sigterm_drains_calls_in_flight_then_exits_zero() {
    let mut server = faults(&["--stateless", "--shutdown-grace-ms", "5000"]);
    let slow = start_slow_call_then_terminate(&server, 7);
    // Draining: still serving, but not ready.
    wait_until_draining(&server);
    let answered = slow
        .join()
        .unwrap_or_else(|_| panic!("the call's thread panicked"));
    assert_eq!(answered.status, 200, "{answered:?}");
    assert!(
        answered.body.contains("slept 1500 ms"),
        "the call in flight was answered: {answered:?}"
    );
    let status = server.wait_exit(Duration::from_secs(10));
    assert!(
        status.is_some_and(|status| status.code() == Some(0)),
        "exit after the drain: {status:?}\n{}",
        server.stderr()
    );
    assert!(server.stderr().contains("draining"), "{}", server.stderr());
}

#[test]
fn a_fatal_error_is_answered_then_the_process_exits_70() {
    let mut server = faults(&["--stateless"]);
    let answered = post(
        &server,
        &[],
        &tool_call(3, "fail_with", r#"{"kind":"fatal"}"#),
    );
    assert_eq!(answered.status, 200, "{answered:?}");
    assert!(answered.body.contains(r#""isError":true"#), "{answered:?}");
    let status = server.wait_exit(Duration::from_secs(10));
    assert!(
        status.is_some_and(|status| status.code() == Some(70)),
        "exit code 70 after a fatal error: {status:?}\n{}",
        server.stderr()
    );
}

#[test]
fn while_draining_answers_close_their_connections() {
    let mut server = faults(&["--stateless", "--shutdown-grace-ms", "5000"]);
    // Before the signal, a keep-alive request keeps its connection.
    let before = raw_http(
        server.addr(),
        "GET",
        "/readyz",
        &[("Connection", "keep-alive")],
        b"",
        Duration::from_millis(500),
    );
    assert_eq!(before.status, 200, "{before:?}");
    assert_ne!(before.header("connection"), Some("close"), "{before:?}");

    let slow = start_slow_call_then_terminate(&server, 8);
    wait_until_draining(&server);
    // Draining (the slow call still runs): a keep-alive request is answered and its
    // connection closed, so that a proxy opens a new one (to another replica) next time.
    let during = raw_http(
        server.addr(),
        "GET",
        "/readyz",
        &[("Connection", "keep-alive")],
        b"",
        Duration::from_secs(2),
    );
    assert_eq!(during.status, 503, "{during:?}");
    assert_eq!(during.header("connection"), Some("close"), "{during:?}");
    let answered = slow
        .join()
        .unwrap_or_else(|_| panic!("the call's thread panicked"));
    assert_eq!(answered.status, 200, "{answered:?}");
    let status = server.wait_exit(Duration::from_secs(15));
    assert!(
        status.is_some_and(|status| status.code() == Some(0)),
        "exit after the drain: {status:?}\n{}",
        server.stderr()
    );
}

/// `quickstart --http 0 --stateless`: no session, each request served on its own.
#[test]
fn the_quickstart_serves_without_sessions_with_stateless() {
    let mut command = Command::new(support::example_binary("quickstart"));
    command
        .args(["--http", "0", "--stateless"])
        .env("RUST_LOG", "info");
    let server = HttpServer::start(command, START);
    let answered = post(&server, &[], &tool_call(4, "add", r#"{"a":2,"b":3}"#));
    assert_eq!(answered.status, 200, "{answered:?}");
    assert!(
        answered.header("mcp-session-id").is_none(),
        "no session: {answered:?}"
    );
    assert!(
        answered.body.contains(r#""id":4"#) && answered.body.contains(r#""isError":false"#),
        "{answered:?}"
    );
}

/// The `_meta` of a 2026-07-28 request, with `capabilities` for the client's.
fn meta_2026(capabilities: &str) -> String {
    format!(
        r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"raw-http-test","version":"0"}},"io.modelcontextprotocol/clientCapabilities":{capabilities}}}"#
    )
}

/// 2026-07-28 calls (no session) are served past rmcp when they pass every check rmcp
/// makes, in both modes, and answered as one JSON body; what fails a check is still
/// rmcp's to answer. Each request is sent twice: as a client sends it, and with an
/// `Accept` that weighs its types (which always leaves it to rmcp); both answers must be
/// the same message with the same status.
#[test]
fn calls_of_2026_07_28_get_rmcps_answers_in_one_json_body() {
    let good = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "add"),
    ];
    let call = |id: u32, name: &str, arguments: &str, capabilities: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{arguments},"_meta":{}}}}}"#,
            meta_2026(capabilities)
        )
    };
    // What is sent, its headers, its body, and whether it passes every check (goes direct).
    struct Case {
        what: &'static str,
        headers: Vec<(&'static str, &'static str)>,
        body: String,
        direct: bool,
    }
    let case = |what, headers, body, direct| Case {
        what,
        headers,
        body,
        direct,
    };
    let cases = [
        case(
            "a call that passes every check",
            good.to_vec(),
            call(1, "add", r#"{"a":2,"b":40}"#, "{}"),
            true,
        ),
        case(
            "arguments that fail validation",
            good.to_vec(),
            call(2, "add", r#"{"a":"two","b":40}"#, "{}"),
            true,
        ),
        case(
            "an unknown tool named the same in Mcp-Name",
            vec![good[0], good[1], ("Mcp-Name", "nope")],
            call(3, "nope", "{}", "{}"),
            true,
        ),
        case(
            "Mcp-Name names another tool",
            vec![good[0], good[1], ("Mcp-Name", "echo")],
            call(4, "add", r#"{"a":1,"b":1}"#, "{}"),
            false,
        ),
        case(
            "no Mcp-Method",
            vec![good[0], good[2]],
            call(5, "add", r#"{"a":1,"b":1}"#, "{}"),
            false,
        ),
        case(
            "_meta without the client's capabilities",
            good.to_vec(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#.to_owned(),
            false,
        ),
        case(
            "the header names an earlier revision than _meta",
            vec![("MCP-Protocol-Version", "2025-11-25"), good[1], good[2]],
            call(7, "add", r#"{"a":1,"b":1}"#, "{}"),
            false,
        ),
    ];
    for mode in [&["--http", "0"][..], &["--http", "0", "--stateless"][..]] {
        let mut command = Command::new(support::example_binary("quickstart"));
        command.args(mode).env("RUST_LOG", "info");
        let server = HttpServer::start(command, START);
        for Case {
            what,
            headers,
            body,
            direct,
        } in &cases
        {
            let served = post(&server, headers, body);
            let mut weighed = headers.clone();
            weighed.push(("Accept", "application/json;q=1"));
            let by_rmcp = post(&server, &weighed, body);
            assert_eq!(
                (served.status, served.message()),
                (by_rmcp.status, by_rmcp.message()),
                "{mode:?}, {what}: served {served:?}\nby rmcp {by_rmcp:?}"
            );
            if *direct {
                assert_eq!(
                    served.header("content-type"),
                    Some("application/json"),
                    "{mode:?}, {what}: one JSON body {served:?}"
                );
            }
        }
        let sum = post(&server, &good, &cases[0].body).message();
        assert_eq!(sum["result"]["resultType"], "complete", "{sum}");
        assert_eq!(sum["result"]["structuredContent"]["result"], 42, "{sum}");
    }
}

/// A call answered within the SSE keep-alive interval is one JSON body; a longer one is an
/// SSE stream of keep-alive comments and then its answer, so that a proxy that cuts idle
/// connections keeps it. On a session, without one (stateless), and for a 2026-07-28 call.
#[test]
fn a_call_longer_than_the_keep_alive_interval_streams_keep_alives_then_its_answer() {
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let slow_2026 = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"slow","arguments":{{"ms":900}},"_meta":{meta}}}}}"#
    );
    let headers_2026 = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "slow"),
    ];
    for stateless in [false, true] {
        let mut args = vec!["--sse-keep-alive-ms", "200"];
        if stateless {
            args.push("--stateless");
        }
        let server = faults(&args);
        let session = (!stateless).then(|| open_session(&server));
        let with_session: Vec<(&str, &str)> = session
            .iter()
            .map(|id| ("Mcp-Session-Id", id.as_str()))
            .collect();
        let fast = post(&server, &with_session, &tool_call(1, "slow", r#"{"ms":0}"#));
        assert_eq!(
            fast.header("content-type"),
            Some("application/json"),
            "stateless {stateless}: {fast:?}"
        );
        let slow = post(
            &server,
            &with_session,
            &tool_call(2, "slow", r#"{"ms":900}"#),
        );
        let slow_current = post(&server, &headers_2026, &slow_2026);
        for (answer, id) in [(&slow, 2), (&slow_current, 3)] {
            assert_eq!(
                answer.header("content-type"),
                Some("text/event-stream"),
                "stateless {stateless}: {answer:?}"
            );
            let keep_alives = answer.body.matches(": keep-alive").count();
            assert!(
                (2..=100).contains(&keep_alives),
                "keep-alive comments every 200 ms of 900 (stateless {stateless}): {answer:?}"
            );
            let message = answer.message();
            assert_eq!(message["id"], id, "{answer:?}");
            assert_eq!(
                message["result"]["content"][0]["text"], "slept 900 ms",
                "{answer:?}"
            );
        }
    }
}

/// On a session, rmcp answers every request as SSE; what carries one answer and nothing
/// else becomes one JSON body (`tools/list`, a call with a progress token that reports
/// none), and a stream with notifications before its answer stays a stream.
#[test]
fn session_answers_are_json_where_nothing_streams() {
    let mut command = Command::new(support::example_binary("conformance"));
    command.args(["--port", "0"]).env("RUST_LOG", "info");
    let server = HttpServer::start(command, START);
    let init = post(&server, &[], INITIALIZE);
    assert_eq!(
        init.header("content-type"),
        Some("application/json"),
        "{init:?}"
    );
    let session = open_session(&server);
    let with_session = [("Mcp-Session-Id", session.as_str())];

    let list = post(
        &server,
        &with_session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    assert_eq!(
        list.header("content-type"),
        Some("application/json"),
        "{list:?}"
    );
    let listed = list.message();
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| !tools.is_empty()),
        "{list:?}"
    );

    let quiet = post(
        &server,
        &with_session,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},"_meta":{"progressToken":"p3"}}}"#,
    );
    assert_eq!(
        quiet.header("content-type"),
        Some("application/json"),
        "{quiet:?}"
    );
    assert_eq!(quiet.message()["id"], 3, "{quiet:?}");

    let progress = post(
        &server,
        &with_session,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"p4"}}}"#,
    );
    assert_eq!(
        progress.header("content-type"),
        Some("text/event-stream"),
        "{progress:?}"
    );
    let events: Vec<serde_json::Value> = progress
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    assert_eq!(
        events
            .iter()
            .filter(|event| event["method"] == "notifications/progress")
            .count(),
        3,
        "{progress:?}"
    );
    assert_eq!(
        events.last().map(|event| event["id"].clone()),
        Some(4.into()),
        "{progress:?}"
    );
}

#[test]
fn an_idempotency_key_header_keys_the_request() {
    let server = faults(&[]);
    let session = open_session(&server);
    let tally = |id: u32, label: &str, key: Option<&str>| {
        let mut headers = vec![
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", "2025-06-18"),
        ];
        if let Some(key) = key {
            headers.push(("Idempotency-Key", key));
        }
        let body = tool_call(id, "tally", &format!(r#"{{"label":"{label}"}}"#));
        post(&server, &headers, &body).message()
    };
    let text = |answer: &serde_json::Value| {
        answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let first = tally(2, "lamp", Some("gw-1"));
    assert_eq!(text(&first), "run 1 of lamp", "{first}");
    let again = tally(3, "lamp", Some("gw-1"));
    assert_eq!(text(&again), "run 1 of lamp", "a gateway's retry: {again}");
    let other = tally(4, "lamp", Some("gw-2"));
    assert_eq!(text(&other), "run 2 of lamp", "{other}");
    let conflict = tally(5, "desk", Some("gw-1"));
    assert_eq!(conflict["result"]["isError"], true, "{conflict}");
    assert_eq!(
        conflict["result"]["_meta"]["fusion/failure"]["code"], "conflict",
        "{conflict}"
    );
    let plain = tally(6, "lamp", None);
    assert_eq!(text(&plain), "run 3 of lamp", "{plain}");
}
