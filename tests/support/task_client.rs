//! A raw 2026-07-28 client of tasks, for the fleet tests: one request a fresh connection,
//! with the client's `_meta` (elicitation, and the tasks extension when asked).

use std::{
    net::SocketAddr,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

/// The limit of one HTTP exchange.
const REQUEST: Duration = Duration::from_secs(10);

/// The `_meta` of a 2026-07-28 request from a client with elicitation, and with the tasks
/// extension when `tasks`.
pub(crate) fn meta(tasks: bool) -> Value {
    let mut capabilities = json!({"elicitation": {"form": {}}});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "task-fleet-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// One request on a fresh connection, from a client with the tasks extension; its
/// JSON-RPC message, or what went wrong (a replica that is down, a status other than 200).
pub(crate) fn send(
    addr: SocketAddr,
    method: &str,
    name: &str,
    params: Value,
) -> Result<Value, String> {
    send_as(addr, method, name, params, true)
}

/// [`send`], from a client with the tasks extension or without.
pub(crate) fn send_as(
    addr: SocketAddr,
    method: &str,
    name: &str,
    mut params: Value,
    tasks: bool,
) -> Result<Value, String> {
    params["_meta"] = meta(tasks);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = super::mcp_headers(&[
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ]);
    let answer = super::try_raw_http(addr, "POST", "/mcp", &headers, body.as_bytes(), REQUEST)?;
    if answer.status != 200 {
        return Err(format!("HTTP {}: {}", answer.status, answer.body));
    }
    answer.try_message()
}

/// Creates a task of `tool`; its id, or the whole answer when it is not a task.
pub(crate) fn create(addr: SocketAddr, tool: &str, arguments: Value) -> Result<String, String> {
    let answer = send(
        addr,
        "tools/call",
        tool,
        json!({"name": tool, "arguments": arguments}),
    )?;
    answer["result"]["taskId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| answer.to_string())
}

pub(crate) fn get(addr: SocketAddr, id: &str) -> Result<Value, String> {
    send(addr, "tasks/get", id, json!({"taskId": id}))
}

pub(crate) fn status(answer: &Value) -> &str {
    answer["result"]["status"].as_str().unwrap_or_default()
}

pub(crate) fn is_unknown(answer: &Value) -> bool {
    answer["error"]["code"] == -32602
}

pub(crate) fn is_finished(answer: &Value) -> bool {
    matches!(status(answer), "completed" | "failed" | "cancelled")
}

/// Polls task `id` on `addr` until it ends (at most `limit`); its last answer.
pub(crate) fn poll_end(addr: SocketAddr, id: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let answer = get(addr, id).unwrap_or_else(|error| panic!("poll {id}: {error}"));
        assert!(!is_unknown(&answer), "task {id} unknown: {answer}");
        if is_finished(&answer) || Instant::now() >= deadline {
            return answer;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// Opens a 2025-11-25 session whose client (`client`) declared the tasks extension; its id.
pub(crate) fn tasks_session(addr: SocketAddr, client: &str) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "clientInfo": {"name": client, "version": "1"}}});
    let answer = super::post_mcp(addr, &[], &init.to_string(), REQUEST);
    assert_eq!(answer.status, 200, "{answer:?}");
    let session = answer
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no session id: {answer:?}"))
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ready = super::post_mcp(
        addr,
        &[("Mcp-Session-Id", &session)],
        &initialized.to_string(),
        REQUEST,
    );
    assert_eq!(ready.status, 202, "{ready:?}");
    session
}
