//! The demo's policies, proved with injected faults instead of failing code in its tools:
//! a panic in a read is contained and masked, a destructive write hit by a dropped
//! connection is not repeated, reads survive upstream failures under the retry policy an
//! operator adds, a slow store trips the timeout, the role check runs before any handler,
//! and every tool and action of the demo is reached by a test.

use std::time::Duration;

use fusion_demo::{Ctx, Role};
use fusion_runtime::{
    identity::{Claims, RequestInfo},
    policy::RetryPolicy,
    testing::{Fault, Tester},
    tool::Exposure,
};
use serde_json::{Value, json};

fn tester() -> Tester<Ctx> {
    Tester::new(fusion_demo::server())
}

/// Bounds every wait: a hung call fails the test instead of hanging it.
async fn bounded<T>(future: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(3600), future)
        .await
        .expect("the call finished")
}

fn names(result: &fusion_runtime::testing::TestResult) -> Vec<String> {
    result
        .data
        .as_array()
        .map(|users| {
            users
                .iter()
                .filter_map(|user| user["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_panic_in_a_read_is_contained_masked_and_the_next_call_works() {
    let tester = tester();
    tester.inject_action("db_user", "find_many", Fault::panic("store index corrupt"));
    let crashed = bounded(tester.call_action("db_user", "find_many", json!({"take": 2}))).await;
    assert!(crashed.is_error);
    let entry = crashed.failure().expect("an isError result has an entry");
    assert_eq!(entry.code.as_deref(), Some("panic"));
    let id = entry
        .correlation_id
        .expect("a masked failure has a correlation id");
    assert!(crashed.text().contains(&id), "{}", crashed.text());
    assert!(!crashed.text().contains("corrupt"), "{}", crashed.text());
    // The details are in the log, under the id the model was given.
    let event = &tester.log_events()[0]["fields"];
    assert_eq!(event["correlation_id"], id.as_str());
    assert!(
        event["error"]
            .as_str()
            .is_some_and(|error| error.contains("store index corrupt"))
    );
    // The server goes on.
    let users = bounded(tester.call_action("db_user", "find_many", json!({"take": 2}))).await;
    assert_eq!(names(&users).len(), 2);
}

#[tokio::test]
async fn create_hit_by_a_dropped_connection_is_not_repeated_its_outcome_unknown() {
    // Even under a server-wide retry policy: `create` is destructive and not idempotent.
    let server = fusion_demo::builder(Role::Admin, Exposure::Grouped)
        .retry(RetryPolicy::new(3, Duration::from_millis(1)))
        .build();
    let tester = Tester::new(server);
    tester.inject_action("db_user", "create", Fault::transient("connection reset"));
    let args = json!({"name": "Zoe", "email": "zoe@example.com"});
    let result = bounded(tester.call_action("db_user", "create", args)).await;
    assert_eq!(result.failure().expect("an entry").class, "unknown_outcome");
    assert_eq!(result.attempts(), 1, "never run twice");
    let found =
        bounded(tester.call_action("db_user", "find_many", json!({"name_contains": "Zoe"}))).await;
    assert!(
        names(&found).is_empty(),
        "the fault took the handler's place: {:?}",
        found.data
    );
}

#[tokio::test(start_paused = true)]
async fn reads_survive_two_upstream_failures_under_a_retry_policy_of_minutes() {
    let server = fusion_demo::builder(Role::Admin, Exposure::Grouped)
        .retry(RetryPolicy::new(3, Duration::from_secs(120)))
        .build();
    let tester = Tester::new(server);
    tester.inject_action(
        "db_user",
        "find_by_id",
        Fault::transient("store 503").times(2),
    );
    let real = std::time::Instant::now();
    let user = bounded(tester.call_action("db_user", "find_by_id", json!({"id": 1}))).await;
    assert!(!user.is_error, "{}", user.text());
    assert_eq!(user.data["id"], 1);
    assert_eq!(user.attempts(), 3);
    assert_eq!(tester.log_events()[0]["fields"]["outcome"], "retried_ok");
    // The paused clock skipped the minutes of backoff.
    assert!(real.elapsed() < Duration::from_secs(10));
}

#[tokio::test(start_paused = true)]
async fn a_slow_store_trips_the_timeout() {
    let server = fusion_demo::builder(Role::Admin, Exposure::Grouped)
        .timeout(Duration::from_secs(5))
        .build();
    let tester = Tester::new(server);
    tester.inject_action("system", "health", Fault::delay(Duration::from_secs(60)));
    let slow = bounded(tester.call_action("system", "health", json!({}))).await;
    let entry = slow.failure().expect("an entry");
    assert_eq!(entry.code.as_deref(), Some("timeout"));
    assert!(entry.retryable);
    let healthy = bounded(tester.call_action("system", "health", json!({}))).await;
    assert_eq!(healthy.data["status"], "ok");
}

#[tokio::test]
async fn the_role_check_runs_before_the_handler_so_a_guest_never_reaches_it() {
    let tester = Tester::new(fusion_demo::builder_from_token(Exposure::Grouped).build());
    let caller = |scopes: &[&str]| {
        tester.as_caller(
            RequestInfo::in_memory()
                .with_claims(Claims::for_subject("someone", scopes.iter().copied())),
        )
    };
    tester.inject_action(
        "db_user",
        "find_many",
        Fault::internal("should not run for a guest"),
    );
    let guest = bounded(caller(&["read"]).call_action("db_user", "find_many", json!({}))).await;
    assert!(guest.text().contains("Unauthorized"), "{}", guest.text());
    assert_eq!(guest.attempts(), 0);
    // The fault is still armed: the admin's call runs into it.
    let admin = bounded(caller(&["admin"]).call_action("db_user", "find_many", json!({}))).await;
    assert_eq!(admin.failure().expect("an entry").class, "internal");
}

#[tokio::test]
async fn every_tool_and_action_of_the_demo_is_reached_by_a_test() {
    let tester = tester();
    let calls: [(&str, &str, Value); 5] = [
        ("db_user", "find_many", json!({})),
        ("db_user", "find_by_id", json!({"id": 1})),
        (
            "db_user",
            "create",
            json!({"name": "Ann", "email": "ann@example.com"}),
        ),
        ("system", "disabled_action", json!({})),
        ("system", "health", json!({})),
    ];
    for (tool, action, args) in calls {
        bounded(tester.call_action(tool, action, args)).await;
    }
    assert!(tester.untested().is_empty(), "{:?}", tester.untested());
}
