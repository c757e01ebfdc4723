//! The change bus of a fleet on Redis (`changes/`): a change is `PUBLISH`ed on one channel,
//! and every replica follows it on a connection of its own. Pub/sub keeps nothing: a
//! replica that was away hears of no change made meanwhile, as the bus promises (a client
//! that reconnects lists again). On a Redis Cluster a classic `PUBLISH` reaches the
//! subscribers of every node; under Sentinel the subscription follows the primary.

use super::{RedisStore, connection::COMMAND_TIMEOUT};
use crate::{
    changes::{ChangeBus, ChangeBusError, MessageListener},
    future::BoxFuture,
};

impl RedisStore {
    fn change_channel(&self) -> String {
        format!("{}changes", self.prefix)
    }
}

impl ChangeBus for RedisStore {
    fn publish<'a>(&'a self, messages: &'a [String]) -> BoxFuture<'a, Result<(), ChangeBusError>> {
        Box::pin(async move {
            let channel = self.change_channel();
            let mut connection = self.connection.clone();
            // One round trip for a burst of changes, in order.
            let mut pipe = redis::pipe();
            for message in messages {
                pipe.publish(&channel, message).ignore();
            }
            let published = pipe.query_async::<()>(&mut connection);
            match tokio::time::timeout(COMMAND_TIMEOUT, published).await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(error)) => Err(ChangeBusError::Unavailable(format!("Redis: {error}"))),
                Err(_) => Err(ChangeBusError::Unavailable(format!(
                    "Redis did not answer within {COMMAND_TIMEOUT:?}"
                ))),
            }
        })
    }

    fn subscribe(&self, listener: MessageListener) -> Option<BoxFuture<'static, ()>> {
        Some(super::subscription::follow(
            self.client.clone(),
            self.change_channel(),
            "changes",
            move |message| listener(message),
        ))
    }
}
