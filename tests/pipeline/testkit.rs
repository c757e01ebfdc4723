//! The test kit (issue 42): faults injected in place of a handler, seen by the retries, the
//! timeout, the circuit breaker, the panic boundary, idempotency and the call log exactly
//! as real failures; attempts and the call log's events; calls watched and cancelled while
//! they run; the tools no test reached; a test's own context.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use fusion_runtime::{
    Call, Server,
    identity::{Claims, RequestInfo},
    prelude::*,
    testing::{Fault, Tester},
};
use serde_json::{Value, json};

/// Counts the runs of the real handlers.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicU32>);

impl Runs {
    fn count(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
    fn add(&self) -> u32 {
        self.0.fetch_add(1, Ordering::SeqCst) + 1
    }
}

/// Fetch a quote; retried on transient failures.
#[mcp_tool(read_only, retry(attempts = 3, backoff = "2m", max_backoff = "10m"))]
async fn quote(#[ctx] runs: &Runs, sku: String) -> String {
    runs.add();
    format!("{sku}: 9.99")
}

/// A slow upstream read, under a timeout.
#[mcp_tool(read_only, timeout = "1s")]
async fn slow(#[ctx] runs: &Runs) -> String {
    runs.add();
    "fast enough".into()
}

/// Guarded by a circuit breaker.
#[mcp_tool(read_only, circuit(failures = 2, window = "1m", cooldown = "10m"))]
async fn guarded(#[ctx] runs: &Runs) -> String {
    runs.add();
    "up".into()
}

/// Charges a card: destructive, never repeated.
#[mcp_tool(destructive)]
async fn charge(#[ctx] runs: &Runs, cents: u32) -> String {
    runs.add();
    format!("charged {cents}")
}

/// Places an order, deduplicated by its key.
#[mcp_tool(destructive, idempotency_key = "request_id")]
async fn order(#[ctx] runs: &Runs, item: String, request_id: String) -> String {
    let number = runs.add();
    let _ = request_id;
    format!("order #{number} for {item}")
}

/// Logs in.
#[mcp_tool]
async fn login(#[ctx] runs: &Runs, user: String, #[arg(secret)] password: String) -> String {
    runs.add();
    let _ = password;
    format!("welcome, {user}")
}

/// Moves money from an account, one call per account at a time, reporting progress;
/// with `hold`, waits until it is cancelled.
#[mcp_tool(serialize = "account")]
async fn transfer(#[ctx] runs: &Runs, #[call] call: &Call, account: String, hold: bool) -> String {
    runs.add();
    call.progress(1.0, Some(2.0), Some("debited".into())).await;
    if hold {
        std::future::pending::<()>().await;
    }
    format!("moved from {account}")
}

/// Lists notes.
#[mcp_tool(group = "notes", action = "list", read_only)]
async fn list_notes(#[ctx] runs: &Runs) -> Vec<String> {
    runs.add();
    vec!["milk".into()]
}

/// Adds a note.
#[mcp_tool(group = "notes", action = "add")]
async fn add_note(#[ctx] runs: &Runs, text: String) -> String {
    runs.add();
    text
}

fn server(runs: &Runs) -> Server<Runs> {
    let runs = runs.clone();
    Server::builder("testkit", "1")
        .context(move || runs.clone())
        .tool(quote)
        .tool(slow)
        .tool(guarded)
        .tool(charge)
        .tool(order)
        .tool(login)
        .tool(transfer)
        .tool(list_notes)
        .tool(add_note)
        .build()
}

fn tester() -> (Tester<Runs>, Runs) {
    let runs = Runs::default();
    (Tester::new(server(&runs)), runs)
}

/// A bound on every wait: a hung call fails the test instead of hanging it.
async fn bounded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(3600), future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish"))
}

fn fields(tester: &Tester<Runs>, index: usize) -> Value {
    tester.log_events()[index]["fields"].clone()
}

// ---- transient faults: retries, exhaustion, retry_after, the circuit, unknown outcomes

#[tokio::test(start_paused = true)]
async fn two_transient_faults_are_retried_and_the_third_attempt_runs_the_handler() {
    let (tester, runs) = tester();
    tester.inject("quote", Fault::transient("upstream 503").times(2));
    let result = bounded("the call", tester.call("quote", json!({"sku": "A1"}))).await;
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.data, "A1: 9.99");
    assert_eq!(result.attempts(), 3);
    assert_eq!(runs.count(), 1, "the faults took the first two runs' place");
    let event = fields(&tester, 0);
    assert_eq!(event["outcome"], "retried_ok");
    assert_eq!(event["attempts"], 3);
}

#[tokio::test(start_paused = true)]
async fn a_backoff_of_minutes_completes_at_once_under_the_paused_clock() {
    let (tester, _) = tester();
    tester.inject("quote", Fault::transient("upstream 503").times(2));
    let real = std::time::Instant::now();
    let virtual_start = tokio::time::Instant::now();
    let result = bounded("the call", tester.call("quote", json!({"sku": "A1"}))).await;
    assert!(!result.is_error, "{}", result.text());
    // Two backoffs: at least 1 min (half of 2 min) and 2 min (half of 4 min).
    assert!(
        virtual_start.elapsed() >= Duration::from_secs(180),
        "{:?}",
        virtual_start.elapsed()
    );
    assert!(
        real.elapsed() < Duration::from_secs(10),
        "{:?}",
        real.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn more_transient_faults_than_attempts_exhaust_the_retries() {
    let (tester, runs) = tester();
    tester.inject("quote", Fault::transient("upstream 503").times(4));
    let result = bounded("the call", tester.call("quote", json!({"sku": "A1"}))).await;
    assert!(result.is_error);
    assert_eq!(result.attempts(), 3);
    let entry = result.failure().expect("an entry");
    assert_eq!(entry.class, "transient");
    assert!(entry.retryable);
    assert_eq!(fields(&tester, 0)["outcome"], "transient_exhausted");
    assert_eq!(runs.count(), 0);
    // The fourth fault is left for the next call's first run.
    let next = bounded("the call", tester.call("quote", json!({"sku": "A1"}))).await;
    assert!(!next.is_error);
    assert_eq!(next.attempts(), 2);
    assert_eq!(runs.count(), 1);
}

#[tokio::test(start_paused = true)]
async fn retry_after_makes_the_retry_wait_as_long_as_the_upstream_asks() {
    let (tester, _) = tester();
    // Longer than the 2-minute backoff, shorter than the 10-minute cap.
    let asked = Duration::from_secs(7 * 60);
    tester.inject("quote", Fault::transient("429").retry_after(asked));
    let start = tokio::time::Instant::now();
    let result = bounded("the call", tester.call("quote", json!({"sku": "A1"}))).await;
    assert!(!result.is_error, "{}", result.text());
    assert!(start.elapsed() >= asked, "{:?}", start.elapsed());
    assert_eq!(result.attempts(), 2);
}

#[tokio::test(start_paused = true)]
async fn transient_faults_open_the_circuit_breaker() {
    let (tester, runs) = tester();
    tester.inject("guarded", Fault::transient("connection reset").times(2));
    for _ in 0..2 {
        let failed = bounded("the call", tester.call("guarded", json!({}))).await;
        assert_eq!(failed.failure().expect("an entry").class, "transient");
    }
    let refused = bounded("the call", tester.call("guarded", json!({}))).await;
    assert_eq!(
        refused.failure().expect("an entry").code.as_deref(),
        Some("circuit_open")
    );
    assert_eq!(refused.attempts(), 0);
    assert_eq!(runs.count(), 0, "an open circuit runs nothing");
}

#[tokio::test]
async fn a_destructive_tool_hit_by_a_transient_fault_is_not_retried_its_outcome_unknown() {
    let (tester, runs) = tester();
    tester.inject("charge", Fault::transient("connection reset"));
    let result = bounded("the call", tester.call("charge", json!({"cents": 500}))).await;
    assert_eq!(result.failure().expect("an entry").class, "unknown_outcome");
    assert_eq!(result.attempts(), 1);
    assert_eq!(runs.count(), 0);
}

// ---- delay, panic, internal, fatal

#[tokio::test(start_paused = true)]
async fn a_delay_past_the_timeout_makes_the_timeout_fire() {
    let (tester, runs) = tester();
    tester.inject("slow", Fault::delay(Duration::from_secs(30)));
    let start = tokio::time::Instant::now();
    let result = bounded("the call", tester.call("slow", json!({}))).await;
    assert_eq!(
        result.failure().expect("an entry").code.as_deref(),
        Some("timeout")
    );
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "stopped at the 1 s timeout"
    );
    assert_eq!(runs.count(), 0, "the handler never started");
    assert_eq!(fields(&tester, 0)["outcome"], "timeout");
    // Once by default.
    let next = bounded("the call", tester.call("slow", json!({}))).await;
    assert_eq!(next.data, "fast enough");
}

#[tokio::test(start_paused = true)]
async fn a_delay_within_the_timeout_then_runs_the_real_handler() {
    let (tester, runs) = tester();
    tester.inject("slow", Fault::delay(Duration::from_millis(400)));
    let start = tokio::time::Instant::now();
    let result = bounded("the call", tester.call("slow", json!({}))).await;
    assert_eq!(result.data, "fast enough");
    assert!(start.elapsed() >= Duration::from_millis(400));
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn an_injected_panic_is_caught_by_the_panic_boundary_and_masked() {
    let (tester, runs) = tester();
    tester.inject("login", Fault::panic("index out of bounds: the len is 0"));
    let args = json!({"user": "ann", "password": "hunter2hunter2"});
    let result = bounded("the call", tester.call("login", args.clone())).await;
    assert!(result.is_error && !result.is_fatal());
    let entry = result.failure().expect("an entry");
    assert_eq!(entry.class, "internal");
    assert_eq!(entry.code.as_deref(), Some("panic"));
    let id = entry
        .correlation_id
        .expect("a masked failure has a correlation id");
    assert!(result.text().contains(&id), "{}", result.text());
    assert!(
        !result.text().contains("index out of bounds"),
        "{}",
        result.text()
    );
    let events = tester.log_events();
    assert_eq!(events[0]["level"], "ERROR");
    let event = &events[0]["fields"];
    assert_eq!(event["outcome"], "panic");
    assert_eq!(event["correlation_id"], id.as_str());
    assert!(
        event["error"]
            .as_str()
            .is_some_and(|error| error.contains("index out of bounds")),
        "{event}"
    );
    assert_eq!(runs.count(), 0);
    assert!(
        !bounded("the call", tester.call("login", args))
            .await
            .is_error
    );
}

#[tokio::test]
async fn an_internal_fault_is_masked_with_a_correlation_id_and_logged_in_full() {
    let (tester, _) = tester();
    tester.inject("login", Fault::internal("column `pw_hash` does not exist"));
    let args = json!({"user": "ann", "password": "hunter2hunter2"});
    let result = bounded("the call", tester.call("login", args)).await;
    let entry = result.failure().expect("an entry");
    assert_eq!(entry.class, "internal");
    assert!(!result.text().contains("pw_hash"), "{}", result.text());
    let event = fields(&tester, 0);
    assert_eq!(event["outcome"], "internal");
    assert_eq!(event["error"], "column `pw_hash` does not exist");
    assert_eq!(
        event["source_chain"],
        r#"["column `pw_hash` does not exist"]"#
    );
}

#[tokio::test]
async fn a_fatal_fault_is_reported_fatal() {
    let (captured, _guard) = crate::observability::capture();
    let (tester, _) = tester();
    tester.inject("slow", Fault::fatal("credentials revoked"));
    let result = bounded("the call", tester.call("slow", json!({}))).await;
    assert!(result.is_error && result.is_fatal());
    assert_eq!(result.failure().expect("an entry").class, "fatal");
    assert!(!result.text().contains("revoked"), "{}", result.text());
    assert_eq!(fields(&tester, 0)["outcome"], "fatal");
    // The fatal event a served process logs before it exits.
    let raw = captured.raw();
    assert!(
        raw.lines()
            .any(|line| line.contains(r#""target":"fusion::fatal""#)
                && line.contains("credentials revoked")),
        "{raw}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_fault_takes_the_place_of_a_serialized_tools_handler_too() {
    // A `serialize` tool's arguments are decoded before it queues for its key: the fault
    // still takes the handler's place, under the lock.
    let (tester, runs) = tester();
    tester.inject("transfer", Fault::delay(Duration::from_secs(90)));
    tester.inject("transfer", Fault::transient("ledger 503"));
    let start = tokio::time::Instant::now();
    let args = json!({"account": "d", "hold": false});
    let delayed = bounded("the call", tester.call("transfer", args.clone())).await;
    assert_eq!(delayed.data, "moved from d");
    assert!(start.elapsed() >= Duration::from_secs(90));
    let failed = bounded("the call", tester.call("transfer", args.clone())).await;
    assert_eq!(failed.failure().expect("an entry").class, "transient");
    assert_eq!(runs.count(), 1);
    // Neither left the key locked.
    let next = bounded("the call", tester.call("transfer", args)).await;
    assert_eq!(next.data, "moved from d");
}

// ---- idempotency, targets, sharing, mistakes

#[tokio::test]
async fn a_failed_keyed_call_frees_its_key_and_a_success_is_replayed() {
    let (tester, runs) = tester();
    tester.inject("order", Fault::internal("db down"));
    let args = json!({"item": "tea", "request_id": "r-1"});
    let failed = bounded("the call", tester.call("order", args.clone())).await;
    assert!(failed.is_error);
    let ran = bounded("the call", tester.call("order", args.clone())).await;
    assert_eq!(ran.data, "order #1 for tea");
    let replayed = bounded("the call", tester.call("order", args)).await;
    assert_eq!(replayed.data, "order #1 for tea");
    assert_eq!(replayed.attempts(), 0);
    assert_eq!(fields(&tester, 2)["outcome"], "replayed");
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn inject_action_targets_one_action_and_inject_any_action_of_the_group() {
    let (tester, runs) = tester();
    tester.inject_action("notes", "add", Fault::internal("disk full"));
    let list = bounded("the call", tester.call_action("notes", "list", json!({}))).await;
    assert!(!list.is_error);
    let add = bounded(
        "the call",
        tester.call_action("notes", "add", json!({"text": "eggs"})),
    )
    .await;
    assert_eq!(add.failure().expect("an entry").class, "internal");
    tester.inject("notes", Fault::internal("disk full"));
    let list = bounded("the call", tester.call_action("notes", "list", json!({}))).await;
    assert!(
        list.is_error,
        "a group's fault fires for whichever action runs next"
    );
    assert_eq!(runs.count(), 1);
}

#[tokio::test]
async fn invalid_arguments_are_refused_first_and_leave_the_fault_armed() {
    let (tester, runs) = tester();
    tester.inject("login", Fault::internal("boom"));
    let invalid = bounded("the call", tester.call("login", json!({"user": 5}))).await;
    assert_eq!(
        invalid.failure().expect("an entry").code.as_deref(),
        Some("invalid_arguments")
    );
    let args = json!({"user": "ann", "password": "hunter2hunter2"});
    let faulted = bounded("the call", tester.call("login", args)).await;
    assert_eq!(faulted.failure().expect("an entry").class, "internal");
    assert_eq!(runs.count(), 0);
}

#[tokio::test]
async fn faults_and_events_are_shared_with_as_caller_copies() {
    let (tester, _) = tester();
    let ann = tester
        .as_caller(RequestInfo::in_memory().with_claims(Claims::for_subject("ann", ["notes"])));
    tester.inject("slow", Fault::internal("boom"));
    let result = bounded("the call", ann.call("slow", json!({}))).await;
    assert!(result.is_error, "the copy sees the original's fault");
    assert_eq!(tester.log_events().len(), 1);
    assert_eq!(fields(&tester, 0)["caller"], "ann");
    assert_eq!(ann.log_events(), tester.log_events());
}

#[test]
#[should_panic(expected = "the server has no tool or group `quotes`")]
fn injecting_into_a_tool_that_does_not_exist_is_a_mistake_in_the_test() {
    let (tester, _) = tester();
    tester.inject("quotes", Fault::transient("503"));
}

#[test]
#[should_panic(expected = "no action `remove` of a grouped tool `notes`")]
fn injecting_into_an_action_that_does_not_exist_is_a_mistake_in_the_test() {
    let (tester, _) = tester();
    tester.inject_action("notes", "remove", Fault::transient("503"));
}

// ---- the call log

#[tokio::test]
async fn log_events_redact_secrets_as_the_log_does() {
    let (tester, _) = tester();
    let args = json!({"user": "ann", "password": "hunter2hunter2"});
    bounded("the call", tester.call("login", args)).await;
    let events = tester.log_events();
    assert_eq!(events.len(), 1);
    let line = events[0].to_string();
    assert!(!line.contains("hunter2"), "{line}");
    let arguments: Value =
        serde_json::from_str(events[0]["fields"]["arguments"].as_str().unwrap_or("null"))
            .expect("the arguments' JSON");
    assert_eq!(arguments, json!({"user": "ann", "password": "[redacted]"}));
    assert_eq!(events[0]["target"], "fusion::call");
    assert!(events[0]["timestamp"].is_string());
}

/// A panic, a success, invalid arguments and a cancelled call.
async fn four_outcomes(tester: &Tester<Runs>) {
    tester.inject("slow", Fault::panic("boom"));
    bounded("the call", tester.call("slow", json!({}))).await;
    bounded("the call", tester.call("slow", json!({}))).await;
    bounded("the call", tester.call("login", json!({"user": 5}))).await;
    let handle = tester.start("transfer", json!({"account": "a", "hold": true}));
    bounded("the progress", async {
        while handle.progress().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    handle.cancel();
    bounded("the result", handle.result()).await;
}

/// The events of `log_events()` are the lines the JSON log writes (bar the timestamp and
/// the latency, read at another moment).
#[tokio::test]
async fn log_events_are_the_events_the_log_writes() {
    // Why first without a subscriber: tracing decides whether a call site is listened to
    // when it is first reached. Reached first on another test's thread while this test's
    // subscriber is the only one, it is decided there, without a listener, and stays
    // silent here. Reached before the subscriber exists, it is decided again when the
    // subscriber is installed.
    four_outcomes(&tester().0).await;
    let (captured, _guard) = crate::observability::capture();
    let (tester, _) = tester();
    four_outcomes(&tester).await;
    let raw = captured.raw();
    let logged: Vec<Value> = raw
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .filter(|event| event["target"] == "fusion::call")
        .collect();
    let ours = tester.log_events();
    assert_eq!(logged.len(), 4, "{raw}");
    assert_eq!(ours.len(), 4, "{ours:?}");
    let without_clock = |event: &Value| {
        let mut event = event.clone();
        event["timestamp"] = Value::Null;
        event["fields"]["latency_us"] = Value::Null;
        event
    };
    for (logged, ours) in logged.iter().zip(&ours) {
        assert_eq!(without_clock(logged), without_clock(ours));
    }
    let outcomes: Vec<&Value> = ours
        .iter()
        .map(|event| &event["fields"]["outcome"])
        .collect();
    assert_eq!(outcomes, ["panic", "ok", "invalid_arguments", "cancelled"]);
}

// ---- calls watched while they run

#[tokio::test]
async fn a_started_call_shows_its_progress_and_cancelling_it_releases_its_lock() {
    let (tester, runs) = tester();
    let held = tester.start("transfer", json!({"account": "a", "hold": true}));
    bounded("the progress", async {
        while held.progress().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let progress = held.progress();
    assert_eq!(progress[0].progress, 1.0);
    assert_eq!(progress[0].total, Some(2.0));
    assert_eq!(progress[0].message.as_deref(), Some("debited"));
    // The same account waits for the lock the held call has.
    let queued = tester.start("transfer", json!({"account": "a", "hold": false}));
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert!(
        queued.progress().is_empty(),
        "the second call waits for the lock"
    );
    held.cancel();
    let cancelled = bounded("the cancelled call", held.result()).await;
    assert!(cancelled.is_error);
    assert_eq!(cancelled.failure().expect("an entry").class, "cancelled");
    let after = bounded("the queued call", queued.result()).await;
    assert_eq!(after.data, "moved from a");
    assert_eq!(runs.count(), 2);
}

#[tokio::test]
async fn a_started_call_that_ends_gives_its_result() {
    let (tester, _) = tester();
    let handle = tester.start("transfer", json!({"account": "b", "hold": false}));
    let result = bounded("the call", handle.result()).await;
    assert_eq!(result.data, "moved from b");
    assert_eq!(result.attempts(), 1);
    assert_eq!(result.notifications().len(), 1);
}

#[tokio::test]
async fn dropping_the_handle_drops_the_call_and_the_log_says_cancelled() {
    let (tester, _) = tester();
    let handle = tester.start("transfer", json!({"account": "c", "hold": true}));
    bounded("the progress", async {
        while handle.progress().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    drop(handle);
    bounded("the log event", async {
        while tester.log_events().is_empty() {
            tokio::task::yield_now().await;
        }
    })
    .await;
    assert_eq!(fields(&tester, 0)["outcome"], "cancelled");
    // The lock was given back.
    let next = tester.start("transfer", json!({"account": "c", "hold": false}));
    assert_eq!(
        bounded("the call", next.result()).await.data,
        "moved from c"
    );
}

// ---- coverage

#[tokio::test]
async fn untested_lists_the_tools_and_actions_no_call_reached() {
    let (tester, _) = tester();
    let all = [
        "quote",
        "slow",
        "guarded",
        "charge",
        "order",
        "login",
        "transfer",
        "notes.list",
        "notes.add",
    ];
    assert_eq!(tester.untested(), all);
    // Unknown names reach nothing.
    bounded("the call", tester.call("quotes", json!({}))).await;
    bounded("the call", tester.call_action("notes", "remove", json!({}))).await;
    assert_eq!(tester.untested(), all);
    // A refused call reached its tool; a copy's calls count for the original.
    bounded("the call", tester.call("login", json!({"user": 5}))).await;
    let copy = tester.as_caller(RequestInfo::in_memory());
    bounded(
        "the call",
        copy.call_action("notes", "add", json!({"text": "x"})),
    )
    .await;
    bounded("the call", tester.call("slow", json!({}))).await;
    assert_eq!(
        tester.untested(),
        [
            "quote",
            "guarded",
            "charge",
            "order",
            "transfer",
            "notes.list"
        ]
    );
    assert_eq!(copy.untested(), tester.untested());
}

// ---- a test's own context

#[derive(Clone)]
struct Greeting {
    text: String,
}

/// Greets.
#[mcp_tool]
async fn greet(#[ctx] greeting: &Greeting, #[call] call: &Call, name: String) -> String {
    let caller = call.request().subject().unwrap_or("nobody");
    format!("{}, {name} (for {caller})", greeting.text)
}

#[tokio::test]
async fn with_context_builds_each_calls_context_asynchronously_for_its_caller() {
    let server = Server::builder("greet", "1")
        .context(|| Greeting {
            text: "from the factory".into(),
        })
        .tool(greet)
        .build();
    let made = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&made);
    let tester = Tester::with_context(server, move |request: RequestInfo| {
        let counter = Arc::clone(&counter);
        async move {
            tokio::task::yield_now().await;
            counter.fetch_add(1, Ordering::SeqCst);
            Greeting {
                text: format!("Hello {}", request.subject().unwrap_or("anyone")),
            }
        }
    });
    let result = bounded("the call", tester.call("greet", json!({"name": "Ann"}))).await;
    assert_eq!(result.data, "Hello anyone, Ann (for nobody)");
    let bob =
        tester.as_caller(RequestInfo::in_memory().with_claims(Claims::for_subject("bob", ["x"])));
    let result = bounded("the call", bob.call("greet", json!({"name": "Ann"}))).await;
    assert_eq!(result.data, "Hello bob, Ann (for bob)");
    let adjusted = bounded(
        "the call",
        tester.call_with("greet", json!({"name": "Ann"}), |greeting| {
            greeting.text.push('!');
        }),
    )
    .await;
    assert_eq!(adjusted.data, "Hello anyone!, Ann (for nobody)");
    assert_eq!(made.load(Ordering::SeqCst), 3);
}
