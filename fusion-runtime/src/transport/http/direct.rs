//! `tools/call` on a known session, or without a session, served by the transport
//! itself, straight into the pipeline, past rmcp's `StreamableHttpService` (issue 32), as
//! the stdio transport does (`stdio/direct.rs`).
//!
//! Why: through rmcp, a call's body is parsed by rmcp after the guard read it, handed to
//! the session's worker over a channel (or, without a session, to a service started for
//! the one request), spawned as a task by the service loop, and its answer sent back
//! through the worker to an SSE stream that is written as chunks. Here the guard's bytes
//! are decoded once (the `tools/call` fast path of `decode.rs`, number literals kept),
//! the pipeline runs in the request's own future, and the answer is one
//! `application/json` body.
//!
//! What goes direct:
//! - a call on a session of a revision before 2026-07-28, once its client said it is
//!   initialized (its peer is known then), whatever the client declared: what the call
//!   sends its client (progress, log messages, sampling, elicitation, roots) rides the
//!   answer to its own POST, which becomes an SSE stream from the first such message on
//!   (`call_stream.rs`, `answer.rs`), and the client's answers, POSTed on the session,
//!   come back to it by id (`asked.rs`, [`answer_to_asked`]); a call that sends nothing
//!   is one JSON body, as for a client that declared nothing (issue 56);
//! - a call of the 2026-07-28 revision (no session; its lifecycle in its `_meta`), in
//!   either mode, when it passes every check rmcp makes of its headers and `_meta`
//!   (`current.rs`) and asks for no log messages;
//! - in stateless mode, a call from a client of an earlier revision
//!   (`MCP-Protocol-Version` absent or older), when no client asked for log messages.
//!
//! A call without a session runs with a detached peer ([`DetachedPeer`]), as rmcp gives
//! such a call a peer of its own that reaches nothing but the call's answer.
//!
//! What still goes through rmcp: every other method, `initialize`, notifications,
//! the answers to rmcp's own requests, batches, a call without a session that asks for
//! progress (its notifications ride rmcp's SSE stream), a task request (`task` in its
//! params), and every request that fails a check (rmcp answers it as it always did).
//!
//! The rest is as through rmcp: the guard's checks (Host, Origin, token, OAuth, session
//! owner, body limit) came first; on a session the id is claimed (a duplicate gets
//! `-32600`), the call waits its turn behind the session's calls in flight, a
//! `notifications/cancelled` or the session's end cancels it (and, as JSON-RPC asks, its
//! answer is not sent: the response is an SSE stream without events, as rmcp's), and a
//! client that hangs up drops the call's future with its request.

use std::sync::Arc;

use axum::{
    body::Bytes,
    http::{HeaderMap, StatusCode, header, request::Parts},
    response::{IntoResponse as _, Response},
};
use rmcp::{
    Peer, RoleServer,
    model::{ClientCapabilities, JsonRpcMessage, ProtocolVersion, RequestId, RequestMetaObject},
    service::RequestContext,
};

use super::{
    answer::{Pending, at_once, in_time, in_time_or_sent},
    asked,
    call_stream::SessionCallStream,
    current::{CurrentRevision, current_answer},
    session_entry::{Entry, Refused},
    sessions::{Sessions, session_of},
};
use crate::call::client::{CallStream, OwnStream};
use crate::transport::call_answer::{legacy_answer, task_only_if_declared};
use crate::transport::decode::{self, ClientMessage, Decoded};
use crate::transport::hand_off::{Calls, call_context, tool_call};

/// What serves the calls that go direct: the server's `call_tool`, and the MCP path (the
/// guard also protects other routes).
pub(super) struct DirectCalls {
    pub(super) calls: Calls,
    pub(super) path: String,
    /// Whether a client asked for log messages (`logging/setLevel`): a call may then send
    /// notifications, which a call without a session can only send on its own SSE stream
    /// (rmcp's).
    pub(super) logs_to_client: Arc<dyn Fn() -> bool + Send + Sync>,
    /// What a 2026-07-28 call must pass to go direct.
    pub(super) current: CurrentRevision,
    /// Starts the peer of the calls without a session (`DetachedPeer`), once per kind,
    /// inside the runtime that serves them: `true` for the 2026-07-28 calls.
    pub(super) start_detached: Arc<dyn Fn(bool) -> DetachedPeer + Send + Sync>,
    pub(super) detached: std::sync::OnceLock<DetachedPeer>,
    pub(super) detached_current: std::sync::OnceLock<DetachedPeer>,
    /// How long a call may take before its answer becomes an SSE stream with keep-alive
    /// comments (`HttpOptions::sse_keep_alive`; `answer.rs`).
    pub(super) keep_alive: Option<std::time::Duration>,
}

impl DirectCalls {
    /// The peer of a call without a session: of a 2026-07-28 call (`current`), or of a
    /// call from a client of an earlier revision.
    fn detached_peer(&self, current: bool) -> Peer<RoleServer> {
        let detached = if current {
            &self.detached_current
        } else {
            &self.detached
        };
        detached
            .get_or_init(|| (self.start_detached)(current))
            .peer
            .clone()
    }
}

/// The peer of the calls served without a session: rmcp's service over a transport that
/// reads nothing and drops what it is sent. A call without a session has no client to
/// reach but its own answer: it goes direct only when nothing would be sent (no progress
/// token, no log level), and it asks nothing. A call from a client of a revision before
/// 2026-07-28 knows no client (its capabilities are none); a 2026-07-28 call asks through
/// its answer (`input_required`), and its peer is of that revision, so that rmcp refuses
/// any request sent on it instead of letting it wait for an answer that cannot come.
/// Kept alive with the endpoint.
pub(super) struct DetachedPeer {
    peer: Peer<RoleServer>,
    /// The service holding the peer's loop; dropped with the endpoint.
    _service: Box<dyn std::any::Any + Send + Sync>,
}

impl DetachedPeer {
    /// Starts `service` detached (in the current runtime), its peer of the 2026-07-28
    /// revision when `current` (as rmcp makes the peer of such a request), of none before.
    pub(super) fn start<S: rmcp::Service<RoleServer>>(service: S, current: bool) -> Self {
        let peer_info = current.then(|| {
            let mut info = rmcp::model::InitializeRequestParams::new(
                ClientCapabilities::default(),
                rmcp::model::Implementation::default(),
            );
            info.protocol_version = ProtocolVersion::V_2026_07_28;
            info
        });
        let running = rmcp::service::serve_directly(service, Detached, peer_info);
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

/// The answer to `body` when it is a `tools/call` without a session that this transport
/// serves itself: one of the 2026-07-28 revision that passes every check rmcp makes
/// (`current.rs`), in either mode, or, in stateless mode (`legacy_allowed`), one from a
/// client of a revision before it. The parts back, untouched, to leave it to rmcp.
pub(super) async fn serve_without_session(
    direct: &DirectCalls,
    parts: Parts,
    body: &Bytes,
    legacy_allowed: bool,
) -> Result<Response, Parts> {
    if parts.uri.path() != direct.path
        || !accepts_json(&parts.headers)
        || session_of(&parts.headers).is_some()
        || !may_be_a_call(body, false)
    {
        return Err(parts);
    }
    let current = direct.current.version(&parts.headers).cloned();
    let legacy = current.is_none()
        && legacy_allowed
        && legacy_version(&parts.headers)
        && !(direct.logs_to_client)();
    if current.is_none() && !legacy {
        return Err(parts);
    }
    let Decoded::Message(message) = decode::decode_line(body) else {
        return Err(parts);
    };
    let peer = direct.detached_peer(current.is_some());
    let Some((id, params, mut context)) = taken_apart(message, peer, false) else {
        return Err(parts);
    };
    let declared_tasks = match &current {
        Some(version) => {
            if !direct
                .current
                .admits(&parts.headers, version, &params.name, &context.meta)
            {
                return Err(parts);
            }
            // Read only when the body may declare it: the capabilities are decoded anew.
            has(body, rmcp::model::TASKS_EXTENSION_ID.as_bytes())
                && context
                    .client_capabilities()
                    .is_some_and(|capabilities| capabilities.supports_tasks())
        }
        None if context.meta.protocol_version().is_some() => return Err(parts),
        None => false,
    };
    // The request's parts in the extensions, as rmcp puts them: tools see the headers and
    // the verified token's claims. A client that hangs up drops the answer, and the call
    // with it.
    context.extensions.insert(parts);
    let call = direct.calls.answer(params, context);
    let pending: Pending = Box::pin(async move {
        // Await: the call, through the pipeline.
        let answered = call.await;
        Some(match current {
            Some(_) => current_answer(answered, declared_tasks, id),
            None => (StatusCode::OK, legacy_answer(answered, id)),
        })
    });
    Ok(in_time(pending, direct.keep_alive).await)
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
    if let Some(accepted) = answer_to_asked(direct, sessions, &parts, body) {
        return Ok(accepted);
    }
    let Some((entry, peer)) = session_to_serve(direct, sessions, &parts, body) else {
        return Err(parts);
    };
    let Decoded::Message(message) = decode::decode_line(body) else {
        return Err(parts);
    };
    let Some(capabilities) = entry.capabilities().cloned() else {
        return Err(parts);
    };
    let declared_tasks = capabilities.supports_tasks();
    let Some((id, params, mut context)) = taken_apart(message, peer, true) else {
        return Err(parts);
    };
    // A call naming its revision in `_meta` has rmcp's checks (`current.rs` covers only
    // calls without a session).
    if context.meta.protocol_version().is_some() {
        return Err(parts);
    }
    let cancel = context.ct.clone();
    let limits = sessions.limits();
    let number = match entry.claim(&id, limits.max_requests(), Some(cancel.clone())) {
        Ok(number) => number,
        // Over the queue: what the guard answers when it sees it first (this request raced
        // it).
        Err(Refused::Full) => return Ok(sessions.full(id)),
        Err(refused @ Refused::IdInUse) => {
            let error = sessions.refusal(refused, &id);
            return Ok(at_once(Some((
                StatusCode::OK,
                JsonRpcMessage::error(error, Some(id)),
            ))));
        }
    };
    // From here until the answer, a drop (the client hung up) gives the id back and
    // cancels the call with it.
    let claim = DirectClaim { entry, id, number };
    let calls = Arc::clone(&direct.calls);
    // What the call sends its client rides its own answer (`call_stream.rs`).
    let (stream, sent) = SessionCallStream::open(capabilities, Arc::clone(&claim.entry));
    context
        .extensions
        .insert(OwnStream(Arc::new(stream) as Arc<dyn CallStream>));
    let pending: Pending = Box::pin(async move {
        // Await: the call's turn behind the session's calls in flight.
        if !claim.entry.take_turn(&claim.id, claim.number).await {
            // Cancelled while it waited, or the session ended.
            return None;
        }
        // What rmcp puts in a request's extensions: tools see the HTTP request (its
        // headers, the verified token's claims) through it.
        context.extensions.insert(parts);
        // Await: the call, through the pipeline.
        let answered = calls.answer(params, context).await;
        // Looked at before the claim goes: giving it back cancels the token.
        let cancelled = cancel.is_cancelled();
        let id = claim.id.clone();
        drop(claim);
        // `notifications/cancelled`, or the session's end: no answer (JSON-RPC).
        let answered = task_only_if_declared(answered, declared_tasks);
        (!cancelled).then(|| (StatusCode::OK, legacy_answer(answered, id)))
    });
    Ok(in_time_or_sent(pending, sent, direct.keep_alive).await)
}

/// When `body` is the client's answer to a request a call of its session waits for
/// (`asked.rs`): hands it to that call, and the POST is accepted (202) as rmcp accepts a
/// response. `None` for anything else, which goes on as before.
fn answer_to_asked(
    direct: &DirectCalls,
    sessions: &Sessions,
    parts: &Parts,
    body: &[u8],
) -> Option<Response> {
    if parts.uri.path() != direct.path || !has(body, asked::ID_PREFIX.as_bytes()) {
        return None;
    }
    let entry = sessions.named(session_of(&parts.headers)?)?;
    let answer: ClientAnswer = serde_json::from_slice(body).ok()?;
    if answer.method.is_some() || answer.jsonrpc != "2.0" {
        return None;
    }
    let outcome = match (answer.result, answer.error) {
        (Some(result), None) => Ok(result),
        (None, Some(error)) => Err(client_error(&error)),
        // Neither or both: not an answer JSON-RPC allows; rmcp refuses it.
        _ => return None,
    };
    entry
        .asked_if_any()?
        .answer(&answer.id, outcome)
        .then(|| StatusCode::ACCEPTED.into_response())
}

/// A JSON-RPC response or error, as the client POSTs it.
#[derive(serde::Deserialize)]
struct ClientAnswer {
    jsonrpc: String,
    id: RequestId,
    #[serde(default)]
    method: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    result: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// The client's error answer, as the call reads it: its message and code.
fn client_error(error: &serde_json::Value) -> String {
    let message = error["message"].as_str().unwrap_or("no message");
    match error["code"].as_i64() {
        Some(code) => format!("the client answered with an error ({code}): {message}"),
        None => format!("the client answered with an error: {message}"),
    }
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
    (goes_direct(&peer, &parts.headers) && may_be_a_call(body, true)).then_some((entry, peer))
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
/// the request's header (rmcp answers a mismatch). Whatever the client declared: a call
/// that asks it something does so on its own stream (`call_stream.rs`).
fn goes_direct(peer: &Peer<RoleServer>, headers: &HeaderMap) -> bool {
    let Some(info) = peer.peer_info() else {
        return false;
    };
    if info.protocol_version >= ProtocolVersion::V_2026_07_28 {
        return false;
    }
    match headers.get("mcp-protocol-version") {
        None => true,
        Some(value) => value.as_bytes() == info.protocol_version.as_str().as_bytes(),
    }
}

/// A POST may be answered as JSON: its `Accept` names `application/json` (the protocol
/// asks clients to name it with `text/event-stream`; rmcp answers those that do not). An
/// `Accept` that weighs its types (`q=`) is rmcp's to read.
fn accepts_json(headers: &HeaderMap) -> bool {
    let accept = headers.get_all(header::ACCEPT);
    if accept.iter().any(|value| has(value.as_bytes(), b"q=")) {
        return false;
    }
    let names = |media: &str| {
        headers
            .get_all(header::ACCEPT)
            .iter()
            .any(|value| value.to_str().is_ok_and(|value| value.contains(media)))
    };
    names("application/json") && names("text/event-stream")
}

/// A cheap look before decoding: the body names `tools/call`, and no `task` (a task
/// request goes through rmcp, whose dispatch reads it) nor, unless `progress` (a call on
/// a session, which has a stream of its own), a `progressToken` (a call without a
/// session sends its progress on rmcp's SSE stream).
fn may_be_a_call(body: &[u8], progress: bool) -> bool {
    has(body, b"\"tools/call\"")
        && !has(body, b"\"task\"")
        && (progress || !has(body, b"\"progressToken\""))
}

/// Whether `body` holds `needle` anywhere.
fn has(body: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(body, needle).is_some()
}

/// The call's params and context, as rmcp's service loop makes them, when `message` is a
/// `tools/call` that goes direct.
fn taken_apart(
    message: Box<ClientMessage>,
    peer: Peer<RoleServer>,
    progress: bool,
) -> Option<(
    RequestId,
    rmcp::model::CallToolRequestParams,
    RequestContext<RoleServer>,
)> {
    let (id, request) = tool_call(message).ok()?;
    // A call that asks for progress on a session without its own stream is rmcp's.
    if !progress
        && request
            .extensions
            .get::<RequestMetaObject>()
            .is_some_and(|meta| meta.get_progress_token().is_some())
    {
        return None;
    }
    let (params, context) = call_context(id.clone(), request, peer);
    Some((id, params, context))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

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
    fn only_bodies_that_name_a_call_without_task_are_decoded() {
        for session in [false, true] {
            assert!(may_be_a_call(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}"#,
                session
            ));
            assert!(!may_be_a_call(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                session
            ));
            assert!(!may_be_a_call(
                br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","task":{}}}"#,
                session
            ));
        }
        let progress = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":1}}}"#;
        assert!(
            !may_be_a_call(progress, false),
            "without a session, progress rides rmcp's stream"
        );
        assert!(
            may_be_a_call(progress, true),
            "a session's call has a stream of its own"
        );
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
}
