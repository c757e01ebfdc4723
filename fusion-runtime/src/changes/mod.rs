//! Change notifications that reach the subscribers of every replica: a resource updated
//! (`notifications/resources/updated`) and the lists of tools, prompts and resources
//! changed (`notifications/*/list_changed`).
//!
//! A [`Notifier`] (from [`ServerBuilder::notifier`](crate::ServerBuilder::notifier) or
//! [`Server::notifier`](crate::Server::notifier)) tells this replica's subscribers at once
//! and publishes the change on the server's [`ChangeBus`]; every other replica on that bus
//! tells its own. Each subscriber hears of a change once, whichever replica it is connected
//! to: the legacy `resources/subscribe` of a session, and the `subscriptions/listen` stream
//! of a 2026-07-28 client.
//!
//! - The default bus is this process alone ([`MemoryChangeBus`]); replicas share one
//!   with `.change_bus(redis.clone())` (`fusion_runtime::redis::RedisStore`, feature
//!   `redis`: Redis pub/sub).
//! - A replica that was away does not replay what it missed: a client that reconnects lists
//!   again.
//! - Bounded: each subscriber has a queue of [`SUBSCRIBER_QUEUE`] notifications. When a
//!   subscriber does not read, the oldest are dropped first and counted
//!   ([`MetricsSnapshot::notifications_dropped`](crate::metrics::MetricsSnapshot::notifications_dropped),
//!   `fusion_notifications_dropped_total`).
//!
//! ```
//! use fusion_runtime::{changes::Change, prelude::*};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let builder = Server::builder("stock", "1.0.0")
//!     .resource("stock://apples", "apples", "text/plain", || async { "12 left" });
//! // Handed to the tools (in their context, say) before the server is built.
//! let notifier = builder.notifier();
//! let server = builder.build();
//! notifier.resource_updated("stock://apples").await;
//! notifier.publish(Change::ToolsListChanged).await;
//! assert_eq!(server.metrics().notifications_dropped, 0);
//! # });
//! ```

mod builder;
mod hub;
mod memory;
mod model;
mod notifier;
mod outlet;

pub(crate) use self::hub::Hub;
pub use self::{
    memory::MemoryChangeBus,
    model::{Change, ChangeBus, ChangeBusError, MessageListener, OUTGOING, SUBSCRIBER_QUEUE},
    notifier::Notifier,
};
