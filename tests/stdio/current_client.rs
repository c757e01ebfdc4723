//! A 2026-07-28 client over stdio (no `initialize`; each request names its revision, its
//! client and its capabilities in `_meta`), against the conformance example served by
//! fusion's transport, which serves such a `tools/call` itself when it passes every check
//! rmcp's dispatch makes (issue 56), and by rmcp's own stdio loop
//! (`FUSION_STDIO_TRANSPORT=rmcp`), the oracle: every line the client reads must be the
//! same, but for the signed request state of a multi-round call (sealed with a key of the
//! process). rmcp's log (`RUST_LOG=rmcp=debug`) says which requests its loop received:
//! under fusion's transport, the calls that pass every check are not among them.

use crate::support::{self, stdio_peer::StdioPeer};

use std::time::Duration;

use serde_json::{Value, json};

/// How long one answer may take.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// How long the server may take to end once its stdin is closed.
const EXIT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `_meta` a 2026-07-28 client puts in every request.
fn whole_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "current-client", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    })
}

/// A `tools/call` of `name` with `arguments` and `meta`, and more params.
fn call(id: u64, name: &str, arguments: Value, meta: Value, more: Value) -> Value {
    let mut params = json!({"name": name, "arguments": arguments, "_meta": meta});
    if let (Some(params), Value::Object(more)) = (params.as_object_mut(), more) {
        params.extend(more);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// What the client reads for one request: every line up to its answer, the answer last.
type Exchange = Vec<Value>;

/// One run of the script against the conformance example over stdio, `rmcp` choosing rmcp's
/// own loop: what the client read for each request, and rmcp's debug log.
fn run(rmcp: bool) -> (Vec<(String, Exchange)>, String) {
    let binary = support::example_binary("conformance");
    let mut env = vec![("RUST_LOG", "warn,rmcp=debug")];
    if rmcp {
        env.push(("FUSION_STDIO_TRANSPORT", "rmcp"));
    }
    let mut peer = StdioPeer::spawn(&binary, &["--stdio"], &env)
        .strict()
        .kill_after(Duration::from_secs(120));
    let mut exchanges = Vec::new();
    let mut exchange = |peer: &mut StdioPeer, label: &str, message: Value| -> Value {
        let id = message["id"].clone();
        peer.send(&message);
        let mut lines = Vec::new();
        loop {
            let line = peer.next(ANSWER_TIMEOUT).unwrap_or_else(|| {
                panic!(
                    "{label}: no answer within {ANSWER_TIMEOUT:?} (rmcp: {rmcp})\n--- stderr ---\n{}",
                    peer.stderr_tail(8_000)
                )
            });
            let done = line["id"] == id && line.get("method").is_none();
            lines.push(line);
            if done {
                break;
            }
        }
        let answer = lines.last().cloned().unwrap_or_default();
        exchanges.push((label.to_owned(), lines));
        answer
    };

    // The first request opens the inline session; rmcp answers it in either case.
    exchange(
        &mut peer,
        "opening call",
        call(1, "test_simple_text", json!({}), whole_meta(), json!({})),
    );
    exchange(
        &mut peer,
        "plain call",
        call(2, "test_simple_text", json!({}), whole_meta(), json!({})),
    );
    exchange(
        &mut peer,
        "unknown tool",
        call(3, "no_such_tool", json!({}), whole_meta(), json!({})),
    );
    exchange(
        &mut peer,
        "invalid arguments",
        call(
            4,
            "test_sampling",
            json!({"prompt": 5}),
            whole_meta(),
            json!({}),
        ),
    );
    exchange(
        &mut peer,
        "a tool's error",
        call(5, "test_error_handling", json!({}), whole_meta(), json!({})),
    );
    let mut no_capabilities = whole_meta();
    no_capabilities
        .as_object_mut()
        .map(|meta| meta.remove("io.modelcontextprotocol/clientCapabilities"));
    exchange(
        &mut peer,
        "_meta without clientCapabilities",
        call(6, "test_simple_text", json!({}), no_capabilities, json!({})),
    );
    let mut unsupported = whole_meta();
    unsupported["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    exchange(
        &mut peer,
        "unsupported revision",
        call(7, "test_simple_text", json!({}), unsupported, json!({})),
    );
    let mut older = whole_meta();
    older["io.modelcontextprotocol/protocolVersion"] = json!("2025-11-25");
    exchange(
        &mut peer,
        "an older revision named",
        call(8, "test_simple_text", json!({}), older, json!({})),
    );
    exchange(
        &mut peer,
        "no revision named",
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
               "params": {"name": "test_simple_text", "arguments": {}}}),
    );
    let mut logged = whole_meta();
    logged["io.modelcontextprotocol/logLevel"] = json!("debug");
    exchange(
        &mut peer,
        "a call that logs",
        call(10, "test_tool_with_logging", json!({}), logged, json!({})),
    );
    exchange(
        &mut peer,
        "a call with progress",
        call(
            11,
            "test_tool_with_progress",
            json!({}),
            {
                let mut meta = whole_meta();
                meta["progressToken"] = json!("p-11");
                meta
            },
            json!({}),
        ),
    );
    // Sampling, which the client did not declare: fusion's round refuses it.
    exchange(
        &mut peer,
        "an undeclared capability",
        call(
            12,
            "test_missing_capability",
            json!({}),
            whole_meta(),
            json!({}),
        ),
    );
    // A multi-round call: two questions, one a round, the request state carried along.
    let first = exchange(
        &mut peer,
        "multi-round: round 1",
        call(
            13,
            "test_input_required_result_multi_round",
            json!({}),
            whole_meta(),
            json!({}),
        ),
    );
    let state = first["result"]["requestState"].clone();
    assert!(
        state.is_string(),
        "round 1 is input_required with a request state (rmcp: {rmcp}): {first}"
    );
    let second = exchange(
        &mut peer,
        "multi-round: round 2",
        call(
            14,
            "test_input_required_result_multi_round",
            json!({}),
            whole_meta(),
            json!({
                "inputResponses": {"step1": {"action": "accept", "content": {"name": "Ada"}}},
                "requestState": state,
            }),
        ),
    );
    let state = second["result"]["requestState"].clone();
    assert!(
        state.is_string(),
        "round 2 asks the second question (rmcp: {rmcp}): {second}"
    );
    let last = exchange(
        &mut peer,
        "multi-round: round 3",
        call(
            15,
            "test_input_required_result_multi_round",
            json!({}),
            whole_meta(),
            json!({
                "inputResponses": {"step2": {"action": "accept", "content": {"color": "blue"}}},
                "requestState": state,
            }),
        ),
    );
    assert_eq!(
        last["result"]["content"][0]["text"],
        json!("Ada likes blue"),
        "the last round completes (rmcp: {rmcp}): {last}"
    );
    // An elicitation asked without a key: under 2026-07-28 the server sends the client no
    // request of its own (rmcp refuses them), whichever loop serves the call.
    exchange(
        &mut peer,
        "an unkeyed elicitation",
        call(
            16,
            "test_elicitation",
            json!({"message": "Who?"}),
            whole_meta(),
            json!({}),
        ),
    );
    // A tool that goes on as a task, from a client that did not declare tasks.
    exchange(
        &mut peer,
        "a task tool, tasks undeclared",
        call(
            17,
            "test_tool_with_task",
            json!({}),
            whole_meta(),
            json!({}),
        ),
    );

    drop(peer.take_stdin());
    let exited = peer.wait_exit(EXIT_TIMEOUT);
    assert!(
        exited.is_some_and(|status| status.success()),
        "the server ends with 0 when stdin closes (rmcp: {rmcp}): {exited:?}\n--- stderr ---\n{}",
        peer.stderr_tail(8_000)
    );
    let log = peer.stderr_to_end(EXIT_TIMEOUT);
    (mask(exchanges), log)
}

/// The exchanges with each request state (sealed with a key of the process) masked.
fn mask(exchanges: Vec<(String, Exchange)>) -> Vec<(String, Exchange)> {
    exchanges
        .into_iter()
        .map(|(label, mut lines)| {
            for line in &mut lines {
                if let Some(result) = line.get_mut("result").and_then(Value::as_object_mut)
                    && result.contains_key("requestState")
                {
                    result.insert("requestState".into(), json!("<sealed>"));
                }
            }
            (label, lines)
        })
        .collect()
}

/// The ids of the requests rmcp's loop received, as its debug log (JSON lines) lists them.
fn received_by_rmcp(log: &str) -> Vec<u64> {
    log.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["fields"]["message"] == "received request")
        .filter_map(|event| event["fields"]["id"].as_str()?.parse().ok())
        .collect()
}

#[test]
fn a_2026_07_28_client_reads_what_rmcp_would_answer_and_its_calls_go_direct() {
    let (direct, direct_log) = run(false);
    let (oracle, oracle_log) = run(true);
    assert_eq!(direct.len(), oracle.len());
    for ((label, got), (_, expected)) in direct.iter().zip(&oracle) {
        assert_eq!(
            got,
            expected,
            "{label}: fusion's transport answered\n{}\nrmcp's loop answered\n{}",
            serde_json::to_string_pretty(got).unwrap_or_default(),
            serde_json::to_string_pretty(expected).unwrap_or_default()
        );
    }
    // The notifications of a call served direct still reach the client, before its answer.
    let methods = |label: &str| -> Vec<String> {
        direct
            .iter()
            .find(|(at, _)| at == label)
            .map(|(_, lines)| {
                lines
                    .iter()
                    .filter_map(|line| line["method"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        methods("a call that logs").contains(&"notifications/message".to_owned()),
        "{:?}",
        methods("a call that logs")
    );
    assert!(
        methods("a call with progress").contains(&"notifications/progress".to_owned()),
        "{:?}",
        methods("a call with progress")
    );
    // rmcp's own loop received every request: the log is read right.
    assert_eq!(
        received_by_rmcp(&oracle_log),
        (1..=17).collect::<Vec<_>>(),
        "rmcp's log:\n{oracle_log}"
    );
    // Through fusion's transport: the opening call (read before the session ran) and the
    // calls that fail a check of rmcp's (no capabilities, a revision unsupported, older,
    // or none) went to rmcp; every other call was served by the transport.
    assert_eq!(
        received_by_rmcp(&direct_log),
        vec![1, 6, 7, 8, 9],
        "rmcp's log:\n{direct_log}"
    );
}
