//! Retries never repeat a side effect: a destructive, non-idempotent tool is run once and
//! reports an unknown outcome on a timeout; idempotency keys run a call once per key, also
//! under concurrency; read-only tools are still retried.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::Duration,
};

use fusion_runtime::{Classify, Server, policy::RetryPolicy, prelude::*, testing::Tester};
use serde_json::json;

#[derive(Clone, Default)]
struct Shop {
    runs: Arc<AtomicU32>,
}

#[derive(Debug, thiserror::Error, Classify)]
enum ShopError {
    #[error("the payment gateway connection was reset")]
    #[transient]
    Reset,
}

/// Create an order (not idempotent: a second call makes a second order).
#[mcp_tool(group = "orders", action = "create", destructive, timeout = "30ms")]
async fn create_order(#[ctx] shop: &Shop, hang: bool) -> Result<String, ShopError> {
    shop.runs.fetch_add(1, Ordering::SeqCst);
    if hang {
        std::future::pending::<()>().await;
    }
    Err(ShopError::Reset)
}

/// List orders.
#[mcp_tool(group = "orders", action = "list", read_only)]
async fn list_orders() -> Vec<String> {
    Vec::new()
}

/// Place an order once per request id.
#[mcp_tool(destructive, idempotency_key = "request_id")]
async fn place_order(#[ctx] shop: &Shop, item: String, request_id: Option<String>) -> String {
    let number = shop.runs.fetch_add(1, Ordering::SeqCst) + 1;
    tokio::time::sleep(Duration::from_millis(30)).await;
    let _ = request_id;
    format!("order #{number} for {item}")
}

/// Charge a payment once per id; hangs past its deadline.
#[mcp_tool(destructive, idempotency_key = "payment_id", timeout = "30ms")]
async fn charge(#[ctx] shop: &Shop, payment_id: String) -> String {
    shop.runs.fetch_add(1, Ordering::SeqCst);
    std::future::pending::<()>().await;
    payment_id
}

/// Look something up; fails transiently on the first two runs.
#[mcp_tool(read_only)]
async fn lookup(#[ctx] shop: &Shop) -> Result<String, ShopError> {
    if shop.runs.fetch_add(1, Ordering::SeqCst) < 2 {
        Err(ShopError::Reset)
    } else {
        Ok("found".into())
    }
}

fn tester() -> (Tester<Shop>, Shop) {
    let shop = Shop::default();
    let context = shop.clone();
    let server = Server::builder("shop", "0")
        .context(move || context.clone())
        // A server-wide default that would retry everything transient three times.
        .retry(RetryPolicy::new(3, Duration::from_millis(1)))
        .tool(create_order)
        .tool(list_orders)
        .tool(place_order)
        .tool(charge)
        .tool(lookup)
        .build();
    (Tester::new(server), shop)
}

#[tokio::test]
async fn a_destructive_tool_that_times_out_runs_once_and_says_unknown() {
    let (tester, shop) = tester();
    let result = tester
        .call_action("orders", "create", json!({"hang": true}))
        .await;
    assert!(result.is_error);
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1, "run once, not retried");
    let text = result.text();
    assert!(text.contains("may or may not have completed"), "{text}");
    assert!(
        text.contains("`orders` action `list`"),
        "names a read-only tool to check with: {text}"
    );
}

#[tokio::test]
async fn a_destructive_tool_whose_connection_drops_is_not_retried_either() {
    let (tester, shop) = tester();
    let result = tester
        .call_action("orders", "create", json!({"hang": false}))
        .await;
    assert!(result.is_error);
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1);
    assert!(
        result.text().contains("lost its connection"),
        "{}",
        result.text()
    );
}

#[tokio::test]
async fn the_same_key_twice_creates_once() {
    let (tester, shop) = tester();
    let first = tester
        .call("place_order", json!({"item": "lamp", "request_id": "r-1"}))
        .await;
    let second = tester
        .call("place_order", json!({"item": "lamp", "request_id": "r-1"}))
        .await;
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1);
    assert_eq!(first.text(), "order #1 for lamp");
    assert_eq!(
        second.text(),
        first.text(),
        "the second call returns the first result"
    );
    let other = tester
        .call("place_order", json!({"item": "lamp", "request_id": "r-2"}))
        .await;
    assert_eq!(other.text(), "order #2 for lamp");
    let without = tester.call("place_order", json!({"item": "lamp"})).await;
    assert_eq!(
        without.text(),
        "order #3 for lamp",
        "no key, no deduplication"
    );
}

#[tokio::test]
async fn a_key_reused_with_other_arguments_is_a_conflict_not_a_replay() {
    let (tester, shop) = tester();
    let first = tester
        .call("place_order", json!({"item": "lamp", "request_id": "k"}))
        .await;
    assert_eq!(first.text(), "order #1 for lamp");
    // Another item under the same key: the lamp's order must not be passed off as a desk's.
    let other = tester
        .call("place_order", json!({"item": "desk", "request_id": "k"}))
        .await;
    assert!(other.is_error, "{}", other.text());
    assert_eq!(
        shop.runs.load(Ordering::SeqCst),
        1,
        "the conflicting call did not run"
    );
    let failure = other.failure().expect("a failure entry");
    assert_eq!(failure.code.as_deref(), Some("conflict"), "{failure:?}");
    assert_eq!(failure.class, "invalid_input", "{failure:?}");
    assert!(!failure.retryable, "{failure:?}");
    assert!(other.text().contains("request_id"), "{}", other.text());
    // The same arguments, sent in another order, still replay.
    let again = tester
        .call_json("place_order", r#"{"request_id": "k", "item": "lamp"}"#)
        .await;
    assert_eq!(again.text(), "order #1 for lamp");
}

#[tokio::test]
async fn concurrent_calls_with_one_key_run_the_handler_once() {
    let (tester, shop) = tester();
    let calls = (0..10).map(|_| {
        let tester = tester.clone();
        async move {
            tester
                .call("place_order", json!({"item": "desk", "request_id": "same"}))
                .await
        }
    });
    let results = futures_util::future::join_all(calls).await;
    assert_eq!(
        shop.runs.load(Ordering::SeqCst),
        1,
        "one run for ten concurrent calls"
    );
    assert!(
        results.iter().all(|r| r.text() == "order #1 for desk"),
        "{:?}",
        results.iter().map(|r| r.text()).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_read_only_tool_is_still_retried() {
    let (tester, shop) = tester();
    let result = tester.call("lookup", json!({})).await;
    assert!(!result.is_error, "{}", result.text());
    assert_eq!(
        shop.runs.load(Ordering::SeqCst),
        3,
        "two transient failures, then success"
    );
}

/// Record a refund once per id; idempotent (the refund book keeps one entry a refund).
#[mcp_tool(idempotent, idempotency_key = "refund_id")]
async fn record_refund(#[ctx] shop: &Shop, refund_id: String) -> String {
    let number = shop.runs.fetch_add(1, Ordering::SeqCst) + 1;
    tokio::time::sleep(Duration::from_millis(30)).await;
    format!("refund {refund_id}, run #{number}")
}

/// Waits (at most 5 s) until `shop` counted `runs` runs: the handler started.
async fn started(shop: &Shop, runs: u32) {
    tokio::time::timeout(Duration::from_secs(5), async {
        while shop.runs.load(Ordering::SeqCst) < runs {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await
    .expect("the handler started");
}

#[tokio::test]
async fn a_keyed_call_cancelled_mid_way_leaves_an_unknown_outcome_not_a_second_order() {
    let (tester, shop) = tester();
    let order = json!({"item": "lamp", "request_id": "r-1"});
    let handle = tester.start("place_order", order.clone());
    started(&shop, 1).await;
    handle.cancel();
    let cancelled = handle.result().await;
    assert!(cancelled.is_error, "{}", cancelled.text());
    // The order may have been placed: the same key is an unknown outcome, every time.
    for _ in 0..2 {
        let again = tester.call("place_order", order.clone()).await;
        assert!(again.is_error, "{}", again.text());
        let entry = again.failure().expect("an entry");
        assert_eq!(entry.class, "unknown_outcome");
        assert_eq!(entry.code.as_deref(), Some("replica_stopped"));
        assert!(
            again.text().contains("new idempotency key"),
            "{}",
            again.text()
        );
    }
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1, "one order, ever");
    // A new key is a new order.
    let fresh = tester
        .call("place_order", json!({"item": "lamp", "request_id": "r-2"}))
        .await;
    assert!(!fresh.is_error, "{}", fresh.text());
}

#[tokio::test]
async fn an_idempotent_keyed_call_cancelled_mid_way_runs_again_under_a_newer_token() {
    let (tester, shop) = {
        let shop = Shop::default();
        let context = shop.clone();
        let server = Server::builder("shop", "0")
            .context(move || context.clone())
            .tool(record_refund)
            .build();
        (Tester::new(server), shop)
    };
    let refund = json!({"refund_id": "f-1"});
    let handle = tester.start("record_refund", refund.clone());
    started(&shop, 1).await;
    handle.cancel();
    let _ = handle.result().await;
    let again = tester.call("record_refund", refund.clone()).await;
    assert!(!again.is_error, "{}", again.text());
    assert_eq!(again.text(), "refund f-1, run #2");
    let replayed = tester.call("record_refund", refund).await;
    assert_eq!(replayed.text(), again.text(), "kept from then on");
}

#[tokio::test]
async fn a_keyed_call_that_times_out_keeps_its_unknown_outcome_for_the_key() {
    let (tester, shop) = tester();
    let payment = json!({"payment_id": "p-1"});
    let first = tester.call("charge", payment.clone()).await;
    assert_eq!(
        first.failure().expect("an entry").class,
        "unknown_outcome",
        "{}",
        first.text()
    );
    // The same key: the same answer, never a second charge.
    let again = tester.call("charge", payment).await;
    assert_eq!(again.text(), first.text());
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1, "charged once, ever");
}

#[tokio::test]
async fn a_key_from_the_request_keys_a_tool_without_a_key_argument() {
    use fusion_runtime::identity::RequestInfo;
    let (tester, shop) = tester();
    // A gateway's `Idempotency-Key` header: the same request twice runs once.
    let keyed = tester.as_caller(RequestInfo::in_memory().with_header("Idempotency-Key", "g-1"));
    let first = keyed.call_action("orders", "list", json!({})).await;
    assert!(!first.is_error, "{}", first.text());
    let lamp = |key: &'static str| {
        tester.as_caller(RequestInfo::in_memory().with_header("Idempotency-Key", key))
    };
    let placed = lamp("g-2")
        .call("place_order", json!({"item": "lamp"}))
        .await;
    let again = lamp("g-2")
        .call("place_order", json!({"item": "lamp"}))
        .await;
    assert_eq!(placed.text(), "order #1 for lamp");
    assert_eq!(again.text(), placed.text(), "the header's key replays");
    assert_eq!(shop.runs.load(Ordering::SeqCst), 1);
    // The same key with other arguments is a conflict, as an argument's key is.
    let other = lamp("g-2")
        .call("place_order", json!({"item": "desk"}))
        .await;
    assert!(other.is_error, "{}", other.text());
    assert_eq!(
        other.failure().map(|f| f.code.clone()),
        Some(Some("conflict".to_owned()))
    );
    // The tool's own key argument wins over the header's.
    let own = lamp("g-2")
        .call("place_order", json!({"item": "desk", "request_id": "r-9"}))
        .await;
    assert_eq!(own.text(), "order #2 for desk");
    // Without any key, every call runs.
    let plain = tester.call("place_order", json!({"item": "lamp"})).await;
    assert_eq!(plain.text(), "order #3 for lamp");
}

#[tokio::test]
async fn an_idempotency_key_argument_tells_the_model_how_to_use_it() {
    let (tester, _) = tester();
    let tools = tester.list_tools().await;
    let place = tools
        .iter()
        .find(|tool| tool.name == "place_order")
        .expect("place_order is listed");
    let description = place.input_schema["properties"]["request_id"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        description.contains("retry this same request, send the same value again")
            && description.contains("for a new request, send a new value"),
        "{description}"
    );
}
