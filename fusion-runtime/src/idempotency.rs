//! Idempotency keys: a tool that names one of its arguments as its idempotency key
//! (`#[mcp_tool(idempotency_key = "request_id")]`) runs once per key within a window. A
//! repeated call returns the first call's result, also while the first call is still
//! running (the second waits for it). A model that retries a `create_order` after a lost
//! answer gets the order it already made, not a second one.
//!
//! Results are kept in memory by default ([`MemoryStore`]); several replicas share one on
//! Redis (`fusion_runtime::redis::RedisStore`, feature `redis`), or by implementing
//! [`IdempotencyStore`] over another shared database.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::sync::watch;

use crate::{future::BoxFuture, json_cost::json_bytes};

/// What [`IdempotencyStore::claim`] found.
#[derive(Clone, Debug, PartialEq)]
pub enum Claim {
    /// Nobody ran this key within the window: run the call, then `complete` or `release`.
    Run,
    /// It ran already: here is its result (as stored by `complete`).
    Replay(Value),
    /// The store cannot tell (a shared store that is unreachable): the call must not run,
    /// since it may have run elsewhere. The caller gets a transient error (retry later);
    /// the reason goes to the log, not to the model.
    Unavailable(String),
}

/// Where results are kept per key. Implement it over a shared store (a database table, a
/// cache) when several replicas serve the same clients.
///
/// Every claim that returns [`Claim::Run`] is ended by exactly one `complete` or `release`,
/// also when the call's future is dropped (the runtime releases it in a guard's `Drop`).
/// `claim` itself must be cancel-safe: a `claim` future dropped while it waits must hold
/// nothing, and one dropped as it returns `Run` must not leave the key claimed (claim in
/// the last step, with no `.await` after it).
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims `key` for one run, or returns the stored result. A claim held by a call still
    /// running makes this wait for it.
    fn claim<'a>(&'a self, key: &'a str, window: Duration) -> BoxFuture<'a, Claim>;
    /// Stores the result of the run that claimed `key`.
    fn complete(&self, key: &str, result: Value);
    /// Gives up the claim (the run failed in a way worth running again).
    fn release(&self, key: &str);
}

enum Entry {
    /// A run is in progress; waiters watch for its result (`None` until it ends, then
    /// `Some(None)` if it was released).
    Running(
        watch::Receiver<Option<Option<Value>>>,
        watch::Sender<Option<Option<Value>>>,
    ),
    Done(Done),
}

/// A stored result.
struct Done {
    result: Value,
    at: Instant,
    /// What it costs the store (its key and its result), counted against `max_bytes`.
    bytes: usize,
    /// Which completion of the key this is: the eviction queue may still name an older one.
    generation: u64,
}

/// The in-process store: results kept for the window, in memory, bounded by count and by
/// bytes. Once either bound is reached the oldest results are forgotten first (a repeat of
/// such a key runs again); calls still running are never evicted.
///
/// ```
/// use fusion_runtime::idempotency::MemoryStore;
///
/// // At most 1,000 results and 4 MiB (keys and results as their JSON text would take).
/// let store = MemoryStore::new().max_keys(1_000).max_bytes(4 << 20);
/// # let _ = store;
/// ```
pub struct MemoryStore {
    entries: Mutex<Entries>,
    max_keys: usize,
    max_bytes: usize,
}

/// The keys, and the stored results in the order they completed (oldest first).
#[derive(Default)]
struct Entries {
    by_key: HashMap<Arc<str>, Entry>,
    /// Completed keys, oldest first, with the generation that completed: eviction and
    /// expiry pop from the front, so neither scans every key (one call stays O(1) however
    /// many keys are kept).
    completed: VecDeque<(Arc<str>, u64)>,
    /// How many `Done` entries `by_key` holds, and what they cost.
    done: usize,
    bytes: usize,
    next_generation: u64,
}

impl Entries {
    /// Forgets the oldest results while they are past `window` or over a bound.
    fn evict(&mut self, now: Instant, window: Option<Duration>, max_keys: usize, max_bytes: usize) {
        while let Some((key, generation)) = self.completed.front() {
            let current = match self.by_key.get(key) {
                Some(Entry::Done(done)) if done.generation == *generation => Some(done),
                // A key completed again, re-claimed or released since: nothing to free.
                _ => None,
            };
            let Some(done) = current else {
                self.completed.pop_front();
                continue;
            };
            let expired = window.is_some_and(|window| now.duration_since(done.at) > window);
            if !expired && self.done <= max_keys && self.bytes <= max_bytes {
                break;
            }
            let bytes = done.bytes;
            if let Some((key, _)) = self.completed.pop_front() {
                self.by_key.remove(&*key);
            }
            self.forget(bytes);
        }
    }

    /// Accounts for a `Done` entry that left `by_key`.
    fn forget(&mut self, bytes: usize) {
        self.done = self.done.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    /// Marks `key` running (a new claim), forgetting a result it replaces.
    fn start_run(&mut self, key: &str) {
        let (sender, receiver) = watch::channel(None);
        if let Some(Entry::Done(done)) = self
            .by_key
            .insert(Arc::from(key), Entry::Running(receiver, sender))
        {
            self.forget(done.bytes);
        }
    }
}

impl MemoryStore {
    /// The default bound on stored results: 10,000 keys.
    pub const DEFAULT_MAX_KEYS: usize = 10_000;
    /// The default bound on what stored results take: 32 MiB.
    pub const DEFAULT_MAX_BYTES: usize = 32 << 20;

    /// An empty store with the default bounds.
    pub fn new() -> Self {
        Self {
            entries: Mutex::default(),
            max_keys: Self::DEFAULT_MAX_KEYS,
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }

    /// Keeps at most `keys` results (at least 1); the oldest go first.
    pub fn max_keys(mut self, keys: usize) -> Self {
        self.max_keys = keys.max(1);
        self
    }

    /// Keeps results (their keys and JSON, as their text would take) up to `bytes`; the
    /// oldest go first. A single result larger than that is not kept at all.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim<'a>(&'a self, key: &'a str, window: Duration) -> BoxFuture<'a, Claim> {
        Box::pin(async move {
            loop {
                let mut waiter = {
                    let Ok(mut entries) = self.entries.lock() else {
                        // A poisoned store cannot deduplicate; running is the safe default
                        // for the caller that gets here, and it is logged by the caller.
                        return Claim::Run;
                    };
                    let now = Instant::now();
                    // Forget results older than the window, so memory stays bounded.
                    entries.evict(now, Some(window), self.max_keys, self.max_bytes);
                    match entries.by_key.get(key) {
                        // A result past the window (a longer window evicted less) is as
                        // good as none.
                        Some(Entry::Done(done)) if now.duration_since(done.at) > window => {
                            entries.start_run(key);
                            return Claim::Run;
                        }
                        Some(Entry::Done(done)) => return Claim::Replay(done.result.clone()),
                        Some(Entry::Running(receiver, _)) => receiver.clone(),
                        None => {
                            entries.start_run(key);
                            return Claim::Run;
                        }
                    }
                };
                // Await: waits for the running claim to end. Holds only a receiver clone; a
                // drop here leaves the store unchanged.
                match waiter
                    .wait_for(Option::is_some)
                    .await
                    .map(|value| value.clone())
                {
                    Ok(Some(Some(result))) => return Claim::Replay(result),
                    // Released (or the runner vanished): try to claim it ourselves.
                    _ => continue,
                }
            }
        })
    }

    fn complete(&self, key: &str, result: Value) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        let entries = &mut *entries;
        let generation = entries.next_generation;
        entries.next_generation += 1;
        let bytes = key.len() + KEPT_ENTRY_BYTES + json_bytes(&result);
        let done = Done {
            result: result.clone(),
            at: Instant::now(),
            bytes,
            generation,
        };
        // The map and the queue share the key: a long key is kept once.
        let key: Arc<str> = Arc::from(key);
        match entries.by_key.insert(Arc::clone(&key), Entry::Done(done)) {
            Some(Entry::Running(_, sender)) => {
                sender.send_replace(Some(Some(result)));
            }
            Some(Entry::Done(replaced)) => entries.forget(replaced.bytes),
            None => {}
        }
        entries.completed.push_back((key, generation));
        entries.done += 1;
        entries.bytes += bytes;
        entries.evict(Instant::now(), None, self.max_keys, self.max_bytes);
    }

    fn release(&self, key: &str) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(Entry::Running(_, sender)) = entries.by_key.remove(key)
        {
            sender.send_replace(Some(None));
        }
    }
}

/// What a kept result costs beyond its key and its JSON: the map's slot, the queue's
/// entry, the key's shared header.
const KEPT_ENTRY_BYTES: usize = 128;

/// A run's claim on a key. It must end in [`complete`](Self::complete) or
/// [`release`](Self::release); if the call's future is dropped first (the client went away,
/// the session closed, a test's timeout fired), `Drop` releases the key, so a waiter or a
/// retry runs instead of waiting for good.
#[must_use = "dropping the claim releases the key"]
pub(crate) struct ClaimGuard<'a> {
    store: &'a dyn IdempotencyStore,
    key: &'a str,
    settled: bool,
}

impl<'a> ClaimGuard<'a> {
    /// Holds the claim that `store.claim(key, ..)` granted.
    pub(crate) fn new(store: &'a dyn IdempotencyStore, key: &'a str) -> Self {
        Self {
            store,
            key,
            settled: false,
        }
    }

    /// Stores the run's result for the window.
    pub(crate) fn complete(mut self, result: Value) {
        self.settled = true;
        self.store.complete(self.key, result);
    }

    /// Gives the key up for a new run.
    pub(crate) fn release(mut self) {
        self.settled = true;
        self.store.release(self.key);
    }
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        if !self.settled {
            self.store.release(self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WINDOW: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn a_dropped_claim_releases_the_key_for_a_waiter() {
        let store = MemoryStore::new();
        assert_eq!(store.claim("k", WINDOW).await, Claim::Run);
        let guard = ClaimGuard::new(&store, "k");
        let waiter = store.claim("k", WINDOW);
        tokio::pin!(waiter);
        assert!(
            tokio::time::timeout(Duration::from_millis(5), waiter.as_mut())
                .await
                .is_err(),
            "the waiter waits for the running claim"
        );
        drop(guard);
        let claimed = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert_eq!(claimed, Ok(Claim::Run), "the waiter runs instead");
    }

    /// Runs and completes `key` with `result`.
    async fn store_result(store: &MemoryStore, key: &str, result: Value) {
        assert_eq!(store.claim(key, WINDOW).await, Claim::Run, "{key} runs");
        ClaimGuard::new(store, key).complete(result);
    }

    #[tokio::test]
    async fn past_max_keys_the_oldest_results_go_first() {
        let store = MemoryStore::new().max_keys(3);
        for key in ["a", "b", "c", "d"] {
            store_result(&store, key, Value::from(key)).await;
        }
        assert_eq!(
            store.claim("a", WINDOW).await,
            Claim::Run,
            "the oldest went"
        );
        assert_eq!(
            store.claim("c", WINDOW).await,
            Claim::Replay(Value::from("c"))
        );
        assert_eq!(
            store.claim("d", WINDOW).await,
            Claim::Replay(Value::from("d"))
        );
        let entries = store.entries.lock().expect("not poisoned");
        assert!(entries.done <= 3, "{} results kept", entries.done);
    }

    #[tokio::test]
    async fn past_max_bytes_the_oldest_results_go_first_and_running_calls_stay() {
        let store = MemoryStore::new().max_bytes(4_000);
        let big = Value::from("x".repeat(1_500));
        assert_eq!(store.claim("running", WINDOW).await, Claim::Run);
        for key in ["a", "b", "c"] {
            store_result(&store, key, big.clone()).await;
        }
        {
            let entries = store.entries.lock().expect("not poisoned");
            assert!(entries.bytes <= 4_000, "{} bytes kept", entries.bytes);
            assert_eq!(entries.done, 2);
            assert!(
                matches!(entries.by_key.get("running"), Some(Entry::Running(..))),
                "a running claim is never evicted"
            );
        }
        assert_eq!(
            store.claim("a", WINDOW).await,
            Claim::Run,
            "the oldest went"
        );
        assert_eq!(store.claim("c", WINDOW).await, Claim::Replay(big));
        let huge = Value::from("y".repeat(10_000));
        store_result(&store, "huge", huge).await;
        assert_eq!(
            store.claim("huge", WINDOW).await,
            Claim::Run,
            "a result over the whole bound is not kept"
        );
    }

    #[tokio::test]
    async fn a_key_claimed_again_after_its_window_is_counted_once() {
        let store = MemoryStore::new().max_keys(2);
        store_result(&store, "k", Value::from(1)).await;
        // A zero window: the result is past it at once, and the key runs again.
        assert_eq!(store.claim("k", Duration::ZERO).await, Claim::Run);
        ClaimGuard::new(&store, "k").complete(Value::from(2));
        store_result(&store, "other", Value::from(3)).await;
        assert_eq!(
            store.claim("k", WINDOW).await,
            Claim::Replay(Value::from(2))
        );
        let entries = store.entries.lock().expect("not poisoned");
        assert_eq!(entries.done, 2, "the first result of `k` is not counted");
    }

    #[tokio::test]
    async fn a_completed_claim_is_replayed() {
        let store = MemoryStore::new();
        assert_eq!(store.claim("k", WINDOW).await, Claim::Run);
        ClaimGuard::new(&store, "k").complete(Value::from(7));
        assert_eq!(
            store.claim("k", WINDOW).await,
            Claim::Replay(Value::from(7))
        );
    }
}
