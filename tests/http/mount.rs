//! fusion inside other servers: the MCP endpoint mounted into an existing axum app
//! (`examples/axum_mount.rs`, raw HTTP), and fusion's tools added to an rmcp server of the
//! team's own (`examples/rmcp_existing.rs`, over stdio).

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{HttpServer, RawResponse, stdio_peer::StdioPeer};

const WAIT: Duration = Duration::from_secs(20);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"mount-test","version":"0"}}}"#;

fn mounted() -> HttpServer {
    let mut command = std::process::Command::new(support::example_binary("axum_mount"));
    command.args(["--port", "0"]);
    HttpServer::start(command, WAIT)
}

fn get(server: &HttpServer, path: &str) -> RawResponse {
    support::raw_http(server.addr(), "GET", path, &[], b"", WAIT)
}

/// The JSON-RPC message of an answer, whether it came as JSON or as one SSE event.
fn message(response: &RawResponse) -> Value {
    let body = response.body.trim();
    // An SSE stream may open with an empty priming event.
    let json = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .find(|data| !data.trim().is_empty())
        .unwrap_or(body);
    serde_json::from_str(json.trim())
        .unwrap_or_else(|error| panic!("not JSON-RPC ({error}): {response:?}"))
}

/// Opens a session; the headers every later request of it sends.
fn open_session(server: &HttpServer, extra: &[(&str, &str)]) -> String {
    let init = support::post_mcp(server.addr(), extra, INITIALIZE, WAIT);
    assert_eq!(init.status, 200, "{init:?}");
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {init:?}"))
        .to_owned();
    let mut headers = vec![
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    headers.extend_from_slice(extra);
    let initialized = support::post_mcp(
        server.addr(),
        &headers,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        WAIT,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    session
}

fn call(
    server: &HttpServer,
    session: &str,
    extra: &[(&str, &str)],
    tool: &str,
    args: Value,
) -> Value {
    let mut headers = vec![
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", "2025-06-18"),
    ];
    headers.extend_from_slice(extra);
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    let answer = support::post_mcp(server.addr(), &headers, &body.to_string(), WAIT);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(
        answer.header("x-served-by"),
        Some("the-team-app"),
        "the app's layer wraps MCP too: {answer:?}"
    );
    message(&answer)["result"].clone()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn the_app_keeps_its_routes_and_serves_mcp_beside_them() {
    let server = mounted();
    let home = get(&server, "/");
    assert_eq!(
        (home.status, home.body.trim()),
        (200, "the team's app"),
        "{home:?}"
    );
    assert_eq!(home.header("x-served-by"), Some("the-team-app"));
    let status = get(&server, "/api/status");
    assert_eq!(status.status, 200, "{status:?}");
    let missing = get(&server, "/nope");
    assert_eq!(
        (missing.status, missing.body.trim()),
        (404, "the app has no such page"),
        "the app's own fallback stays: {missing:?}"
    );
    let health = get(&server, "/healthz");
    assert_eq!(
        (health.status, health.body.trim()),
        (200, "ok"),
        "{health:?}"
    );
    let metrics = get(&server, "/metrics");
    assert_eq!(metrics.status, 200, "{metrics:?}");

    let session = open_session(&server, &[]);
    let sum = call(&server, &session, &[], "add", json!({"a": 2, "b": 40}));
    assert_eq!(sum["isError"], false, "{sum}");
    assert_eq!(text(&sum), "42");
    let bad = call(&server, &session, &[], "add", json!({"a": "two", "b": 40}));
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(
        text(&bad).contains("`a`"),
        "fusion's validation names the field: {bad}"
    );
}

#[test]
fn the_mounted_endpoint_keeps_its_guard() {
    let server = mounted();
    let evil = support::post_mcp(
        server.addr(),
        &[("Host", "evil.example.com")],
        INITIALIZE,
        WAIT,
    );
    assert_eq!(
        evil.status, 403,
        "the Host check comes with the router: {evil:?}"
    );
    let origin = support::post_mcp(
        server.addr(),
        &[("Origin", "http://evil.example.com")],
        INITIALIZE,
        WAIT,
    );
    assert_eq!(origin.status, 403, "{origin:?}");
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(5 * 1024 * 1024)
    );
    let too_large = support::post_mcp(server.addr(), &[], &big, WAIT);
    assert_eq!(
        too_large.status, 413,
        "the body limit comes too: {too_large:?}"
    );
}

#[test]
fn tools_see_what_the_apps_layers_put_in_the_request() {
    let server = mounted();
    let ann = [("x-team-user", "ann")];
    let session = open_session(&server, &ann);
    let who = call(&server, &session, &ann, "whoami", json!({}));
    assert_eq!(text(&who), "ann", "{who}");
    // The same session, another request without the header: each call sees its own request.
    let nobody = call(&server, &session, &[], "whoami", json!({}));
    assert_eq!(text(&nobody), "nobody signed in", "{nobody}");
}

#[test]
fn an_rmcp_server_serves_fusions_tools_beside_its_own() {
    let mut peer = StdioPeer::spawn(&support::example_binary("rmcp_existing"), &[], &[]);
    peer.initialize();
    let listed = peer.request(json!(2), "tools/list", json!({}));
    let mut names: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools: {listed}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["divide", "version"], "{listed}");
    let divide = listed["result"]["tools"]
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "divide"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        divide["inputSchema"]["required"],
        json!(["dividend", "divisor"]),
        "fusion's schema: {divide}"
    );

    let own = peer.call(json!(3), "version", json!({}));
    assert_eq!(
        own["result"]["content"][0]["text"], "existing 2.4.1",
        "{own}"
    );
    let ok = peer.call(json!(4), "divide", json!({"dividend": 9, "divisor": 2}));
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert_eq!(ok["result"]["content"][0]["text"], "4.5", "{ok}");
    let bad = peer.call(json!(5), "divide", json!({"dividend": 9, "divisor": "two"}));
    let message = bad["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        message.contains("`divisor`") && message.contains("number"),
        "fusion's validation: {bad}"
    );
    let zero = peer.call(json!(6), "divide", json!({"dividend": 1, "divisor": 0}));
    assert_eq!(zero["result"]["isError"], true, "{zero}");
    assert!(
        zero["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("division by zero")),
        "{zero}"
    );
    peer.alive("after-calls");
}
