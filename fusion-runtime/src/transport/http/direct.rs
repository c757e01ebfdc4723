//! `tools/call` on a known session, or without a session from a client of a revision
//! before 2026-07-28, served by the transport itself, straight into the pipeline, past
//! rmcp's `StreamableHttpService` (issue 32), as the stdio transport does
//! (`stdio/direct.rs`).
//!
//! Why: through rmcp, a call's body is parsed by rmcp after the guard read it, handed to
//! the session's worker over a channel, spawned as a task by the service loop, and its
//! answer sent back through the worker to an SSE stream that is written as chunks. Here
//! the guard's bytes are decoded once (the `tools/call` fast path of `decode.rs`, number
//! literals kept), the pipeline runs in the request's own future, and the answer is one
//! `application/json` body.
//!
//! What still goes through rmcp: every other method, `initialize`, notifications and
//! responses, batches, the 2026-07-28 requests (their `_meta` checks are rmcp's), a call
//! that asks for progress (its notifications ride the request's own SSE stream), and
//! every call of a client that declared sampling, elicitation, roots or tasks: a call
//! may then send the client a request, which rmcp routes on the call's own stream. A
//! session's calls go direct only once its client said it is initialized (its peer is
//! known then). Without a session (stateless mode), a call goes direct when its request
//! names no revision from 2026-07-28 on (`MCP-Protocol-Version` absent or older; those
//! requests carry `_meta` and headers whose checks are rmcp's) and no client asked for
//! log messages; it runs with a detached peer ([`DetachedPeer`]), as rmcp gives such a
//! call a peer of its own that reaches nothing but the call's answer.
//!
//! The rest is as through rmcp: the guard's checks (Host, Origin, token, OAuth, session
//! owner, body limit) came first; the id is claimed in the session (a duplicate gets
//! `-32600`), the call waits its turn behind the session's calls in flight, a
//! `notifications/cancelled` or the session's end cancels it (and, as JSON-RPC asks, its
//! answer is not sent: the response is an SSE stream without events, as rmcp's), and a
//! client that hangs up drops the call's future with its request.

use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, HeaderValue, StatusCode, header, request::Parts},
    response::{IntoResponse as _, Response},
};
use rmcp::{
    Peer, RoleServer,
    model::{
        ClientCapabilities, ClientRequest, JsonRpcMessage, JsonRpcRequest, ProtocolVersion,
        RequestId, RequestMetaObject, ServerJsonRpcMessage,
    },
    service::RequestContext,
};

use super::{
    session_entry::{Entry, Refused},
    sessions::{Sessions, session_of},
};
use crate::transport::decode::{self, ClientMessage, Decoded};
use crate::transport::stdio::{CallTool, legacy_answer};

/// What serves the calls that go direct: the server's `call_tool`, and the MCP path (the
/// guard also protects other routes).
pub(super) struct DirectCalls {
    pub(super) call_tool: CallTool,
    pub(super) path: String,
    /// Whether a client asked for log messages (`logging/setLevel`): a call may then send
    /// notifications, which a call without a session can only send on its own SSE stream
    /// (rmcp's).
    pub(super) logs_to_client: Arc<dyn Fn() -> bool + Send + Sync>,
    /// Starts the peer of the calls without a session (`detached_peer`), once, inside the
    /// runtime that serves them.
    pub(super) start_detached: Arc<dyn Fn() -> DetachedPeer + Send + Sync>,
    pub(super) detached: std::sync::OnceLock<DetachedPeer>,
}

/// The peer of the calls served without a session: rmcp's service over a transport that
/// reads nothing and drops what it is sent. A call without a session has no client to
/// reach but its own answer: it knows no client (its capabilities are none, so it asks
/// nothing), and it goes direct only when nothing would be sent (no progress token, no
/// log level). Kept alive with the endpoint.
pub(super) struct DetachedPeer {
    peer: Peer<RoleServer>,
    /// The service holding the peer's loop; dropped with the endpoint.
    _service: Box<dyn std::any::Any + Send + Sync>,
}

impl DetachedPeer {
    /// Starts `service` detached (in the current runtime).
    pub(super) fn start<S: rmcp::Service<RoleServer>>(service: S) -> Self {
        let running = rmcp::service::serve_directly(service, Detached, None);
        Self {
            peer: running.peer().clone(),
            _service: Box::new(running),
        }
    }
}

/// The transport of [`DetachedPeer`]: nothing comes in, what goes out is dropped.
struct Detached;

impl rmcp::transport::Transport<RoleServer> for Detached {
    type Error = std::io::Error;

    fn send(
        &mut self,
        _item: rmcp::service::TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        std::future::ready(Ok(()))
    }

    fn receive(&mut self) -> impl Future<Output = Option<ClientMessage>> + Send {
        std::future::pending()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// The answer to `body` when it is a `tools/call` without a session (stateless mode, a
/// client of a revision before 2026-07-28) that this transport serves itself; the parts
/// back, untouched, to leave it to rmcp.
pub(super) async fn serve_stateless(
    direct: &DirectCalls,
    parts: Parts,
    body: &Bytes,
) -> Result<Response, Parts> {
    let served_here = parts.uri.path() == direct.path
        && accepts_json(&parts.headers)
        && session_of(&parts.headers).is_none()
        && legacy_version(&parts.headers)
        && may_be_a_call(body)
        && !(direct.logs_to_client)();
    if !served_here {
        return Err(parts);
    }
    let Decoded::Message(message) = decode::decode_line(body) else {
        return Err(parts);
    };
    let peer = direct
        .detached
        .get_or_init(|| (direct.start_detached)())
        .peer
        .clone();
    let Some((id, params, mut context)) = taken_apart(*message, peer) else {
        return Err(parts);
    };
    // The request's parts in the extensions, as rmcp puts them: tools see the headers and
    // the verified token's claims. A client that hangs up drops this future, and the call
    // with it.
    context.extensions.insert(parts);
    // Await: the call, through the pipeline.
    let answered = (direct.call_tool)(params, context).await;
    Ok(answer(StatusCode::OK, legacy_answer(answered, id)))
}

/// A stateless request of a revision before 2026-07-28: `MCP-Protocol-Version` absent
/// (rmcp then assumes 2025-03-26) or one of those revisions, once.
fn legacy_version(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all("mcp-protocol-version").iter();
    match (values.next(), values.next()) {
        (None, _) => true,
        (Some(value), None) => ProtocolVersion::KNOWN_VERSIONS.iter().any(|known| {
            known.as_str().as_bytes() == value.as_bytes()
                && known.as_str() < ProtocolVersion::V_2026_07_28.as_str()
        }),
        (Some(_), Some(_)) => false,
    }
}

/// The answer to `body` when it is a `tools/call` this transport serves itself; the
/// request's parts back, untouched, to leave it to rmcp.
pub(super) async fn serve(
    direct: &DirectCalls,
    sessions: &Sessions,
    parts: Parts,
    body: &Bytes,
) -> Result<Response, Parts> {
    let Some((entry, peer)) = session_to_serve(direct, sessions, &parts, body) else {
        return Err(parts);
    };
    let Decoded::Message(message) = decode::decode_line(body) else {
        return Err(parts);
    };
    let Some((id, params, mut context)) = taken_apart(*message, peer) else {
        return Err(parts);
    };
    let cancel = context.ct.clone();
    let limits = sessions.limits();
    let number = match entry.claim(&id, limits.max_requests(), Some(cancel.clone())) {
        Ok(number) => number,
        // Over the queue: what the guard answers when it sees it first (this request raced
        // it).
        Err(Refused::Full) => return Ok(sessions.full(id)),
        Err(refused @ Refused::IdInUse) => {
            let error = sessions.refusal(refused, &id);
            return Ok(answer(
                StatusCode::OK,
                JsonRpcMessage::error(error, Some(id)),
            ));
        }
    };
    // From here until the answer, a drop (the client hung up) gives the id back and
    // cancels the call with it.
    let claim = DirectClaim {
        entry: Arc::clone(&entry),
        id,
        number,
    };
    // Await: the call's turn behind the session's calls in flight.
    if !entry.take_turn(&claim.id, number).await {
        // Cancelled while it waited, or the session ended.
        return Ok(no_answer());
    }
    // What rmcp puts in a request's extensions: tools see the HTTP request (its headers,
    // the verified token's claims) through it.
    context.extensions.insert(parts);
    // Await: the call, through the pipeline.
    let answered = (direct.call_tool)(params, context).await;
    // Looked at before the claim goes: giving it back cancels the token.
    let cancelled = cancel.is_cancelled();
    let id = claim.id.clone();
    drop(claim);
    if cancelled {
        // `notifications/cancelled`, or the session's end: no answer (JSON-RPC).
        return Ok(no_answer());
    }
    Ok(answer(StatusCode::OK, legacy_answer(answered, id)))
}

/// The session of a request whose call may go direct, and its peer: the MCP path, a
/// client that accepts JSON, a known and initialized session whose calls go direct, and
/// a body that may be such a call.
fn session_to_serve(
    direct: &DirectCalls,
    sessions: &Sessions,
    parts: &Parts,
    body: &[u8],
) -> Option<(Arc<Entry>, Peer<RoleServer>)> {
    if parts.uri.path() != direct.path || !accepts_json(&parts.headers) {
        return None;
    }
    let entry = sessions.named(session_of(&parts.headers)?)?;
    let peer = entry.peer()?.clone();
    (goes_direct(&peer, &parts.headers) && may_be_a_call(body)).then_some((entry, peer))
}

/// A call's claim on its id while it runs here: dropped (answered, or the request's
/// future dropped when its client hung up), it frees the id and the call's turn, and
/// cancels what is still running of it.
struct DirectClaim {
    entry: Arc<Entry>,
    id: RequestId,
    number: u64,
}

impl Drop for DirectClaim {
    fn drop(&mut self) {
        self.entry.give_back(&self.id, self.number);
    }
}

/// Whether calls of the session whose peer this is, sent with these headers, go direct:
/// a protocol revision before 2026-07-28 (whose checks are rmcp's), named the same way by
/// the request's header (rmcp answers a mismatch), and a client that cannot be sent a
/// request (see the module's docs).
fn goes_direct(peer: &Peer<RoleServer>, headers: &HeaderMap) -> bool {
    let Some(info) = peer.peer_info() else {
        return false;
    };
    if info.protocol_version >= ProtocolVersion::V_2026_07_28 {
        return false;
    }
    let version_matches = match headers.get("mcp-protocol-version") {
        None => true,
        Some(value) => value.as_bytes() == info.protocol_version.as_str().as_bytes(),
    };
    version_matches && !may_be_asked(&info.capabilities)
}

/// Whether a call may send the client a request (sampling, elicitation, roots) or run as
/// a task, by what the client declared.
fn may_be_asked(capabilities: &ClientCapabilities) -> bool {
    capabilities.sampling.is_some()
        || capabilities.elicitation.is_some()
        || capabilities.roots.is_some()
        || capabilities.supports_tasks()
}

/// A POST may be answered as JSON: its `Accept` names `application/json` (the protocol
/// asks clients to name it with `text/event-stream`; rmcp answers those that do not).
fn accepts_json(headers: &HeaderMap) -> bool {
    let names = |media: &str| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .any(|value| value.to_str().is_ok_and(|value| value.contains(media)))
    };
    names("application/json") && names("text/event-stream")
}

/// A cheap look before decoding: the body names `tools/call`, and no `task` (a task
/// request goes through rmcp, whose dispatch reads it) nor `progressToken` (progress
/// rides the request's own SSE stream).
fn may_be_a_call(body: &[u8]) -> bool {
    let has = |needle: &[u8]| memchr::memmem::find(body, needle).is_some();
    has(b"\"tools/call\"") && !has(b"\"task\"") && !has(b"\"progressToken\"")
}

/// The call's params and context, as rmcp's service loop makes them, when `message` is a
/// `tools/call` that goes direct.
fn taken_apart(
    message: ClientMessage,
    peer: Peer<RoleServer>,
) -> Option<(
    RequestId,
    rmcp::model::CallToolRequestParams,
    RequestContext<RoleServer>,
)> {
    let JsonRpcMessage::Request(JsonRpcRequest {
        id,
        request: ClientRequest::CallToolRequest(mut request),
        ..
    }) = message
    else {
        return None;
    };
    let meta = request
        .extensions
        .remove::<RequestMetaObject>()
        .unwrap_or_default();
    if meta.protocol_version().is_some() || meta.get_progress_token().is_some() {
        return None;
    }
    let mut context = RequestContext::new(id.clone(), peer);
    context.meta = meta;
    context.extensions = std::mem::take(&mut request.extensions);
    Some((id, request.params, context))
}

/// One JSON-RPC message as the whole response.
fn answer(status: StatusCode, message: ServerJsonRpcMessage) -> Response {
    match serde_json::to_vec(&message) {
        Ok(body) => (
            status,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            Body::from(body),
        )
            .into_response(),
        Err(error) => {
            tracing::error!(target: "fusion::transport", %error, "an answer could not be serialized");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

/// The response to a request that gets no answer (it was cancelled): an SSE stream
/// without events, as rmcp ends the stream of a cancelled request.
fn no_answer() -> Response {
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        )],
        Body::empty(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_revisions_before_2026_07_28_go_direct_without_a_session() {
        let mut headers = HeaderMap::new();
        assert!(
            legacy_version(&headers),
            "no header: rmcp assumes 2025-03-26"
        );
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        assert!(legacy_version(&headers));
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2026-07-28"),
        );
        assert!(!legacy_version(&headers));
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("1999-01-01"),
        );
        assert!(
            !legacy_version(&headers),
            "rmcp answers an unknown revision"
        );
        headers.insert(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        headers.append(
            "mcp-protocol-version",
            HeaderValue::from_static("2025-11-25"),
        );
        assert!(
            !legacy_version(&headers),
            "a repeated header is rmcp's to refuse"
        );
    }

    #[test]
    fn only_bodies_that_name_a_call_without_task_or_progress_are_decoded() {
        assert!(may_be_a_call(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#
        ));
        assert!(!may_be_a_call(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#
        ));
        assert!(!may_be_a_call(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}"#
        ));
        assert!(!may_be_a_call(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}"#
        ));
    }

    #[test]
    fn json_is_chosen_only_for_a_client_that_accepts_it_and_the_stream() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts_json(&headers));
        headers.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        assert!(!accepts_json(&headers));
        headers.append(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        assert!(accepts_json(&headers));
    }

    // Sampling and roots are deprecated by the 2026-07-28 revision; clients of the
    // earlier ones, which these sessions serve, still declare them.
    #[allow(deprecated)]
    #[test]
    fn a_client_that_may_be_asked_keeps_rmcp() {
        assert!(!may_be_asked(&ClientCapabilities::default()));
        assert!(may_be_asked(
            &ClientCapabilities::builder().enable_sampling().build()
        ));
        assert!(may_be_asked(
            &ClientCapabilities::builder().enable_roots().build()
        ));
    }
}
