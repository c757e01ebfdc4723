//! Log flooding: whatever a client sends at length (a notification's params, a cancel's
//! reason, a progress message, a method or tool name, its own name) reaches stderr cut,
//! over both transports, even with `RUST_LOG=debug`, where rmcp logs every message it gets.

use std::{process::Command, time::Duration};

use serde_json::{Value, json};

use crate::support::{self, stdio_peer::StdioPeer};

/// One MiB of text.
fn mib() -> String {
    "x".repeat(1 << 20)
}

/// The most stderr may grow under [`floods`] (six messages of 1 MiB and an `initialize`
/// whose client name is one): a few KiB a line.
const STDERR_BOUND: usize = 96 * 1024;

/// The messages that carry 1 MiB each, after `initialize`.
fn floods() -> Vec<Value> {
    let big = mib();
    vec![
        json!({"jsonrpc": "2.0", "method": "notifications/anything", "params": {"x": big}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 99, "reason": big}}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 1, "message": big}}),
        json!({"jsonrpc": "2.0", "id": "m", "method": big, "params": {}}),
        json!({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
            "params": {"name": big, "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": "e", "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": big}}}),
    ]
}

/// `initialize` from a client whose name is 1 MiB long.
fn initialize_with_a_long_name() -> Value {
    json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": mib(), "version": "1"}}})
}

/// Holds stderr to the bound, and each line to the log's own (16 KiB).
fn assert_bounded(stderr: &str, transport: &str) {
    let longest = stderr.lines().map(str::len).max().unwrap_or(0);
    let head: String = stderr.chars().take(2_000).collect();
    assert!(
        stderr.len() < STDERR_BOUND,
        "{transport}: 7 MiB of client input wrote {} bytes to stderr (bound {STDERR_BOUND}); its \
         longest line has {longest}: {head}",
        stderr.len()
    );
    assert!(
        longest <= 16 * 1024 + 64,
        "{transport}: a line of {longest} bytes"
    );
}

#[test]
fn a_client_that_sends_megabytes_over_stdio_writes_kilobytes_to_stderr() {
    let mut server = StdioPeer::spawn(
        &support::example_binary("quickstart"),
        &[],
        &[("RUST_LOG", "debug")],
    )
    .kill_after(Duration::from_secs(60));
    server.send(&initialize_with_a_long_name());
    let init = server.answer(&json!("init"));
    assert!(init.get("result").is_some(), "initialized: {init:?}");
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    for message in floods() {
        server.send(&message);
    }
    for id in ["m", "t", "e"] {
        server.answer(&json!(id));
    }
    server.alive("after the floods");
    // Closing stdin ends the server, which writes out its log first.
    drop(server.take_stdin());
    assert!(server.wait_exit(Duration::from_secs(20)).is_some(), "exits");
    let stderr = server.stderr_to_end(Duration::from_secs(10));
    assert!(
        stderr.contains("received notification"),
        "rmcp's lines are kept, cut"
    );
    assert_bounded(&stderr, "stdio");
}

#[test]
fn a_client_that_sends_megabytes_over_http_writes_kilobytes_to_stderr() {
    let mut command = Command::new(support::example_binary("faults"));
    command.args(["--http", "0"]).env("RUST_LOG", "debug");
    let server = support::HttpServer::start(command, Duration::from_secs(30));
    let timeout = Duration::from_secs(20);
    let init = support::post_mcp(
        server.addr(),
        &[],
        &initialize_with_a_long_name().to_string(),
        timeout,
    );
    assert_eq!(init.status, 200, "{:?}", init.status);
    let session = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let headers = [("Mcp-Session-Id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    support::post_mcp(server.addr(), &headers, &initialized.to_string(), timeout);
    let before = server.stderr().len();
    for message in floods() {
        let answer = support::post_mcp(server.addr(), &headers, &message.to_string(), timeout);
        assert!(answer.status < 500, "{}", answer.status);
    }
    let ping = json!({"jsonrpc": "2.0", "id": "p", "method": "ping"});
    let pong = support::post_mcp(server.addr(), &headers, &ping.to_string(), timeout);
    assert_eq!(pong.status, 200);
    // The log's writer takes lines in batches: a moment for the last ones.
    std::thread::sleep(Duration::from_millis(500));
    let stderr = server.stderr();
    assert_bounded(&stderr[before.min(stderr.len())..], "HTTP");
    assert_bounded(&stderr, "HTTP (with the initialize)");
}
