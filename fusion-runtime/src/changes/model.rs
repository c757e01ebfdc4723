//! What a change is, and what carries it between replicas: the [`ChangeBus`] that
//! [`MemoryChangeBus`](super::MemoryChangeBus) and `RedisStore` implement.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::future::BoxFuture;

/// How many notifications wait for one subscriber before the oldest is dropped.
pub const SUBSCRIBER_QUEUE: usize = 256;

/// How many changes wait for the bus before a new one is left unpublished.
pub const OUTGOING: usize = 4096;

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
/// The server hands the bus its messages from one task, in the order the changes were
/// made, several at once when they come faster than the bus takes them: a tool that makes
/// a change never waits for the bus.
///
/// Implemented by [`MemoryChangeBus`](super::MemoryChangeBus) (one process) and `fusion_runtime::redis::RedisStore`
/// (feature `redis`).
pub trait ChangeBus: Send + Sync + 'static {
    /// Sends `messages`, in order, to every replica listening.
    ///
    /// # Errors
    /// [`ChangeBusError::Unavailable`] when they could not be sent.
    fn publish<'a>(&'a self, messages: &'a [String]) -> BoxFuture<'a, Result<(), ChangeBusError>>;

    /// The task that hands every message published on the bus to `listener`, for as long
    /// as the server serves (it is aborted when the server stops). It should subscribe
    /// again on its own after the bus was lost. `None` when the bus carries nothing
    /// between processes.
    fn subscribe(&self, listener: MessageListener) -> Option<BoxFuture<'static, ()>>;
}
