//! The change bus of one process: servers that share a clone of it hear each other's
//! changes (a test, or several servers in one process); a server that owns one alone, as
//! by default, hears only its own, which it already told its subscribers.

use tokio::sync::broadcast;

use super::model::{ChangeBus, ChangeBusError, MessageListener};
use crate::future::BoxFuture;

/// How many messages a listener may fall behind by before it misses the oldest.
const BACKLOG: usize = 1024;

/// A [`ChangeBus`] within this process. Clones share it.
///
/// ```
/// use fusion_runtime::{changes::MemoryChangeBus, prelude::*};
///
/// let bus = MemoryChangeBus::new();
/// let first = Server::builder("a", "1.0.0").change_bus(bus.clone()).build();
/// let second = Server::builder("b", "1.0.0").change_bus(bus).build();
/// # let _ = (first, second);
/// ```
#[derive(Clone, Debug)]
pub struct MemoryChangeBus {
    sender: broadcast::Sender<String>,
}

impl MemoryChangeBus {
    /// A bus that nothing listens to yet.
    pub fn new() -> Self {
        Self {
            sender: broadcast::channel(BACKLOG).0,
        }
    }
}

impl Default for MemoryChangeBus {
    fn default() -> Self {
        Self::new()
    }
}

impl ChangeBus for MemoryChangeBus {
    fn publish<'a>(&'a self, messages: &'a [String]) -> BoxFuture<'a, Result<(), ChangeBusError>> {
        for message in messages {
            // An error only says that nobody listens now, which is no failure to publish.
            let _ = self.sender.send(message.clone());
        }
        Box::pin(std::future::ready(Ok(())))
    }

    fn subscribe(&self, listener: MessageListener) -> Option<BoxFuture<'static, ()>> {
        let mut receiver = self.sender.subscribe();
        Some(Box::pin(async move {
            loop {
                match receiver.recv().await {
                    Ok(message) => listener(&message),
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(target: "fusion::changes", missed, "a listener fell behind the in-memory change bus");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        }))
    }
}
