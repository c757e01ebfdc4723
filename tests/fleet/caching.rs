//! Caching across a fleet (issue 41, stores): `price` of `examples/fleet.rs`
//! (`#[mcp_tool(read_only, cache = "30s", stale_if_error = "10m", cache_scope = "public")]`,
//! `.cache_store(redis)`) on replicas sharing a Redis of the test's own. The upstream
//! counts itself: each run of the handler appends a `price-run SYMBOL` line to the effects
//! file, which is also the price book `set_price` writes to.
//!
//! - a burst of identical calls sent to two replicas at once runs the handler once in all,
//!   and every call gets its answer; a later identical call on either replica is a hit;
//! - `set_price` on one replica invalidates the answers of every replica: the other one's
//!   next call runs again and returns the new price;
//! - with Redis stopped, calls still answer, each one a run of its own (uncached); once
//!   Redis is back, caching resumes;
//! - a replica whose upstream fails answers with the entry another replica stored, marked
//!   stale (`quick_price`, fresh for one second);
//! - in process, `RedisStore` keeps `CacheStore`'s contract: generations, Redis's clock,
//!   the size limit, one fill at a time (the waiter gets the entry, or runs once the lock
//!   goes without one), and `CacheUnavailable` within a bounded time when Redis hangs or
//!   is gone.
//!
//! Needs `redis-server` (`scripts/redis-env`); without it the tests skip loudly, except
//! under `CI=true`, where they fail.

use crate::support;

use std::{
    net::SocketAddr,
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::fleet::{Fleet, call, is_error, text};

/// How many times the handler marked `run` ran for `symbol`, on any replica.
fn runs(fleet: &Fleet, run: &str, symbol: &str) -> usize {
    fleet
        .effects()
        .iter()
        .filter(|line| {
            let mut words = line.split(' ');
            words.next() == Some(run) && words.next() == Some(symbol)
        })
        .count()
}

/// `fusion_tool_cache_total` of `price` for `result` on the replica at `addr`.
fn cache_count(addr: SocketAddr, result: &str) -> u64 {
    let metrics = support::raw_http(addr, "GET", "/metrics", &[], b"", Duration::from_secs(20));
    assert_eq!(metrics.status, 200, "{metrics:?}");
    let series = format!("fusion_tool_cache_total{{tool=\"price\",result=\"{result}\"}} ");
    metrics
        .body
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

/// The same call sent by `callers` threads at once, spread over `replicas`.
fn burst(replicas: &[SocketAddr], callers: usize, tool: &str, args: &Value) -> Vec<Value> {
    let start = std::sync::Barrier::new(callers);
    thread::scope(|scope| {
        let threads: Vec<_> = (0..callers)
            .map(|caller| {
                let addr = replicas[caller % replicas.len()];
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    call(addr, tool, args.clone())
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|caller| caller.join().expect("a caller thread"))
            .collect()
    })
}

#[test]
fn a_burst_across_two_replicas_runs_once_and_a_write_invalidates_every_replica() {
    let Some(fleet) = Fleet::start("cache-burst") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&[]));
    // The run holds long enough that every call of the burst arrives while it runs.
    let args = json!({"symbol": "ACME", "hold_ms": 800});

    let answers = burst(&[a.addr(), b.addr()], 10, "price", &args);
    for answer in &answers {
        assert!(!is_error(answer), "{answer}");
        assert_eq!(text(answer), text(&answers[0]), "one answer for all");
    }
    assert!(
        text(&answers[0]).starts_with("ACME: 100.00 by replica "),
        "{}",
        answers[0]
    );
    assert_eq!(
        runs(&fleet, "price-run", "ACME"),
        1,
        "one run for the burst across both replicas: {:?}",
        fleet.effects()
    );
    // The replica that did not run it answers from the shared store too.
    let runner = if text(&answers[0]).ends_with(&a.pid().to_string()) {
        a.addr()
    } else {
        b.addr()
    };
    let other = if runner == a.addr() {
        b.addr()
    } else {
        a.addr()
    };
    // The other replica waited for the runner's answer (the store's fill), rather than
    // finding it stored after the burst.
    assert!(
        cache_count(other, "coalesced") >= 1,
        "{}",
        support::raw_http(other, "GET", "/metrics", &[], b"", Duration::from_secs(20)).body
    );
    for addr in [other, runner] {
        let hit = call(addr, "price", args.clone());
        assert_eq!(text(&hit), text(&answers[0]), "{hit}");
    }
    assert_eq!(
        runs(&fleet, "price-run", "ACME"),
        1,
        "{:?}",
        fleet.effects()
    );

    // A write on one replica: the other one's next call runs again, with the new price.
    let set = call(
        runner,
        "set_price",
        json!({"symbol": "ACME", "new_price": "120.50"}),
    );
    assert!(!is_error(&set), "{set}");
    let fresh = call(other, "price", args.clone());
    assert!(!is_error(&fresh), "{fresh}");
    assert!(
        text(&fresh).starts_with("ACME: 120.50 by replica "),
        "{fresh}"
    );
    assert_eq!(
        runs(&fleet, "price-run", "ACME"),
        2,
        "{:?}",
        fleet.effects()
    );
    // And that new answer is every replica's.
    let again = call(runner, "price", args);
    assert_eq!(text(&again), text(&fresh), "{again}");
    assert_eq!(
        runs(&fleet, "price-run", "ACME"),
        2,
        "{:?}",
        fleet.effects()
    );
}

#[test]
fn with_redis_stopped_calls_run_uncached_and_caching_resumes_after() {
    let Some(mut fleet) = Fleet::start("cache-outage") else {
        return;
    };
    let replica = fleet.replica(&[]);
    let addr = replica.addr();
    let args = json!({"symbol": "INIT"});
    let first = call(addr, "price", args.clone());
    assert!(!is_error(&first), "{first}");
    assert_eq!(text(&call(addr, "price", args.clone())), text(&first));
    assert_eq!(runs(&fleet, "price-run", "INIT"), 1);

    fleet.redis().stop();
    for n in 1..=3 {
        let started = Instant::now();
        let answer = call(addr, "price", args.clone());
        assert!(!is_error(&answer), "the call still answers: {answer}");
        assert!(text(&answer).starts_with("INIT: 100.00"), "{answer}");
        assert_eq!(
            runs(&fleet, "price-run", "INIT"),
            1 + n,
            "each call runs, uncached: {:?}",
            fleet.effects()
        );
        // An unreachable cache costs a bounded wait, not the call's deadline.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "answered after {:?}",
            started.elapsed()
        );
    }

    fleet.redis().resume();
    // Once the replica reconnects, a second identical call is a hit again.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let before = runs(&fleet, "price-run", "INIT");
        let one = call(addr, "price", args.clone());
        let two = call(addr, "price", args.clone());
        assert!(!is_error(&one) && !is_error(&two), "{one} {two}");
        if runs(&fleet, "price-run", "INIT") <= before + 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "caching did not resume within 20 s: {:?}",
            fleet.effects()
        );
        thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_replica_whose_upstream_fails_serves_another_replicas_entry_as_stale() {
    let Some(fleet) = Fleet::start("cache-stale") else {
        return;
    };
    let (healthy, failing) = (fleet.replica(&[]), fleet.replica(&["--price-feed-down"]));
    let args = json!({"symbol": "ACME"});
    let stored = call(healthy.addr(), "quick_price", args.clone());
    assert!(!is_error(&stored), "{stored}");
    // Past its second of freshness: the failing replica runs it, and its feed is down.
    thread::sleep(Duration::from_millis(1300));
    let stale = call(failing.addr(), "quick_price", args);
    assert!(!is_error(&stale), "{stale}");
    assert_eq!(text(&stale), text(&stored), "the healthy replica's answer");
    let note = stale["content"][1]["text"].as_str().unwrap_or_default();
    assert!(note.contains("This answer is stale"), "{stale}");
    let failure = &stale["_meta"]["fusion/failure"];
    assert_eq!(failure["class"], "warning", "{stale}");
    assert_eq!(failure["code"], "stale", "{stale}");
    assert!(
        failure["age_ms"].as_u64().is_some_and(|age| age >= 1000),
        "{stale}"
    );
    assert!(
        runs(&fleet, "quick-price-run", "ACME") >= 2,
        "the failing replica ran it: {:?}",
        fleet.effects()
    );
}

#[tokio::test]
async fn the_redis_store_keeps_the_cache_store_contract() {
    use fusion_runtime::{
        cache::{CacheStore as _, Fill},
        redis::{CACHE_VALUE_LIMIT, RedisStore},
    };
    let Some(binary) = support::redis_server() else {
        return;
    };
    let redis = support::redis_server::RedisServer::start(&binary);
    let store = RedisStore::connect(&redis.url())
        .await
        .expect("the test's Redis");
    let keep = Duration::from_secs(60);
    let lookup = store.get("quote", "k", keep).await.unwrap();
    assert!(lookup.entry.is_none());
    assert!(
        store
            .put("quote", "k", json!({"a": 1}), keep, lookup.generation)
            .await
            .unwrap()
    );
    let hit = store.get("quote", "k", keep).await.unwrap();
    assert_eq!(
        hit.entry.as_ref().map(|entry| &entry.value),
        Some(&json!({"a": 1}))
    );
    assert!(
        hit.entry
            .is_some_and(|entry| entry.age < Duration::from_secs(5))
    );
    // Ages run on Redis's clock: an entry older than the caller's max age is not returned.
    tokio::time::sleep(Duration::from_millis(30)).await;
    let young = Duration::from_millis(10);
    assert!(
        store
            .get("quote", "k", young)
            .await
            .unwrap()
            .entry
            .is_none()
    );

    // An invalidation drops the tool's entries and refuses a read from before it.
    store.invalidate("quote").await.unwrap();
    let after = store.get("quote", "k", keep).await.unwrap();
    assert!(after.entry.is_none());
    assert_ne!(after.generation, lookup.generation);
    assert!(
        !store
            .put("quote", "k", json!(2), keep, lookup.generation)
            .await
            .unwrap()
    );
    // Another tool's entries stay.
    let other = store.get("news", "k", keep).await.unwrap();
    assert!(
        store
            .put("news", "k", json!(3), keep, other.generation)
            .await
            .unwrap()
    );
    store.invalidate("quote").await.unwrap();
    assert!(store.get("news", "k", keep).await.unwrap().entry.is_some());

    // An answer over the limit is declined, not an error.
    let huge = json!("x".repeat(CACHE_VALUE_LIMIT));
    let current = store.get("quote", "big", keep).await.unwrap().generation;
    assert!(
        !store
            .put("quote", "big", huge, keep, current)
            .await
            .unwrap()
    );

    // Fill: the first asker runs it under a lock; a second waits and gets its answer.
    let lease = Duration::from_secs(5);
    let Fill::Run(Some(turn)) = store.fill("quote", "f", keep, lease).await.unwrap() else {
        panic!("the first asker runs it, under a lock");
    };
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.fill("quote", "f", keep, lease).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!waiter.is_finished(), "the second asker waits");
    let generation = store.get("quote", "f", keep).await.unwrap().generation;
    assert!(
        store
            .put("quote", "f", json!("filled"), keep, generation)
            .await
            .unwrap()
    );
    drop(turn);
    let filled = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter is answered")
        .expect("its task")
        .unwrap();
    let Fill::Filled(entry) = filled else {
        panic!("the waiter gets the runner's answer: {filled:?}");
    };
    assert_eq!(entry.value, json!("filled"));

    // A holder that stores nothing: once its lock is released, the waiter runs it.
    let Fill::Run(Some(turn)) = store.fill("quote", "g", keep, lease).await.unwrap() else {
        panic!("the first asker runs it");
    };
    let waiter = {
        let store = store.clone();
        tokio::spawn(async move { store.fill("quote", "g", keep, lease).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(turn);
    let next = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("the waiter is answered")
        .expect("its task")
        .unwrap();
    assert!(matches!(next, Fill::Run(Some(_))), "{next:?}");

    // Redis hanging (frozen): unavailable within the store's bound of a second a step.
    redis.freeze();
    let started = Instant::now();
    let hung = store.get("quote", "k", keep).await;
    let waited = started.elapsed();
    redis.thaw();
    assert!(hung.is_err(), "{hung:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");

    // Redis away: unavailable, quickly.
    drop(redis);
    let started = Instant::now();
    assert!(store.get("quote", "k", keep).await.is_err());
    assert!(store.fill("quote", "k", keep, lease).await.is_err());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
