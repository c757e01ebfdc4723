//! `examples/report_task.rs`: a slow report that runs as a task. Over raw HTTP with
//! 2026-07-28 requests (no session): the call answers at once with a task; `tasks/get`
//! reports `working`, then `completed` with the report inlined; a new connection (a client
//! that went away and came back) gets the same result; `tasks/cancel` stops a running
//! report; an unknown task id is `-32602`; a client without the extension gets the report
//! as an ordinary result.

use crate::support;

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(10);

/// The `_meta` of a 2026-07-28 request, declaring the tasks extension or not.
fn meta(tasks: bool) -> Value {
    let capabilities = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "report-task-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// One request (a fresh connection each time), its JSON-RPC answer.
fn request(server: &support::HttpServer, method: &str, name: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let headers = [
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
        ("Mcp-Name", name),
    ];
    support::post_mcp(server.addr(), &headers, &body, TIMEOUT).message()
}

fn call_report(server: &support::HttpServer, seconds: f64, tasks: bool) -> Value {
    request(
        server,
        "tools/call",
        "quarterly_report",
        json!({"name": "quarterly_report", "arguments": {"quarter": 3, "seconds": seconds}, "_meta": meta(tasks)}),
    )
}

fn get(server: &support::HttpServer, id: &str) -> Value {
    request(
        server,
        "tasks/get",
        id,
        json!({"taskId": id, "_meta": meta(true)}),
    )
}

/// Polls until the task leaves `working`, at most `limit`.
fn poll(server: &support::HttpServer, id: &str, limit: Duration) -> Value {
    let deadline = Instant::now() + limit;
    loop {
        let answer = get(server, id);
        let status = answer["result"]["status"].as_str().unwrap_or("").to_owned();
        if status != "working" || Instant::now() >= deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn start() -> support::HttpServer {
    let mut command = Command::new(support::example_binary("report_task"));
    command.args(["--port", "0"]).env("RUST_LOG", "warn");
    support::HttpServer::start(command, Duration::from_secs(30))
}

#[test]
fn a_slow_report_runs_as_a_task_that_a_client_polls() {
    let server = start();
    let created = call_report(&server, 1.0, true);
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working", "{created}");
    assert!(
        result["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{created}"
    );
    let id = result["taskId"].as_str().expect("a task id").to_owned();
    // At once: still working.
    let working = get(&server, &id);
    assert_eq!(working["result"]["status"], "working", "{working}");
    // Each poll is a new connection: a client that went away and came back.
    let done = poll(&server, &id, Duration::from_secs(10));
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.starts_with("Q3 report"), "{done}");
    // Polled again after it ended: the same result.
    let again = get(&server, &id);
    assert_eq!(again["result"]["result"], done["result"]["result"]);
}

#[test]
fn a_cancelled_report_stops_and_says_so() {
    let server = start();
    let created = call_report(&server, 30.0, true);
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    let ack = request(
        &server,
        "tasks/cancel",
        &id,
        json!({"taskId": id, "_meta": meta(true)}),
    );
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    let cancelled = poll(&server, &id, Duration::from_secs(5));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
}

#[test]
fn unknown_tasks_and_clients_without_the_extension() {
    let server = start();
    let unknown = get(&server, "no-such-task");
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let plain = call_report(&server, 0.0, false);
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    assert!(plain["result"].get("taskId").is_none(), "{plain}");
}
