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
    collections::HashMap,
    sync::Mutex,
    time::{Duration, Instant},
};

use serde_json::Value;
use tokio::sync::watch;

use crate::future::BoxFuture;

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
    Done(Value, Instant),
}

/// The in-process store: results kept for the window, in memory.
#[derive(Default)]
pub struct MemoryStore {
    entries: Mutex<Entries>,
}

/// The keys, and when results older than the window are dropped next.
#[derive(Default)]
struct Entries {
    by_key: HashMap<String, Entry>,
    /// Expired results are dropped at most once a second: a scan of every key on every
    /// claim would make each call cost as much as the keys kept (quadratic under load).
    next_prune: Option<Instant>,
}

/// How often expired results are dropped.
const PRUNE_EVERY: Duration = Duration::from_secs(1);

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
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
                    if entries.next_prune.is_none_or(|next| now >= next) {
                        entries.by_key.retain(|_, entry| match entry {
                            Entry::Done(_, at) => now.duration_since(*at) <= window,
                            Entry::Running(..) => true,
                        });
                        entries.next_prune = Some(now + PRUNE_EVERY);
                    }
                    let entries = &mut entries.by_key;
                    match entries.get(key) {
                        // A result past the window (not pruned yet) is as good as none.
                        Some(Entry::Done(_, at)) if now.duration_since(*at) > window => {
                            let (sender, receiver) = watch::channel(None);
                            entries.insert(key.to_owned(), Entry::Running(receiver, sender));
                            return Claim::Run;
                        }
                        Some(Entry::Done(result, _)) => return Claim::Replay(result.clone()),
                        Some(Entry::Running(receiver, _)) => receiver.clone(),
                        None => {
                            let (sender, receiver) = watch::channel(None);
                            entries.insert(key.to_owned(), Entry::Running(receiver, sender));
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
        if let Ok(mut entries) = self.entries.lock()
            && let Some(Entry::Running(_, sender)) = entries
                .by_key
                .insert(key.to_owned(), Entry::Done(result.clone(), Instant::now()))
        {
            sender.send_replace(Some(Some(result)));
        }
    }

    fn release(&self, key: &str) {
        if let Ok(mut entries) = self.entries.lock()
            && let Some(Entry::Running(_, sender)) = entries.by_key.remove(key)
        {
            sender.send_replace(Some(None));
        }
    }
}

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
