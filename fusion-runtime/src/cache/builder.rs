//! The builder's settings for `cache`: [`ServerBuilder::cache_store`] and
//! [`ServerBuilder::cache_capacity`].

use std::{sync::Arc, time::Duration};

use crate::setup::builder::ServerBuilder;

use super::{memory::MemoryCacheStore, store::CacheStore};

impl<C: Send + Sync + 'static> ServerBuilder<C> {
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

    /// How long a client may treat a list result (`tools/list`, `prompts/list`,
    /// `resources/list`, `resources/templates/list`) as fresh: the `ttlMs` those results
    /// carry under the 2026-07-28 revision, next to their `cacheScope` (`private` when the
    /// tools a caller is shown depend on who asks: [`hide_unauthorized`](Self::hide_unauthorized),
    /// [`visibility`](Self::visibility)). [`DEFAULT_LIST_TTL`](crate::cache::DEFAULT_LIST_TTL)
    /// (a minute) by default: a fleet's lists change with a deploy, and a session hears of
    /// a change sooner through `notifications/tools/list_changed`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::prelude::*;
    ///
    /// let server = Server::builder("market", "1.0.0")
    ///     .list_ttl(Duration::from_secs(300))
    ///     .build();
    /// # let _ = server;
    /// ```
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }
}
