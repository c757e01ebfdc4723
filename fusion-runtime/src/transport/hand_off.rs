//! Where a transport hands the `tools/call` requests it serves itself (past rmcp's service
//! loop: stdio's `direct.rs`, HTTP's `direct.rs`) to the server: the [`CallHandler`] trait,
//! which [`Server`] implements with the protocol's own entry, `protocol::call::answer_call`.
//! A trait object rather than a closure, so that a reader follows the call by name.

use std::sync::Arc;

use rmcp::{
    RoleServer,
    model::{
        CallToolRequest, CallToolRequestParams, CallToolResponse, ClientRequest, ErrorData,
        JsonRpcMessage, JsonRpcRequest, RequestId,
    },
    service::{Peer, RequestContext},
};

use crate::{
    future::BoxFuture, protocol::answer_call, setup::server::Server,
    transport::decode::ClientMessage,
};

/// What serves a `tools/call` a transport took past rmcp: the server, whatever its context
/// type (the transports do not name it).
pub(crate) trait CallHandler: Send + Sync {
    /// The answer to one call, as `ServerHandler::call_tool` gives it.
    fn answer(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> BoxFuture<'static, Result<CallToolResponse, ErrorData>>;
}

/// The server as the transports hold it.
pub(crate) type Calls = Arc<dyn CallHandler>;

impl<C: Send + Sync + 'static> CallHandler for Server<C> {
    fn answer(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> BoxFuture<'static, Result<CallToolResponse, ErrorData>> {
        let server = self.clone();
        // Boxed once, here: the transport polls it where it read the request and moves it
        // to a task only when it does not end in that first poll.
        Box::pin(async move { answer_call(&server, params, context).await })
    }
}

/// A `tools/call` request taken apart as rmcp's loop takes it before it calls the handler:
/// its `_meta` becomes the context's meta, its other extensions (the HTTP request's parts,
/// the verified claims) go with it, and the context's peer is the session's.
pub(crate) fn call_context(
    id: RequestId,
    mut request: CallToolRequest,
    peer: Peer<RoleServer>,
) -> (CallToolRequestParams, RequestContext<RoleServer>) {
    let meta = request
        .extensions
        .remove::<rmcp::model::RequestMetaObject>()
        .unwrap_or_default();
    let mut context = RequestContext::new(id, peer);
    context.meta = meta;
    context.extensions = std::mem::take(&mut request.extensions);
    (request.params, context)
}

/// A `tools/call` message taken apart into its id and request, which a transport checks
/// before it serves the call itself; any other message is handed back as it came.
pub(crate) fn tool_call(
    message: Box<ClientMessage>,
) -> Result<(RequestId, CallToolRequest), Box<ClientMessage>> {
    if !matches!(
        &*message,
        JsonRpcMessage::Request(JsonRpcRequest {
            request: ClientRequest::CallToolRequest(_),
            ..
        })
    ) {
        return Err(message);
    }
    match *message {
        JsonRpcMessage::Request(JsonRpcRequest {
            id,
            request: ClientRequest::CallToolRequest(request),
            ..
        }) => Ok((id, request)),
        other => Err(Box::new(other)),
    }
}

/// A call [`tool_call`] took apart, put back together for rmcp when the transport does not
/// serve it after all.
pub(crate) fn untaken(id: RequestId, request: CallToolRequest) -> Box<ClientMessage> {
    Box::new(JsonRpcMessage::request(
        ClientRequest::CallToolRequest(request),
        id,
    ))
}
