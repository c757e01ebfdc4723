//! The guard in front of the MCP endpoint: request framing (one `Host`), the Host, Origin
//! and bearer-token checks (a static token, or an OAuth access token through `auth`), the
//! session a request names, the body's size and type, the number literals of a
//! `tools/call` body (recorded by `literals`), and closing connections while draining.

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, request::Parts, uri::Authority},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{
    body::collect_limited,
    hosts::{AllowedHosts, bad_request, bearer_matches, check_host, check_origin, normalize_host},
    literals::number_literals_of,
    sessions::{MethodOnly, Sessions, session_of},
};
use crate::{
    identity::ClientAddr,
    transport::decode::{Decoded, decode_line, find_id},
};

/// What the guard checks, shared by the routes it protects.
pub(super) struct HttpState {
    pub(super) hosts: AllowedHosts,
    pub(super) origins: Option<Vec<String>>,
    pub(super) token: Option<String>,
    pub(super) max_body_bytes: usize,
    pub(super) draining: AtomicBool,
    /// The sessions, in stateful mode.
    pub(super) sessions: Option<Arc<Sessions>>,
    /// The calls served past rmcp (`direct.rs`), in stateful mode.
    pub(super) direct: Option<super::direct::DirectCalls>,
    /// The OAuth resource server, when configured.
    #[cfg(feature = "oauth")]
    pub(super) oauth: Option<Arc<super::auth::Authenticator>>,
    /// Starts the task that ends idle sessions, once, from the first request (a router
    /// may be built outside a Tokio runtime and mounted later).
    pub(super) reaper: std::sync::Once,
    /// What this replica's session ids start with on the wire
    /// (`HttpOptions::session_prefix`).
    pub(super) session_prefix: Option<String>,
    /// The places of the sessions' event streams (`streams.rs`).
    pub(super) streams: Arc<super::streams::StreamBudget>,
    /// The proxies trusted to name the client (`clients.rs`).
    pub(super) trusted_proxies: super::clients::TrustedProxies,
    /// The requests each client behind a trusted proxy has open.
    pub(super) forwarded_clients: Arc<super::clients::Holdings<std::net::IpAddr>>,
}

impl HttpState {
    /// Starts the idle-session reaper unless it runs. It holds the sessions weakly, so it
    /// ends once the router is dropped.
    pub(super) fn start_reaper(&self) {
        if let Some(sessions) = &self.sessions {
            self.reaper.call_once(|| {
                tokio::spawn(Sessions::reap(Arc::downgrade(sessions)));
            });
        }
    }
}

/// While draining, every HTTP/1 answer closes its connection, so that clients and proxies
/// open new connections, which go to another replica once the listener stops, instead of
/// reusing one that this process is about to close (a request sent on a connection as it
/// closes is lost, and a proxy may not send a POST again).
pub(super) fn close_if_draining(state: &HttpState, http1: bool, response: &mut Response) {
    if http1 && state.draining.load(Ordering::SeqCst) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
}

/// RFC 9112 §3.2: a request with more than one `Host`, or whose absolute-form target
/// names another authority than its `Host`, gets `400`, on every route. hyper accepts
/// both, and a proxy and this server could then disagree on which host was asked for.
pub(super) async fn check_framing(request: Request, next: Next) -> Response {
    match misframed(&request) {
        Some(refusal) => refusal,
        None => next.run(request).await,
    }
}

/// The `400` of a request that [`check_framing`] refuses.
pub(super) fn misframed(request: &Request) -> Option<Response> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return Some(bad_request("Bad Request: more than one Host header\n").into_response());
    }
    if let (Some(target), Some(host)) = (request.uri().authority(), first) {
        let same = host
            .to_str()
            .ok()
            .and_then(|text| Authority::try_from(text).ok())
            .is_some_and(|host| {
                normalize_host(host.host()) == normalize_host(target.host())
                    && host.port_u16() == target.port_u16()
            });
        if !same {
            return Some(
                bad_request("Bad Request: the request target's authority is not the Host header\n")
                    .into_response(),
            );
        }
    }
    None
}

/// `404` for a request naming a session that does not exist (MCP: the client then
/// initializes a new one).
pub(super) fn unknown_session() -> Response {
    (
        StatusCode::NOT_FOUND,
        "Not Found: no session with this Mcp-Session-Id (it ended or never existed); send `initialize` without it to start a new one\n",
    )
        .into_response()
}

/// This replica's session-id prefix, on the wire only: a request's `Mcp-Session-Id` loses
/// it before anything else sees the id (one without it names no session here: `404`), and
/// an answer's gains it. A proxy in front of stateful replicas routes on it.
pub(super) async fn session_prefix(
    State(state): State<Arc<HttpState>>,
    mut request: Request,
    next: Next,
) -> Response {
    // A request the front door admitted lost its prefix there.
    if request.extensions().get::<Admitted>().is_none()
        && let Some(refusal) = strip_session_prefix(&state, &mut request)
    {
        return refusal;
    }
    let mut response = next.run(request).await;
    add_session_prefix(&state, &mut response);
    response
}

/// Takes this replica's prefix off the request's `Mcp-Session-Id`; the `404` of an id
/// without it.
pub(super) fn strip_session_prefix(state: &HttpState, request: &mut Request) -> Option<Response> {
    let prefix = state.session_prefix.as_ref()?;
    let id = session_of(request.headers())?;
    let local = id
        .strip_prefix(prefix.as_str())
        .and_then(|local| HeaderValue::from_str(local).ok());
    match local {
        Some(local) => {
            request.headers_mut().insert("mcp-session-id", local);
            None
        }
        None => Some(unknown_session()),
    }
}

/// The answer's `Mcp-Session-Id` with this replica's prefix.
fn add_session_prefix(state: &HttpState, response: &mut Response) {
    if let Some(prefix) = &state.session_prefix
        && let Some(id) = response
            .headers()
            .get("mcp-session-id")
            .and_then(|id| id.to_str().ok())
        && let Ok(prefixed) = HeaderValue::from_str(&format!("{prefix}{id}"))
    {
        response.headers_mut().insert("mcp-session-id", prefixed);
    }
}

/// Marks a request that the front door (`front.rs`) checked, read and could not serve
/// itself: the router's layers pass it on without checking it again. Only the server
/// puts it in a request's extensions.
#[derive(Clone, Copy, Debug)]
pub(super) struct Admitted;

/// A request past the guard's checks.
pub(super) enum Checked {
    /// Not a POST: passed on as it is.
    Other(Request),
    /// A POST, its body read.
    Post(Post),
}

/// A POST past the guard's checks, its body read.
pub(super) struct Post {
    parts: Parts,
    bytes: Bytes,
    /// The session it names.
    session: Option<String>,
    /// The verified subject of its token.
    subject: Option<String>,
    /// Whether its body is declared JSON.
    json_body: bool,
}

impl Post {
    /// Reads the body of `request` (at most `limit` bytes).
    async fn read(request: Request, limit: usize) -> Result<Self, Response> {
        let session = session_of(request.headers()).map(str::to_owned);
        let subject = verified_subject(&request);
        let json_body = is_json(request.headers());
        let (parts, body) = request.into_parts();
        let bytes = collect_limited(&parts.headers, body, limit).await?;
        Ok(Self {
            parts,
            bytes,
            session,
            subject,
            json_body,
        })
    }

    /// The request again, marked [`Admitted`], for the router.
    pub(super) fn into_admitted_request(self) -> Request {
        let mut request = Request::from_parts(self.parts, Body::from(self.bytes));
        request.extensions_mut().insert(Admitted);
        request
    }
}

/// Host, Origin and bearer token for every protected route; the session a request names;
/// for a POST, the body's size and that it is JSON.
pub(super) async fn guard(
    State(state): State<Arc<HttpState>>,
    request: Request,
    next: Next,
) -> Response {
    let post = if request.extensions().get::<Admitted>().is_some() {
        // Checked by the front door, which also tried to serve it: the rest.
        match Post::read(request, state.max_body_bytes).await {
            Ok(post) => post,
            Err(refusal) => return refusal,
        }
    } else {
        let post = match check(&state, request).await {
            Ok(Checked::Post(post)) => post,
            Ok(Checked::Other(request)) => return pass_on_other(&state, request, next).await,
            Err(refusal) => return refusal,
        };
        match serve_direct(&state, post).await {
            Ok(answer) => return answer,
            Err(post) => post,
        }
    };
    pass_on(&state, post, |request| next.run(request)).await
}

/// A request that is not a POST, once checked, to rmcp. A session's `GET` (an event
/// stream) first takes a place in the stream budget, which its body then holds.
async fn pass_on_other(state: &HttpState, request: Request, next: Next) -> Response {
    if request.method() == Method::GET
        && let Some(session) = session_of(request.headers())
    {
        let subject = verified_subject(&request);
        let opener = super::streams::Opener {
            session,
            subject: subject.as_deref(),
            client: request
                .extensions()
                .get::<ClientAddr>()
                .map(|ClientAddr(client)| *client),
        };
        let ticket = match state.streams.open(&opener) {
            Ok(ticket) => ticket,
            Err(full) => return full.into_response(),
        };
        let response = next.run(request).await;
        if !super::streams::is_event_stream(&response) {
            return response;
        }
        return ticket.hold(response);
    }
    if request.method() == Method::DELETE {
        // rmcp ends a session with 202; the Python SDK expects 200 or 204 (and logs a
        // warning otherwise), and nothing is left to accept.
        let response = next.run(request).await;
        if response.status() == StatusCode::ACCEPTED {
            return StatusCode::NO_CONTENT.into_response();
        }
        return response;
    }
    next.run(request).await
}

/// Under an app's own listener (`Server::router`), the client of a request that the front
/// door did not name: its peer from axum's `ConnectInfo` (when the app serves with
/// `into_make_service_with_connect_info`), or the client a trusted proxy names.
fn name_the_client(state: &HttpState, request: &mut Request) {
    if request.extensions().get::<ClientAddr>().is_some() {
        return;
    }
    let Some(peer) = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|axum::extract::ConnectInfo(peer)| peer.ip())
    else {
        return;
    };
    let (client, _) = state.trusted_proxies.client(peer, request.headers());
    request.extensions_mut().insert(ClientAddr(client));
}

/// The guard's checks of a request, and a POST's body read.
pub(super) async fn check(state: &HttpState, mut request: Request) -> Result<Checked, Response> {
    state.start_reaper();
    name_the_client(state, &mut request);
    check_host(
        &state.hosts,
        request.version(),
        request.uri(),
        request.headers(),
    )
    .map_err(|refusal| *refusal)?;
    if let Some(origins) = &state.origins {
        check_origin(origins, request.headers()).map_err(|refusal| *refusal)?;
    }
    if let Some(token) = &state.token
        && !bearer_matches(request.headers(), token)
    {
        return Err((
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
            "Unauthorized: send `Authorization: Bearer <token>`\n",
        )
            .into_response());
    }
    // An OAuth access token: verified, its claims put in the extensions for the handler.
    #[cfg(feature = "oauth")]
    let request = match &state.oauth {
        Some(oauth) => oauth.authorize(request).await?,
        None => request,
    };
    // rmcp answers 404 for an unknown session on GET and POST, but ends it without a
    // word on DELETE (204 for a forged id): one check here, for every method. A session
    // bound to another user's token is unknown to this one.
    if let (Some(sessions), Some(id)) = (&state.sessions, session_of(request.headers())) {
        let subject = verified_subject(&request);
        if !sessions.exists(id) {
            return Err(unknown_session());
        }
        if !sessions.may_use(id, subject.as_deref()) {
            tracing::warn!(target: "fusion::server", session = %id, caller = subject.as_deref().unwrap_or(""), "a request named another user's session; answered as unknown");
            return Err(unknown_session());
        }
    }
    if request.method() != Method::POST {
        return Ok(Checked::Other(request));
    }
    let post = Post::read(request, state.max_body_bytes).await?;
    // Before the check that the body is JSON: a call served here is decoded once, which
    // checks it too.
    if let (Some(sessions), Some(id)) = (&state.sessions, &post.session)
        && sessions.is_saturated(id)
        && let Some(refused) = sessions.refuse_when_full(&post.bytes)
    {
        return Err(refused);
    }
    Ok(Checked::Post(post))
}

/// The answer to a checked POST when it is a call this transport serves itself
/// (`direct.rs`); the POST back otherwise.
pub(super) async fn serve_direct(state: &HttpState, mut post: Post) -> Result<Response, Post> {
    let Some(direct) = state.direct.as_ref().filter(|_| post.json_body) else {
        return Err(post);
    };
    let served = match (&state.sessions, &post.session) {
        (Some(sessions), Some(_)) => {
            super::direct::serve(direct, sessions, post.parts, &post.bytes).await
        }
        (sessions, None) => {
            let legacy_allowed = sessions.is_none();
            super::direct::serve_without_session(direct, post.parts, &post.bytes, legacy_allowed)
                .await
        }
        (None, Some(_)) => Err(post.parts),
    };
    match served {
        Ok(answer) => Ok(answer),
        Err(parts) => {
            post.parts = parts;
            Err(post)
        }
    }
}

/// A checked POST that this transport does not serve itself, to rmcp (`next`).
pub(super) async fn pass_on<F>(
    state: &HttpState,
    post: Post,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let Post {
        mut parts,
        bytes,
        session,
        subject,
        json_body,
    } = post;
    if json_body && let Err(error) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes) {
        return jsonrpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            &format!("Parse error: the body is not JSON ({error})"),
        );
    }
    if let Some(sessions) = &state.sessions
        && session.is_none()
        && sessions.is_full()
        && serde_json::from_slice::<MethodOnly>(&bytes)
            .is_ok_and(|message| message.method.as_deref() == Some("initialize"))
    {
        let mut response = jsonrpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            &format!(
                "the server holds its maximum of {} sessions; retry later",
                sessions.max_sessions()
            ),
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        return response;
    }
    // `initialize` is no method of 2026-07-28 (clients of that revision send
    // `server/discover`): sent as a request of that revision, it would open a session of
    // an older one. `-32601` with its id, as the guide's table of revisions
    // (`guide/src/protocol.md`) says.
    if json_body
        && is_2026_07_28_or_later(&parts.headers)
        && serde_json::from_slice::<MethodOnly>(&bytes)
            .is_ok_and(|message| message.method.as_deref() == Some("initialize"))
    {
        let id = find_id(&bytes);
        let body = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32601, "message": "Method not found: `initialize` is not a method of MCP 2026-07-28; send `server/discover`, or initialize without the 2026-07-28 `MCP-Protocol-Version` header"},
        });
        return (
            StatusCode::NOT_FOUND,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body.to_string(),
        )
            .into_response();
    }
    // One JSON-RPC message (not a batch): rmcp's SSE answer to it may become JSON.
    let single = bytes.iter().find(|byte| !byte.is_ascii_whitespace()) == Some(&b'{');
    // Kept (a reference count, not a copy) to answer a request rmcp refuses with its id.
    let sent = bytes.clone();
    if json_body && let Some(literals) = number_literals_of(&bytes) {
        parts.extensions.insert(literals);
    }
    let response = next(Request::from_parts(parts, Body::from(bytes))).await;
    // On a session rmcp answers every request as SSE: JSON where nothing streams.
    let response = if state.sessions.is_some() && json_body && single {
        super::json_answer::as_json(response).await
    } else {
        response
    };
    // A session just created belongs to the token's subject.
    if let (Some(sessions), None, Some(subject)) = (&state.sessions, &session, &subject)
        && let Some(created) = session_of(response.headers())
    {
        sessions.bind_owner(created, subject);
    }
    // rmcp answers JSON that is not a JSON-RPC message with 415, as if the media type
    // were wrong; say what is wrong instead, with the request's id when it has one, as
    // stdio does (params that do not fit a known method: `-32602`).
    if json_body && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        if single && let Decoded::Reply(reply) = decode_line(&sent) {
            return (
                StatusCode::BAD_REQUEST,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                serde_json::to_string(&reply).unwrap_or_default(),
            )
                .into_response();
        }
        return jsonrpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: the body is JSON but not a JSON-RPC request, notification or response",
        );
    }
    response
}

/// Whether the request's `MCP-Protocol-Version` names 2026-07-28 or a later revision.
fn is_2026_07_28_or_later(headers: &HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .map(str::trim)
        // A revision is a date: `YYYY-MM-DD` compares as text.
        .is_some_and(|version| {
            version.len() == 10
                && version.starts_with(|first: char| first.is_ascii_digit())
                && version >= rmcp::model::ProtocolVersion::V_2026_07_28.as_str()
        })
}

/// The subject of the token the OAuth guard verified for this request, if any.
fn verified_subject(request: &Request) -> Option<String> {
    request
        .extensions()
        .get::<crate::identity::VerifiedClaims>()
        .and_then(|claims| claims.0.subject())
        .map(str::to_owned)
}

pub(super) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        })
}

pub(super) fn jsonrpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body.to_string(),
    )
        .into_response()
}
