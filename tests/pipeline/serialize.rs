//! One writer per key (issue 40, item 4): `#[mcp_tool(serialize = "account")]` runs the
//! calls that share an account one at a time, in the order they arrived, and calls on other
//! accounts in parallel; the lock is released however a call ends (an answer, a panic, a
//! timeout, its future dropped at any poll), and no key stays in the store after the calls.
//!
//! Every wait is bounded (`WAIT`), so a lock that is never released fails a test instead of
//! hanging it. The Redis lock is tested in `tests/fleet/serialize.rs`.

use std::{
    future::Future,
    pin::Pin,
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    task::Poll,
    time::Duration,
};

use fusion_runtime::{
    BoxFuture, Classify, Server,
    lock::{LockGuard, LockStore, LockUnavailable, MemoryLockStore},
    prelude::*,
    testing::{TestResult, Tester},
};
use serde_json::{Value, json};
use tokio::sync::{Barrier, Notify, Semaphore};

use crate::support::drop_after::drop_after;

/// The bound on any wait of these tests.
const WAIT: Duration = Duration::from_secs(10);

/// What the tools record: how many run at once (and the most ever), the order they ran in,
/// and gates a test opens.
#[derive(Clone)]
struct Bank {
    in_flight: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
    order: Arc<Mutex<Vec<u64>>>,
    /// Opened by the test: the call with `seq` 0 waits for it inside its handler.
    gate: Arc<Semaphore>,
    /// For calls on two keys that must be inside at the same time.
    barrier: Arc<Barrier>,
    /// Calls that entered their handler, and those that finished it.
    entered: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
}

impl Default for Bank {
    fn default() -> Self {
        Self {
            in_flight: Arc::default(),
            most: Arc::default(),
            order: Arc::default(),
            gate: Arc::new(Semaphore::new(0)),
            barrier: Arc::new(Barrier::new(2)),
            entered: Arc::default(),
            finished: Arc::default(),
        }
    }
}

impl Bank {
    fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }

    fn order(&self) -> Vec<u64> {
        self.order.lock().expect("the order").clone()
    }
}

/// Counts the handler in flight while it lives, out again however it ends (dropped too).
struct InFlight(Bank);

impl InFlight {
    fn enter(bank: &Bank) -> Self {
        let now = bank.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        bank.most.fetch_max(now, Ordering::SeqCst);
        bank.entered.fetch_add(1, Ordering::SeqCst);
        Self(bank.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Debug, thiserror::Error, Classify)]
enum BankError {
    #[error("the ledger connection was reset")]
    #[transient]
    Reset,
}

/// Credit an account; deposits to one account run one at a time.
#[mcp_tool(serialize = "account", timeout = "2s")]
async fn deposit(
    #[ctx] bank: &Bank,
    account: String,
    seq: u64,
    /// `gate`: wait for the test; `barrier`: meet a call on another account; `panic`;
    /// `hang`: never finish (the timeout stops it); `sleep`: 30 ms.
    mode: Option<String>,
) -> String {
    let _in_flight = InFlight::enter(bank);
    bank.order.lock().expect("the order").push(seq);
    match mode.as_deref() {
        Some("gate") => {
            let _ = bank.gate.acquire().await;
        }
        Some("barrier") => {
            bank.barrier.wait().await;
        }
        Some("panic") => panic!("the ledger is corrupt"),
        Some("hang") => std::future::pending::<()>().await,
        Some("sleep") => tokio::time::sleep(Duration::from_millis(30)).await,
        _ => {}
    }
    // A few turns of the scheduler: a second writer, were it let in, would be seen here.
    for _ in 0..3 {
        tokio::task::yield_now().await;
    }
    bank.finished.fetch_add(1, Ordering::SeqCst);
    format!("{seq} to {account}")
}

/// Credit an account, failing transiently on its first two runs: retried, under one lock.
#[mcp_tool(serialize = "account", retry(attempts = 3, backoff = "20ms"))]
async fn flaky_deposit(#[ctx] bank: &Bank, account: String, seq: u64) -> Result<String, BankError> {
    let _in_flight = InFlight::enter(bank);
    bank.order.lock().expect("the order").push(seq);
    tokio::task::yield_now().await;
    if seq == 0 && bank.entered.load(Ordering::SeqCst) <= 2 {
        return Err(BankError::Reset);
    }
    Ok(format!("{seq} to {account}"))
}

/// A tester of the bank's tools over `locks`.
fn bank_with(locks: impl LockStore) -> (Tester<Bank>, Bank) {
    let bank = Bank::default();
    let shared = bank.clone();
    let server = Server::builder("bank", "1.0.0")
        .lock_store(locks)
        .context(move || shared.clone())
        .tool(deposit)
        .tool(flaky_deposit)
        .build();
    (Tester::new(server), bank)
}

/// A call's future, boxed so that it can be polled by hand and then spawned.
type CallFuture = Pin<Box<dyn Future<Output = TestResult> + Send>>;

fn call(tester: &Tester<Bank>, tool: &'static str, args: Value) -> CallFuture {
    let tester = tester.clone();
    Box::pin(async move { tester.call(tool, args).await })
}

/// Polls `future` once, in this task.
async fn poll_once(future: &mut CallFuture) -> Poll<TestResult> {
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {WAIT:?} (a lock never released?)"))
}

#[tokio::test]
async fn two_hundred_calls_on_one_key_never_overlap_and_run_in_arrival_order() {
    let locks = MemoryLockStore::new();
    let (tester, bank) = bank_with(locks.clone());
    let mut running = Vec::new();
    for seq in 0..200_u64 {
        let mode = if seq == 0 { json!("gate") } else { Value::Null };
        let mut future = call(
            &tester,
            "deposit",
            json!({"account": "acct-1", "seq": seq, "mode": mode}),
        );
        // One poll admits the call and queues it at its account's lock (the first takes
        // it and waits at the gate): it arrived before the next one is made.
        assert!(poll_once(&mut future).await.is_pending(), "call {seq}");
        assert_eq!(
            locks.active_calls(),
            usize::try_from(seq).expect("small") + 1,
            "call {seq} holds or waits for the lock"
        );
        assert_eq!(locks.active_keys(), 1);
        running.push(tokio::spawn(future));
    }
    assert_eq!(bank.order(), [0], "only the holder entered its handler");
    bank.gate.add_permits(1);
    for (seq, handle) in running.into_iter().enumerate() {
        let result = within("a deposit", handle).await.expect("the call's task");
        assert!(!result.is_error, "{}", result.text());
        assert_eq!(result.text(), format!("{seq} to acct-1"));
    }
    assert_eq!(bank.most(), 1, "two deposits to one account overlapped");
    assert_eq!(
        bank.order(),
        (0..200).collect::<Vec<u64>>(),
        "not in arrival order"
    );
    assert_eq!(
        locks.active_keys(),
        0,
        "the key is forgotten once its calls end"
    );
    assert_eq!(locks.active_calls(), 0);
}

#[tokio::test]
async fn calls_on_other_keys_run_in_parallel() {
    let locks = MemoryLockStore::new();
    let (tester, bank) = bank_with(locks.clone());
    // Each waits at a barrier of two inside its handler: both return only if both were
    // inside at once.
    let a = call(
        &tester,
        "deposit",
        json!({"account": "a", "seq": 1, "mode": "barrier"}),
    );
    let b = call(
        &tester,
        "deposit",
        json!({"account": "b", "seq": 2, "mode": "barrier"}),
    );
    let (a, b) = within("two accounts at once", async { tokio::join!(a, b) }).await;
    assert!(!a.is_error && !b.is_error, "{} / {}", a.text(), b.text());
    assert_eq!(bank.most(), 2, "the two accounts ran at the same time");
    assert_eq!(locks.active_keys(), 0);

    // The same barrier on one account: the second waits for the first, which waits at
    // the barrier for good. Proof that the lock is what kept them apart above.
    let same_a = tokio::spawn(call(
        &tester,
        "deposit",
        json!({"account": "c", "seq": 3, "mode": "barrier"}),
    ));
    let same_b = tokio::spawn(call(
        &tester,
        "deposit",
        json!({"account": "c", "seq": 4, "mode": "barrier"}),
    ));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        bank.in_flight.load(Ordering::SeqCst),
        1,
        "one writer on `c`"
    );
    assert_eq!(locks.active_calls(), 2);
    same_a.abort();
    same_b.abort();
    let _ = same_a.await;
    let _ = same_b.await;
    assert_eq!(locks.active_keys(), 0, "aborted calls leave no key behind");
}

#[tokio::test]
async fn an_invalid_call_is_answered_without_waiting_for_the_lock() {
    let (tester, bank) = bank_with(MemoryLockStore::new());
    let mut holder = call(
        &tester,
        "deposit",
        json!({"account": "a", "seq": 0, "mode": "gate"}),
    );
    assert!(poll_once(&mut holder).await.is_pending());
    let holder = tokio::spawn(holder);
    // `seq` is no number: refused at once, though the account is held.
    let invalid = within(
        "an invalid call",
        tester.call("deposit", json!({"account": "a", "seq": "one"})),
    )
    .await;
    assert!(invalid.is_error);
    let failure = invalid.failure().expect("a failure entry");
    assert_eq!(failure.class, "invalid_input", "{}", invalid.text());
    bank.gate.add_permits(1);
    let held = within("the holder", holder).await.expect("its task");
    assert!(!held.is_error, "{}", held.text());
}

#[tokio::test]
async fn a_panicking_or_timing_out_handler_releases_the_lock() {
    let locks = MemoryLockStore::new();
    let (tester, _bank) = bank_with(locks.clone());
    let panicked = within(
        "a panic",
        tester.call(
            "deposit",
            json!({"account": "a", "seq": 1, "mode": "panic"}),
        ),
    )
    .await;
    assert!(panicked.is_error);
    assert_eq!(
        panicked.failure().expect("an entry").code.as_deref(),
        Some("panic")
    );
    let next = within(
        "after the panic",
        tester.call("deposit", json!({"account": "a", "seq": 2})),
    )
    .await;
    assert!(!next.is_error, "{}", next.text());

    let timed_out = within(
        "a timeout",
        tester.call("deposit", json!({"account": "a", "seq": 3, "mode": "hang"})),
    )
    .await;
    assert!(timed_out.is_error);
    assert!(
        timed_out.text().contains("did not finish"),
        "{}",
        timed_out.text()
    );
    let next = within(
        "after the timeout",
        tester.call("deposit", json!({"account": "a", "seq": 4})),
    )
    .await;
    assert!(!next.is_error, "{}", next.text());
    assert_eq!(locks.active_keys(), 0);
}

#[tokio::test]
async fn the_lock_is_held_across_retries_and_their_backoff() {
    let (tester, bank) = bank_with(MemoryLockStore::new());
    // The first call fails twice (a backoff of 20 ms, then 40 ms, after each) and succeeds
    // on its third run; the second, on the same account, arrives during the first backoff.
    let mut first = call(&tester, "flaky_deposit", json!({"account": "a", "seq": 0}));
    let _ = poll_once(&mut first).await;
    let first = tokio::spawn(first);
    within("the first run", async {
        while bank.entered.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    let second = within(
        "the second call",
        tester.call("flaky_deposit", json!({"account": "a", "seq": 1})),
    )
    .await;
    let first = within("the first call", first).await.expect("its task");
    assert!(!first.is_error, "{}", first.text());
    assert!(!second.is_error, "{}", second.text());
    assert_eq!(
        bank.order(),
        [0, 0, 0, 1],
        "the second call ran between the first one's attempts"
    );
}

#[tokio::test(start_paused = true)]
async fn a_call_dropped_at_each_poll_releases_the_lock() {
    let mut dropped_waiting = 0;
    let mut dropped_holding = 0;
    let mut completed_at = None;
    for k in 0..100 {
        let locks = MemoryLockStore::new();
        let (tester, bank) = bank_with(locks.clone());
        // A holder runs first, so the dropped call waits for the lock, then holds it.
        let holder = tokio::spawn(call(
            &tester,
            "deposit",
            json!({"account": "a", "seq": 0, "mode": "sleep"}),
        ));
        within("the holder's start", async {
            while bank.entered.load(Ordering::SeqCst) == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await;
        let victim = call(
            &tester,
            "deposit",
            json!({"account": "a", "seq": 1, "mode": "sleep"}),
        );
        let outcome = drop_after(victim, k).await;
        let victim_entered = bank.order().contains(&1);
        match outcome {
            Some(result) => {
                assert!(!result.is_error, "{}", result.text());
                completed_at = Some(k);
            }
            None if victim_entered => dropped_holding += 1,
            None => dropped_waiting += 1,
        }
        // Whatever poll it was dropped at, the next call on the account runs.
        let next = within(
            &format!("k = {k}: a call after the drop"),
            tester.call("deposit", json!({"account": "a", "seq": 2})),
        )
        .await;
        assert!(!next.is_error, "k = {k}: {}", next.text());
        within("the holder", holder).await.expect("its task");
        assert_eq!(locks.active_keys(), 0, "k = {k}: a key left behind");
        assert_eq!(bank.in_flight.load(Ordering::SeqCst), 0, "k = {k}");
        assert_eq!(bank.most(), 1, "k = {k}: two writers at once");
        if completed_at.is_some() {
            break;
        }
    }
    println!(
        "dropped waiting: {dropped_waiting}, holding: {dropped_holding}, completed at {completed_at:?}"
    );
    assert!(completed_at.is_some(), "the call never finished by itself");
    assert!(
        dropped_waiting >= 1,
        "never dropped while it waited for the lock"
    );
    assert!(dropped_holding >= 1, "never dropped while it held the lock");
}

#[tokio::test]
async fn keys_are_forgotten_once_their_calls_end() {
    let locks = MemoryLockStore::new();
    let (tester, _bank) = bank_with(locks.clone());
    // A client that sends a new account each call does not grow the store.
    let calls = (0..500_u64).map(|seq| {
        let tester = tester.clone();
        async move {
            tester
                .call(
                    "deposit",
                    json!({"account": format!("acct-{seq}"), "seq": seq}),
                )
                .await
        }
    });
    let results = within("500 accounts", futures_util::future::join_all(calls)).await;
    assert!(results.iter().all(|result| !result.is_error));
    assert_eq!(locks.active_keys(), 0);
    assert_eq!(locks.active_calls(), 0);
}

/// A lock store that cannot be reached.
struct Away;

impl LockStore for Away {
    fn lock<'a>(&'a self, _key: &'a str) -> BoxFuture<'a, Result<LockGuard, LockUnavailable>> {
        Box::pin(async { Err(LockUnavailable::new("connection refused (10.0.0.7:6379)")) })
    }
}

#[tokio::test]
async fn an_unreachable_lock_store_answers_a_transient_did_not_run() {
    let (tester, bank) = bank_with(Away);
    let result = tester
        .call("deposit", json!({"account": "a", "seq": 1}))
        .await;
    assert!(result.is_error);
    assert!(
        result.text().contains("did not run") && result.text().contains("unavailable right now"),
        "{}",
        result.text()
    );
    assert!(
        !result.text().contains("10.0.0.7"),
        "no infrastructure detail: {}",
        result.text()
    );
    let failure = result.failure().expect("a failure entry");
    assert_eq!(failure.class, "transient");
    assert!(failure.retryable);
    assert_eq!(
        bank.entered.load(Ordering::SeqCst),
        0,
        "the handler never ran"
    );
}

/// A lock store whose holds are lost when the test says so (a lease that lapsed).
#[derive(Clone, Default)]
struct Losing {
    inner: MemoryLockStore,
    lose: Arc<Notify>,
}

impl LockStore for Losing {
    fn lock<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<LockGuard, LockUnavailable>> {
        Box::pin(async move {
            let guard = self.inner.lock(key).await?;
            let lose = Arc::clone(&self.lose);
            Ok(LockGuard::new(guard).lost_when(async move { lose.notified().await }))
        })
    }
}

/// Set when the handler's future is dropped before it finished.
#[derive(Clone, Default)]
struct Stopped(Arc<AtomicBool>);

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Move money out of an account: destructive, not safe to repeat.
#[mcp_tool(serialize = "account", destructive)]
async fn withdraw(#[ctx] stopped: &Stopped, account: String) -> String {
    let _stopped = SetOnDrop(Arc::clone(&stopped.0));
    std::future::pending::<()>().await;
    account
}

/// Look at an account; safe to repeat.
#[mcp_tool(serialize = "account", idempotent)]
async fn audit(#[ctx] stopped: &Stopped, account: String) -> String {
    let _stopped = SetOnDrop(Arc::clone(&stopped.0));
    std::future::pending::<()>().await;
    account
}

#[tokio::test]
async fn a_lost_lock_stops_the_call_rather_than_let_two_writers_run() {
    for (tool, class) in [("audit", "transient"), ("withdraw", "unknown_outcome")] {
        let locks = Losing::default();
        let stopped = Stopped::default();
        let shared = stopped.clone();
        let tester = Tester::new(
            Server::builder("bank", "1.0.0")
                .lock_store(locks.clone())
                .context(move || shared.clone())
                .tool(withdraw)
                .tool(audit)
                .build(),
        );
        let running = {
            let tester = tester.clone();
            tokio::spawn(async move { tester.call(tool, json!({"account": "a"})).await })
        };
        within("the call's start", async {
            while locks.inner.active_calls() == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
        locks.lose.notify_one();
        let result = within("the stopped call", running).await.expect("its task");
        assert!(result.is_error, "{tool}: {}", result.text());
        let failure = result.failure().expect("a failure entry");
        assert_eq!(failure.class, class, "{tool}: {}", result.text());
        assert!(
            stopped.0.load(Ordering::SeqCst),
            "{tool}: the handler was stopped"
        );
        assert_eq!(
            locks.inner.active_keys(),
            0,
            "{tool}: the lock was released"
        );
    }
}
