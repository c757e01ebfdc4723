//! The recovery layer through the tester: classification of handler errors, retries with
//! backoff and reconnect (single flight), timeouts that drop the handler, the circuit
//! breaker, fatal errors reported to the test instead of ending it, and start-up checks.

use std::sync::{Arc, atomic::Ordering};

use fusion_runtime::{
    Classify, StartupError, failure::ErrorClass, failure::ErrorCode, testing::Tester,
};
use fusion_tests::faults::{self, FaultCtx, UpstreamError};
use serde_json::json;

fn tester() -> (Tester<FaultCtx>, FaultCtx) {
    let ctx = FaultCtx::default();
    (Tester::new(faults::server_with(ctx.clone())), ctx)
}

#[test]
fn the_derive_classifies_each_variant() {
    assert_eq!(
        UpstreamError::ConnectionReset.classification().class,
        ErrorClass::Transient
    );
    let limited = UpstreamError::RateLimited.classification();
    assert_eq!(limited.code, Some(ErrorCode::RateLimited));
    assert_eq!(
        limited.retry_after,
        Some(std::time::Duration::from_millis(20))
    );
    let missing = UpstreamError::NotFound("x".into()).classification();
    assert_eq!(
        (missing.class, missing.code),
        (ErrorClass::InvalidInput, Some(ErrorCode::NotFound))
    );
    assert!(missing.hint.is_some_and(|hint| hint.contains("list_keys")));
    assert_eq!(
        UpstreamError::CredentialsRevoked.classification().class,
        ErrorClass::Fatal
    );
    assert_eq!(
        UpstreamError::Stale.classification().class,
        ErrorClass::Warning
    );
    assert_eq!(
        UpstreamError::Garbage("x".into()).classification().class,
        ErrorClass::Internal
    );
    // A wrapped io::Error is looked through: its kind decides.
    let timed_out = UpstreamError::Io(std::io::ErrorKind::TimedOut.into());
    assert_eq!(timed_out.classification().class, ErrorClass::Transient);
    let denied = UpstreamError::Io(std::io::ErrorKind::PermissionDenied.into());
    assert_eq!(denied.classification().class, ErrorClass::Internal);
}

#[tokio::test]
async fn transient_failures_are_retried_and_the_resource_reconnected() {
    let (tester, ctx) = tester();
    let result = tester
        .call("flaky", json!({"key": "a", "fail_times": 2}))
        .await;
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(result.text(), "ok after retries for a");
    let runs = ctx
        .state
        .runs
        .lock()
        .map(|runs| runs["a"])
        .unwrap_or_default();
    assert_eq!(runs, 3, "two failures and one success");
    assert_eq!(
        ctx.upstream.reconnects.load(Ordering::SeqCst),
        2,
        "one reconnect before each retry"
    );
}

#[tokio::test]
async fn retries_stop_at_the_attempt_limit() {
    let (tester, ctx) = tester();
    let result = tester
        .call("flaky", json!({"key": "b", "fail_times": 10}))
        .await;
    assert!(result.is_error);
    let text = result.text();
    assert!(text.contains("temporarily unavailable"), "{text}");
    assert!(text.contains("after 4 attempts"), "{text}");
    assert!(text.contains("upstream connection was reset"), "{text}");
    let runs = ctx
        .state
        .runs
        .lock()
        .map(|runs| runs["b"])
        .unwrap_or_default();
    assert_eq!(runs, 4);
}

#[tokio::test]
async fn concurrent_callers_share_one_reconnect() {
    let (tester, ctx) = tester();
    let calls = (0..8).map(|i| {
        let tester = tester.clone();
        async move {
            tester
                .call("flaky", json!({"key": format!("c{i}"), "fail_times": 1}))
                .await
        }
    });
    let results = futures_util::future::join_all(calls).await;
    assert!(results.iter().all(|r| !r.is_error));
    let reconnects = ctx.upstream.reconnects.load(Ordering::SeqCst);
    assert!(
        reconnects < 8,
        "{reconnects} reconnects for 8 concurrent failures: not shared"
    );
    assert!(reconnects >= 1);
}

#[tokio::test]
async fn a_timeout_drops_the_handler_and_names_the_limit() {
    let (tester, ctx) = tester();
    let result = tester.call("deadline", json!({})).await;
    assert!(result.is_error);
    let text = result.text();
    assert!(text.contains("did not finish within 50 ms"), "{text}");
    assert!(text.contains("after 2 attempts"), "{text}");
    assert_eq!(
        ctx.state.dropped.load(Ordering::SeqCst),
        2,
        "each timed-out run was dropped"
    );
}

#[tokio::test]
async fn the_circuit_opens_fails_fast_and_recovers_after_a_probe() {
    let (tester, _) = tester();
    for _ in 0..3 {
        let result = tester.call("unstable", json!({"fail": true})).await;
        assert!(
            result.text().contains("temporarily unavailable"),
            "{}",
            result.text()
        );
    }
    let open = tester.call("unstable", json!({"fail": false})).await;
    assert!(open.is_error);
    assert!(open.text().contains("calls are paused"), "{}", open.text());
    tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    let probe = tester.call("unstable", json!({"fail": false})).await;
    assert!(
        !probe.is_error,
        "the half-open probe runs: {}",
        probe.text()
    );
    let after = tester.call("unstable", json!({"fail": false})).await;
    assert!(!after.is_error);
}

#[tokio::test]
async fn codes_hints_and_warnings_have_stable_wording() {
    let (tester, _) = tester();
    let not_found = tester.call("fail_with", json!({"kind": "not_found"})).await;
    assert!(not_found.is_error);
    assert_eq!(
        not_found.text(),
        "Not found: no record with key `k-42`. Hint: call `list_keys` to see the keys that exist"
    );
    let unauthorized = tester
        .call("fail_with", json!({"kind": "unauthorized"}))
        .await;
    assert!(unauthorized.is_error);
    assert!(
        unauthorized
            .text()
            .starts_with("Unauthorized: guests may not write")
    );
    let limited = tester
        .call("fail_with", json!({"kind": "rate_limited"}))
        .await;
    assert!(limited.is_error);
    assert!(
        limited.text().starts_with("Rate limited:"),
        "{}",
        limited.text()
    );
    assert!(
        limited.text().contains("Retry after 20 ms"),
        "{}",
        limited.text()
    );
    let stale = tester.call("fail_with", json!({"kind": "stale"})).await;
    assert!(!stale.is_error, "a warning is not an error");
    assert!(stale.text().contains("5 minutes old") && stale.text().contains("fresh: true"));
}

#[tokio::test]
async fn internal_errors_are_masked_and_io_timeouts_are_transient() {
    let (tester, _) = tester();
    let garbage = tester.call("fail_with", json!({"kind": "garbage"})).await;
    assert!(garbage.is_error);
    assert!(!garbage.text().contains("hunter2"), "{}", garbage.text());
    assert!(garbage.text().contains("internal error (reference "));
    let io = tester
        .call("fail_with", json!({"kind": "timeout_io"}))
        .await;
    assert!(
        io.text().contains("temporarily unavailable"),
        "{}",
        io.text()
    );
}

#[tokio::test]
async fn boxed_errors_are_classified_through_their_chain() {
    let (tester, _) = tester();
    let transient = tester
        .call("boxed_failure", json!({"transient": true}))
        .await;
    assert!(
        transient.text().contains("temporarily unavailable"),
        "{}",
        transient.text()
    );
    let plain = tester
        .call("boxed_failure", json!({"transient": false}))
        .await;
    assert!(plain.text().contains("internal error"), "{}", plain.text());
}

#[tokio::test]
async fn a_fatal_error_is_reported_to_the_test_not_the_process() {
    let (tester, _) = tester();
    let result = tester.call("fail_with", json!({"kind": "fatal"})).await;
    assert!(result.is_error);
    assert!(result.is_fatal());
    assert!(result.text().contains("shutting down"), "{}", result.text());
    assert!(
        !result.text().contains("revoked"),
        "fatal details are masked"
    );
    assert!(tester.server().has_failed_fatally());
    let other = tester.call("echo", json!({"text": "still here"})).await;
    assert!(!other.is_fatal());
}

#[tokio::test]
async fn start_up_checks_refuse_to_serve() {
    let missing = faults::builder(FaultCtx::default())
        .require_env("FUSION_TEST_SURELY_UNSET_VARIABLE")
        .start()
        .await;
    assert!(
        matches!(missing, Err(StartupError::MissingEnv(ref name)) if name == "FUSION_TEST_SURELY_UNSET_VARIABLE")
    );
    let failed = faults::builder(FaultCtx::default())
        .setup(|| async { Err::<(), _>("cannot reach the database") })
        .start()
        .await;
    let error = failed.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("cannot reach the database"), "{error}");
    let fine = faults::builder(FaultCtx::default())
        .setup(|| async { Ok::<(), String>(()) })
        .start()
        .await;
    assert!(fine.is_ok());
}

#[tokio::test]
async fn panics_are_internal_and_the_server_survives() {
    let (tester, _) = tester();
    let crash = tester
        .call("explode", json!({"message": "index out of range"}))
        .await;
    assert!(crash.is_error && !crash.is_fatal());
    assert!(!crash.text().contains("index out of range"));
    assert_eq!(tester.call("echo", json!({"text": "x"})).await.text(), "x");
}

#[tokio::test]
async fn the_recovery_state_is_shared_by_clones_of_the_context() {
    let ctx = FaultCtx::default();
    let server = faults::server_with(ctx.clone());
    let tester = Tester::new(server);
    tester
        .call("flaky", json!({"key": "shared", "fail_times": 1}))
        .await;
    assert!(Arc::strong_count(&ctx.state) >= 2);
    assert_eq!(ctx.upstream.reconnects.load(Ordering::SeqCst), 1);
}
