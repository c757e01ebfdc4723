//! What the stdio transport reads off a decoded message: the request it must answer before
//! shutting down, whether rmcp has left its handshake, and the request a cancel gives up.

use rmcp::{
    RoleServer,
    model::{ClientNotification, ClientRequest, JsonRpcMessage, ProtocolVersion, RequestId},
    service::RxJsonRpcMessage,
};

/// A message from the client, as rmcp's server side reads it.
type ClientMessage = RxJsonRpcMessage<RoleServer>;

/// The request a message opens, when the transport must wait for its answer before
/// shutting down. A `subscriptions/listen` request stays open by design, so it is not one.
pub(crate) fn awaited_request(message: &ClientMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Request(request)
            if !matches!(
                request.request,
                ClientRequest::SubscriptionsListenRequest(_)
            ) =>
        {
            Some(&request.id)
        }
        _ => None,
    }
}

/// Whether rmcp leaves its handshake on this message, by rmcp's own rule
/// (`serve_server`): an `initialize` request, or (MCP 2026-07-28, stateless) a request
/// other than `ping` and `server/discover` whose `_meta` carries every key that revision
/// requires and a protocol version the server supports. On anything else rmcp answers and
/// stays in its handshake, where a notification would end the whole service: the transport
/// must not take the handshake for over sooner than rmcp does.
pub(crate) fn ends_handshake(message: &ClientMessage, supported: &[ProtocolVersion]) -> bool {
    use rmcp::model::GetMeta as _;
    let JsonRpcMessage::Request(request) = message else {
        return false;
    };
    match &request.request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28)
                .is_empty()
                && meta
                    .protocol_version()
                    .is_some_and(|version| supported.contains(&version))
        }
    }
}

/// The request a `notifications/cancelled` message gives up on: rmcp drops the answer of a
/// cancelled request, so the transport stops waiting for it.
pub(crate) fn cancelled_request(message: &ClientMessage) -> Option<&RequestId> {
    match message {
        JsonRpcMessage::Notification(notification) => match &notification.notification {
            ClientNotification::CancelledNotification(cancelled) => {
                cancelled.params.request_id.as_ref()
            }
            _ => None,
        },
        _ => None,
    }
}
