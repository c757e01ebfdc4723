//! One writer per key: a tool that names one of its arguments with
//! `#[mcp_tool(serialize = "account")]` runs the calls that share that argument's value one
//! at a time, in the order they arrived; calls with other values run in parallel. Two
//! deposits to one account never interleave, deposits to two accounts never wait for each
//! other.
//!
//! The lock is taken once the call is admitted (its arguments valid, its scopes and
//! middleware passed: an invalid or refused call never waits) and held for the whole call,
//! its retries and their backoff included. It is released however the call ends: an
//! answer, an error, a panic, a timeout, a cancellation, or its future dropped.
//!
//! In one process the locks are in memory ([`MemoryLockStore`], the default). Replicas
//! share them on Redis (`.lock_store(redis)` with `fusion_runtime::redis::RedisStore`,
//! feature `redis`), under a lease renewed while the call runs; or implement [`LockStore`]
//! over another shared store.
//!
//! ```
//! use fusion_runtime::{lock::MemoryLockStore, prelude::*, testing::Tester};
//!
//! /// Add to an account's balance, one deposit at a time per account.
//! #[mcp_tool(serialize = "account")]
//! async fn deposit(account: String, cents: u64) -> String {
//!     format!("{cents} to {account}")
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let locks = MemoryLockStore::new();
//! let server = Server::builder("bank", "1.0.0")
//!     .lock_store(locks.clone())
//!     .tool(deposit)
//!     .build();
//! let tester = Tester::new(server);
//! let done = tester.call("deposit", serde_json::json!({"account": "a-1", "cents": 5})).await;
//! assert_eq!(done.text(), "5 to a-1");
//! // Nobody holds or waits for a lock once the calls are over.
//! assert_eq!(locks.active_keys(), 0);
//! # });
//! ```

mod memory;
mod store;

pub use memory::MemoryLockStore;
pub use store::{LockGuard, LockStore, LockUnavailable};
