//! Upstreams that misbehave (`ServerBuilder::upstream`): each costs a bounded amount of time
//! and memory, gets its caller a clear `isError`, and leaves the other upstream and the local
//! tools answering.
//!
//! - over stdio, `tests/python/hostile_upstream.py`: a call that never returns, 200,000
//!   notifications before the answer, a 50 MB result, an answer to another id, a line that
//!   is not JSON, a request for sampling this gateway never declared, a process that dies
//!   mid-call, 100,000 `notifications/tools/list_changed` (a few listings, not one each);
//! - over Streamable HTTP, an axum server: a body over the limit with and without a
//!   `Content-Length`, an SSE stream that never ends, `503` and `429` with `Retry-After`,
//!   a session the upstream forgets; a well-behaved one whose `list_changed`, on a
//!   call's event stream, gets its new tool listed; and one whose session GET stream
//!   floods 100,000 events and 50 MiB, then sends one event with no end, then refuses
//!   (`405`): bounded memory, a few listings, its pings answered, the endless event cut at
//!   `max_message` and the stream reopened after a wait, never asked again once refused.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use axum::{
    Router,
    body::{Body, Bytes},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::post,
};
use fusion_runtime::{
    policy::{CircuitPolicy, Policy, RetryPolicy},
    prelude::*,
    search::ToolSearch,
    testing::Tester,
    upstream::Upstream,
};
use serde_json::{Value, json};

use crate::support::{self, axum_thread::AxumThread};

/// The most any one hostile call may take: the upstream's timeout (2 s) and some.
const BOUND: Duration = Duration::from_secs(10);

/// The flood's own timeout, and what its call may take (`bounded_call_within`).
const FLOOD_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest answer read from a hostile upstream.
const MAX_MESSAGE: usize = 1024 * 1024;

/// A local tool, to show the server goes on.
#[mcp_tool(read_only)]
async fn local(text: String) -> String {
    text
}

/// A short timeout, no retries, and no breaker (`CircuitPolicy::NONE`: the many failures
/// each test provokes leave the upstream's good tool listed and called).
fn strict() -> Policy {
    Policy {
        timeout: Some(Duration::from_secs(2)),
        retry: Some(RetryPolicy::NONE),
        circuit: Some(CircuitPolicy::NONE),
        heartbeat: None,
        task_after: None,
    }
}

async fn bounded_call(
    tester: &Tester,
    tool: &str,
    args: Value,
) -> fusion_runtime::testing::TestResult {
    bounded_call_within(BOUND, tester, tool, args).await
}

async fn bounded_call_within(
    bound: Duration,
    tester: &Tester,
    tool: &str,
    args: Value,
) -> fusion_runtime::testing::TestResult {
    let started = Instant::now();
    let result = tokio::time::timeout(bound, tester.call(tool, args))
        .await
        .unwrap_or_else(|_| panic!("{tool} was not answered within {bound:?}"));
    assert!(
        started.elapsed() < bound,
        "{tool} took {:?}",
        started.elapsed()
    );
    result
}

/// After each misbehaviour: the upstream's good tool and the local tool still answer.
async fn still_serving(tester: &Tester, good: &str, after: &str) {
    let echoed = bounded_call(tester, good, json!({"text": "still here"})).await;
    assert!(
        !echoed.is_error && echoed.text() == "still here",
        "after {after}, the upstream's {good} failed: {}",
        echoed.text()
    );
    let answered = bounded_call(tester, "local", json!({"text": "local"})).await;
    assert_eq!(
        answered.text(),
        "local",
        "after {after}, the local tool failed"
    );
}

/// A gateway with the local tool and `tests/python/hostile_upstream.py` mounted over stdio
/// as `bad`, under the strict policy, but for `slow_tool` (one that floods), which has the
/// flood's timeout.
async fn hostile_stdio(python: &std::path::Path, slow_tool: &str) -> Tester {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/hostile_upstream.py");
    let upstream = Upstream::stdio(python.to_string_lossy(), [script.to_string_lossy()])
        .policy(strict())
        .tool_policy(
            slow_tool,
            Policy {
                timeout: Some(FLOOD_TIMEOUT),
                ..Policy::default()
            },
        )
        .max_message(MAX_MESSAGE);
    let server = Server::builder("gateway", "1")
        .tool(local)
        .upstream("bad", upstream)
        .start()
        .await
        .expect("the hostile upstream lists its tools");
    Tester::new(server)
}

#[tokio::test]
async fn a_hostile_stdio_upstream_gets_each_caller_a_clear_error_and_harms_nothing_else() {
    let Some(python) = support::python() else {
        return;
    };
    // The flood is answered after 200,000 notifications are read: on a busy or slow
    // machine that takes longer than the strict policy's 2 s, so it has a timeout of its own.
    let tester = hostile_stdio(&python, "flood").await;

    let cases: &[(&str, &[&str])] = &[
        ("bad_hang", &["did not finish within 2 s"]),
        ("bad_huge", &["larger than 1048576 bytes"]),
        ("bad_wrong_id", &["did not finish within 2 s"]),
        ("bad_garbage", &["internal error", "reference"]),
        ("bad_sampling", &["sampling answered with error -32601"]),
        ("bad_flood", &["flooded"]),
        ("bad_die", &["may or may not have completed"]),
    ];
    for (tool, said) in cases {
        let bound = if *tool == "bad_flood" {
            FLOOD_TIMEOUT
        } else {
            BOUND
        };
        let result = bounded_call_within(bound, &tester, tool, json!({})).await;
        let text = result.text();
        assert!(
            said.iter().all(|words| text.contains(words)),
            "{tool}: expected {said:?} in {text:?}"
        );
        let expect_error = !matches!(*tool, "bad_sampling" | "bad_flood");
        assert_eq!(
            result.is_error, expect_error,
            "{tool}: isError, in {text:?}"
        );
        still_serving(&tester, "bad_ok", tool).await;
    }
}

/// A flood of `notifications/tools/list_changed` costs a few listings of the upstream's
/// tools, not one each: one stored wake-up, one listing in flight, at least a second
/// between two. The tools stay listed, and the upstream's and the local tools answer.
#[tokio::test]
async fn a_flood_of_list_changed_costs_a_few_listings() {
    let Some(python) = support::python() else {
        return;
    };
    let tester = hostile_stdio(&python, "churn").await;
    let before = tester.tools().await;

    let started = Instant::now();
    let churned = bounded_call_within(FLOOD_TIMEOUT, &tester, "bad_churn", json!({})).await;
    assert_eq!(churned.text(), "churned", "{}", churned.text());
    // Time for the listings the flood may cause, and no more.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let listings = bounded_call(&tester, "bad_listings", json!({})).await;
    let count: u64 = listings.text().parse().unwrap_or_else(|_| {
        panic!("a count of listings, not {:?}", listings.text());
    });
    // The start's listing, then at most one a second (and one more at either end).
    let most = 3 + started.elapsed().as_secs();
    assert!(
        (2..=most).contains(&count),
        "100,000 list_changed cost {count} listings (at most {most})"
    );
    assert_eq!(tester.tools().await, before, "the same tools are listed");
    still_serving(&tester, "bad_ok", "the list_changed flood").await;
}

/// An HTTP upstream whose `reveal` adds a tool `revealed`, telling so with
/// `notifications/tools/list_changed` on the call's own event stream (it gives no session
/// id, so the gateway holds no GET stream for it: the call's answer is where it can tell).
async fn revealing_http(body: Bytes, revealed: Arc<AtomicUsize>) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let json = |result: Value| json_answer(&id, result, None);
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") => json(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "revealing-http", "version": "1"},
        })),
        Some("tools/list") => {
            let mut names = vec!["reveal"];
            if revealed.load(Ordering::SeqCst) > 0 {
                names.push("revealed");
            }
            let tools: Vec<Value> = names
                .iter()
                .map(|name| json!({"name": name, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}))
                .collect();
            json(json!({"tools": tools}))
        }
        Some("tools/call") => {
            let name = message.pointer("/params/name").and_then(Value::as_str);
            if name == Some("reveal") {
                revealed.fetch_add(1, Ordering::SeqCst);
            }
            let changed = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
            let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": format!("{} done", name.unwrap_or("?"))}]}});
            Response::builder()
                .header(header::CONTENT_TYPE, "text/event-stream")
                .body(Body::from(format!("data: {changed}\n\ndata: {answer}\n\n")))
                .unwrap_or_default()
        }
        _ => StatusCode::ACCEPTED.into_response(),
    }
}

/// An HTTP upstream's `list_changed`, sent on a call's event stream, lists its tools again:
/// the tool it added is listed and answers.
#[tokio::test]
async fn an_http_upstreams_list_changed_on_a_calls_stream_lists_its_tools_again() {
    let revealed = Arc::new(AtomicUsize::new(0));
    let upstream_server = AxumThread::start("revealing-upstream", |_| {
        Router::new().route(
            "/mcp",
            post(move |body: Bytes| revealing_http(body, Arc::clone(&revealed))),
        )
    });
    let upstream = Upstream::http(format!("{}/mcp", upstream_server.url())).policy(strict());
    let server = Server::builder("gateway", "1")
        .upstream("web", upstream)
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = Tester::new(server);
    assert_eq!(tester.tools().await, ["web_reveal"]);
    let revealed = bounded_call(&tester, "web_reveal", json!({})).await;
    assert_eq!(revealed.text(), "reveal done");
    let deadline = Instant::now() + BOUND;
    while !tester
        .tools()
        .await
        .iter()
        .any(|name| name == "web_revealed")
    {
        assert!(
            Instant::now() < deadline,
            "the tool the upstream added was not listed within {BOUND:?}: {:?}",
            tester.tools().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let called = bounded_call(&tester, "web_revealed", json!({})).await;
    assert_eq!(called.text(), "revealed done");
}

/// A JSON-RPC result for request `id`, as the test upstreams answer a POST: JSON, in
/// `session` when they have one.
fn json_answer(id: &Value, result: Value, session: Option<&'static str>) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
    let mut response = Response::builder().header(header::CONTENT_TYPE, "application/json");
    if let Some(session) = session {
        response = response.header("mcp-session-id", session);
    }
    response.body(Body::from(body)).unwrap_or_default()
}

/// What the hostile HTTP upstream does for each tool.
async fn hostile_http(headers: HeaderMap, body: Bytes, forgotten: Arc<AtomicUsize>) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let json = |result: Value| json_answer(&id, result, Some("s-1"));
    let text = |text: &str| json(json!({"content": [{"type": "text", "text": text}]}));
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") => json(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile-http", "version": "1"},
        })),
        Some("notifications/initialized") | Some("notifications/cancelled") => {
            StatusCode::ACCEPTED.into_response()
        }
        Some("tools/list") => {
            let tools: Vec<Value> = ["ok", "sized", "chunked", "endless", "unavailable", "limited", "forgets", "whoami", "steps"]
                .iter()
                .map(|name| json!({"name": name, "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}))
                .collect();
            json(json!({"tools": tools}))
        }
        Some("tools/call") => match message.pointer("/params/name").and_then(Value::as_str) {
            Some("ok") => text(
                message
                    .pointer("/params/arguments/text")
                    .and_then(Value::as_str)
                    .unwrap_or("ok"),
            ),
            Some("sized") => text(&"z".repeat(2 * MAX_MESSAGE)),
            Some("chunked") => {
                // 50 MB in chunks, with no Content-Length to refuse it by.
                let chunks = futures_util::stream::iter((0..50).map(|_| {
                    Ok::<_, std::convert::Infallible>(Bytes::from(vec![b' '; 1024 * 1024]))
                }));
                Response::builder()
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from_stream(chunks))
                    .unwrap_or_default()
            }
            Some("endless") => {
                // Notifications for ever, and never the answer.
                let note = Bytes::from_static(b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n");
                let chunks = futures_util::stream::repeat_with(move || {
                    Ok::<_, std::convert::Infallible>(note.clone())
                });
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from_stream(chunks))
                    .unwrap_or_default()
            }
            Some("unavailable") => (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "7")],
            )
                .into_response(),
            Some("limited") => {
                (StatusCode::TOO_MANY_REQUESTS, [(header::RETRY_AFTER, "3")]).into_response()
            }
            Some("forgets") => {
                // The first time, the session is unknown; the gateway makes a new one and
                // sends the call again, which then answers.
                if headers.contains_key("mcp-session-id")
                    && forgotten.fetch_add(1, Ordering::SeqCst) == 0
                {
                    StatusCode::NOT_FOUND.into_response()
                } else {
                    text("remembered")
                }
            }
            Some("steps") => {
                // Progress on the call's own stream, then the answer.
                let token = message
                    .pointer("/params/_meta/progressToken")
                    .cloned()
                    .unwrap_or(Value::Null);
                let mut events = String::new();
                for step in 1..=3 {
                    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": step, "total": 3, "message": format!("step {step}")}});
                    events.push_str(&format!("data: {note}\n\n"));
                }
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": {"content": [{"type": "text", "text": "three steps"}]}});
                events.push_str(&format!("data: {answer}\n\n"));
                Response::builder()
                    .header(header::CONTENT_TYPE, "text/event-stream")
                    .body(Body::from(events))
                    .unwrap_or_default()
            }
            Some("whoami") => text(
                headers
                    .get(header::AUTHORIZATION)
                    .and_then(|value| value.to_str().ok())
                    .unwrap_or("nobody"),
            ),
            _ => text("unknown tool"),
        },
        _ => json(json!({})),
    }
}

#[tokio::test]
async fn a_hostile_http_upstream_gets_each_caller_a_clear_error_and_harms_nothing_else() {
    let forgotten = Arc::new(AtomicUsize::new(0));
    let upstream_server = AxumThread::start("hostile-upstream", |_| {
        Router::new().route(
            "/mcp",
            post(move |headers: HeaderMap, body: Bytes| {
                hostile_http(headers, body, Arc::clone(&forgotten))
            }),
        )
    });
    let url = format!("{}/mcp", upstream_server.url());
    let upstream = Upstream::http(url)
        .policy(strict())
        .max_message(MAX_MESSAGE);
    let server = Server::builder("gateway", "1")
        .tool(local)
        .upstream("web", upstream)
        .start()
        .await
        .expect("the hostile upstream lists its tools");
    let tester = Tester::new(server);

    let cases: &[(&str, &[&str])] = &[
        ("web_sized", &["larger than 1048576 bytes"]),
        ("web_chunked", &["larger than 1048576 bytes"]),
        ("web_endless", &["larger than 1048576 bytes"]),
        ("web_unavailable", &["HTTP 503", "Retry after 7"]),
        ("web_limited", &["Rate limited", "Retry after 3"]),
    ];
    for (tool, said) in cases {
        let result = bounded_call(&tester, tool, json!({})).await;
        let text = result.text();
        assert!(result.is_error, "{tool}: isError, in {text:?}");
        assert!(
            said.iter().all(|words| text.contains(words)),
            "{tool}: expected {said:?} in {text:?}"
        );
        still_serving(&tester, "web_ok", tool).await;
    }
    let remembered = bounded_call(&tester, "web_forgets", json!({})).await;
    assert_eq!(
        remembered.text(),
        "remembered",
        "a forgotten session is made again"
    );
    drop(upstream_server);
}

/// Three upstreams on one server, told apart by path: the caller's own token goes only to
/// the one whose audience it names, an exchanged token to the one with the hook, the
/// gateway's own credential to the third; a caller whose token names another audience, or
/// was never verified, is refused before anything is sent.
#[tokio::test]
async fn a_callers_token_reaches_only_the_upstream_it_was_issued_for() {
    use axum::extract::Path;
    use fusion_runtime::identity::{Claims, RequestInfo};

    let seen: Arc<std::sync::Mutex<Vec<(String, String)>>> = Arc::default();
    let forgotten = Arc::new(AtomicUsize::new(0));
    let record = Arc::clone(&seen);
    let upstream_server = AxumThread::start("identity-upstream", move |_| {
        Router::new().route(
            "/{upstream}/mcp",
            post(
                move |Path(upstream): Path<String>, headers: HeaderMap, body: Bytes| {
                    let authorization = headers
                        .get(header::AUTHORIZATION)
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or("")
                        .to_owned();
                    if let Ok(mut seen) = record.lock() {
                        seen.push((upstream, authorization));
                    }
                    hostile_http(headers, body, Arc::clone(&forgotten))
                },
            ),
        )
    });
    let base = upstream_server.url();
    let server = Server::builder("gateway", "1")
        .upstream(
            "billing",
            Upstream::http(format!("{base}/billing/mcp")).callers_token("https://billing.example"),
        )
        .upstream(
            "other",
            Upstream::http(format!("{base}/other/mcp")).bearer_token("gateway-own"),
        )
        .upstream(
            "exchanged",
            Upstream::http(format!("{base}/exchanged/mcp")).token_exchange(|caller| async move {
                caller
                    .subject()
                    .map(|subject| format!("exchanged-for-{subject}"))
                    .ok_or_else(|| "no verified caller".to_owned())
            }),
        )
        .start()
        .await
        .expect("the upstreams list their tools");
    let tester = Tester::new(server);
    let caller = |aud: &str, subject: &str| {
        tester.as_caller(
            RequestInfo::in_memory()
                .with_claims(Claims::from_json(json!({"sub": subject, "aud": aud})))
                .with_header("authorization", &format!("Bearer tok-{subject}")),
        )
    };

    let ann = caller("https://billing.example", "ann");
    let said = |result: fusion_runtime::testing::TestResult| result.text();
    assert_eq!(
        said(bounded_call(&ann, "billing_whoami", json!({})).await),
        "Bearer tok-ann"
    );
    assert_eq!(
        said(bounded_call(&ann, "other_whoami", json!({})).await),
        "Bearer gateway-own"
    );
    assert_eq!(
        said(bounded_call(&ann, "exchanged_whoami", json!({})).await),
        "Bearer exchanged-for-ann"
    );

    let bob = caller("https://elsewhere.example", "bob");
    let refused = bounded_call(&bob, "billing_whoami", json!({})).await;
    assert!(
        refused.is_error
            && refused.text().contains("Unauthorized")
            && refused.text().contains("no verified token issued for it"),
        "a token for another audience is refused: {}",
        refused.text()
    );
    let forged = tester
        .as_caller(RequestInfo::in_memory().with_header("authorization", "Bearer tok-forged"));
    let refused = bounded_call(&forged, "billing_whoami", json!({})).await;
    assert!(
        refused.is_error,
        "an unverified header is never passed on: {}",
        refused.text()
    );
    let refused = bounded_call(&forged, "exchanged_whoami", json!({})).await;
    assert!(
        refused.is_error,
        "an exchange that refuses refuses the call: {}",
        refused.text()
    );

    let seen = seen.lock().map(|seen| seen.clone()).unwrap_or_default();
    for (upstream, authorization) in &seen {
        assert!(
            !authorization.contains("tok-ann") || upstream == "billing",
            "Ann's token reached `{upstream}`"
        );
        assert!(
            !authorization.contains("tok-bob") && !authorization.contains("tok-forged"),
            "a token that may not be passed on reached `{upstream}`: {authorization}"
        );
    }
    assert!(seen.iter().any(
        |(upstream, authorization)| upstream == "billing" && authorization == "Bearer tok-ann"
    ));
    drop(upstream_server);
}

/// The upstream's progress reaches the caller, over both transports, under the caller's own
/// token (the upstream is sent one of the gateway's).
#[tokio::test]
async fn an_upstreams_progress_reaches_the_caller() {
    let Some(python) = support::python() else {
        return;
    };
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/hostile_upstream.py");
    let forgotten = Arc::new(AtomicUsize::new(0));
    let upstream_server = AxumThread::start("progress-upstream", |_| {
        Router::new().route(
            "/mcp",
            post(move |headers: HeaderMap, body: Bytes| {
                hostile_http(headers, body, Arc::clone(&forgotten))
            }),
        )
    });
    let server = Server::builder("gateway", "1")
        .upstream(
            "bad",
            Upstream::stdio(python.to_string_lossy(), [script.to_string_lossy()]).policy(strict()),
        )
        .upstream(
            "web",
            Upstream::http(format!("{}/mcp", upstream_server.url())).policy(strict()),
        )
        .start()
        .await
        .expect("both upstreams list their tools");
    let tester = Tester::new(server);
    for tool in ["bad_steps", "web_steps"] {
        let handle = tester.start(tool, json!({}));
        let result = tokio::time::timeout(BOUND, async {
            while handle.progress().len() < 3 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let progress = handle.progress();
            (progress, handle.result().await)
        })
        .await
        .unwrap_or_else(|_| panic!("{tool} did not pass its progress on"));
        let (progress, answered) = result;
        let steps: Vec<(f64, Option<f64>, Option<String>)> = progress
            .into_iter()
            .map(|made| (made.progress, made.total, made.message))
            .collect();
        assert_eq!(
            steps,
            (1..=3)
                .map(|step| (f64::from(step), Some(3.0), Some(format!("step {step}"))))
                .collect::<Vec<_>>(),
            "{tool}: the upstream's progress, in order"
        );
        assert_eq!(answered.text(), "three steps");
    }
    drop(upstream_server);
}

/// An upstream whose calls keep failing opens its breaker: its tools leave the results of
/// `search_tools` (as they leave `tools/list`), and the local tools stay found.
#[tokio::test]
async fn an_upstream_that_is_down_leaves_the_tool_search() {
    let forgotten = Arc::new(AtomicUsize::new(0));
    let upstream_server = AxumThread::start("down-upstream", |_| {
        Router::new().route(
            "/mcp",
            post(move |headers: HeaderMap, body: Bytes| {
                hostile_http(headers, body, Arc::clone(&forgotten))
            }),
        )
    });
    let mut policy = strict();
    policy.circuit = Some(CircuitPolicy {
        failures: 2,
        window: CircuitPolicy::DEFAULT_WINDOW,
        cooldown: Duration::from_secs(600),
    });
    let upstream = Upstream::http(format!("{}/mcp", upstream_server.url()))
        .policy(policy)
        .max_message(MAX_MESSAGE);
    let server = Server::builder("gateway", "1")
        .tool(local)
        .tool_search(ToolSearch::always())
        .upstream("web", upstream)
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = Tester::new(server);
    let search = |query: &'static str| {
        let tester = &tester;
        async move {
            bounded_call(tester, "search_tools", json!({"query": query}))
                .await
                .text()
        }
    };
    assert!(search("unavailable").await.contains("web_unavailable"));
    for _ in 0..3 {
        let failed = bounded_call(&tester, "web_unavailable", json!({})).await;
        assert!(failed.is_error, "{}", failed.text());
    }
    let found = search("unavailable").await;
    assert!(
        !found.contains("web_"),
        "a down upstream's tools are not found: {found}"
    );
    assert!(search("local").await.contains("local"));
    drop(upstream_server);
}

/// What the streaming upstream has seen: GET streams asked for, listings, answers to its
/// pings.
#[derive(Default)]
struct StreamSeen {
    gets: AtomicUsize,
    listings: AtomicUsize,
    pongs: AtomicUsize,
}

/// How many events the flood sends: small ones (mostly `list_changed`, a `ping` now and
/// then), and large ones each under the limit, many times the limit in all.
const FLOOD_SMALL: usize = 100_000;
const FLOOD_LARGE: usize = 100;
const LARGE_EVENT: usize = 512 * 1024;

/// An HTTP upstream with sessions that declares `tools.listChanged`, whose GET stream
/// misbehaves: the first floods events, the second is one event that never ends (past
/// `MAX_MESSAGE`), and any later one is refused with `405`.
fn streaming_upstream(seen: Arc<StreamSeen>) -> Router {
    let posted = Arc::clone(&seen);
    Router::new().route(
        "/mcp",
        post(move |body: Bytes| streaming_post(body, Arc::clone(&posted)))
            .get(move |headers: HeaderMap| streaming_get(headers, Arc::clone(&seen))),
    )
}

async fn streaming_post(body: Bytes, seen: Arc<StreamSeen>) -> Response {
    let Ok(message) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let json = |result: Value| json_answer(&id, result, Some("streaming-session"));
    match message.get("method").and_then(Value::as_str) {
        Some("initialize") => json(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": true}},
            "serverInfo": {"name": "streaming-http", "version": "1"},
        })),
        Some("tools/list") => {
            seen.listings.fetch_add(1, Ordering::SeqCst);
            json(json!({"tools": [{
                "name": "echo",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "annotations": {"readOnlyHint": true},
            }]}))
        }
        Some("tools/call") => {
            let text = message
                .pointer("/params/arguments/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            json(json!({"content": [{"type": "text", "text": text}]}))
        }
        Some(_) => StatusCode::ACCEPTED.into_response(),
        // The gateway's answer to one of the stream's pings.
        None => {
            if message.get("result").is_some() {
                seen.pongs.fetch_add(1, Ordering::SeqCst);
            }
            StatusCode::ACCEPTED.into_response()
        }
    }
}

async fn streaming_get(headers: HeaderMap, seen: Arc<StreamSeen>) -> Response {
    let named = headers
        .get("mcp-session-id")
        .is_some_and(|id| id == "streaming-session");
    let wants_sse = headers
        .get(header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    if !named || !wants_sse {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let events = |body: Body| {
        Response::builder()
            .header(header::CONTENT_TYPE, "text/event-stream")
            .body(body)
            .unwrap_or_default()
    };
    match seen.gets.fetch_add(1, Ordering::SeqCst) {
        0 => {
            // Made as it is sent: the upstream holds one event at a time.
            let changed = Bytes::from(format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            ));
            let small = (0..FLOOD_SMALL).map(move |n| {
                let message = match n % 10_000 {
                    0 => json!({"jsonrpc": "2.0", "id": format!("ping-{n}"), "method": "ping"}),
                    1 => json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": n}}),
                    _ => return Ok::<_, std::convert::Infallible>(changed.clone()),
                };
                Ok(Bytes::from(format!("data: {message}\n\n")))
            });
            // Made once and shared: the upstream's own thread stays free to answer calls.
            let message = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x".repeat(LARGE_EVENT)}});
            let large_event = Bytes::from(format!("data: {message}\n\n"));
            let large = (0..FLOOD_LARGE).map(move |_| Ok(large_event.clone()));
            events(Body::from_stream(futures_util::stream::iter(
                small.chain(large),
            )))
        }
        1 => {
            // One event that never ends: only the gateway's limit stops it.
            let endless = std::iter::once(Bytes::from_static(b"data: "))
                .chain(std::iter::repeat(Bytes::from(vec![b'x'; 64 * 1024])))
                .map(Ok::<_, std::convert::Infallible>);
            events(Body::from_stream(futures_util::stream::iter(endless)))
        }
        _ => StatusCode::METHOD_NOT_ALLOWED.into_response(),
    }
}

/// An HTTP upstream's GET stream that floods events, then sends one event with no end:
/// the gateway reads the flood with bounded memory (a few listings for 100,000
/// `list_changed`, its pings answered), ends the endless event at its limit and opens the
/// stream again after a wait, and once refused (`405`) asks no more; the upstream's tool
/// and the local tool answer throughout, on the one thread the flood keeps busy.
#[tokio::test]
async fn a_hostile_get_stream_costs_bounded_memory_and_harms_nothing_else() {
    let seen = Arc::new(StreamSeen::default());
    let router_seen = Arc::clone(&seen);
    let upstream_server = AxumThread::start("streaming-upstream", move |_| {
        streaming_upstream(router_seen)
    });
    let rss_before = support::rss_kib(std::process::id()).unwrap_or_default();
    let server = Server::builder("gateway", "1")
        .tool(local)
        .upstream(
            "web",
            Upstream::http(format!("{}/mcp", upstream_server.url()))
                .policy(strict())
                .max_message(MAX_MESSAGE),
        )
        .start()
        .await
        .expect("the upstream lists its tools");
    let tester = Tester::new(server);
    let started = Instant::now();
    // Flood (ends), wait 1 s, endless event (ended at the limit), wait 2 s, refused.
    let deadline = started + FLOOD_TIMEOUT;
    while seen.gets.load(Ordering::SeqCst) < 3 {
        still_serving(&tester, "web_echo", "the GET stream's misbehaviour").await;
        assert!(
            Instant::now() < deadline,
            "the GET stream was not opened three times within {FLOOD_TIMEOUT:?}: {} times",
            seen.gets.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Refused: not asked again, however long.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        seen.gets.load(Ordering::SeqCst),
        3,
        "a refused GET stream is not asked for again on the same session"
    );
    still_serving(&tester, "web_echo", "the refused GET stream").await;
    // The refresh lists at most once a second (`MIN_SPACING`), plus once per stream
    // opened: bounded by the time the flood took, not by its 100,000 notifications, on a
    // slow machine as on a fast one.
    let listings = seen.listings.load(Ordering::SeqCst);
    let allowed = usize::try_from(started.elapsed().as_secs())
        .unwrap_or(usize::MAX)
        .saturating_add(5);
    assert!(
        listings <= allowed,
        "100,000 list_changed cost {listings} listings, more than one a second ({allowed})"
    );
    assert!(
        seen.pongs.load(Ordering::SeqCst) >= 1,
        "the pings on the GET stream are answered"
    );
    let rss_after = support::rss_kib(std::process::id()).unwrap_or_default();
    let grown = rss_after.saturating_sub(rss_before);
    // The flood is about 60 MiB and the endless event 1 MiB before it is cut: a gateway
    // that kept them would grow by that much.
    assert!(
        grown < 40 * 1024,
        "the process grew by {grown} KiB while the GET stream flooded"
    );
}
