//! How a call reaches its client: the notifications it sends (progress, log messages) and
//! the requests it makes (sampling, elicitation, roots), each answered by the client.
//!
//! Two roads, chosen by the transport that serves the call:
//! - **the call's own stream** ([`CallStream`]): a transport that serves the call itself
//!   (Streamable HTTP, `transport/http/call_stream.rs`) sends the call's messages on the
//!   answer to its own request, and routes the client's answers back to the call by id;
//! - **rmcp's peer** of the session, for a call served through rmcp's service or over
//!   stdio (where one stream carries everything).
//!
//! [`Call`](super::Call) picks the road in one place ([`Link`]); its methods (progress,
//! log, elicit, sample, roots) are written once against it.

use std::sync::Arc;

use rmcp::{
    Peer, RoleServer,
    model::{ClientCapabilities, ServerNotification, ServerRequest},
};
use serde_json::Value;

use crate::future::BoxFuture;

/// A call's own stream to its client, kept by the transport that serves the call.
pub(crate) trait CallStream: Send + Sync + std::fmt::Debug {
    /// What the client declared it can do, at the session's start.
    fn capabilities(&self) -> &ClientCapabilities;

    /// Sends `notification` on the call's stream. An error says the client is gone.
    fn notify(&self, notification: ServerNotification) -> Result<(), String>;

    /// Sends `request` on the call's stream and waits for the client's answer: its
    /// `result`, or the error it answered with, as text.
    fn request(&self, request: ServerRequest) -> BoxFuture<'static, Result<Value, String>>;
}

/// The call's own stream, as a transport hands it to the protocol in the request's
/// extensions (`protocol/call.rs` gives it to the [`Call`](super::Call)).
#[derive(Clone, Debug)]
pub(crate) struct OwnStream(pub(crate) Arc<dyn CallStream>);

/// The road a call's messages take to its client.
pub(super) enum Link<'a> {
    Stream(&'a dyn CallStream),
    Peer(&'a Peer<RoleServer>),
}

impl Link<'_> {
    /// What the client declared, when it is known.
    pub(super) fn capabilities(&self) -> Option<ClientCapabilities> {
        match self {
            Self::Stream(stream) => Some(stream.capabilities().clone()),
            Self::Peer(peer) => peer.peer_info().map(|info| info.capabilities.clone()),
        }
    }

    /// Sends `notification`; an error says it did not leave.
    pub(super) async fn notify(&self, notification: ServerNotification) -> Result<(), String> {
        match self {
            Self::Stream(stream) => stream.notify(notification),
            Self::Peer(peer) => peer
                .send_notification(notification)
                .await
                .map_err(|error| error.to_string()),
        }
    }

    /// Sends `request` and returns the client's `result`, as JSON.
    pub(super) async fn request(&self, request: ServerRequest) -> Result<Value, String> {
        match self {
            Self::Stream(stream) => stream.request(request).await,
            Self::Peer(peer) => {
                let result = peer
                    .send_request(request)
                    .await
                    .map_err(|error| error.to_string())?;
                serde_json::to_value(result).map_err(|error| error.to_string())
            }
        }
    }
}
