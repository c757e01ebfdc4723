//! State that replicas share, on Redis (feature `redis`): idempotency keys that run once
//! across the fleet ([`RedisStore`]), rate limits that hold for the fleet as a whole
//! ([`RedisStore::rate_limit`]), one writer per key across the fleet
//! (`#[mcp_tool(serialize = "..")]` with `.lock_store(redis.clone())`, see
//! [`RedisStore::lock_lease`]), and tasks that any replica answers for and that outlive
//! the replica that runs them (`.task_store(redis.clone())`, see
//! [`tasks`](crate::tasks)).
//!
//! ```no_run
//! use fusion_runtime::{prelude::*, redis::RedisStore};
//!
//! /// Place an order once per `order_id`, whichever replica gets the call.
//! #[mcp_tool(destructive, idempotency_key = "order_id")]
//! async fn place_order(order_id: String, item: String) -> String {
//!     format!("ordered {item} as {order_id}")
//! }
//!
//! # async fn serve() -> Result<std::process::ExitCode, fusion_runtime::redis::RedisError> {
//! let redis = RedisStore::connect("redis://127.0.0.1:6379").await?;
//! let code = Server::builder("orders", "1.0.0")
//!     .middleware(redis.rate_limit(50.0, 100))
//!     .idempotency_store(redis)
//!     .tool(place_order)
//!     .serve_http("127.0.0.1:8931")
//!     .await;
//! # Ok(code)
//! # }
//! ```

mod lock;
mod rate;
mod store;
mod tasks;

pub use ::redis::RedisError;

pub use self::store::RedisStore;
