//! Caching as fault tolerance: a read-only (or idempotent) tool declares how long its
//! answers stay fresh, and identical calls within that time get the stored answer without
//! running the handler.
//!
//! ```text
//! #[mcp_tool(read_only, cache = "30s", stale_if_error = "10m")]
//! ```
//!
//! - **Cached reads.** A call is identical to an earlier one when it names the same tool
//!   and action, its arguments are the same in canonical JSON (key order does not count),
//!   and it comes from the same caller ([`CacheScope::Private`], the default: entries are
//!   keyed by the token's subject, else the session). `cache_scope = "public"` shares
//!   entries between callers. Only successes are stored (warnings with their warning).
//! - **Coalescing.** Identical calls that arrive while one of them runs wait for that run
//!   and all get its result: a burst after a deploy reaches the upstream once. A caller
//!   that leaves does not stop the run for the others; the last one to leave does.
//! - **Stale answers.** With `stale_if_error = "10m"`, a call whose run fails with a
//!   transient error, a timeout or an open circuit is answered with the last stored
//!   answer if it is younger than `cache + stale_if_error`: `isError: false`, a text that
//!   says it is stale, and `_meta["fusion/failure"]` of class `warning`, code `stale`,
//!   with its age.
//! - **Invalidation.** `#[mcp_tool(invalidates = ["quote", "db_user.find_many"])]` on a
//!   writer drops those tools' entries, for every caller, when it succeeds or when its
//!   outcome is unknown (it may have written).
//!
//! Entries are kept in memory by default ([`MemoryCacheStore`], bounded in bytes by
//! [`ServerBuilder::cache_capacity`](crate::ServerBuilder::cache_capacity), least recently
//! used out first). A fleet shares one store (`.cache_store(redis)` with
//! `fusion_runtime::redis::RedisStore`, feature `redis`): one run for a burst across
//! replicas, and an invalidation seen by every replica. When the store cannot be reached,
//! calls run uncached.
//!
//! ```
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use fusion_runtime::{prelude::*, testing::Tester};
//!
//! static RUNS: AtomicU32 = AtomicU32::new(0);
//!
//! /// The price of a stock.
//! #[mcp_tool(read_only, cache = "30s")]
//! async fn quote(symbol: String) -> String {
//!     RUNS.fetch_add(1, Ordering::SeqCst);
//!     format!("{symbol}: 42.00")
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let tester = Tester::new(Server::builder("market", "1.0.0").tool(quote).build());
//! let args = serde_json::json!({"symbol": "ACME"});
//! assert_eq!(tester.call("quote", args.clone()).await.text(), "ACME: 42.00");
//! assert_eq!(tester.call("quote", args).await.text(), "ACME: 42.00");
//! // The second call was answered from the cache.
//! assert_eq!(RUNS.load(Ordering::SeqCst), 1);
//! # });
//! ```
//!
//! Caching is unsafe for a tool whose answer depends on more than its arguments and its
//! caller (the time, a random draw, state that changes without a tool that invalidates
//! it), and for a tool with side effects: the macro refuses `cache` on a tool that is not
//! `read_only` or `idempotent`.

mod flights;
mod memory;
mod store;

pub(crate) use flights::{Caching, Landed};

use std::time::Duration;

pub use crate::policy::cache::{CachePolicy, CacheScope};
pub use memory::{DEFAULT_CACHE_CAPACITY, MemoryCacheStore};
pub use store::{CacheStore, CacheUnavailable, CachedEntry, Fill, Lookup};

/// How long clients may treat a list result (`tools/list`, `prompts/list`, ...) as fresh
/// by default: its `ttlMs` under 2026-07-28 ([`ServerBuilder::list_ttl`](crate::ServerBuilder::list_ttl)).
pub const DEFAULT_LIST_TTL: Duration = Duration::from_secs(60);

/// How a cached tool's call was answered, as the call log's `cache` field and the
/// `fusion_tool_cache_total` metric name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CacheUse {
    /// A fresh entry answered it; the handler did not run.
    Hit = 0,
    /// The handler ran for it (no fresh entry, or the store was away).
    Miss,
    /// It waited for an identical call's run and got its answer.
    Coalesced,
    /// Its run failed for a passing reason, and an older entry answered it.
    Stale,
}

impl CacheUse {
    pub(crate) const ALL: [Self; 4] = [Self::Hit, Self::Miss, Self::Coalesced, Self::Stale];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Hit => "hit",
            Self::Miss => "miss",
            Self::Coalesced => "coalesced",
            Self::Stale => "stale",
        }
    }
}
