//! One writer per key across replicas (issue 40, item 4): `deposit` of `examples/fleet.rs`
//! (`#[mcp_tool(serialize = "account")]`, `.lock_store(redis)`) on two replicas sharing a
//! Redis of the test's own.
//!
//! - deposits to one account sent to both replicas at once never overlap: every replica
//!   appends a `deposit-start` and a `deposit-end` line around each deposit to one file,
//!   whose lines must alternate;
//! - a SIGKILLed holder's lock passes to the other replica's waiting call after the lease,
//!   and not long before it (the dead holder renewed it at most a third of a lease before);
//! - with Redis stopped, a deposit is answered at once with a transient "did not run",
//!   nothing written; once Redis is back, deposits run again;
//! - in process, a holder that cannot renew its lease (Redis frozen) is stopped and
//!   answered with a transient error instead of running beside the next holder.
//!
//! Needs `redis-server` (`scripts/redis-env`); without it the tests skip loudly, except
//! under `CI=true`, where they fail.

use crate::support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use fusion_runtime::{Server, prelude::*, redis::RedisStore, testing::Tester};
use serde_json::{Value, json};
use support::{
    fleet::{Fleet, call, is_error, text},
    redis_server::RedisServer,
};

/// The limit of one HTTP exchange.
const REQUEST: Duration = Duration::from_secs(30);

/// The deposits' lines of the effects file: (`start` or `end`, account, amount).
fn deposits(fleet: &Fleet) -> Vec<(String, String, String)> {
    fleet
        .effects()
        .iter()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let event = words.next()?.strip_prefix("deposit-")?.to_owned();
            Some((event, words.next()?.to_owned(), words.next()?.to_owned()))
        })
        .collect()
}

/// Waits (at most `limit`) until `ready` holds.
fn wait_until(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ready() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn deposits_to_one_account_never_overlap_across_replicas() {
    let Some(fleet) = Fleet::start("serialize") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&[]));
    let answers: Vec<Value> = thread::scope(|scope| {
        let callers: Vec<_> = (0..6)
            .map(|caller| {
                let addr = if caller % 2 == 0 { a.addr() } else { b.addr() };
                scope.spawn(move || {
                    (0..4)
                        .map(|n| {
                            let amount = caller * 10 + n;
                            call(
                                addr,
                                "deposit",
                                json!({"account": "acct-1", "amount": amount, "hold_ms": 40}),
                            )
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        callers
            .into_iter()
            .flat_map(|caller| caller.join().expect("a caller thread"))
            .collect()
    });
    for answer in &answers {
        assert!(!is_error(answer), "{answer}");
    }
    let lines = deposits(&fleet);
    assert_eq!(lines.len(), 48, "24 deposits, two lines each: {lines:?}");
    for pair in lines.chunks(2) {
        let [(start, _, started), (end, _, ended)] = pair else {
            unreachable!("chunks of two");
        };
        assert!(
            start == "start" && end == "end" && started == ended,
            "two deposits to one account overlapped: {pair:?} in {lines:?}"
        );
    }
    // Both replicas wrote: the lock was shared, not each replica's own.
    let pids: std::collections::BTreeSet<String> = fleet
        .effects()
        .iter()
        .filter_map(|line| line.rsplit(' ').next().map(str::to_owned))
        .collect();
    assert_eq!(pids.len(), 2, "{:?}", fleet.effects());
}

#[test]
fn a_sigkilled_holders_lock_passes_on_after_the_lease() {
    let Some(fleet) = Fleet::start("serialize-kill") else {
        return;
    };
    const LEASE: Duration = Duration::from_millis(3000);
    let lease = LEASE.as_millis().to_string();
    let doomed = fleet.replica(&["--lock-lease-ms", &lease]);
    let survivor = fleet.replica(&["--lock-lease-ms", &lease]);
    let doomed_addr = doomed.addr();
    // The doomed replica takes the account and holds it for a minute.
    let held = thread::spawn(move || {
        support::try_raw_http(
            doomed_addr,
            "POST",
            "/mcp",
            &support::mcp_headers(&[("MCP-Protocol-Version", "2025-06-18")]),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "deposit", "arguments": {"account": "acct-k", "amount": 1, "hold_ms": 60000}}})
                .to_string()
                .as_bytes(),
            REQUEST,
        )
    });
    wait_until("the doomed replica's deposit", REQUEST, || {
        !deposits(&fleet).is_empty()
    });
    // The survivor's deposit on the same account waits.
    let survivor_addr = survivor.addr();
    let waiting = thread::spawn(move || {
        let result = call(
            survivor_addr,
            "deposit",
            json!({"account": "acct-k", "amount": 2, "hold_ms": 0}),
        );
        (result, Instant::now())
    });
    thread::sleep(Duration::from_millis(500));
    assert_eq!(
        deposits(&fleet).len(),
        1,
        "the survivor waits: {:?}",
        fleet.effects()
    );
    // SIGKILL: no release, no goodbye; the lease is what frees the account.
    let killed_at = Instant::now();
    drop(doomed);
    let _ = held.join();
    let (result, answered_at) = waiting.join().expect("the waiting caller");
    assert!(!is_error(&result), "{result}");
    assert!(text(&result).contains("deposited 2 to acct-k"), "{result}");
    let waited = answered_at.duration_since(killed_at);
    println!("the lock passed on {waited:?} after the holder was killed (lease {LEASE:?})");
    // The holder renewed at most a third of a lease before it died: two thirds were left.
    assert!(
        waited >= LEASE / 2,
        "the lock passed on {waited:?} after the kill, before the lease ({LEASE:?}) lapsed"
    );
    assert!(
        waited <= LEASE + Duration::from_secs(10),
        "the lock passed on only {waited:?} after the kill (lease {LEASE:?})"
    );
    let lines = deposits(&fleet);
    assert_eq!(
        lines
            .iter()
            .map(|(event, _, amount)| format!("{event} {amount}"))
            .collect::<Vec<_>>(),
        ["start 1", "start 2", "end 2"],
        "the killed deposit never ended; the survivor's ran after it"
    );
}

#[test]
fn with_redis_stopped_a_deposit_is_a_transient_did_not_run() {
    let Some(mut fleet) = Fleet::start("serialize-outage") else {
        return;
    };
    let replica = fleet.replica(&[]);
    let addr = replica.addr();
    let ok = call(addr, "deposit", json!({"account": "a", "amount": 1}));
    assert!(!is_error(&ok), "{ok}");

    fleet.redis().stop();
    for amount in 2..5 {
        let refused = call(addr, "deposit", json!({"account": "a", "amount": amount}));
        assert!(is_error(&refused), "{refused}");
        assert!(text(&refused).contains("did not run"), "{refused}");
        assert!(
            !text(&refused).contains("127.0.0.1"),
            "no infrastructure detail: {refused}"
        );
        let failure = &refused["_meta"]["fusion/failure"];
        assert_eq!(failure["class"], "transient", "{refused}");
        assert_eq!(failure["retryable"], true, "{refused}");
    }
    assert_eq!(
        deposits(&fleet).len(),
        2,
        "nothing ran unlocked: {:?}",
        fleet.effects()
    );

    fleet.redis().resume();
    let deadline = Instant::now() + Duration::from_secs(15);
    let after = loop {
        let result = call(addr, "deposit", json!({"account": "a", "amount": 9}));
        if !is_error(&result) || Instant::now() >= deadline {
            break result;
        }
        thread::sleep(Duration::from_millis(200));
    };
    assert!(!is_error(&after), "deposits run again: {after}");
}

/// Set when the handler's future is dropped.
#[derive(Clone, Default)]
struct Dropped(Arc<AtomicBool>);

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Credit an account, and never finish.
#[mcp_tool(serialize = "account", idempotent)]
async fn endless_deposit(#[ctx] dropped: &Dropped, account: String) -> String {
    let _dropped = SetOnDrop(Arc::clone(&dropped.0));
    std::future::pending::<()>().await;
    account
}

#[tokio::test]
async fn a_holder_that_cannot_renew_its_lease_is_stopped() {
    let Some(binary) = support::redis_server() else {
        return;
    };
    let redis = RedisServer::start(&binary);
    const LEASE: Duration = Duration::from_millis(1500);
    let store = RedisStore::connect(&redis.url())
        .await
        .expect("the test's Redis")
        .lock_lease(LEASE);
    let dropped = Dropped::default();
    let shared = dropped.clone();
    let tester = Tester::new(
        Server::builder("bank", "1.0.0")
            .lock_store(store)
            .context(move || shared.clone())
            .tool(endless_deposit)
            .build(),
    );
    let running = {
        let tester = tester.clone();
        tokio::spawn(async move {
            tester
                .call("endless_deposit", json!({"account": "a"}))
                .await
        })
    };
    // Renewed at least once (a third of the lease), then Redis hangs.
    tokio::time::sleep(LEASE / 2).await;
    assert!(!running.is_finished());
    redis.freeze();
    let frozen_at = Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("the holder was never stopped")
        .expect("its task");
    let stopped_after = frozen_at.elapsed();
    redis.thaw();
    println!("stopped {stopped_after:?} after Redis froze (lease {LEASE:?})");
    assert!(result.is_error, "{}", result.text());
    assert!(result.text().contains("was stopped"), "{}", result.text());
    let failure = result.failure().expect("a failure entry");
    assert_eq!(failure.class, "transient", "{}", result.text());
    assert!(
        dropped.0.load(Ordering::SeqCst),
        "the handler's future was dropped"
    );
}
