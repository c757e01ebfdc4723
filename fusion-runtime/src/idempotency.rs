//! Idempotency keys: a tool that names one of its arguments as its idempotency key
//! (`#[mcp_tool(idempotency_key = "request_id")]`) runs once per key within a window. A
//! repeated call returns the first call's result, also while the first call is still
//! running (the second waits for it). A model that retries a `create_order` after a lost
//! answer gets the order it already made, not a second one.
//!
//! A key says "this is the same request", not "running it twice is harmless". So a run
//! that stopped part-way (its replica died or was paused past its lease, or its call was
//! dropped after the handler started) leaves its key [`Claim::Stopped`]: later calls with
//! the key get an unknown outcome, and only a tool that declares itself safe to repeat
//! (`read_only` or `idempotent`) runs again. Every run holds a fencing token that grows
//! with each new claim of its key ([`Call::fencing_token`](crate::Call::fencing_token)),
//! and the run's own final write is accepted only while its token is the newest.
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
    /// Nobody ran this key within the window (or its last run stopped and the tool is safe
    /// to repeat): run the call, then end the claim with `complete`, `release` or
    /// `abandon`, naming this fencing token.
    Run {
        /// A number that grows with each new claim of the key: the run's final write is
        /// accepted only while it is the newest, and a handler may pass it on to its own
        /// store for the same check.
        fencing_token: u64,
    },
    /// It ran already: here is its result (as stored by `complete`).
    Replay(Value),
    /// An earlier run of this key stopped before it stored a result (its runner died, was
    /// paused past its lease, or was dropped part-way): its effect may or may not have
    /// happened, and the tool is not safe to repeat. The call must not run.
    Stopped,
    /// The key is held, or stopped, by a run of a call with other arguments (another
    /// [`ClaimRequest::fingerprint`]): this call is another request under a used key, and
    /// must not run.
    Conflict,
    /// The store cannot tell (a shared store that is unreachable): the call must not run,
    /// since it may have run elsewhere. The caller gets a transient error (retry later);
    /// the reason goes to the log, not to the model.
    Unavailable(String),
}

/// A claim asked of an [`IdempotencyStore`].
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::idempotency::ClaimRequest;
///
/// let request = ClaimRequest::new("place_order/:order-7", Duration::from_secs(600))
///     .repeatable(false)
///     .fingerprint("5f1c");
/// assert_eq!(request.key, "place_order/:order-7");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClaimRequest<'a> {
    /// The key: the tool, the action and the key argument's value.
    pub key: &'a str,
    /// How long the key's end is kept (its result, or that it stopped).
    pub window: Duration,
    /// The tool is read-only or idempotent: a run of the key that stopped part-way may be
    /// taken over and run again.
    pub repeatable: bool,
    /// What identifies the call's arguments (a hash of their canonical JSON, without `:`);
    /// empty when unknown. A key held or stopped under another fingerprint is a
    /// [`Claim::Conflict`]; a stored result carries its own, for the caller to compare.
    pub fingerprint: &'a str,
}

impl<'a> ClaimRequest<'a> {
    /// A claim of `key` whose end is kept for `window`; not repeatable, no fingerprint.
    pub fn new(key: &'a str, window: Duration) -> Self {
        Self {
            key,
            window,
            repeatable: false,
            fingerprint: "",
        }
    }

    /// Whether a run that stopped part-way may run again (the tool is read-only or
    /// idempotent).
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }

    /// The fingerprint of the call's arguments.
    pub fn fingerprint(mut self, fingerprint: &'a str) -> Self {
        self.fingerprint = fingerprint;
        self
    }

    /// Whether a run under `held` (a fingerprint) is another request than this one.
    pub fn conflicts_with(&self, held: &str) -> bool {
        !self.fingerprint.is_empty() && !held.is_empty() && self.fingerprint != held
    }
}

/// Where results are kept per key. Implement it over a shared store (a database table, a
/// cache) when several replicas serve the same clients.
///
/// Every claim that returns [`Claim::Run`] is ended by exactly one `complete`, `release`
/// or `abandon` with its fencing token, also when the call's future is dropped (the
/// runtime ends it in a guard's `Drop`). Each of the three changes the key only while the
/// token is still the newest claim of the key: a runner that was paused while another
/// took the key over writes nothing. `claim` itself must be cancel-safe: a `claim` future
/// dropped while it waits must hold nothing, and one dropped as it returns `Run` must not
/// leave the key claimed for longer than a lease.
pub trait IdempotencyStore: Send + Sync + 'static {
    /// Claims the request's key for one run, or returns the stored result. A claim held
    /// by a call still running with the same arguments makes this wait for it; with other
    /// arguments, it is [`Claim::Conflict`]. A key whose last run stopped part-way is
    /// [`Claim::Stopped`], unless the request is `repeatable` (the tool is read-only or
    /// idempotent): the key is then claimed anew, with a newer fencing token.
    fn claim<'a>(&'a self, request: ClaimRequest<'a>) -> BoxFuture<'a, Claim>;
    /// Stores the result of the run that claimed `key` with `fencing_token`, for the
    /// window; nothing if a newer claim took the key over.
    fn complete(&self, key: &str, fencing_token: u64, result: Value);
    /// Gives up the claim: the run did not happen, or failed in a way worth running again.
    fn release(&self, key: &str, fencing_token: u64);
    /// Ends the claim without a result: the run stopped part-way and its effect is
    /// unknown. The key stays [`Claim::Stopped`] for the window.
    fn abandon(&self, key: &str, fencing_token: u64);
}

/// How a run of a key ended, for the calls waiting on it.
#[derive(Clone, Debug)]
enum Ended {
    Done(Value),
    Released,
    Stopped,
}

enum Entry {
    /// A run is in progress, holding `fence`; waiters subscribe to how it ends.
    Running {
        fence: u64,
        /// The fingerprint of the arguments of the call that runs.
        fingerprint: Arc<str>,
        ended: watch::Sender<Option<Ended>>,
    },
    /// A run ended and is kept for the window: its result, or `None` when it stopped
    /// part-way.
    Kept(Kept),
}

/// A kept end of a key.
struct Kept {
    /// The result, or `None`: the run stopped part-way.
    result: Option<Value>,
    /// The fence of the run that ended so (a paused runner of a stopped key may still
    /// store its result while no newer run took the key).
    fence: u64,
    /// The fingerprint of that run's arguments.
    fingerprint: Arc<str>,
    at: Instant,
    /// What it costs the store (its key and its result), counted against `max_bytes`.
    bytes: usize,
    /// Which end of the key this is: the eviction queue may still name an older one.
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

/// The keys, and the kept ends in the order they came (oldest first).
#[derive(Default)]
struct Entries {
    by_key: HashMap<Arc<str>, Entry>,
    /// Kept keys, oldest first, with the generation that was kept: eviction and expiry
    /// pop from the front, so neither scans every key (one call stays O(1) however many
    /// keys are kept).
    kept_order: VecDeque<(Arc<str>, u64)>,
    /// How many `Kept` entries `by_key` holds, and what they cost.
    kept: usize,
    bytes: usize,
    next_generation: u64,
    /// The last fencing token handed out: every claim of any key takes the next one.
    last_fence: u64,
}

impl Entries {
    /// Forgets the oldest ends while they are past `window` or over a bound.
    fn evict(&mut self, now: Instant, window: Option<Duration>, max_keys: usize, max_bytes: usize) {
        while let Some((key, generation)) = self.kept_order.front() {
            let current = match self.by_key.get(key) {
                Some(Entry::Kept(kept)) if kept.generation == *generation => Some(kept),
                // A key kept again, re-claimed or released since: nothing to free.
                _ => None,
            };
            let Some(kept) = current else {
                self.kept_order.pop_front();
                continue;
            };
            let expired = window.is_some_and(|window| now.duration_since(kept.at) > window);
            if !expired && self.kept <= max_keys && self.bytes <= max_bytes {
                break;
            }
            let bytes = kept.bytes;
            if let Some((key, _)) = self.kept_order.pop_front() {
                self.by_key.remove(&*key);
            }
            self.forget(bytes);
        }
    }

    /// Accounts for a `Kept` entry that left `by_key`.
    fn forget(&mut self, bytes: usize) {
        self.kept = self.kept.saturating_sub(1);
        self.bytes = self.bytes.saturating_sub(bytes);
    }

    /// Marks `key` running under a new fence (a new claim), forgetting an end it
    /// replaces.
    fn start_run(&mut self, key: &str, fingerprint: &str) -> Claim {
        self.last_fence += 1;
        let fence = self.last_fence;
        let (ended, _) = watch::channel(None);
        let running = Entry::Running {
            fence,
            fingerprint: Arc::from(fingerprint),
            ended,
        };
        if let Some(Entry::Kept(kept)) = self.by_key.insert(Arc::from(key), running) {
            self.forget(kept.bytes);
        }
        Claim::Run {
            fencing_token: fence,
        }
    }

    /// Ends the run of `key` that holds `fence` (if it still does, or if the key stopped
    /// under it and nobody claimed it since): keeps `result` (`None`: stopped) and tells
    /// the waiters.
    fn end(&mut self, key: &str, fence: u64, result: Option<Value>) {
        let fingerprint = match self.by_key.get(key) {
            Some(Entry::Running {
                fence: held,
                fingerprint,
                ..
            }) if *held == fence => Arc::clone(fingerprint),
            // A run that was given up as stopped may still store its result.
            Some(Entry::Kept(kept)) if kept.fence == fence && kept.result.is_none() => {
                Arc::clone(&kept.fingerprint)
            }
            _ => {
                tracing::debug!(target: "fusion::idempotency", "a run's end was not kept: a newer claim holds its key");
                return;
            }
        };
        self.keep(key, fence, fingerprint, result);
    }

    fn keep(&mut self, key: &str, fence: u64, fingerprint: Arc<str>, result: Option<Value>) {
        let generation = self.next_generation;
        self.next_generation += 1;
        let bytes = key.len() + KEPT_ENTRY_BYTES + result.as_ref().map_or(0, json_bytes);
        let tell = match &result {
            Some(value) => Ended::Done(value.clone()),
            None => Ended::Stopped,
        };
        let kept = Kept {
            result,
            fence,
            fingerprint,
            at: Instant::now(),
            bytes,
            generation,
        };
        // The map and the queue share the key: a long key is kept once.
        let key: Arc<str> = Arc::from(key);
        match self.by_key.insert(Arc::clone(&key), Entry::Kept(kept)) {
            Some(Entry::Running { ended, .. }) => {
                ended.send_replace(Some(tell));
            }
            Some(Entry::Kept(replaced)) => self.forget(replaced.bytes),
            None => {}
        }
        self.kept_order.push_back((key, generation));
        self.kept += 1;
        self.bytes += bytes;
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

    /// The entries; a poisoned lock still holds consistent data (no panic happens while
    /// it is held), so it is used as it is.
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl IdempotencyStore for MemoryStore {
    fn claim<'a>(&'a self, request: ClaimRequest<'a>) -> BoxFuture<'a, Claim> {
        Box::pin(async move {
            let ClaimRequest {
                key,
                window,
                repeatable,
                fingerprint,
            } = request;
            loop {
                let mut waiter = {
                    let mut entries = self.entries();
                    let now = Instant::now();
                    // Forget ends older than the window, so memory stays bounded.
                    entries.evict(now, Some(window), self.max_keys, self.max_bytes);
                    match entries.by_key.get(key) {
                        // An end past the window (a longer window evicted less) is as
                        // good as none.
                        Some(Entry::Kept(kept)) if now.duration_since(kept.at) > window => {
                            return entries.start_run(key, fingerprint);
                        }
                        Some(Entry::Kept(Kept {
                            result: Some(result),
                            ..
                        })) => return Claim::Replay(result.clone()),
                        Some(Entry::Kept(kept)) if request.conflicts_with(&kept.fingerprint) => {
                            return Claim::Conflict;
                        }
                        Some(Entry::Kept(_)) if repeatable => {
                            return entries.start_run(key, fingerprint);
                        }
                        Some(Entry::Kept(_)) => return Claim::Stopped,
                        Some(Entry::Running {
                            fingerprint: held, ..
                        }) if request.conflicts_with(held) => return Claim::Conflict,
                        Some(Entry::Running { ended, .. }) => ended.subscribe(),
                        None => return entries.start_run(key, fingerprint),
                    }
                };
                // Await: waits for the running claim to end. Holds only a receiver; a
                // drop here leaves the store unchanged.
                let ended = waiter
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|ended| ended.clone());
                match ended {
                    Some(Ended::Done(result)) => return Claim::Replay(result),
                    Some(Ended::Stopped) if !repeatable => return Claim::Stopped,
                    // Released, stopped (for a tool safe to repeat), or the runner
                    // vanished: look again, and claim it if it is free.
                    _ => continue,
                }
            }
        })
    }

    fn complete(&self, key: &str, fencing_token: u64, result: Value) {
        let mut entries = self.entries();
        entries.end(key, fencing_token, Some(result));
        entries.evict(Instant::now(), None, self.max_keys, self.max_bytes);
    }

    fn release(&self, key: &str, fencing_token: u64) {
        let mut entries = self.entries();
        if let Some(Entry::Running { fence, .. }) = entries.by_key.get(key)
            && *fence == fencing_token
            && let Some(Entry::Running { ended, .. }) = entries.by_key.remove(key)
        {
            ended.send_replace(Some(Ended::Released));
        }
    }

    fn abandon(&self, key: &str, fencing_token: u64) {
        let mut entries = self.entries();
        if let Some(Entry::Running { fence, .. }) = entries.by_key.get(key)
            && *fence == fencing_token
        {
            entries.end(key, fencing_token, None);
            entries.evict(Instant::now(), None, self.max_keys, self.max_bytes);
        }
    }
}

/// What a kept result costs beyond its key and its JSON: the map's slot, the queue's
/// entry, the key's shared header.
const KEPT_ENTRY_BYTES: usize = 128;

/// A run's claim on a key. It must end in [`complete`](Self::complete),
/// [`release`](Self::release) or [`abandon`](Self::abandon). If the call's future is
/// dropped first (the client went away, the session closed, a test's timeout fired),
/// `Drop` ends it by what may have happened: released when the handler never started or
/// the tool is safe to repeat, so a waiter or a retry runs instead of waiting for good;
/// abandoned (the key stays stopped: an unknown outcome) when a handler unsafe to repeat
/// may have done part of its work.
#[must_use = "dropping the claim ends it"]
pub(crate) struct ClaimGuard<'a> {
    store: &'a dyn IdempotencyStore,
    key: &'a str,
    fencing_token: u64,
    /// The tool is read-only or idempotent: a run dropped part-way may run again.
    repeatable: bool,
    /// Set once the handler started (`Call::handler_started`).
    started: &'a std::sync::atomic::AtomicBool,
    settled: bool,
}

impl<'a> ClaimGuard<'a> {
    /// Holds the claim that `store.claim(key, ..)` granted with `fencing_token`.
    pub(crate) fn new(
        store: &'a dyn IdempotencyStore,
        key: &'a str,
        fencing_token: u64,
        repeatable: bool,
        started: &'a std::sync::atomic::AtomicBool,
    ) -> Self {
        Self {
            store,
            key,
            fencing_token,
            repeatable,
            started,
            settled: false,
        }
    }

    /// Stores the run's result for the window.
    pub(crate) fn complete(mut self, result: Value) {
        self.settled = true;
        self.store.complete(self.key, self.fencing_token, result);
    }

    /// Gives the key up for a new run.
    pub(crate) fn release(mut self) {
        self.settled = true;
        self.store.release(self.key, self.fencing_token);
    }
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let started = self.started.load(std::sync::atomic::Ordering::Acquire);
        if started && !self.repeatable {
            self.store.abandon(self.key, self.fencing_token);
        } else {
            self.store.release(self.key, self.fencing_token);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    const WINDOW: Duration = Duration::from_secs(60);

    /// The fencing token of a claim that must run.
    fn run(claim: Claim) -> u64 {
        match claim {
            Claim::Run { fencing_token } => fencing_token,
            other => panic!("expected Run, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_dropped_claim_that_never_started_releases_the_key_for_a_waiter() {
        let store = MemoryStore::new();
        let started = AtomicBool::new(false);
        let fence = run(store.claim(ClaimRequest::new("k", WINDOW)).await);
        let guard = ClaimGuard::new(&store, "k", fence, false, &started);
        let waiter = store.claim(ClaimRequest::new("k", WINDOW));
        tokio::pin!(waiter);
        assert!(
            tokio::time::timeout(Duration::from_millis(5), waiter.as_mut())
                .await
                .is_err(),
            "the waiter waits for the running claim"
        );
        drop(guard);
        let claimed = tokio::time::timeout(Duration::from_secs(5), waiter).await;
        assert!(
            matches!(claimed, Ok(Claim::Run { fencing_token }) if fencing_token > fence),
            "the waiter runs instead, with a newer token: {claimed:?}"
        );
    }

    #[tokio::test]
    async fn a_run_dropped_part_way_leaves_its_key_stopped_unless_the_tool_may_repeat() {
        let store = MemoryStore::new();
        let started = AtomicBool::new(true);
        let fence = run(store.claim(ClaimRequest::new("k", WINDOW)).await);
        let waiter = store.claim(ClaimRequest::new("k", WINDOW));
        tokio::pin!(waiter);
        assert!(
            tokio::time::timeout(Duration::from_millis(5), waiter.as_mut())
                .await
                .is_err()
        );
        drop(ClaimGuard::new(&store, "k", fence, false, &started));
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(5), waiter).await,
            Ok(Claim::Stopped),
            "the waiter is told the outcome is unknown"
        );
        // Every later call with the key, as long as it is kept.
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Stopped
        );
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Stopped
        );
        // A tool safe to repeat takes it over, with a newer token.
        let newer = run(store
            .claim(ClaimRequest::new("k", WINDOW).repeatable(true))
            .await);
        assert!(newer > fence);
        // The stopped runner, woken late, cannot write over the newer claim.
        store.complete("k", fence, Value::from("late"));
        store.complete("k", newer, Value::from("newer"));
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Replay(Value::from("newer"))
        );
    }

    #[tokio::test]
    async fn a_stopped_runner_that_wakes_first_stores_its_result() {
        let store = MemoryStore::new();
        let fence = run(store.claim(ClaimRequest::new("k", WINDOW)).await);
        store.abandon("k", fence);
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Stopped
        );
        // Nobody claimed the key since: its token is still the newest.
        store.complete("k", fence, Value::from("placed"));
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Replay(Value::from("placed"))
        );
        let entries = store.entries();
        assert_eq!(entries.kept, 1, "the stopped end was replaced, not added");
    }

    #[tokio::test]
    async fn a_release_or_an_end_with_an_old_token_changes_nothing() {
        let store = MemoryStore::new();
        let fence = run(store.claim(ClaimRequest::new("k", WINDOW)).await);
        store.release("k", fence + 1);
        store.abandon("k", fence + 1);
        store.complete("k", fence + 1, Value::from("other"));
        let entries = store.entries();
        assert!(
            matches!(entries.by_key.get("k"), Some(Entry::Running { fence: held, .. }) if *held == fence),
            "still running under its own token"
        );
    }

    #[tokio::test]
    async fn a_key_held_or_stopped_under_other_arguments_is_a_conflict() {
        let store = MemoryStore::new();
        let tea = |key| ClaimRequest::new(key, WINDOW).fingerprint("tea");
        let coffee = |key| ClaimRequest::new(key, WINDOW).fingerprint("coffee");
        let fence = run(store.claim(tea("k")).await);
        assert_eq!(store.claim(coffee("k")).await, Claim::Conflict, "running");
        store.abandon("k", fence);
        // Even a tool safe to repeat does not take a key over for another request.
        assert_eq!(
            store.claim(coffee("k").repeatable(true)).await,
            Claim::Conflict,
            "stopped"
        );
        assert!(matches!(
            store.claim(tea("k").repeatable(true)).await,
            Claim::Run { .. }
        ));
    }

    /// Runs and completes `key` with `result`.
    async fn store_result(store: &MemoryStore, key: &str, result: Value) {
        let fence = run(store.claim(ClaimRequest::new(key, WINDOW)).await);
        store.complete(key, fence, result);
    }

    #[tokio::test]
    async fn past_max_keys_the_oldest_results_go_first() {
        let store = MemoryStore::new().max_keys(3);
        for key in ["a", "b", "c", "d"] {
            store_result(&store, key, Value::from(key)).await;
        }
        assert!(
            matches!(
                store.claim(ClaimRequest::new("a", WINDOW)).await,
                Claim::Run { .. }
            ),
            "the oldest went"
        );
        assert_eq!(
            store.claim(ClaimRequest::new("c", WINDOW)).await,
            Claim::Replay(Value::from("c"))
        );
        assert_eq!(
            store.claim(ClaimRequest::new("d", WINDOW)).await,
            Claim::Replay(Value::from("d"))
        );
        let entries = store.entries();
        assert!(entries.kept <= 3, "{} results kept", entries.kept);
    }

    #[tokio::test]
    async fn past_max_bytes_the_oldest_results_go_first_and_running_calls_stay() {
        let store = MemoryStore::new().max_bytes(4_000);
        let big = Value::from("x".repeat(1_500));
        run(store.claim(ClaimRequest::new("running", WINDOW)).await);
        for key in ["a", "b", "c"] {
            store_result(&store, key, big.clone()).await;
        }
        {
            let entries = store.entries();
            assert!(entries.bytes <= 4_000, "{} bytes kept", entries.bytes);
            assert_eq!(entries.kept, 2);
            assert!(
                matches!(entries.by_key.get("running"), Some(Entry::Running { .. })),
                "a running claim is never evicted"
            );
        }
        assert!(
            matches!(
                store.claim(ClaimRequest::new("a", WINDOW)).await,
                Claim::Run { .. }
            ),
            "the oldest went"
        );
        assert_eq!(
            store.claim(ClaimRequest::new("c", WINDOW)).await,
            Claim::Replay(big)
        );
        let huge = Value::from("y".repeat(10_000));
        store_result(&store, "huge", huge).await;
        assert!(
            matches!(
                store.claim(ClaimRequest::new("huge", WINDOW)).await,
                Claim::Run { .. }
            ),
            "a result over the whole bound is not kept"
        );
    }

    #[tokio::test]
    async fn a_key_claimed_again_after_its_window_is_counted_once() {
        let store = MemoryStore::new().max_keys(2);
        store_result(&store, "k", Value::from(1)).await;
        // A zero window: the result is past it at once, and the key runs again.
        let fence = run(store.claim(ClaimRequest::new("k", Duration::ZERO)).await);
        store.complete("k", fence, Value::from(2));
        store_result(&store, "other", Value::from(3)).await;
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Replay(Value::from(2))
        );
        let entries = store.entries();
        assert_eq!(entries.kept, 2, "the first result of `k` is not counted");
    }

    #[tokio::test]
    async fn a_completed_claim_is_replayed_and_a_guard_completes_it() {
        let store = MemoryStore::new();
        let started = AtomicBool::new(true);
        let fence = run(store.claim(ClaimRequest::new("k", WINDOW)).await);
        started.store(true, Ordering::Release);
        ClaimGuard::new(&store, "k", fence, false, &started).complete(Value::from(7));
        assert_eq!(
            store.claim(ClaimRequest::new("k", WINDOW)).await,
            Claim::Replay(Value::from(7))
        );
    }
}
