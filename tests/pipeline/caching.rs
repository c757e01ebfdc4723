//! Caching as fault tolerance (issue 41): `#[mcp_tool(read_only, cache = "..")]` answers an
//! identical call from the cache; identical calls that come together run the handler once;
//! a failing source is answered with the stale entry (`stale_if_error`); a writer's
//! `invalidates` drops entries for every caller; the store is bounded. Each test counts the
//! upstream's runs.
//!
//! Ages are tokio's paused clock where a test moves time; every other wait is bounded
//! (`WAIT`). The Redis store is tested in `tests/fleet/caching.rs`.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use fusion_runtime::{
    BuildError, Classify, Server, ServerBuilder,
    cache::MemoryCacheStore,
    identity::{Claims, RequestInfo},
    prelude::*,
    testing::{Fault, TestResult, Tester},
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// The bound on any wait of these tests.
const WAIT: Duration = Duration::from_secs(10);

/// A counting upstream: how many times each tool's handler ran, what it fails with next,
/// a gate a test opens, and how many handler futures were dropped unfinished.
#[derive(Clone)]
struct Upstream {
    runs: Arc<AtomicUsize>,
    writes: Arc<AtomicUsize>,
    price: Arc<AtomicUsize>,
    /// What the next runs fail with, in order; empty: they succeed.
    failures: Arc<Mutex<Vec<&'static str>>>,
    gate: Arc<Semaphore>,
    /// Handlers that entered the gate, and those dropped before they finished.
    entered: Arc<AtomicUsize>,
    dropped: Arc<AtomicUsize>,
}

impl Default for Upstream {
    fn default() -> Self {
        Self {
            runs: Arc::default(),
            writes: Arc::default(),
            price: Arc::new(AtomicUsize::new(42)),
            failures: Arc::default(),
            gate: Arc::new(Semaphore::new(0)),
            entered: Arc::default(),
            dropped: Arc::default(),
        }
    }
}

impl Upstream {
    fn runs(&self) -> usize {
        self.runs.load(Ordering::SeqCst)
    }

    fn fail_next(&self, failures: &[&'static str]) {
        *self.failures.lock().expect("failures") = failures.to_vec();
    }

    /// Runs the upstream: counts, fails as told, waits at the gate when `gated`.
    async fn read(&self, gated: bool) -> Result<usize, QuoteError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let failure = {
            let mut failures = self.failures.lock().expect("failures");
            (!failures.is_empty()).then(|| failures.remove(0))
        };
        match failure {
            Some("transient") => return Err(QuoteError::Down),
            Some("internal") => return Err(QuoteError::Bug),
            Some("slow") => std::future::pending::<()>().await,
            _ => {}
        }
        if gated {
            let guard = DropCount(Arc::clone(&self.dropped), false);
            self.entered.fetch_add(1, Ordering::SeqCst);
            self.gate.acquire().await.expect("gate").forget();
            guard.finish();
        }
        Ok(self.price.load(Ordering::SeqCst))
    }
}

/// Counts a handler future dropped before it finished.
struct DropCount(Arc<AtomicUsize>, bool);

impl DropCount {
    fn finish(mut self) {
        self.1 = true;
    }
}

impl Drop for DropCount {
    fn drop(&mut self) {
        if !self.1 {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
}

#[derive(Debug, thiserror::Error, Classify)]
enum QuoteError {
    #[error("the market data feed answered 503")]
    #[transient]
    Down,
    #[error("the feed's answer could not be parsed")]
    #[internal]
    Bug,
    #[error("few trades today: the forecast is rough")]
    #[warning]
    Thin,
}

/// A forecast, which comes with a warning on quiet days.
#[mcp_tool(read_only, cache = "30s")]
async fn forecast(#[ctx] up: &Upstream, symbol: String) -> Result<String, QuoteError> {
    up.read(false).await?;
    if symbol == "QUIET" {
        return Err(QuoteError::Thin);
    }
    Ok(format!("{symbol} goes up"))
}

/// The price of a stock, cached for 30 seconds and served stale for 10 minutes more.
#[mcp_tool(read_only, cache = "30s", stale_if_error = "10m", timeout = "1s")]
async fn quote(
    #[ctx] up: &Upstream,
    symbol: String,
    /// Wait at the test's gate inside the handler.
    gated: Option<bool>,
) -> Result<String, QuoteError> {
    let price = up.read(gated.unwrap_or(false)).await?;
    Ok(format!("{symbol}: {price}"))
}

/// Rates, behind a circuit breaker that opens on the first failure.
#[mcp_tool(
    read_only,
    cache = "1s",
    stale_if_error = "1m",
    circuit(failures = 1, window = "1m", cooldown = "1m")
)]
async fn rates(#[ctx] up: &Upstream) -> Result<String, QuoteError> {
    let price = up.read(false).await?;
    Ok(format!("rates at {price}"))
}

/// Market news, the same for every caller.
#[mcp_tool(read_only, cache = "1m", cache_scope = "public")]
async fn news(#[ctx] up: &Upstream, topic: String) -> Result<String, QuoteError> {
    up.read(false).await?;
    Ok(format!("nothing new on {topic}"))
}

/// A holding, a caller's own; no stale answers.
#[mcp_tool(read_only, cache = "30s", scopes = ["portfolio:read"])]
async fn holding(#[ctx] up: &Upstream, symbol: String) -> Result<String, QuoteError> {
    up.read(false).await?;
    Ok(format!("10 {symbol}"))
}

/// A report as structured content, with a presenter-free structured result.
#[mcp_tool(idempotent, cache = "30s")]
async fn report(#[ctx] up: &Upstream, pages: u32) -> Result<Vec<String>, QuoteError> {
    up.read(false).await?;
    Ok((0..pages).map(|page| format!("page {page}")).collect())
}

/// Sets a stock's price; its success drops the cached quotes.
#[mcp_tool(idempotent, invalidates = ["quote", "market.find"])]
async fn set_price(#[ctx] up: &Upstream, price: u32) -> Result<String, QuoteError> {
    up.writes.fetch_add(1, Ordering::SeqCst);
    if up.failures.lock().expect("failures").first() == Some(&"write") {
        up.failures.lock().expect("failures").remove(0);
        return Err(QuoteError::Down);
    }
    up.price.store(price as usize, Ordering::SeqCst);
    Ok(format!("price set to {price}"))
}

/// Moves money: unsafe to repeat; its timeout leaves an unknown outcome that invalidates.
#[mcp_tool(destructive, timeout = "5s", invalidates = ["quote"])]
async fn trade(#[ctx] up: &Upstream, hang: bool) -> String {
    up.writes.fetch_add(1, Ordering::SeqCst);
    if hang {
        std::future::pending::<()>().await;
    }
    "traded".to_owned()
}

/// Finds a stock in the market, as an action of a group.
#[mcp_tool(group = "market", action = "find", read_only, cache = "30s")]
async fn market_find(#[ctx] up: &Upstream, symbol: String) -> Result<String, QuoteError> {
    let price = up.read(false).await?;
    Ok(format!("found {symbol} at {price}"))
}

fn market() -> (Tester<Upstream>, Upstream) {
    market_with(|builder| builder)
}

fn market_with(
    adjust: impl FnOnce(ServerBuilder<Upstream>) -> ServerBuilder<Upstream>,
) -> (Tester<Upstream>, Upstream) {
    let up = Upstream::default();
    let shared = up.clone();
    let builder = Server::builder("market", "1.0.0")
        .context(move || shared.clone())
        .tool(quote)
        .tool(news)
        .tool(holding)
        .tool(report)
        .tool(set_price)
        .tool(trade)
        .tool(market_find)
        .tool(forecast)
        .tool(rates);
    (Tester::new(adjust(builder).build()), up)
}

fn caller(subject: &str, scopes: &[&str]) -> RequestInfo {
    RequestInfo::in_memory().with_claims(Claims::for_subject(subject, scopes.iter().copied()))
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {WAIT:?}"))
}

/// The count of `result` in the tool's cache metric (`hit`, `miss`, ...).
fn cache_count(tester: &Tester<Upstream>, tool: &str, result: &str) -> u64 {
    let snapshot = tester.server().metrics();
    let tool = snapshot
        .tools
        .iter()
        .find(|snapshot| snapshot.tool == tool)
        .unwrap_or_else(|| panic!("no metrics for {tool}"));
    tool.cache.get(result).copied().unwrap_or(0)
}

fn ok(result: &TestResult) -> String {
    assert!(!result.is_error, "{}", result.text());
    result.text()
}

#[tokio::test]
async fn an_identical_call_is_answered_from_the_cache_without_running_the_handler() {
    let (tester, up) = market();
    let first = tester
        .call("quote", json!({"symbol": "ACME", "gated": false}))
        .await;
    assert_eq!(ok(&first), "ACME: 42");
    // The same arguments in another order: one canonical key.
    let again = tester
        .call("quote", json!({"gated": false, "symbol": "ACME"}))
        .await;
    assert_eq!(ok(&again), "ACME: 42");
    assert_eq!(up.runs(), 1);
    // The answer from the cache is the one the client got the first time, `_meta` and all.
    assert_eq!(again.wire_json(), first.wire_json());
    assert!(again.failure().is_none());
    // Other arguments: another entry; an absent argument is not `false`.
    assert_eq!(
        ok(&tester.call("quote", json!({"symbol": "INIT"})).await),
        "INIT: 42"
    );
    assert_eq!(
        ok(&tester.call("quote", json!({"symbol": "ACME"})).await),
        "ACME: 42"
    );
    assert_eq!(up.runs(), 3);
    assert_eq!(cache_count(&tester, "quote", "hit"), 1);
    assert_eq!(cache_count(&tester, "quote", "miss"), 3);
    let snapshot = tester.server().metrics();
    let calls = &snapshot.tools[0].calls;
    assert_eq!((calls["ok"], calls["cached"]), (3, 1), "{calls:?}");
    // The call log: one event a call, with how the cache answered it.
    let logged: Vec<(String, String)> = tester
        .log_events()
        .iter()
        .map(|event| {
            let field = |key: &str| event["fields"][key].as_str().unwrap_or("").to_owned();
            (field("outcome"), field("cache"))
        })
        .collect();
    let pair = |outcome: &str, cache: &str| (outcome.to_owned(), cache.to_owned());
    assert_eq!(
        logged,
        [
            pair("ok", "miss"),
            pair("cached", "hit"),
            pair("ok", "miss"),
            pair("ok", "miss")
        ]
    );
    let text = snapshot.to_prometheus();
    assert!(
        text.contains("fusion_tool_cache_total{tool=\"quote\",result=\"hit\"} 1"),
        "{text}"
    );
}

#[tokio::test]
async fn structured_answers_come_back_whole() {
    let (tester, up) = market();
    let first = tester.call("report", json!({"pages": 2})).await;
    let second = tester.call("report", json!({"pages": 2})).await;
    assert_eq!(up.runs(), 1);
    assert_eq!(second.data, json!(["page 0", "page 1"]));
    assert_eq!(second.wire_json(), first.wire_json());
    assert_eq!(
        second.raw.structured_content,
        Some(json!({"result": ["page 0", "page 1"]}))
    );
}

#[tokio::test]
async fn entries_are_each_callers_own_unless_the_scope_is_public() {
    let (tester, up) = market();
    let ann = tester.as_caller(caller("ann", &["portfolio:read"]));
    let bob = tester.as_caller(caller("bob", &["portfolio:read"]));
    ok(&ann.call("holding", json!({"symbol": "ACME"})).await);
    ok(&bob.call("holding", json!({"symbol": "ACME"})).await);
    assert_eq!(up.runs(), 2, "a private entry is not another caller's");
    ok(&ann.call("holding", json!({"symbol": "ACME"})).await);
    assert_eq!(up.runs(), 2, "but it is its own caller's");
    ok(&ann.call("news", json!({"topic": "rates"})).await);
    ok(&bob.call("news", json!({"topic": "rates"})).await);
    assert_eq!(up.runs(), 3, "a public entry is every caller's");
}

#[tokio::test]
async fn a_cached_answer_never_skips_the_scopes_check() {
    let (tester, up) = market();
    let reader = tester.as_caller(caller("ann", &["portfolio:read"]));
    ok(&reader.call("holding", json!({"symbol": "ACME"})).await);
    // The same caller, its grant gone (a new token without it): refused, even though
    // its answer is in the cache.
    let without = tester.as_caller(caller("ann", &[]));
    let refused = without.call("holding", json!({"symbol": "ACME"})).await;
    assert!(refused.is_error);
    assert!(
        refused.text().contains("portfolio:read"),
        "{}",
        refused.text()
    );
    assert_eq!(up.runs(), 1);
}

#[tokio::test]
async fn failures_are_not_stored_and_warnings_are() {
    let (tester, up) = market();
    up.fail_next(&["internal"]);
    let failed = tester.call("news", json!({"topic": "rates"})).await;
    assert!(failed.is_error);
    let retried = tester.call("news", json!({"topic": "rates"})).await;
    assert_eq!(ok(&retried), "nothing new on rates");
    assert_eq!(
        up.runs(),
        2,
        "the failure was not stored: the next call ran"
    );
    let warned = tester.call("forecast", json!({"symbol": "QUIET"})).await;
    let again = tester.call("forecast", json!({"symbol": "QUIET"})).await;
    assert_eq!(up.runs(), 3, "the warning was stored");
    assert!(!again.is_error);
    assert_eq!(
        again.failure().map(|entry| entry.class),
        Some("warning".to_owned())
    );
    assert!(
        again.text().contains("the forecast is rough"),
        "{}",
        again.text()
    );
    assert_eq!(again.wire_json(), warned.wire_json());
}

#[tokio::test(start_paused = true)]
async fn an_entry_is_fresh_for_its_time_and_then_the_handler_runs_again() {
    let (tester, up) = market();
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    tokio::time::advance(Duration::from_secs(29)).await;
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    assert_eq!(up.runs(), 1);
    tokio::time::advance(Duration::from_secs(2)).await;
    up.price.store(43, Ordering::SeqCst);
    assert_eq!(
        ok(&tester.call("quote", json!({"symbol": "ACME"})).await),
        "ACME: 43"
    );
    assert_eq!(up.runs(), 2);
}

#[tokio::test]
async fn identical_calls_that_come_together_run_the_handler_once() {
    let (tester, up) = market();
    let calls: Vec<_> = (0..10)
        .map(|_| {
            let tester = tester.clone();
            tokio::spawn(async move {
                tester
                    .call("quote", json!({"symbol": "ACME", "gated": true}))
                    .await
            })
        })
        .collect();
    within("the leader's handler starts", async {
        while up.entered.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    // Let every call reach the run before it ends.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    up.gate.add_permits(1);
    for call in calls {
        let result = within("a coalesced call", call).await.expect("the task");
        assert_eq!(ok(&result), "ACME: 42");
    }
    assert_eq!(up.runs(), 1, "ten identical calls, one run");
    assert_eq!(cache_count(&tester, "quote", "miss"), 1);
    assert_eq!(cache_count(&tester, "quote", "coalesced"), 9);
}

#[tokio::test]
async fn a_caller_that_leaves_does_not_stop_the_run_for_the_others_and_the_last_one_does() {
    let (tester, up) = market();
    let args = json!({"symbol": "ACME", "gated": true});
    let leader = {
        let (tester, args) = (tester.clone(), args.clone());
        tokio::spawn(async move { tester.call("quote", args).await })
    };
    within("the handler starts", async {
        while up.entered.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    let follower = {
        let (tester, args) = (tester.clone(), args.clone());
        tokio::spawn(async move { tester.call("quote", args).await })
    };
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
    // The caller that started the run leaves: the run goes on for the other.
    leader.abort();
    assert!(leader.await.is_err_and(|error| error.is_cancelled()));
    assert_eq!(
        up.dropped.load(Ordering::SeqCst),
        0,
        "the handler still runs"
    );
    up.gate.add_permits(1);
    let result = within("the follower", follower).await.expect("the task");
    assert_eq!(ok(&result), "ACME: 42");
    assert_eq!(up.runs(), 1);

    // Now every caller leaves: the handler is stopped, and the next call runs anew.
    let args = json!({"symbol": "INIT", "gated": true});
    let callers: Vec<_> = (0..3)
        .map(|_| {
            let (tester, args) = (tester.clone(), args.clone());
            tokio::spawn(async move { tester.call("quote", args).await })
        })
        .collect();
    within("the second handler starts", async {
        while up.entered.load(Ordering::SeqCst) < 2 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    for caller in callers {
        caller.abort();
        let _ = caller.await;
    }
    within("the handler is dropped", async {
        while up.dropped.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    up.gate.add_permits(1);
    let again = within("a new call", tester.call("quote", args)).await;
    assert_eq!(ok(&again), "INIT: 42");
    assert_eq!(up.runs(), 3, "the run was stopped and a new one made");
}

#[tokio::test(start_paused = true)]
async fn a_failing_source_is_answered_with_the_stale_entry_marked_stale() {
    let (tester, up) = market();
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    tokio::time::advance(Duration::from_secs(95)).await;
    up.fail_next(&["transient"]);
    let stale = tester.call("quote", json!({"symbol": "ACME"})).await;
    assert!(!stale.is_error, "{}", stale.text());
    assert!(stale.text().starts_with("ACME: 42\n"), "{}", stale.text());
    assert!(
        stale
            .text()
            .contains("This answer is stale: `quote` failed just now (its source is unavailable), so this is its answer from 1 min 35 s ago"),
        "{}",
        stale.text()
    );
    let entry = stale.failure().expect("a warning entry");
    assert_eq!(entry.class, "warning");
    assert_eq!(entry.code.as_deref(), Some("stale"));
    assert_eq!(entry.age_ms, Some(95_000));
    assert!(!entry.retryable);
    // A timeout serves it too.
    up.fail_next(&["slow"]);
    let timed_out = tester.call("quote", json!({"symbol": "ACME"})).await;
    assert!(!timed_out.is_error);
    assert!(
        timed_out.text().contains("(it timed out)"),
        "{}",
        timed_out.text()
    );
    // An internal error is the tool's bug, not a passing failure: no stale answer.
    up.fail_next(&["internal"]);
    assert!(
        tester
            .call("quote", json!({"symbol": "ACME"}))
            .await
            .is_error
    );
    assert_eq!(cache_count(&tester, "quote", "stale"), 2);
    assert_eq!(tester.server().metrics().tools[0].calls["stale"], 2);
    // Past `cache + stale_if_error`: nothing to serve.
    tokio::time::advance(Duration::from_secs(10 * 60)).await;
    up.fail_next(&["transient"]);
    assert!(
        tester
            .call("quote", json!({"symbol": "ACME"}))
            .await
            .is_error
    );
}

#[tokio::test(start_paused = true)]
async fn an_open_circuit_is_answered_with_the_stale_entry_without_reaching_the_source() {
    let (tester, up) = market();
    ok(&tester.call("rates", json!({})).await);
    tokio::time::advance(Duration::from_secs(2)).await;
    up.fail_next(&["transient"]);
    // The failure opens the circuit, and is answered stale.
    assert!(!tester.call("rates", json!({})).await.is_error);
    let paused = tester.call("rates", json!({})).await;
    assert!(!paused.is_error, "{}", paused.text());
    assert!(
        paused
            .text()
            .contains("(its source keeps failing, so calls to it are paused)"),
        "{}",
        paused.text()
    );
    assert_eq!(
        up.runs(),
        2,
        "the open circuit kept the call from the source"
    );
}

#[tokio::test(start_paused = true)]
async fn without_stale_if_error_a_failure_is_a_failure() {
    let (tester, up) = market();
    let reader = tester.as_caller(caller("ann", &["portfolio:read"]));
    ok(&reader.call("holding", json!({"symbol": "ACME"})).await);
    tokio::time::advance(Duration::from_secs(31)).await;
    up.fail_next(&["transient"]);
    assert!(
        reader
            .call("holding", json!({"symbol": "ACME"}))
            .await
            .is_error
    );
}

#[tokio::test]
async fn a_writers_success_drops_the_entries_it_names_for_every_caller() {
    let (tester, up) = market();
    let ann = tester.as_caller(caller("ann", &[]));
    let bob = tester.as_caller(caller("bob", &[]));
    for who in [&ann, &bob] {
        assert_eq!(
            ok(&who.call("quote", json!({"symbol": "ACME"})).await),
            "ACME: 42"
        );
    }
    assert_eq!(
        ok(&ann
            .call_action("market", "find", json!({"symbol": "ACME"}))
            .await),
        "found ACME at 42"
    );
    assert_eq!(up.runs(), 3);
    // A failed write wrote nothing: the entries stay.
    up.fail_next(&["write"]);
    assert!(ann.call("set_price", json!({"price": 50})).await.is_error);
    assert_eq!(
        ok(&bob.call("quote", json!({"symbol": "ACME"})).await),
        "ACME: 42"
    );
    assert_eq!(up.runs(), 3);
    // A write that succeeds: every caller reads it at once, the group's action too.
    ok(&ann.call("set_price", json!({"price": 50})).await);
    for who in [&ann, &bob] {
        assert_eq!(
            ok(&who.call("quote", json!({"symbol": "ACME"})).await),
            "ACME: 50"
        );
    }
    assert_eq!(
        ok(&bob
            .call_action("market", "find", json!({"symbol": "ACME"}))
            .await),
        "found ACME at 50"
    );
    assert_eq!(up.runs(), 6);
}

#[tokio::test(start_paused = true)]
async fn a_write_with_an_unknown_outcome_invalidates_too() {
    let (tester, up) = market();
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    let unknown = tester.call("trade", json!({"hang": true})).await;
    assert_eq!(
        unknown.failure().map(|entry| entry.class),
        Some("unknown_outcome".to_owned()),
        "{}",
        unknown.text()
    );
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    assert_eq!(
        up.runs(),
        2,
        "the trade may have moved the price: the quote ran again"
    );
}

#[tokio::test]
async fn a_write_dropped_part_way_still_invalidates() {
    let (tester, up) = market();
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    let writing = {
        let tester = tester.clone();
        tokio::spawn(async move { tester.call("trade", json!({"hang": true})).await })
    };
    within("the trade starts", async {
        while up.writes.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    writing.abort();
    let _ = writing.await;
    // The invalidation runs on a task of its own.
    within("the entry is dropped", async {
        loop {
            let runs = up.runs();
            ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
            if up.runs() > runs {
                break;
            }
            tokio::task::yield_now().await;
        }
    })
    .await;
}

#[tokio::test]
async fn the_store_is_bounded_and_forgets_the_least_recently_used_first() {
    let store = MemoryCacheStore::new(2_000);
    let (tester, up) = market_with(|builder| builder.cache_store(store.clone()));
    for symbol in ["A", "B", "C", "D", "E", "F", "G", "H"] {
        ok(&tester.call("quote", json!({"symbol": symbol})).await);
    }
    assert!(store.bytes() <= 2_000, "{} bytes", store.bytes());
    assert!(store.entries() < 8, "{} entries", store.entries());
    let runs = up.runs();
    ok(&tester.call("quote", json!({"symbol": "A"})).await);
    assert_eq!(up.runs(), runs + 1, "the oldest entry was forgotten");
    ok(&tester.call("quote", json!({"symbol": "H"})).await);
    assert_eq!(up.runs(), runs + 1, "the newest is kept");
}

#[test]
fn invalidating_a_tool_without_cache_or_a_name_that_is_no_tool_is_a_build_error() {
    /// Writes, naming a tool that is not cached.
    #[mcp_tool(idempotent, invalidates = ["trade", "quotes"])]
    async fn bad_writer(#[ctx] _up: &Upstream) -> String {
        String::new()
    }
    let errors = Server::builder("market", "1.0.0")
        .context(Upstream::default)
        .tool(quote)
        .tool(trade)
        .tool(bad_writer)
        .try_build()
        .expect_err("two bad names");
    let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        matches!(
            &errors[..],
            [
                BuildError::UnknownInvalidation { .. },
                BuildError::UnknownInvalidation { .. }
            ]
        ),
        "{texts:#?}"
    );
    assert!(
        texts[0].contains("`trade`, which has no `cache`"),
        "{texts:#?}"
    );
    assert!(
        texts[1].contains("`quotes`, which is no tool"),
        "{texts:#?}"
    );
}

#[tokio::test]
async fn the_contract_carries_the_cache_and_the_invalidations() {
    let (tester, _) = market();
    let contract = tester.server().contract();
    let lock: Value = serde_json::from_str(&contract.to_lockfile()).expect("JSON");
    let cached = &lock["tools"]["quote"]["policy"];
    assert_eq!(
        cached["cache"],
        json!({"ttl_ms": 30_000, "stale_if_error_ms": 600_000, "scope": "private"})
    );
    assert_eq!(lock["tools"]["news"]["policy"]["cache"]["scope"], "public");
    assert_eq!(
        lock["tools"]["set_price"]["policy"]["invalidates"],
        json!(["market.find", "quote"])
    );
    assert!(lock["tools"]["trade"]["policy"].get("cache").is_none());
}

#[tokio::test(start_paused = true)]
async fn an_injected_fault_reaches_the_shared_run_and_is_answered_stale() {
    let (tester, up) = market();
    ok(&tester.call("quote", json!({"symbol": "ACME"})).await);
    tokio::time::advance(Duration::from_secs(31)).await;
    tester.inject("quote", Fault::transient("feed 503"));
    let stale = tester.call("quote", json!({"symbol": "ACME"})).await;
    assert!(!stale.is_error, "{}", stale.text());
    assert_eq!(
        stale.failure().and_then(|entry| entry.code),
        Some("stale".to_owned())
    );
    assert_eq!(up.runs(), 1, "the fault ran in the handler's place");
    // The fault fired once: the next call runs the handler and is fresh again.
    assert_eq!(
        ok(&tester.call("quote", json!({"symbol": "ACME"})).await),
        "ACME: 42"
    );
    assert_eq!(up.runs(), 2);
}
