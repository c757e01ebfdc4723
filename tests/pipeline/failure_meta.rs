//! `_meta["fusion/failure"]` on every `isError` result of the pipeline, one test per path
//! (invalid arguments, unknown tool, missing and unknown action, unauthorized and forbidden,
//! rate limited, circuit open, timeout, unknown outcome, a handler's transient and
//! invalid-input errors, internal, panic, fatal) and on a warning (`isError: false`): its
//! class, code, `retryable`, `retry_after_ms`, correlation id (the text's, for masked
//! failures), hint and issues, read from the result's JSON as a client reads it.

use fusion_runtime::{
    Server,
    identity::{Claims, RequestInfo},
    meta::{FAILURE_META_KEY, ISSUES_META_KEY},
    middleware::{self, HasRoles},
    prelude::*,
    testing::{TestResult, Tester},
};
use fusion_tests::faults;
use serde_json::{Value, json};

#[derive(Clone, Default)]
struct Ctx {
    admin: bool,
}

impl HasRoles for Ctx {
    fn has_role(&self, role: &str) -> bool {
        role == "admin" && self.admin
    }
}

/// Add two integers.
#[mcp_tool(read_only)]
async fn add(#[ctx] _ctx: &Ctx, a: i64, b: i64) -> i64 {
    a.saturating_add(b)
}

/// Create an order; `hang` never finishes (not idempotent: never retried).
#[mcp_tool(group = "orders", action = "create", destructive, timeout = "30ms")]
async fn create_order(#[ctx] _ctx: &Ctx, hang: bool) -> String {
    if hang {
        std::future::pending::<()>().await;
    }
    "created".into()
}

/// List the orders.
#[mcp_tool(group = "orders", action = "list", read_only)]
async fn list_orders(#[ctx] _ctx: &Ctx) -> Vec<String> {
    Vec::new()
}

/// Only for admins.
#[mcp_tool]
async fn purge(#[ctx] _ctx: &Ctx) -> String {
    "purged".into()
}

/// Needs the `db:write` scope.
#[mcp_tool(scopes = ["db:write"])]
async fn write_row(#[ctx] _ctx: &Ctx, id: u32) -> String {
    format!("wrote {id}")
}

/// Allowed once, then rate limited for a long while.
#[mcp_tool]
async fn once(#[ctx] _ctx: &Ctx) -> String {
    "ok".into()
}

fn tester() -> Tester<Ctx> {
    Tester::new(
        Server::builder("meta", "1.0.0")
            .context(Ctx::default)
            .tool(add)
            .tool(create_order)
            .tool(list_orders)
            .tool(purge)
            .tool(write_row)
            .tool(once)
            .tool_middleware("purge", middleware::require_role("admin"))
            .tool_middleware("once", middleware::rate_limit(0.01, 1))
            .build(),
    )
}

fn fault_tester() -> Tester<faults::FaultCtx> {
    Tester::new(faults::server())
}

/// The entry as a client reads it off the wire: `result._meta["fusion/failure"]`.
fn entry(result: &TestResult) -> Value {
    let wire = result.wire_json();
    let entry = wire["_meta"][FAILURE_META_KEY].clone();
    assert!(
        entry.is_object(),
        "no `_meta[{FAILURE_META_KEY}]` in {wire:#}"
    );
    // The typed form reads the same JSON.
    assert_eq!(
        result.failure().map(|typed| typed.class),
        entry["class"].as_str().map(str::to_owned)
    );
    entry
}

/// `isError: true`, and the entry's class, code and `retryable`.
fn failed(result: &TestResult, class: &str, code: Option<&str>, retryable: bool) -> Value {
    assert!(result.is_error, "expected isError: {}", result.text());
    let entry = entry(result);
    assert_eq!(entry["class"], class, "{entry:#}");
    match code {
        Some(code) => assert_eq!(entry["code"], code, "{entry:#}"),
        None => assert!(entry.get("code").is_none(), "{entry:#}"),
    }
    assert_eq!(entry["retryable"], retryable, "{entry:#}");
    entry
}

/// The reference a masked failure's text quotes: "(reference <id>)".
fn quoted_reference(text: &str) -> String {
    let start = text
        .find("reference ")
        .map(|at| at + "reference ".len())
        .unwrap_or_else(|| panic!("no reference in {text}"));
    text[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

fn assert_masked(result: &TestResult, entry: &Value) {
    let reference = quoted_reference(&result.text());
    assert!(!reference.is_empty());
    assert_eq!(entry["correlation_id"], reference.as_str(), "{entry:#}");
}

fn assert_not_masked(entry: &Value) {
    assert!(entry.get("correlation_id").is_none(), "{entry:#}");
}

#[tokio::test]
async fn invalid_arguments_carry_every_issue_in_both_keys() {
    let result = tester().call("add", json!({"a": "1", "c": 2})).await;
    let entry = failed(&result, "invalid_input", Some("invalid_arguments"), false);
    let issues = entry["issues"].as_array().expect("issues");
    let paths: Vec<&str> = issues.iter().filter_map(|i| i["path"].as_str()).collect();
    assert!(
        paths.contains(&"a") && paths.contains(&"b") && paths.contains(&"c"),
        "{paths:?}"
    );
    // The old key stays, with the same list.
    let wire = result.wire_json();
    assert_eq!(wire["_meta"][ISSUES_META_KEY], entry["issues"]);
    assert_not_masked(&entry);
    assert!(entry.get("retry_after_ms").is_none());
    // The text is the same as before: the list of problems.
    assert!(
        result
            .text()
            .starts_with("Invalid arguments for tool `add`")
    );
}

#[tokio::test]
async fn a_tool_named_after_a_groups_action_points_to_the_group() {
    for name in ["create_order", "orders_create", "order.create"] {
        let result = tester().call(name, json!({})).await;
        let entry = failed(&result, "invalid_input", Some("unknown_tool"), false);
        assert_eq!(
            entry["hint"], r#"call `orders` with `"action": "create"`"#,
            "{name}"
        );
        assert!(
            result
                .text()
                .contains("It is the action `create` of tool `orders`"),
            "{name}: {}",
            result.text()
        );
    }
}

#[tokio::test]
async fn an_unknown_tool_suggests_the_closest_name() {
    let result = tester().call("ad", json!({})).await;
    let entry = failed(&result, "invalid_input", Some("unknown_tool"), false);
    assert_eq!(entry["hint"], "did you mean `add`?");
    assert_not_masked(&entry);
}

#[tokio::test]
async fn a_missing_or_unknown_action_is_named() {
    let tester = tester();
    let missing = tester.call("orders", json!({})).await;
    let entry = failed(&missing, "invalid_input", Some("missing_action"), false);
    assert!(
        entry["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("\"action\""))
    );
    let unknown = tester.call("orders", json!({"action": "lst"})).await;
    let entry = failed(&unknown, "invalid_input", Some("unknown_action"), false);
    assert_eq!(entry["hint"], "did you mean `list`?");
}

#[tokio::test]
async fn unauthorized_and_forbidden_refusals_are_not_retryable() {
    let tester = tester();
    let refused = tester.call("purge", json!({})).await;
    let entry = failed(&refused, "invalid_input", Some("unauthorized"), false);
    assert!(
        entry["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("role"))
    );
    assert_not_masked(&entry);

    let reader = tester
        .as_caller(RequestInfo::in_memory().with_claims(Claims::for_subject("bob", ["db:read"])));
    let forbidden = reader.call("write_row", json!({"id": 1})).await;
    let entry = failed(&forbidden, "invalid_input", Some("forbidden"), false);
    assert!(
        entry["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("scope"))
    );

    // A handler's own `#[invalid_input(code = unauthorized)]`.
    let own = fault_tester()
        .call("fail_with", json!({"kind": "unauthorized"}))
        .await;
    failed(&own, "invalid_input", Some("unauthorized"), false);
}

#[tokio::test]
async fn a_rate_limited_call_says_when_to_retry() {
    let tester = tester();
    assert!(!tester.call("once", json!({})).await.is_error);
    let limited = tester.call("once", json!({})).await;
    let entry = failed(&limited, "transient", Some("rate_limited"), true);
    let wait = entry["retry_after_ms"].as_u64().expect("retry_after_ms");
    // One token every 100 s: the next one is at most that far.
    assert!(wait > 0 && wait <= 100_000, "{wait}");

    // A handler's own `#[transient(code = rate_limited, retry_after = "20ms")]`.
    let own = fault_tester()
        .call("fail_with", json!({"kind": "rate_limited"}))
        .await;
    let entry = failed(&own, "transient", Some("rate_limited"), true);
    assert_eq!(entry["retry_after_ms"], 20);
}

#[tokio::test]
async fn an_open_circuit_says_when_it_closes() {
    let tester = fault_tester();
    for _ in 0..3 {
        let failing = tester.call("unstable", json!({"fail": true})).await;
        // The exhausted transient error before the circuit opens: retryable, no code.
        let entry = failed(&failing, "transient", None, true);
        assert_not_masked(&entry);
    }
    let open = tester.call("unstable", json!({"fail": false})).await;
    let entry = failed(&open, "transient", Some("circuit_open"), true);
    let wait = entry["retry_after_ms"].as_u64().expect("retry_after_ms");
    assert!(wait <= 50, "the cooldown is 50 ms: {wait}");
}

#[tokio::test]
async fn a_timeout_is_transient() {
    let result = fault_tester().call("deadline", json!({})).await;
    let entry = failed(&result, "transient", Some("timeout"), true);
    assert_not_masked(&entry);
    assert!(result.text().contains("did not finish within 50 ms"));
}

#[tokio::test]
async fn an_unknown_outcome_is_not_retryable_and_says_how_to_check() {
    let tester = tester();
    let result = tester
        .call("orders", json!({"action": "create", "hang": true}))
        .await;
    let entry = failed(&result, "unknown_outcome", Some("timeout"), false);
    assert!(
        entry["hint"]
            .as_str()
            .is_some_and(|hint| hint.contains("`orders` action `list`")),
        "{entry:#}"
    );
}

#[tokio::test]
async fn a_handlers_invalid_input_carries_its_code_and_hint() {
    let result = fault_tester()
        .call("fail_with", json!({"kind": "not_found"}))
        .await;
    let entry = failed(&result, "invalid_input", Some("not_found"), false);
    assert_eq!(entry["hint"], "call `list_keys` to see the keys that exist");
    assert_not_masked(&entry);
}

#[tokio::test]
async fn an_internal_error_is_masked_with_the_texts_reference() {
    let result = fault_tester()
        .call("fail_with", json!({"kind": "garbage"}))
        .await;
    let entry = failed(&result, "internal", None, false);
    assert_masked(&result, &entry);
    assert!(!entry.to_string().contains("hunter2"), "{entry:#}");
}

#[tokio::test]
async fn a_panic_is_internal_and_masked() {
    let result = fault_tester()
        .call("explode", json!({"message": "secret detail"}))
        .await;
    let entry = failed(&result, "internal", Some("panic"), false);
    assert_masked(&result, &entry);
    assert!(!entry.to_string().contains("secret detail"), "{entry:#}");
}

#[tokio::test]
async fn a_fatal_error_is_masked_and_final() {
    let result = fault_tester()
        .call("fail_with", json!({"kind": "fatal"}))
        .await;
    assert!(result.is_fatal());
    let entry = failed(&result, "fatal", None, false);
    assert_masked(&result, &entry);
}

#[tokio::test]
async fn a_transient_io_error_is_retryable() {
    let result = fault_tester()
        .call("fail_with", json!({"kind": "timeout_io"}))
        .await;
    let entry = failed(&result, "transient", None, true);
    assert!(entry.get("retry_after_ms").is_none(), "{entry:#}");
}

#[tokio::test]
async fn a_warning_carries_the_entry_without_is_error() {
    let result = fault_tester()
        .call("fail_with", json!({"kind": "stale"}))
        .await;
    assert!(!result.is_error);
    let entry = entry(&result);
    assert_eq!(entry["class"], "warning");
    assert_eq!(entry["retryable"], false);
    assert_eq!(entry["hint"], "pass `fresh: true` for live data");
}

#[tokio::test]
async fn a_success_has_no_entry() {
    let result = tester().call("add", json!({"a": 1, "b": 2})).await;
    assert!(!result.is_error);
    assert!(result.failure().is_none());
    assert!(result.wire_json()["_meta"].get(FAILURE_META_KEY).is_none());
}

#[tokio::test]
async fn the_draft_standard_key_is_sent_only_when_turned_on() {
    use fusion_runtime::meta::TOOL_FAILURE_META_KEY;
    let off = tester().call("add", json!({"a": "1", "b": 2})).await;
    assert!(
        off.wire_json()["_meta"]
            .get(TOOL_FAILURE_META_KEY)
            .is_none(),
        "off by default: {}",
        off.wire_json()
    );
    let on = Tester::new(
        Server::builder("drafts", "0")
            .context(Ctx::default)
            .tool(once)
            .tool_middleware("once", middleware::rate_limit(0.01, 1))
            .draft_tool_failure(true)
            .build(),
    );
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|since| since.as_millis() as u64)
        .unwrap_or_default();
    let first = on.call("once", json!({})).await;
    assert!(!first.is_error);
    assert!(
        first.wire_json()["_meta"]
            .get(TOOL_FAILURE_META_KEY)
            .is_none(),
        "a success carries no failure"
    );
    let limited = on.call("once", json!({})).await;
    let wire = limited.wire_json();
    let standard = &wire["_meta"][TOOL_FAILURE_META_KEY];
    let own = &wire["_meta"][FAILURE_META_KEY];
    assert_eq!(standard["class"], "reliability", "{wire}");
    assert_eq!(standard["code"], "retryable_transient_error", "{wire}");
    assert_eq!(standard["retryable"], true, "{wire}");
    let not_before = standard["retryNotBefore"].as_u64().unwrap_or_default();
    let delay = own["retry_after_ms"].as_u64().unwrap_or_default();
    assert!(
        delay > 0 && not_before >= started + delay,
        "retryNotBefore {not_before}, started {started}, delay {delay}"
    );
    assert!(
        standard["correlationId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{wire}"
    );
}
