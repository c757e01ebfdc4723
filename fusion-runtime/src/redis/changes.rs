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
    fn publish(&self, message: String) -> BoxFuture<'_, Result<(), ChangeBusError>> {
        Box::pin(async move {
            let mut connection = self.connection.clone();
            let mut command = redis::cmd("PUBLISH");
            command.arg(self.change_channel()).arg(message);
            let published = command.query_async::<i64>(&mut connection);
            match tokio::time::timeout(COMMAND_TIMEOUT, published).await {
                Ok(Ok(_listeners)) => Ok(()),
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
