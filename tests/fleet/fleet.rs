//! Fleets that share state on Redis (`fusion_runtime::redis`, `examples/fleet.rs`): a Redis
//! of the test's own on a loopback port, replicas as processes, nginx in front.
//!
//! - the same idempotency key sent to two replicas at once runs once (effects counted in a
//!   file every replica appends to);
//! - a replica killed after its effect (or before it): the retry on the other gets an
//!   unknown outcome after the lease, never a second order; an idempotent tool's retry runs
//!   again there, under a newer fencing token;
//! - the fleet's rate limit holds over 5 s, through nginx to two replicas: never more than
//!   rate × time + burst, and at least half the rate while calls keep coming;
//! - Redis stopped mid-run: every call is still answered, keyed calls with a transient
//!   error, the others normally; once Redis is back, keyed calls run again without a
//!   restart.
//!
//! Needs `redis-server` (`scripts/redis-env`) and nginx (`scripts/nginx-env`); without them
//! the tests skip loudly, except under `CI=true`, where they fail.

use crate::support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use support::{
    fleet::{Fleet, call, is_error, text},
    nginx_proxy::Nginx,
};

/// The limit of one HTTP exchange.
const REQUEST: Duration = Duration::from_secs(20);

#[test]
fn one_key_sent_to_two_replicas_at_once_runs_once() {
    let Some(fleet) = Fleet::start("once") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&[]));
    for round in 0..5 {
        let order = json!({"order_id": format!("order-{round}"), "item": "tea", "delay_ms": 300});
        let answers: Vec<Value> = thread::scope(|scope| {
            let calls: Vec<_> = [a.addr(), b.addr(), a.addr(), b.addr()]
                .into_iter()
                .map(|addr| {
                    let order = order.clone();
                    scope.spawn(move || call(addr, "place_order", order))
                })
                .collect();
            calls
                .into_iter()
                .map(|call| call.join().expect("a caller thread"))
                .collect()
        });
        for answer in &answers {
            assert!(!is_error(answer), "{answer}");
            assert_eq!(
                text(answer),
                text(&answers[0]),
                "every caller gets the one result"
            );
        }
    }
    let effects = fleet.effects();
    assert_eq!(effects.len(), 5, "one order placed per key: {effects:?}");
}

#[test]
fn a_key_reused_with_another_item_on_another_replica_is_a_conflict() {
    let Some(fleet) = Fleet::start("conflict") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&[]));
    let tea = call(
        a.addr(),
        "place_order",
        json!({"order_id": "k", "item": "tea"}),
    );
    assert!(!is_error(&tea), "{tea}");
    // The same key with another item, on the other replica: not the tea's answer.
    let coffee = call(
        b.addr(),
        "place_order",
        json!({"order_id": "k", "item": "coffee"}),
    );
    assert!(is_error(&coffee), "{coffee}");
    assert_eq!(
        coffee["_meta"]["fusion/failure"]["code"], "conflict",
        "{coffee}"
    );
    // The tea's own repeat still replays it.
    let again = call(
        b.addr(),
        "place_order",
        json!({"item": "tea", "order_id": "k"}),
    );
    assert_eq!(text(&again), text(&tea));
    let effects = fleet.effects();
    assert!(
        effects.len() == 1 && effects[0].starts_with("k tea"),
        "one order placed, the coffee never: {effects:?}"
    );
}

/// Sends `tool` with `arguments` to `addr` on a thread of its own, for a replica that will
/// be killed before it answers.
fn call_doomed(addr: std::net::SocketAddr, tool: &str, arguments: Value) -> thread::JoinHandle<()> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    thread::spawn(move || {
        let _ = support::try_raw_http(
            addr,
            "POST",
            "/mcp",
            &support::mcp_headers(&[("MCP-Protocol-Version", "2025-06-18")]),
            body.to_string().as_bytes(),
            REQUEST,
        );
    })
}

/// Waits (at most 20 s) until the effects file has `count` lines.
fn wait_for_effects(fleet: &Fleet, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while fleet.effects().len() < count {
        assert!(
            Instant::now() < deadline,
            "the effect was never recorded: {:?}",
            fleet.effects()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// Whether `result` is the unknown outcome of a key whose earlier run stopped.
fn is_replica_stopped(result: &Value) -> bool {
    is_error(result)
        && result["_meta"]["fusion/failure"]["class"] == "unknown_outcome"
        && result["_meta"]["fusion/failure"]["code"] == "replica_stopped"
}

#[test]
fn a_runner_killed_after_its_effect_leaves_an_unknown_outcome_never_a_second_order() {
    let Some(fleet) = Fleet::start("after-effect") else {
        return;
    };
    let lease = ["--lease-ms", "1000"];
    let doomed = fleet.replica(&lease);
    let survivor = fleet.replica(&lease);
    let order = json!({"order_id": "order-k", "item": "coffee", "after_ms": 30000});
    let first = call_doomed(doomed.addr(), "place_order", order.clone());
    // The order is placed; the replica dies before it answers (or stores its result).
    wait_for_effects(&fleet, 1);
    drop(doomed);
    let _ = first.join();
    let started = Instant::now();
    let retry = call(survivor.addr(), "place_order", order.clone());
    let waited = started.elapsed();
    assert!(is_replica_stopped(&retry), "{retry}");
    assert!(
        text(&retry).contains("check whether it took effect")
            && text(&retry).contains("new idempotency key"),
        "{retry}"
    );
    assert_eq!(fleet.effects().len(), 1, "{:?}", fleet.effects());
    assert!(
        waited >= Duration::from_millis(200),
        "the retry waited for the dead runner's lease to lapse ({waited:?})"
    );
    // Every later call with the key gets the same answer, on either replica, at once.
    for _ in 0..3 {
        let again = call(survivor.addr(), "place_order", order.clone());
        assert!(is_replica_stopped(&again), "{again}");
        assert_eq!(text(&again), text(&retry));
    }
    assert_eq!(
        fleet.effects().len(),
        1,
        "one order, ever: {:?}",
        fleet.effects()
    );
    // A new key is a new order.
    let fresh = call(
        survivor.addr(),
        "place_order",
        json!({"order_id": "order-k2", "item": "coffee"}),
    );
    assert!(!is_error(&fresh), "{fresh}");
    assert_eq!(fleet.effects().len(), 2);
}

#[test]
fn a_runner_killed_before_its_effect_is_an_unknown_outcome_too_since_nobody_can_tell() {
    let Some(fleet) = Fleet::start("before-effect") else {
        return;
    };
    let lease = ["--lease-ms", "1000"];
    let doomed = fleet.replica(&lease);
    let survivor = fleet.replica(&lease);
    let order = json!({"order_id": "order-k", "item": "coffee", "delay_ms": 30000});
    let first = call_doomed(doomed.addr(), "place_order", order.clone());
    // The doomed replica holds the claim and is killed before its order is placed.
    thread::sleep(Duration::from_millis(500));
    drop(doomed);
    let _ = first.join();
    let retry = call(survivor.addr(), "place_order", order);
    assert!(is_replica_stopped(&retry), "{retry}");
    assert!(fleet.effects().is_empty(), "{:?}", fleet.effects());
}

#[test]
fn an_idempotent_runner_killed_mid_call_is_run_again_under_a_newer_fencing_token() {
    let Some(fleet) = Fleet::start("idempotent") else {
        return;
    };
    let lease = ["--lease-ms", "1000"];
    let doomed = fleet.replica(&lease);
    let survivor = fleet.replica(&lease);
    let refund = json!({"refund_id": "refund-k", "delay_ms": 1500});
    let first = call_doomed(doomed.addr(), "record_refund", refund.clone());
    thread::sleep(Duration::from_millis(500));
    drop(doomed);
    let _ = first.join();
    // The same call (the same arguments) takes the key over once the lease lapsed.
    let retry = call(survivor.addr(), "record_refund", refund.clone());
    assert!(!is_error(&retry), "{retry}");
    assert!(text(&retry).contains("recorded under fence"), "{retry}");
    let effects = fleet.effects();
    assert_eq!(effects.len(), 1, "{effects:?}");
    // The same arguments replay it; other arguments under the key conflict.
    let again = call(survivor.addr(), "record_refund", refund);
    assert_eq!(text(&again), text(&retry));
    let other = call(
        survivor.addr(),
        "record_refund",
        json!({"refund_id": "refund-k", "delay_ms": 0}),
    );
    assert_eq!(
        other["_meta"]["fusion/failure"]["code"], "conflict",
        "{other}"
    );
    // Fencing tokens grow with each claim of a key: a second key's is larger still.
    let fence = |line: &str| -> u64 {
        line.split_whitespace()
            .find_map(|word| word.strip_prefix("fence="))
            .and_then(|fence| fence.parse().ok())
            .unwrap_or_else(|| panic!("no fence in {line:?}"))
    };
    let second = call(
        survivor.addr(),
        "record_refund",
        json!({"refund_id": "refund-k2"}),
    );
    assert!(!is_error(&second), "{second}");
    let effects = fleet.effects();
    assert!(fence(&effects[1]) > fence(&effects[0]), "{effects:?}");
}

#[test]
fn the_fleets_rate_limit_holds_through_nginx() {
    let Some(fleet) = Fleet::start("rate") else {
        return;
    };
    let Some(nginx_binary) = support::nginx() else {
        return;
    };
    const RATE: f64 = 20.0;
    const BURST: f64 = 1.0;
    const SPAN: Duration = Duration::from_secs(5);
    let rate = RATE.to_string();
    let (a, b) = (
        fleet.replica(&["--rate", &rate]),
        fleet.replica(&["--rate", &rate]),
    );
    let nginx = Nginx::start(&nginx_binary, &[a.addr(), b.addr()]);
    let proxy = nginx.addr();
    let allowed = Arc::new(AtomicUsize::new(0));
    let limited = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let deadline = started + SPAN;
    thread::scope(|scope| {
        for _ in 0..6 {
            let (allowed, limited) = (Arc::clone(&allowed), Arc::clone(&limited));
            scope.spawn(move || {
                while Instant::now() < deadline {
                    let result = call(proxy, "ping", json!({}));
                    if is_error(&result) {
                        assert!(text(&result).contains("across the fleet"), "{result}");
                        limited.fetch_add(1, Ordering::Relaxed);
                    } else {
                        allowed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    // Every decision was made on Redis's clock between the first request's sending and
    // the last answer's arrival.
    let elapsed = started.elapsed().as_secs_f64();
    let allowed = allowed.load(Ordering::Relaxed) as f64;
    let limited = limited.load(Ordering::Relaxed);
    println!(
        "fleet rate limit: {allowed} allowed, {limited} limited in {elapsed:.2} s at {RATE}/s for the fleet"
    );
    // The limit holds whatever the machine's speed: GCRA allows at most rate × time +
    // burst in any span, for the two replicas together.
    assert!(
        allowed <= RATE * elapsed + BURST,
        "{allowed} calls allowed in {elapsed:.2} s at {RATE}/s, burst {BURST}: more than the fleet's limit\n{}",
        nginx.report()
    );
    // And it lets calls through while they keep coming: a limiter that counted each
    // replica's calls twice, or refused everything, falls far below. (How close to the
    // rate it gets depends on whether a call arrives in every 50 ms slot, which a loaded
    // machine may not manage: no tighter bound is the limiter's to keep.)
    assert!(
        limited > 0 && allowed >= RATE * SPAN.as_secs_f64() * 0.5,
        "{allowed} calls allowed, {limited} limited in {elapsed:.2} s at {RATE}/s\n{}",
        nginx.report()
    );
    let posts = nginx.mcp_posts();
    for replica in [a.addr(), b.addr()] {
        let served = posts
            .iter()
            .filter(|line| line.contains(&format!("upstream={replica}")))
            .count();
        assert!(
            served > 10,
            "both replicas served calls ({replica}: {served})"
        );
    }
}

#[test]
fn calls_are_answered_while_redis_is_down_and_keys_work_again_after() {
    let Some(mut fleet) = Fleet::start("outage") else {
        return;
    };
    let replica = fleet.replica(&[]);
    let addr = replica.addr();
    let ok = call(
        addr,
        "place_order",
        json!({"order_id": "before", "item": "tea"}),
    );
    assert!(!is_error(&ok), "{ok}");

    fleet.redis().stop();
    for n in 0..10 {
        let keyed = call(
            addr,
            "place_order",
            json!({"order_id": format!("during-{n}"), "item": "tea"}),
        );
        assert!(is_error(&keyed), "{keyed}");
        assert!(
            text(&keyed).contains(
                "did not run: deduplication of its idempotency key is unavailable right now"
            ) && text(&keyed).contains("Retry after"),
            "a transient error: {keyed}"
        );
        assert!(
            !text(&keyed).contains("127.0.0.1"),
            "no infrastructure detail: {keyed}"
        );
        let plain = call(addr, "echo", json!({"text": format!("hi {n}")}));
        assert_eq!(text(&plain), format!("hi {n}"), "{plain}");
        let limited = call(addr, "ping", json!({}));
        assert!(
            !is_error(&limited) || text(&limited).contains("calls a second"),
            "the rate limit falls back to this replica's own: {limited}"
        );
    }
    assert_eq!(
        fleet.effects().len(),
        1,
        "nothing ran unchecked: {:?}",
        fleet.effects()
    );

    fleet.redis().resume();
    // The connection comes back by itself; a keyed call runs again within a few tries.
    let deadline = Instant::now() + Duration::from_secs(15);
    let after = loop {
        let result = call(
            addr,
            "place_order",
            json!({"order_id": "after", "item": "tea"}),
        );
        if !is_error(&result) || Instant::now() >= deadline {
            break result;
        }
        thread::sleep(Duration::from_millis(200));
    };
    assert!(!is_error(&after), "keyed calls work again: {after}");
    let replay = call(
        addr,
        "place_order",
        json!({"order_id": "after", "item": "tea"}),
    );
    assert_eq!(text(&replay), text(&after), "and are deduplicated again");
    assert_eq!(fleet.effects().len(), 2, "{:?}", fleet.effects());
}
