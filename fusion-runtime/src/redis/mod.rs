//! State that replicas share, on Redis (feature `redis`): idempotency keys that run once
//! across the fleet ([`RedisStore`]), rate limits that hold for the fleet as a whole
//! ([`RedisStore::rate_limit`]), one writer per key across the fleet
//! (`#[mcp_tool(serialize = "..")]` with `.lock_store(redis.clone())`, see
//! [`RedisStore::lock_lease`]), and tasks that any replica answers for and that outlive
//! the replica that runs them (`.task_store(redis.clone())`, see
//! [`tasks`](crate::tasks)), and the answers of `#[mcp_tool(cache = "..")]` shared by the
//! fleet (`.cache_store(redis.clone())`, see [`cache`](crate::cache)): one run for a burst
//! of identical calls across replicas, an invalidation seen by every replica at once, and
//! calls run uncached while Redis is away (answers over [`CACHE_VALUE_LIMIT`] are not
//! stored).
//!
//! Redis may be one server ([`RedisStore::connect`]), a Redis Cluster
//! ([`RedisStore::connect_cluster`]: the keys of each script share a hash slot) or a
//! primary with replicas under Sentinel ([`RedisStore::connect_sentinel`]: the store
//! follows a failover).
//!
//! ```no_run
//! use fusion_runtime::{prelude::*, redis::RedisStore};
//!
//! /// Place an order once per `order_id`, whichever replica gets the call.
//! #[mcp_tool(destructive, idempotency_key = "order_id", invalidates = ["stock"])]
//! async fn place_order(order_id: String, item: String) -> String {
//!     format!("ordered {item} as {order_id}")
//! }
//!
//! /// What is left of an item: one run per burst, fleet-wide; fresh for 30 s.
//! #[mcp_tool(read_only, cache = "30s", stale_if_error = "10m", cache_scope = "public")]
//! async fn stock(item: String) -> String {
//!     format!("{item}: 12 left")
//! }
//!
//! # async fn serve() -> Result<std::process::ExitCode, fusion_runtime::redis::RedisError> {
//! let redis = RedisStore::connect("redis://127.0.0.1:6379").await?;
//! let code = Server::builder("orders", "1.0.0")
//!     .middleware(redis.rate_limit(50.0, 100))
//!     .cache_store(redis.clone())
//!     .idempotency_store(redis)
//!     .tool(place_order)
//!     .tool(stock)
//!     .serve_http("127.0.0.1:8931")
//!     .await;
//! # Ok(code)
//! # }
//! ```

mod cache;
mod changes;
mod connection;
mod lock;
mod rate;
mod store;
mod subscription;
mod tasks;
mod topology;

pub use ::redis::RedisError;

pub use self::{cache::CACHE_VALUE_LIMIT, store::RedisStore};
