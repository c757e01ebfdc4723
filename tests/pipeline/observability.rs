//! The call log and metrics: one JSON event per call with every field a person on call
//! needs, events for retries, reconnects, circuit changes and fatal errors, secrets
//! redacted everywhere, and per-tool metrics.

use std::{
    io::Write,
    sync::{Arc, Mutex},
};

use fusion_runtime::{Server, prelude::*, testing::Tester};
use fusion_tests::faults::{self, FaultCtx};
use serde_json::{Value, json};
use tracing_subscriber::fmt::MakeWriter;

/// Collects what the subscriber writes.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut buffer) = self.0.lock() {
            buffer.extend_from_slice(bytes);
        }
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Captured {
    fn events(&self) -> Vec<Value> {
        let text = self
            .0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        text.lines()
            .map(|line| {
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
            })
            .collect()
    }

    pub(crate) fn raw(&self) -> String {
        self.0
            .lock()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    fn call_events(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["target"] == "fusion::call")
            .collect()
    }
}

/// Installs a JSON subscriber for this thread (the tests run the tester on it).
pub(crate) fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .finish();
    let guard = tracing::subscriber::set_default(subscriber);
    (captured, guard)
}

fn fields(event: &Value) -> &Value {
    &event["fields"]
}

fn tester() -> Tester<FaultCtx> {
    Tester::new(faults::server_with(FaultCtx::default()))
}

#[tokio::test]
async fn a_successful_call_logs_every_field_at_info() {
    let (captured, _guard) = capture();
    tester().call("echo", json!({"text": "hello"})).await;
    let events = captured.call_events();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event["level"], "INFO");
    assert!(event["timestamp"].is_string());
    let f = fields(event);
    assert_eq!(f["tool"], "echo");
    assert_eq!(f["outcome"], "ok");
    assert_eq!(f["attempts"], 1);
    assert!(f["latency_us"].is_u64());
    assert!(
        f["correlation_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
    );
    assert!(f.get("request_id").is_some() && f.get("action").is_some());
    let arguments: Value =
        serde_json::from_str(f["arguments"].as_str().unwrap_or("null")).unwrap_or(Value::Null);
    assert_eq!(arguments, json!({"text": "hello"}));
    assert_eq!(f["caller"], "", "no token, no caller");
}

#[tokio::test]
async fn the_call_log_names_the_tokens_subject_and_nothing_else_of_it() {
    use fusion_runtime::identity::{Claims, RequestInfo};
    let (captured, _guard) = capture();
    let claims = Claims::from_json(json!({
        "sub": "ann@example.com",
        "scope": "admin",
        "email": "private@example.com",
    }));
    tester()
        .as_caller(RequestInfo::in_memory().with_claims(claims))
        .call("echo", json!({"text": "hello"}))
        .await;
    let events = captured.call_events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(fields(&events[0])["caller"], "ann@example.com");
    let line = events[0].to_string();
    assert!(!line.contains("private@example.com"), "{line}");
}

/// (tool, args, expected outcome, expected level)
fn outcome_cases() -> Vec<(&'static str, Value, &'static str, &'static str)> {
    vec![
        ("echo", json!({"text": 5}), "invalid_arguments", "WARN"),
        ("no_such_tool", json!({}), "unknown_tool", "WARN"),
        ("explode", json!({}), "panic", "ERROR"),
        ("fail_with", json!({"kind": "garbage"}), "internal", "ERROR"),
        (
            "fail_with",
            json!({"kind": "not_found"}),
            "not_found",
            "WARN",
        ),
        (
            "fail_with",
            json!({"kind": "unauthorized"}),
            "unauthorized",
            "WARN",
        ),
        (
            "fail_with",
            json!({"kind": "rate_limited"}),
            "rate_limited",
            "WARN",
        ),
        ("fail_with", json!({"kind": "stale"}), "warning", "INFO"),
        (
            "fail_with",
            json!({"kind": "timeout_io"}),
            "transient_exhausted",
            "WARN",
        ),
        ("deadline", json!({}), "timeout", "WARN"),
        (
            "flaky",
            json!({"key": "x", "fail_times": 2}),
            "retried_ok",
            "INFO",
        ),
        ("fail_with", json!({"kind": "fatal"}), "fatal", "ERROR"),
    ]
}

#[tokio::test]
async fn each_outcome_has_its_name_and_level() {
    let (captured, _guard) = capture();
    let tester = tester();
    for (tool, args, _, _) in outcome_cases() {
        tester.call(tool, args).await;
    }
    // Three transient failures open `unstable`'s circuit; the fourth call fails fast.
    for _ in 0..4 {
        tester.call("unstable", json!({"fail": true})).await;
    }
    let events = captured.call_events();
    for (index, (tool, _, outcome, level)) in outcome_cases().into_iter().enumerate() {
        let event = &events[index];
        assert_eq!(fields(event)["tool"], tool);
        assert_eq!(fields(event)["outcome"], outcome, "{event}");
        assert_eq!(event["level"], level, "{event}");
    }
    let retried = &events[10];
    assert_eq!(fields(retried)["attempts"], 3);
    let last = events.last().expect("events");
    assert_eq!(fields(last)["outcome"], "circuit_open");
    let all = captured.events();
    assert!(
        all.iter()
            .any(|e| e["target"] == "fusion::recovery" && fields(e)["circuit"] == "open")
    );
    assert!(all.iter().any(
        |e| e["target"] == "fusion::recovery" && fields(e)["message"] == "resource reconnected"
    ));
    assert!(all.iter().any(|e| e["target"] == "fusion::recovery"
        && fields(e)["message"] == "transient failure, retrying"));
    let fatal: Vec<&Value> = all
        .iter()
        .filter(|e| e["target"] == "fusion::fatal")
        .collect();
    assert_eq!(fatal.len(), 1, "one distinct fatal event");
    assert!(
        fields(fatal[0])["source_chain"]
            .as_str()
            .is_some_and(|c| c.contains("revoked"))
    );
}

#[tokio::test]
async fn a_panic_is_logged_with_its_message_and_location() {
    let (captured, _guard) = capture();
    tester()
        .call("explode", json!({"message": "index 9 out of range"}))
        .await;
    let event = &captured.call_events()[0];
    let error = fields(event)["error"].as_str().unwrap_or_default();
    assert!(error.contains("index 9 out of range"), "{error}");
    assert!(
        error.contains("panicked at ") && error.contains("faults.rs"),
        "{error}"
    );
}

#[tokio::test]
async fn the_correlation_id_shown_to_the_model_is_the_logs() {
    let (captured, _guard) = capture();
    let result = tester().call("fail_with", json!({"kind": "garbage"})).await;
    let event = &captured.call_events()[0];
    let id = fields(event)["correlation_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!id.is_empty());
    assert!(
        result.text().contains(&format!("reference {id}")),
        "{} vs {id}",
        result.text()
    );
    assert!(
        fields(event)["error"]
            .as_str()
            .is_some_and(|e| e.contains("hunter2")),
        "the details reach the log"
    );
}

/// Log in with a password that must never be seen again.
#[mcp_tool]
async fn login(
    user: String,
    #[arg(secret, length(min = 8))] password: String,
    mode: String,
) -> Result<String, std::io::Error> {
    match mode.as_str() {
        "panic" => panic!("bad password {password} for {user}"),
        "error" => Err(std::io::Error::other(format!("rejected {password}"))),
        _ => Ok(format!("welcome {user}")),
    }
}

#[tokio::test]
async fn secrets_never_appear_in_logs_or_messages() {
    let (captured, _guard) = capture();
    let tester = Tester::new(Server::builder("secrets", "0").tool(login).build());
    let secret = "correct-horse-battery";
    let mut texts = Vec::new();
    for mode in ["ok", "panic", "error"] {
        let result = tester
            .call(
                "login",
                json!({"user": "ada", "password": secret, "mode": mode}),
            )
            .await;
        texts.push(serde_json::to_string(&result.raw).unwrap_or_default());
    }
    // Invalid: too short and a wrong type elsewhere, so the value is quoted in the message.
    let short = "hunter2!";
    let invalid = tester
        .call(
            "login",
            json!({"user": 5, "password": "tiny", "mode": "ok"}),
        )
        .await;
    texts.push(serde_json::to_string(&invalid.raw).unwrap_or_default());
    let also = tester
        .call(
            "login",
            json!({"user": "ada", "password": [short], "mode": "ok"}),
        )
        .await;
    texts.push(serde_json::to_string(&also.raw).unwrap_or_default());
    let log = captured.raw();
    assert!(log.contains("[redacted]"), "{log}");
    for text in texts.iter().chain(std::iter::once(&log)) {
        assert!(!text.contains(secret), "a secret leaked: {text}");
        assert!(!text.contains(short), "a secret leaked: {text}");
    }
    assert!(log.contains("welcome ada") || log.contains("\"ok\""));
}

#[tokio::test]
async fn successes_can_log_at_debug() {
    let (captured, _guard) = capture();
    let server = faults::builder(FaultCtx::default())
        .log_successes_at(tracing::Level::DEBUG)
        .build();
    Tester::new(server).call("echo", json!({"text": "x"})).await;
    assert_eq!(captured.call_events()[0]["level"], "DEBUG");
}

#[tokio::test]
async fn metrics_count_outcomes_latency_and_retries() {
    let tester = tester();
    tester.call("echo", json!({"text": "a"})).await;
    tester.call("echo", json!({"text": "b"})).await;
    tester.call("echo", json!({"text": 1})).await;
    tester
        .call("flaky", json!({"key": "m", "fail_times": 1}))
        .await;
    let snapshot = tester.server().metrics();
    let echo = snapshot
        .tools
        .iter()
        .find(|t| t.tool == "echo")
        .expect("echo");
    assert_eq!(echo.calls.get("ok"), Some(&2));
    assert_eq!(echo.calls.get("invalid_arguments"), Some(&1));
    assert!(echo.latency_p50_us.is_some() && echo.latency_p99_us >= echo.latency_p50_us);
    assert_eq!(echo.in_flight, 0);
    let flaky = snapshot
        .tools
        .iter()
        .find(|t| t.tool == "flaky")
        .expect("flaky");
    assert_eq!(flaky.retries, 1);
    assert_eq!(flaky.calls.get("retried_ok"), Some(&1));
    let text = snapshot.to_prometheus();
    assert!(
        text.contains("fusion_tool_calls_total{tool=\"echo\",outcome=\"ok\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("fusion_tool_latency_seconds_count{tool=\"echo\"} 3"),
        "{text}"
    );
    assert!(
        text.contains("fusion_tool_retries_total{tool=\"flaky\"} 1"),
        "{text}"
    );
}

#[test]
fn a_dropped_call_is_logged_once_as_cancelled_and_counted() {
    let (captured, _guard) = capture();
    let tester = Tester::new(faults::server_with(FaultCtx::default()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        // The client gives up: the call's future is dropped while `hang` runs.
        let dropped = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            tester.call("hang", json!({})),
        )
        .await;
        assert!(dropped.is_err(), "hang never finishes by itself");
    });
    let events = captured.call_events();
    assert_eq!(events.len(), 1, "{events:?}");
    let event = fields(&events[0]);
    assert_eq!(event["tool"], "hang");
    assert_eq!(event["outcome"], "cancelled");
    let snapshot = tester.server().metrics();
    let hang = snapshot
        .tools
        .iter()
        .find(|tool| tool.tool == "hang")
        .expect("hang's metrics");
    assert_eq!(hang.in_flight, 0);
    assert_eq!(hang.calls.get("cancelled"), Some(&1));
}
