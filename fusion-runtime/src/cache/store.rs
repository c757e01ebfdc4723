//! What a cache store is: [`CacheStore`], what a lookup finds ([`Lookup`],
//! [`CachedEntry`]), who runs a call that several replicas want at once ([`Fill`]), and
//! [`CacheUnavailable`], the answer of a store that cannot be reached.

use std::time::Duration;

use serde_json::Value;

use crate::{future::BoxFuture, lock::LockGuard};

/// Where the answers of `#[mcp_tool(cache = "..")]` are kept: in memory by default
/// ([`MemoryCacheStore`](crate::cache::MemoryCacheStore)); on Redis for a fleet
/// (`fusion_runtime::redis::RedisStore`, feature `redis`); or over another shared store.
///
/// Entries belong to a tool (`tool`: the tool's name, or `group.action` for an action)
/// and are found by `key`: the caller (for a private scope) and the SHA-256 of the
/// arguments in canonical JSON, a few hundred bytes, no argument value in it. A value is
/// an answer as the runtime stores it (JSON).
///
/// What an implementation promises:
/// - **Generations.** Each tool has a generation, moved on by [`invalidate`](Self::invalidate).
///   [`get`](Self::get) returns the current one, finds only entries stored in it, and
///   [`put`](Self::put) stores nothing when the generation moved since (a read that
///   started before a write must not store what it read after the write invalidated it).
/// - **Ages.** An entry's age is measured from its `put` on one clock (a shared store's
///   own), so that replicas agree on freshness.
/// - **Unavailable, not wrong.** A store that cannot be reached answers
///   [`CacheUnavailable`]; the call then runs uncached.
/// - **Cancel safety.** A future dropped part-way leaves the store consistent: an entry
///   stored or not, a generation moved or not.
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::cache::{CacheStore, MemoryCacheStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store = MemoryCacheStore::new(1 << 20);
/// let keep = Duration::from_secs(60);
/// let lookup = store.get("quote", "k", keep).await.unwrap();
/// assert!(lookup.entry.is_none());
/// assert!(store.put("quote", "k", serde_json::json!("42"), keep, lookup.generation).await.unwrap());
/// let hit = store.get("quote", "k", keep).await.unwrap().entry.expect("stored");
/// assert_eq!(hit.value, "42");
/// // A writer invalidated the tool: its entries are gone, for every caller.
/// store.invalidate("quote").await.unwrap();
/// assert!(store.get("quote", "k", keep).await.unwrap().entry.is_none());
/// // A read that began before the invalidation stores nothing.
/// assert!(!store.put("quote", "k", serde_json::json!("41"), keep, lookup.generation).await.unwrap());
/// # });
/// ```
pub trait CacheStore: Send + Sync + 'static {
    /// The entry of `tool` under `key`, if one was stored in the tool's current generation
    /// and is at most `max_age` old; and that generation.
    fn get<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        max_age: Duration,
    ) -> BoxFuture<'a, Result<Lookup, CacheUnavailable>>;

    /// Stores `value` under `key` for `keep`, if `tool`'s generation is still `generation`
    /// (from the [`get`](Self::get) before the run); `false` when it moved (nothing
    /// stored). A store may also decline a value too large for it (`false`).
    fn put<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        value: Value,
        keep: Duration,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool, CacheUnavailable>>;

    /// Drops every entry of `tool`, for every caller: moves its generation on.
    fn invalidate<'a>(&'a self, tool: &'a str) -> BoxFuture<'a, Result<(), CacheUnavailable>>;

    /// Asks to run the call of `key` for every replica that shares the store. The runtime
    /// already runs identical calls once within a process; a shared store makes the other
    /// replicas wait too: it answers [`Fill::Run`] with a lock held for at most `lease`
    /// (released when the guard is dropped), or waits while another replica holds it and
    /// answers [`Fill::Filled`] with the entry that replica stored (at most `max_age` old).
    /// If the holder stores nothing within the lease, the waiter runs the call itself.
    ///
    /// The default, for a store that is not shared: [`Fill::Run`] without a lock.
    fn fill<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        max_age: Duration,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Fill, CacheUnavailable>> {
        let _ = (tool, key, max_age, lease);
        Box::pin(std::future::ready(Ok(Fill::Run(None))))
    }
}

/// What [`CacheStore::get`] found.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Lookup {
    /// The entry, if one is stored and young enough.
    pub entry: Option<CachedEntry>,
    /// The tool's generation, to hand [`CacheStore::put`] after the run.
    pub generation: u64,
}

impl Lookup {
    /// What a lookup found.
    pub fn new(entry: Option<CachedEntry>, generation: u64) -> Self {
        Self { entry, generation }
    }
}

/// A stored answer and how old it is.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CachedEntry {
    /// The answer, as the runtime stored it.
    pub value: Value,
    /// The time since it was stored.
    pub age: Duration,
}

impl CachedEntry {
    /// An entry of this age.
    pub fn new(value: Value, age: Duration) -> Self {
        Self { value, age }
    }
}

/// Who runs a call that several replicas want at once ([`CacheStore::fill`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum Fill {
    /// Run it: the lock (if the store has one) is held until the guard is dropped.
    Run(Option<LockGuard>),
    /// Another replica ran it while this one waited: its answer.
    Filled(CachedEntry),
}

/// A cache store that cannot be reached: the call runs uncached. The reason goes to the
/// log only (it may name infrastructure).
#[derive(Clone, Debug, thiserror::Error)]
#[error("the cache store is unavailable: {reason}")]
#[non_exhaustive]
pub struct CacheUnavailable {
    /// Why, for the log.
    pub reason: String,
}

impl CacheUnavailable {
    /// Unavailable, for `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }
}
