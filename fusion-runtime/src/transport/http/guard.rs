//! The guard in front of the MCP endpoint: request framing (one `Host`), the Host, Origin
//! and bearer-token checks (a static token, or an OAuth access token through `auth`), the
//! session a request names, the body's size and type, the number literals of a
//! `tools/call` body (recorded by `literals`), and closing connections while draining.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, uri::Authority},
    middleware::Next,
    response::{IntoResponse, Response},
};
use futures_util::StreamExt as _;

use super::{
    literals::record_number_literals,
    sessions::{MethodOnly, Sessions, session_of},
};

/// What the guard checks, shared by the routes it protects.
pub(super) struct HttpState {
    pub(super) hosts: Vec<String>,
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
pub(super) async fn close_when_draining(
    State(state): State<Arc<HttpState>>,
    request: Request,
    next: Next,
) -> Response {
    let http1 = request.version() <= axum::http::Version::HTTP_11;
    let mut response = next.run(request).await;
    if http1 && state.draining.load(Ordering::SeqCst) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// RFC 9112 §3.2: a request with more than one `Host`, or whose absolute-form target
/// names another authority than its `Host`, gets `400`, on every route. hyper accepts
/// both, and a proxy and this server could then disagree on which host was asked for.
pub(super) async fn check_framing(request: Request, next: Next) -> Response {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let first = hosts.next();
    if hosts.next().is_some() {
        return bad_request("Bad Request: more than one Host header\n").into_response();
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
            return bad_request(
                "Bad Request: the request target's authority is not the Host header\n",
            )
            .into_response();
        }
    }
    next.run(request).await
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
    let Some(prefix) = &state.session_prefix else {
        return next.run(request).await;
    };
    if let Some(id) = session_of(request.headers()) {
        let Some(local) = id.strip_prefix(prefix.as_str()) else {
            return unknown_session();
        };
        match HeaderValue::from_str(local) {
            Ok(local) => {
                request.headers_mut().insert("mcp-session-id", local);
            }
            Err(_) => return unknown_session(),
        }
    }
    let mut response = next.run(request).await;
    if let Some(id) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|id| id.to_str().ok())
        && let Ok(prefixed) = HeaderValue::from_str(&format!("{prefix}{id}"))
    {
        response.headers_mut().insert("mcp-session-id", prefixed);
    }
    response
}

/// Host, Origin and bearer token for every protected route; the session a request names;
/// for a POST, the body's size and that it is JSON.
pub(super) async fn guard(
    State(state): State<Arc<HttpState>>,
    request: Request,
    next: Next,
) -> Response {
    state.start_reaper();
    if let Err(rejection) = check_host(&state.hosts, request.uri(), request.headers()) {
        return *rejection;
    }
    if let Some(origins) = &state.origins
        && let Err(rejection) = check_origin(origins, request.headers())
    {
        return *rejection;
    }
    if let Some(token) = &state.token
        && !bearer_matches(request.headers(), token)
    {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))],
            "Unauthorized: send `Authorization: Bearer <token>`\n",
        )
            .into_response();
    }
    // An OAuth access token: verified, its claims put in the extensions for the handler.
    #[cfg(feature = "oauth")]
    let request = match &state.oauth {
        Some(oauth) => match oauth.authorize(request).await {
            Ok(request) => request,
            Err(refused) => return refused,
        },
        None => request,
    };
    let session = session_of(request.headers()).map(str::to_owned);
    let subject = verified_subject(&request);
    // rmcp answers 404 for an unknown session on GET and POST, but ends it without a
    // word on DELETE (204 for a forged id): one check here, for every method. A session
    // bound to another user's token is unknown to this one.
    if let (Some(sessions), Some(id)) = (&state.sessions, &session) {
        if !sessions.exists(id) {
            return unknown_session();
        }
        if !sessions.may_use(id, subject.as_deref()) {
            tracing::warn!(target: "fusion::server", session = %id, caller = subject.as_deref().unwrap_or(""), "a request named another user's session; answered as unknown");
            return unknown_session();
        }
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
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let json_body = is_json(request.headers());
    let (mut parts, body) = request.into_parts();
    let bytes = match collect_limited(&parts.headers, body, state.max_body_bytes).await {
        Ok(bytes) => bytes,
        Err(rejection) => return rejection,
    };
    // Before the check that the body is JSON: a call served here is decoded once, which
    // checks it too.
    if let (Some(sessions), Some(id)) = (&state.sessions, &session) {
        if sessions.is_saturated(id)
            && let Some(refused) = sessions.refuse_when_full(&bytes)
        {
            return refused;
        }
        if json_body && let Some(direct) = &state.direct {
            match super::direct::serve(direct, sessions, parts, &bytes).await {
                Ok(answer) => return answer,
                Err(not_served) => parts = not_served,
            }
        }
    } else if session.is_none()
        && json_body
        && let Some(direct) = &state.direct
    {
        let legacy_allowed = state.sessions.is_none();
        match super::direct::serve_without_session(direct, parts, &bytes, legacy_allowed).await {
            Ok(answer) => return answer,
            Err(not_served) => parts = not_served,
        }
    }
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
    let bytes = if json_body {
        let recorded = record_number_literals(bytes);
        parts
            .headers
            .insert(header::CONTENT_LENGTH, HeaderValue::from(recorded.len()));
        recorded
    } else {
        bytes
    };
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    // A session just created belongs to the token's subject.
    if let (Some(sessions), None, Some(subject)) = (&state.sessions, &session, &subject)
        && let Some(created) = session_of(response.headers())
    {
        sessions.bind_owner(created, subject);
    }
    // rmcp answers JSON that is not a JSON-RPC message with 415, as if the media type
    // were wrong; say what is wrong instead.
    if json_body && response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return jsonrpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: the body is JSON but not a JSON-RPC request, notification or response",
        );
    }
    response
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

/// How long the rest of a body over the limit is read and thrown away after the `413`,
/// so that the connection closes cleanly and the client reads its answer. Closing a
/// socket with unread bytes sends a reset, which can destroy the `413` in the client's
/// buffers before it reads it (nginx's "lingering close" does the same).
pub(super) const LINGER: Duration = Duration::from_secs(2);

/// The whole body, or `413` as soon as it is larger than `limit`: at once when
/// `Content-Length` says so (without reading the body), else when the limit is crossed.
pub(super) async fn collect_limited(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
) -> Result<Bytes, Response> {
    let too_large = || {
        let mut response = (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("Payload Too Large: the request body exceeds {limit} bytes\n"),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim().parse::<u64>().ok());
    let mut stream = body.into_data_stream();
    if declared.is_some_and(|length| length > limit as u64) {
        // A client that waits for `100 Continue` never sends the body: it gets the 413
        // instead, and nothing needs reading. Any other client is sending it now.
        let waits = headers
            .get(header::EXPECT)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim().eq_ignore_ascii_case("100-continue"));
        if !waits {
            linger(stream);
        }
        return Err(too_large());
    }
    let mut collected = Vec::with_capacity(declared.map_or(0, |length| length as usize));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| {
            (
                StatusCode::BAD_REQUEST,
                format!("Bad Request: the body could not be read: {error}\n"),
            )
                .into_response()
        })?;
        if collected.len() + chunk.len() > limit {
            linger(stream);
            return Err(too_large());
        }
        collected.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(collected))
}

/// Reads and drops the rest of a refused body for at most [`LINGER`], off the request's
/// task, so that the answer goes out now.
pub(super) fn linger(mut stream: axum::body::BodyDataStream) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(LINGER, async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await;
    });
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

pub(super) fn forbidden(message: &'static str) -> Box<Response> {
    Box::new((StatusCode::FORBIDDEN, message).into_response())
}

pub(super) fn bad_request(message: &'static str) -> Box<Response> {
    Box::new((StatusCode::BAD_REQUEST, message).into_response())
}

/// A host and an optional port, lower-cased, IPv6 brackets removed.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct HostPort {
    host: String,
    port: Option<u16>,
}

pub(super) fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

pub(super) fn parse_host_entry(entry: &str) -> Option<HostPort> {
    let entry = entry.trim();
    if entry.is_empty() {
        return None;
    }
    Some(match Authority::try_from(entry) {
        Ok(authority) => HostPort {
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        },
        // A bare IPv6 address (`::1`) is not an authority.
        Err(_) => HostPort {
            host: normalize_host(entry),
            port: None,
        },
    })
}

pub(super) fn check_host(
    allowed: &[String],
    uri: &axum::http::Uri,
    headers: &HeaderMap,
) -> Result<(), Box<Response>> {
    if allowed.is_empty() {
        return Ok(());
    }
    let authority = match headers.get(header::HOST) {
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| bad_request("Bad Request: invalid Host header\n"))?;
            Authority::try_from(text)
                .map_err(|_| bad_request("Bad Request: invalid Host header\n"))?
        }
        None => uri
            .authority()
            .cloned()
            .ok_or_else(|| bad_request("Bad Request: missing Host header\n"))?,
    };
    let host = normalize_host(authority.host());
    let port = authority.port_u16();
    let accepted = allowed
        .iter()
        .filter_map(|entry| parse_host_entry(entry))
        .any(|entry| entry.host == host && entry.port.is_none_or(|allowed| Some(allowed) == port));
    if accepted {
        Ok(())
    } else {
        tracing::warn!(target: "fusion::server", host = %authority, "rejected a request with a Host that is not allowed (possible DNS rebinding)");
        Err(forbidden("Forbidden: Host header is not allowed\n"))
    }
}

/// An origin: `null`, or scheme, host and port.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

pub(super) fn parse_origin(text: &str) -> Option<Origin> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri = axum::http::Uri::try_from(text).ok()?;
    let authority = uri.authority()?;
    Some(Origin::Tuple {
        scheme: uri.scheme_str()?.to_ascii_lowercase(),
        host: normalize_host(authority.host()),
        port: authority.port_u16(),
    })
}

pub(super) fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Whether the allowed origin `entry` (`scheme://host[:port]`, `:*` for any port, `null`)
/// admits `origin`. An entry without a port admits any port, as rmcp does.
pub(super) fn origin_allows(entry: &str, origin: &Origin) -> bool {
    let (base, any_port) = match entry.trim().strip_suffix(":*") {
        Some(base) => (base, true),
        None => (entry.trim(), false),
    };
    match (parse_origin(base), origin) {
        (Some(Origin::Null), Origin::Null) => !any_port,
        (
            Some(Origin::Tuple {
                scheme: allowed_scheme,
                host: allowed_host,
                port: allowed_port,
            }),
            Origin::Tuple { scheme, host, port },
        ) => {
            allowed_scheme == *scheme
                && allowed_host == *host
                && (any_port
                    || allowed_port.is_none()
                    || allowed_port == port.or_else(|| default_port(scheme)))
        }
        _ => false,
    }
}

pub(super) fn check_origin(allowed: &[String], headers: &HeaderMap) -> Result<(), Box<Response>> {
    let Some(value) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = value
        .to_str()
        .ok()
        .and_then(parse_origin)
        .ok_or_else(|| forbidden("Forbidden: invalid Origin header\n"))?;
    if allowed.iter().any(|entry| origin_allows(entry, &origin)) {
        Ok(())
    } else {
        tracing::warn!(target: "fusion::server", ?origin, "rejected a request from an Origin that is not allowed");
        Err(forbidden("Forbidden: Origin header is not allowed\n"))
    }
}

/// `Authorization: Bearer <token>`, compared in constant time.
pub(super) fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    let Some(sent) = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| {
            let (scheme, rest) = value.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        })
    else {
        return false;
    };
    let (sent, expected) = (sent.as_bytes(), token.as_bytes());
    let mut difference = sent.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ sent.get(index).copied().unwrap_or(0));
    }
    difference == 0
}
