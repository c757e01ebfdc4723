//! The in-process cache store: entries in memory, bounded in bytes, least recently used
//! out first.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use lru::LruCache;
use serde_json::Value;
use tokio::time::Instant;

use super::store::{CacheStore, CacheUnavailable, CachedEntry, Lookup};
use crate::{future::BoxFuture, json_cost::json_bytes};

/// The default bound of the in-memory cache: 64 MiB of entries (their keys and answers as
/// JSON text would take).
pub const DEFAULT_CACHE_CAPACITY: usize = 64 * 1024 * 1024;

/// What an entry costs beside its key and its answer (its record, the map's slot).
const ENTRY_OVERHEAD: usize = 96;

/// The default store: entries in this process, bounded by their size (keys and answers as
/// their JSON text would take). Once the bound is reached, the entries used least
/// recently go first; an answer larger than the whole bound is not stored. Clones share
/// the entries.
///
/// Ages run on tokio's clock: a test on a paused clock moves them with
/// `tokio::time::advance`.
///
/// ```
/// use fusion_runtime::{cache::MemoryCacheStore, prelude::*};
///
/// /// The price of a stock.
/// #[mcp_tool(read_only, cache = "30s")]
/// async fn quote(symbol: String) -> String {
///     format!("{symbol}: 42.00")
/// }
///
/// let store = MemoryCacheStore::new(16 * 1024 * 1024);
/// let server = Server::builder("market", "1.0.0")
///     .cache_store(store.clone())
///     .tool(quote)
///     .build();
/// assert_eq!(store.entries(), 0);
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct MemoryCacheStore {
    state: Arc<Mutex<State>>,
}

struct State {
    entries: LruCache<String, Entry>,
    /// Each tool's generation (absent: zero), moved on by `invalidate`.
    generations: HashMap<String, u64>,
    bytes: usize,
    capacity: usize,
}

struct Entry {
    generation: u64,
    value: Value,
    stored: Instant,
    keep: Duration,
    bytes: usize,
}

impl MemoryCacheStore {
    /// A store of at most `capacity` bytes of entries.
    pub fn new(capacity: usize) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                entries: LruCache::unbounded(),
                generations: HashMap::new(),
                bytes: 0,
                capacity,
            })),
        }
    }

    /// How many entries are stored (expired ones included until they are looked up or
    /// pushed out).
    pub fn entries(&self) -> usize {
        self.state().entries.len()
    }

    /// What the stored entries cost, in bytes, against the bound.
    pub fn bytes(&self) -> usize {
        self.state().bytes
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // No code holding the lock can panic part-way through an update of the counts.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for MemoryCacheStore {
    fn default() -> Self {
        Self::new(DEFAULT_CACHE_CAPACITY)
    }
}

impl std::fmt::Debug for MemoryCacheStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.state();
        f.debug_struct("MemoryCacheStore")
            .field("entries", &state.entries.len())
            .field("bytes", &state.bytes)
            .field("capacity", &state.capacity)
            .finish()
    }
}

/// One map for every tool: the tool's name and the key, apart.
fn full_key(tool: &str, key: &str) -> String {
    let mut full = String::with_capacity(tool.len() + 1 + key.len());
    full.push_str(tool);
    full.push('\n');
    full.push_str(key);
    full
}

impl State {
    fn generation(&self, tool: &str) -> u64 {
        self.generations.get(tool).copied().unwrap_or(0)
    }

    fn remove(&mut self, full: &str) {
        if let Some(entry) = self.entries.pop(full) {
            self.bytes = self.bytes.saturating_sub(entry.bytes);
        }
    }

    fn lookup(&mut self, tool: &str, key: &str, max_age: Duration) -> Lookup {
        let generation = self.generation(tool);
        let full = full_key(tool, key);
        let now = Instant::now();
        let found = match self.entries.get(&full) {
            None => return Lookup::new(None, generation),
            Some(entry) => {
                let age = now.saturating_duration_since(entry.stored);
                if entry.generation != generation || age > entry.keep {
                    None
                } else {
                    Some((age <= max_age).then(|| CachedEntry::new(entry.value.clone(), age)))
                }
            }
        };
        match found {
            Some(entry) => Lookup::new(entry, generation),
            // Invalidated or past its keep: gone for good, so its bytes are freed now.
            None => {
                self.remove(&full);
                Lookup::new(None, generation)
            }
        }
    }

    fn store(
        &mut self,
        tool: &str,
        key: &str,
        value: Value,
        keep: Duration,
        generation: u64,
    ) -> bool {
        if self.generation(tool) != generation {
            return false;
        }
        let full = full_key(tool, key);
        let bytes = full.len() + json_bytes(&value) + ENTRY_OVERHEAD;
        if bytes > self.capacity {
            return false;
        }
        self.remove(&full);
        while self.bytes + bytes > self.capacity {
            match self.entries.pop_lru() {
                Some((_, old)) => self.bytes = self.bytes.saturating_sub(old.bytes),
                None => break,
            }
        }
        self.bytes += bytes;
        self.entries.put(
            full,
            Entry {
                generation,
                value,
                stored: Instant::now(),
                keep,
                bytes,
            },
        );
        true
    }
}

impl CacheStore for MemoryCacheStore {
    fn get<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        max_age: Duration,
    ) -> BoxFuture<'a, Result<Lookup, CacheUnavailable>> {
        let lookup = self.state().lookup(tool, key, max_age);
        Box::pin(std::future::ready(Ok(lookup)))
    }

    fn put<'a>(
        &'a self,
        tool: &'a str,
        key: &'a str,
        value: Value,
        keep: Duration,
        generation: u64,
    ) -> BoxFuture<'a, Result<bool, CacheUnavailable>> {
        let stored = self.state().store(tool, key, value, keep, generation);
        Box::pin(std::future::ready(Ok(stored)))
    }

    fn invalidate<'a>(&'a self, tool: &'a str) -> BoxFuture<'a, Result<(), CacheUnavailable>> {
        let mut state = self.state();
        let next = state.generation(tool).wrapping_add(1);
        state.generations.insert(tool.to_owned(), next);
        drop(state);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[tokio::test(start_paused = true)]
    async fn entries_age_out_past_their_keep_and_serve_until_then() {
        let store = MemoryCacheStore::new(1 << 20);
        assert!(
            store
                .put("t", "k", json!(1), MINUTE, 0)
                .await
                .expect("the memory store answers")
        );
        tokio::time::advance(Duration::from_secs(30)).await;
        let fresh = store
            .get("t", "k", Duration::from_secs(40))
            .await
            .expect("the memory store answers");
        assert_eq!(
            fresh.entry.expect("a fresh entry").age,
            Duration::from_secs(30)
        );
        // Older than the caller's max age, still kept: not returned, not dropped.
        assert!(
            store
                .get("t", "k", Duration::from_secs(10))
                .await
                .expect("the memory store answers")
                .entry
                .is_none()
        );
        assert_eq!(store.entries(), 1);
        tokio::time::advance(MINUTE).await;
        assert!(
            store
                .get("t", "k", MINUTE * 10)
                .await
                .expect("the memory store answers")
                .entry
                .is_none()
        );
        assert_eq!((store.entries(), store.bytes()), (0, 0));
    }

    #[tokio::test]
    async fn the_least_recently_used_entry_goes_first_and_bytes_stay_bounded() {
        let one = full_key("t", "a").len() + json_bytes(&json!("x".repeat(100))) + ENTRY_OVERHEAD;
        let store = MemoryCacheStore::new(one * 2);
        for key in ["a", "b"] {
            assert!(
                store
                    .put("t", key, json!("x".repeat(100)), MINUTE, 0)
                    .await
                    .expect("the memory store answers")
            );
        }
        // `a` is used, so `b` is the least recent when `c` comes.
        assert!(
            store
                .get("t", "a", MINUTE)
                .await
                .expect("the memory store answers")
                .entry
                .is_some()
        );
        assert!(
            store
                .put("t", "c", json!("x".repeat(100)), MINUTE, 0)
                .await
                .expect("the memory store answers")
        );
        assert!(
            store
                .get("t", "b", MINUTE)
                .await
                .expect("the memory store answers")
                .entry
                .is_none()
        );
        assert!(
            store
                .get("t", "a", MINUTE)
                .await
                .expect("the memory store answers")
                .entry
                .is_some()
        );
        assert!(store.bytes() <= one * 2);
        // Larger than the whole store: declined, nothing pushed out.
        assert!(
            !store
                .put("t", "d", json!("x".repeat(1000)), MINUTE, 0)
                .await
                .expect("the memory store answers")
        );
        assert_eq!(store.entries(), 2);
    }

    #[tokio::test]
    async fn an_invalidation_drops_one_tools_entries_and_refuses_reads_from_before_it() {
        let store = MemoryCacheStore::new(1 << 20);
        let before = store
            .get("quote", "k", MINUTE)
            .await
            .expect("the memory store answers")
            .generation;
        assert!(
            store
                .put("quote", "k", json!(1), MINUTE, before)
                .await
                .expect("the memory store answers")
        );
        assert!(
            store
                .put("other", "k", json!(2), MINUTE, 0)
                .await
                .expect("the memory store answers")
        );
        store
            .invalidate("quote")
            .await
            .expect("the memory store answers");
        let after = store
            .get("quote", "k", MINUTE)
            .await
            .expect("the memory store answers");
        assert!(after.entry.is_none());
        assert_ne!(after.generation, before);
        assert!(
            !store
                .put("quote", "k", json!(3), MINUTE, before)
                .await
                .expect("the memory store answers")
        );
        assert!(
            store
                .put("quote", "k", json!(4), MINUTE, after.generation)
                .await
                .expect("the memory store answers")
        );
        assert!(
            store
                .get("other", "k", MINUTE)
                .await
                .expect("the memory store answers")
                .entry
                .is_some()
        );
    }
}
