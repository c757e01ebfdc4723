//! The builder's setting for `serialize`: [`ServerBuilder::lock_store`].

use std::sync::Arc;

use crate::setup::builder::ServerBuilder;

use super::store::LockStore;

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
}
