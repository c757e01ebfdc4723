//! The builder's settings for the stores replicas may share beside the idempotency store:
//! the locks of `serialize` ([`ServerBuilder::lock_store`]) and the cache of `cache`
//! ([`ServerBuilder::cache_store`], [`ServerBuilder::cache_capacity`]).

use std::sync::Arc;

use crate::{
    cache::{CacheStore, MemoryCacheStore},
    lock::LockStore,
    setup::builder::ServerBuilder,
};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Where the locks of `#[mcp_tool(serialize = "..")]` are kept: in this process by
    /// default ([`MemoryLockStore`](crate::lock::MemoryLockStore)); replicas that must not
    /// write one key at once share one store, such as `fusion_runtime::redis::RedisStore`
    /// (feature `redis`). See [`lock`](crate::lock).
    ///
    /// ```
    /// use fusion_runtime::{lock::MemoryLockStore, prelude::*};
    ///
    /// /// Add to an account's balance, one deposit at a time per account.
    /// #[mcp_tool(serialize = "account")]
    /// async fn deposit(account: String, cents: u64) -> String {
    ///     format!("{cents} to {account}")
    /// }
    ///
    /// let server = Server::builder("bank", "1.0.0")
    ///     .lock_store(MemoryLockStore::new())
    ///     .tool(deposit)
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn lock_store(mut self, store: impl LockStore) -> Self {
        self.locks = Arc::new(store);
        self
    }

    /// Where the answers of `#[mcp_tool(cache = "..")]` are kept: in this process by
    /// default ([`MemoryCacheStore`], [`DEFAULT_CACHE_CAPACITY`](crate::cache::DEFAULT_CACHE_CAPACITY));
    /// replicas share one store, such as `fusion_runtime::redis::RedisStore` (feature
    /// `redis`), for one run of a burst across the fleet and invalidations every replica
    /// sees. See [`cache`](crate::cache).
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
    /// let server = Server::builder("market", "1.0.0")
    ///     .cache_store(MemoryCacheStore::new(8 * 1024 * 1024))
    ///     .tool(quote)
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn cache_store(mut self, store: impl CacheStore) -> Self {
        self.cache = Arc::new(store);
        self
    }

    /// Bounds the in-memory cache to `bytes` of entries (keys and answers as their JSON
    /// text would take); the entries used least recently go first. Replaces the store with
    /// a new [`MemoryCacheStore`] of that size (a store set by
    /// [`cache_store`](Self::cache_store) before is dropped; set a shared store after
    /// this, or bound it its own way).
    ///
    /// ```
    /// use fusion_runtime::prelude::*;
    ///
    /// /// The price of a stock.
    /// #[mcp_tool(read_only, cache = "30s")]
    /// async fn quote(symbol: String) -> String {
    ///     format!("{symbol}: 42.00")
    /// }
    ///
    /// let server = Server::builder("market", "1.0.0")
    ///     .cache_capacity(4 * 1024 * 1024)
    ///     .tool(quote)
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn cache_capacity(mut self, bytes: usize) -> Self {
        self.cache = Arc::new(MemoryCacheStore::new(bytes));
        self
    }
}
