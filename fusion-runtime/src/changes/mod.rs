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
mod outlet;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::future::BoxFuture;

pub(crate) use self::hub::Hub;
pub use self::memory::MemoryChangeBus;

/// How many notifications wait for one subscriber before the oldest is dropped.
pub const SUBSCRIBER_QUEUE: usize = 256;

/// A change that subscribers are told of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// The resource `uri` changed (`notifications/resources/updated`), for the clients
    /// subscribed to it.
    ResourceUpdated {
        /// The resource's URI, as subscribed to.
        uri: String,
    },
    /// The tool list changed (`notifications/tools/list_changed`).
    ToolsListChanged,
    /// The prompt list changed (`notifications/prompts/list_changed`).
    PromptsListChanged,
    /// The resource list changed (`notifications/resources/list_changed`).
    ResourcesListChanged,
}

/// Why a change could not be published to the other replicas (this replica's
/// subscribers were told all the same).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChangeBusError {
    /// The bus (Redis, say) could not be reached.
    #[error("the change bus is unavailable: {0}")]
    Unavailable(String),
}

/// What a bus hands each message published by a replica to.
pub type MessageListener = Arc<dyn Fn(&str) + Send + Sync>;

/// Carries change messages between the replicas of a fleet. A message is text the server
/// writes and reads itself (the change, and which replica sent it); the bus only carries
/// it to every replica listening, the sender included, at most once each.
///
/// Implemented by [`MemoryChangeBus`] (one process) and `fusion_runtime::redis::RedisStore`
/// (feature `redis`).
pub trait ChangeBus: Send + Sync + 'static {
    /// Sends `message` to every replica listening.
    ///
    /// # Errors
    /// [`ChangeBusError::Unavailable`] when it could not be sent.
    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), ChangeBusError>>;

    /// The task that hands every message published on the bus to `listener`, for as long
    /// as the server serves (it is aborted when the server stops). It should subscribe
    /// again on its own after the bus was lost. `None` when the bus carries nothing
    /// between processes.
    fn subscribe(&self, listener: MessageListener) -> Option<BoxFuture<'static, ()>>;
}

/// Tells the subscribers of every replica of a change. Cheap to clone; it may be made
/// before the server is built ([`ServerBuilder::notifier`](crate::ServerBuilder::notifier)),
/// to be handed to the tools.
#[derive(Clone)]
pub struct Notifier {
    pub(crate) hub: Arc<Hub>,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("Notifier").finish_non_exhaustive()
    }
}

impl Notifier {
    /// Tells this replica's subscribers of `change` now, and publishes it to the others.
    /// A bus that cannot be reached is logged (`fusion::changes`) and does not fail the
    /// caller: the subscribers of this replica were told, and those of the others re-list
    /// when they reconnect.
    pub async fn publish(&self, change: Change) {
        self.hub.publish(change).await;
    }

    /// [`publish`](Self::publish) of [`Change::ResourceUpdated`].
    pub async fn resource_updated(&self, uri: &str) {
        self.publish(Change::ResourceUpdated {
            uri: uri.to_owned(),
        })
        .await;
    }
}
