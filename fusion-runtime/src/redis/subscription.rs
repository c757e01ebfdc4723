//! A subscription to one Redis channel that lasts as long as the server serves: it
//! connects on a connection of its own, hands each message's text on, and subscribes again
//! half a second after it was lost. The task signals (`tasks.rs`) and the change bus
//! (`changes.rs`) each hold one.

use std::time::Duration;

use futures_util::StreamExt as _;

use super::connection::PubSubClient;
use crate::future::BoxFuture;

/// How long to wait before subscribing again after the subscription was lost.
const RESUBSCRIBE: Duration = Duration::from_millis(500);

/// Hands every message published on `channel` to `on_message`, for ever; `what` names the
/// channel in the logs.
pub(super) fn follow(
    client: PubSubClient,
    channel: String,
    what: &'static str,
    on_message: impl Fn(&str) + Send + 'static,
) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        loop {
            // Await: connecting and subscribing; a failure is tried again below.
            let subscribed = async {
                let mut pubsub = client.get_async_pubsub().await?;
                pubsub.subscribe(&channel).await?;
                Ok::<_, redis::RedisError>(pubsub)
            }
            .await;
            match subscribed {
                Ok(pubsub) => {
                    let mut messages = pubsub.into_on_message();
                    while let Some(message) = messages.next().await {
                        if let Ok(text) = message.get_payload::<String>() {
                            on_message(&text);
                        }
                    }
                    tracing::debug!(target: "fusion::redis", what, "a subscription ended; subscribing again");
                }
                Err(error) => {
                    tracing::debug!(target: "fusion::redis", what, %error, "cannot subscribe; trying again");
                }
            }
            tokio::time::sleep(RESUBSCRIBE).await;
        }
    })
}
