//! `HttpOptions`: the address, path, Host and Origin allow-lists, token, limits and
//! timeouts of the Streamable HTTP transport, with their defaults.

use std::{net::SocketAddr, time::Duration};

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use tokio_util::sync::CancellationToken;

/// Options that cannot serve, found by [`Server::router`](crate::Server::router) and
/// [`Server::serve_http_with`](crate::Server::serve_http_with) (which exits with
/// [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG)); the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HttpConfigError(pub(super) String);

/// How [`Server::serve_http_with`](crate::Server::serve_http_with) serves: the address, the MCP path, who may connect,
/// limits, and the session mode.
///
/// | route | what | checks |
/// |---|---|---|
/// | `POST`/`GET`/`DELETE /mcp` | MCP (the path is [`path`](Self::path)) | Host, Origin, bearer token or OAuth access token, body size |
/// | `GET /metrics` | [`Server::metrics`](crate::Server::metrics) in Prometheus text | Host, Origin, bearer token or OAuth access token |
/// | `GET /healthz` | `200` while the process serves | none |
/// | `GET /readyz` | `200` once started, `503` while draining after SIGTERM; the body says `surface <digest>` ([`Server::surface_digest`](crate::Server::surface_digest)), then `upstream <prefix> up` (or `down`) for each mounted upstream | none |
/// | `GET /.well-known/oauth-protected-resource[/mcp]` | with `HttpOptions::oauth` (feature `oauth`): the RFC 9728 metadata | none |
///
/// A body that is not JSON gets `400` with a JSON-RPC `-32700` error, JSON that is not a
/// JSON-RPC message `400` with `-32600`, a body over the limit `413`, a request with two
/// `Host` headers (or an absolute-form URI whose authority is not its `Host`) `400`, and a
/// request naming a session that does not exist (any method, `DELETE` included) `404`.
///
/// ## Limits against hostile or broken peers
///
/// | limit | default | over it |
/// |---|---|---|
/// | [`header_read_timeout`](Self::header_read_timeout) | 10 s | the connection closes |
/// | [`max_connections`](Self::max_connections) | 512 | a lane of a sixteenth of them answers the probes and gives anything else `503` with `Retry-After`; with it full, new connections wait, unaccepted |
/// | [`max_connections_per_peer`](Self::max_connections_per_peer) | half of `max_connections` | the peer's new connections are answered in that lane, never reset |
/// | [`max_streams`](Self::max_streams) | half of `max_connections` | a new `GET` event stream gets `503` with `Retry-After` |
/// | [`max_streams_per_session`](Self::max_streams_per_session) | 2 | the session's oldest event stream ends |
/// | [`max_streams_per_client`](Self::max_streams_per_client) | a quarter of `max_streams` | the client's oldest event stream ends |
/// | [`max_streams_per_subject`](Self::max_streams_per_subject) | 8 | the subject's oldest event stream ends |
///
/// Behind a proxy, [`trusted_proxies`](Self::trusted_proxies) makes the client the one the
/// proxy names, so that these budgets hold per client, not per proxy.
/// | [`max_sessions`](Self::max_sessions) | 1024 | `initialize` gets `503` |
/// | [`session_idle_timeout`](Self::session_idle_timeout) | 10 min | the session ends (then `404`) |
/// | [`max_calls_per_session`](Self::max_calls_per_session) | 32 | the request waits its turn in the session's queue |
/// | [`max_queued_per_session`](Self::max_queued_per_session) | 256 | `429` with `Retry-After` and a JSON-RPC error (`-32000`) carrying the request's id |
/// | [`max_body_bytes`](Self::max_body_bytes) | 4 MiB | `413` |
///
/// Calls themselves are bounded by the server's call deadline
/// ([`DEFAULT_TIMEOUT`](crate::policy::DEFAULT_TIMEOUT), 5 minutes, unless the tool or
/// [`ServerBuilder::timeout`](crate::ServerBuilder::timeout) sets another). A client that
/// closes its connection before its answer cancels its call, as `notifications/cancelled`
/// does; a session that ends (the client's `DELETE`, the idle timeout) cancels its calls
/// at once, and a request that
/// reuses the id of a request still in flight in its session gets a `-32600` error,
/// while the first call goes on.
///
/// The defaults suit a server on a developer's machine: bound to `127.0.0.1:8080`, MCP at
/// `/mcp`, requests accepted only with a loopback `Host` (`localhost`, `127.0.0.1`, `::1`,
/// and the bound address) and, when a browser sends an `Origin`, only from a loopback
/// origin; no token; bodies up to 4 MiB; sessions (stateful).
///
/// ```
/// use std::time::Duration;
/// use fusion_runtime::HttpOptions;
///
/// // Behind a load balancer: public name, a token, no sessions.
/// let options = HttpOptions::default()
///     .addr(([0, 0, 0, 0], 8080))
///     .allow_hosts(["mcp.example.com"])
///     .bearer_token("s3cret")
///     .stateless(true)
///     .shutdown_grace(Duration::from_secs(20));
/// assert_eq!(options.local_url(), "http://0.0.0.0:8080/mcp");
/// ```
///
/// ## Stateless mode, for replicas behind a load balancer
///
/// By default the server keeps a session per client (`Mcp-Session-Id`): the client's
/// requests must reach the process that holds its session. With [`stateless`](Self::stateless)
/// every POST is served on its own (rmcp's `legacy_session_mode = false` with JSON
/// responses), so any replica can answer any request and a round-robin load balancer works
/// without stickiness. What needs a session is then unavailable: requests from the server
/// to the client in the middle of a call (sampling, elicitation), resource subscriptions,
/// and the standalone `GET` stream. Progress and log notifications of a call still reach the
/// client on that call's response stream. State that tools keep in the process (circuit
/// breakers, rate limits, the in-memory idempotency store) stays per replica; plug a shared
/// [`IdempotencyStore`](crate::idempotency::IdempotencyStore) for deduplication across
/// replicas.
#[derive(Clone)]
pub struct HttpOptions {
    pub(super) addr: SocketAddr,
    pub(super) path: String,
    pub(super) allowed_hosts: Vec<String>,
    pub(super) allowed_origins: Option<Vec<String>>,
    pub(super) bearer_token: Option<String>,
    pub(super) max_body_bytes: usize,
    pub(super) stateless: bool,
    pub(super) json_response: Option<bool>,
    pub(super) shutdown_grace: Duration,
    pub(super) sse_keep_alive: Option<Duration>,
    pub(super) header_read_timeout: Duration,
    pub(super) max_connections: usize,
    pub(super) max_connections_per_peer: Option<usize>,
    pub(super) max_streams: Option<usize>,
    pub(super) max_streams_per_session: usize,
    pub(super) max_streams_per_client: Option<usize>,
    pub(super) max_streams_per_subject: usize,
    pub(super) trusted_proxies: Vec<String>,
    pub(super) max_sessions: usize,
    pub(super) session_idle_timeout: Option<Duration>,
    pub(super) max_calls_per_session: usize,
    pub(super) max_queued_per_session: usize,
    pub(super) session_prefix: Option<String>,
    #[cfg(feature = "oauth")]
    pub(super) oauth: Option<super::auth::OAuth>,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("HttpOptions");
        let debug = debug
            .field("addr", &self.addr)
            .field("path", &self.path)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("max_body_bytes", &self.max_body_bytes)
            .field("stateless", &self.stateless)
            .field("json_response", &self.json_response)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("sse_keep_alive", &self.sse_keep_alive)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_connections_per_peer", &self.max_connections_per_peer)
            .field("max_streams", &self.max_streams)
            .field("max_streams_per_session", &self.max_streams_per_session)
            .field("max_streams_per_client", &self.max_streams_per_client)
            .field("max_streams_per_subject", &self.max_streams_per_subject)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_calls_per_session", &self.max_calls_per_session)
            .field("max_queued_per_session", &self.max_queued_per_session)
            .field("session_prefix", &self.session_prefix);
        #[cfg(feature = "oauth")]
        let debug = debug.field("oauth", &self.oauth);
        debug.finish()
    }
}

/// The hosts accepted by default: loopback names and addresses.
pub(super) const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The browser origins accepted by default: loopback, any port.
pub(super) const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
            path: "/mcp".to_owned(),
            allowed_hosts: LOOPBACK_HOSTS.map(str::to_owned).to_vec(),
            allowed_origins: Some(LOOPBACK_ORIGINS.map(str::to_owned).to_vec()),
            bearer_token: None,
            max_body_bytes: 4 << 20,
            stateless: false,
            json_response: None,
            shutdown_grace: Duration::from_secs(10),
            sse_keep_alive: Some(Duration::from_secs(15)),
            header_read_timeout: Duration::from_secs(10),
            max_connections: 512,
            max_connections_per_peer: None,
            max_streams: None,
            max_streams_per_session: 2,
            max_streams_per_client: None,
            max_streams_per_subject: 8,
            trusted_proxies: Vec::new(),
            max_sessions: 1024,
            session_idle_timeout: Some(Duration::from_secs(600)),
            max_calls_per_session: 32,
            max_queued_per_session: 256,
            session_prefix: None,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }
}

impl HttpOptions {
    /// The defaults, bound to `addr`.
    pub fn new(addr: impl Into<SocketAddr>) -> Self {
        Self::default().addr(addr)
    }

    /// The address to bind (`127.0.0.1:8080` by default; port `0` picks a free port, which
    /// the start-up line on stderr reports).
    pub fn addr(mut self, addr: impl Into<SocketAddr>) -> Self {
        self.addr = addr.into();
        self
    }

    /// Binds `127.0.0.1:port`.
    pub fn port(self, port: u16) -> Self {
        self.addr(([127, 0, 0, 1], port))
    }

    /// The path of the MCP endpoint (`/mcp` by default).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.path = if path.starts_with('/') {
            path
        } else {
            format!("/{path}")
        };
        self
    }

    /// Replaces the accepted `Host` values (`name` or `name:port`; by default the loopback
    /// names and the bound address). A request with another `Host` gets `403`: this is
    /// the defence against DNS rebinding, so a server reachable under a public name lists
    /// that name here.
    pub fn allow_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Accepts one more `Host` value.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts any `Host` (only behind a proxy that checks it).
    pub fn allow_any_host(mut self) -> Self {
        self.allowed_hosts.clear();
        self
    }

    /// Replaces the accepted browser origins (`scheme://host:port`, `:*` for any port, or
    /// `null`). Requests without an `Origin` (non-browser clients) always pass.
    pub fn allow_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = Some(origins.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts any `Origin`.
    pub fn allow_any_origin(mut self) -> Self {
        self.allowed_origins = None;
        self
    }

    /// Requires `Authorization: Bearer <token>` on the MCP endpoint and `/metrics`
    /// (`401` otherwise). `/healthz` and `/readyz` stay open for probes.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.bearer_token = (!token.is_empty()).then_some(token);
        self
    }

    /// Makes the endpoint an OAuth 2.1 resource server: every request to it (and to
    /// `/metrics`) needs a valid access token from the configured issuer, and the RFC 9728
    /// metadata is served at `/.well-known/oauth-protected-resource` (see [`OAuth`]).
    /// Feature `oauth`. Cannot be combined with [`bearer_token`](Self::bearer_token): the
    /// server refuses to start (exit 78) when both are set.
    ///
    /// [`OAuth`]: crate::OAuth
    ///
    /// ```
    /// use fusion_runtime::{HttpOptions, OAuth};
    ///
    /// let options = HttpOptions::default()
    ///     .port(8931)
    ///     .oauth(OAuth::new("https://id.example.com").required_scopes(["mcp"]));
    /// # drop(options);
    /// ```
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub fn oauth(mut self, oauth: super::auth::OAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// The largest request body accepted (`413` beyond; 4 MiB by default).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Serves every request on its own, without sessions, for replicas behind a load
    /// balancer (see the type's documentation for what that gives up).
    pub fn stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// In stateless mode, answers a call without notifications with
    /// `Content-Type: application/json` instead of an SSE stream (the default there).
    pub fn json_response(mut self, json: bool) -> Self {
        self.json_response = Some(json);
        self
    }

    /// How long, after SIGTERM or SIGINT, calls in flight may take to finish before the
    /// server stops anyway (10 s by default). A second signal stops at once.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// The interval of SSE keep-alive comments (15 s by default; `None` for none).
    ///
    /// A `tools/call` that the transport serves itself is answered as one JSON body when
    /// its answer comes within this interval; a longer call's answer becomes an SSE
    /// stream at the interval, with a keep-alive comment every interval until the answer,
    /// so that a proxy that closes idle connections does not cut it. With `None`, every
    /// such answer is one JSON body, however long the call.
    pub fn sse_keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.sse_keep_alive = interval;
        self
    }

    /// Starts every session id this replica issues with `prefix` (say `"a."`), so that a
    /// proxy in front of stateful replicas can send each session's requests to the replica
    /// that holds it (the guide's "Fleets on Redis", `guide/src/fleets.md`: nginx maps the prefix to
    /// the replica). A session id without this replica's prefix is unknown here (`404`), as
    /// the protocol prescribes, and the client starts a new session. The prefix must be
    /// visible ASCII (as session ids are) and at most 64 bytes; otherwise serving refuses
    /// to start.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().session_prefix("a.");
    /// # drop(options);
    /// ```
    pub fn session_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.session_prefix = Some(prefix.into());
        self
    }

    /// The URL of the MCP endpoint at the configured address.
    pub fn local_url(&self) -> String {
        url_of(self.addr, &self.path)
    }

    /// The MCP path must not shadow the other routes nor hold routing syntax.
    /// Whether these options can serve: the MCP path shadows no other route and is a
    /// plain path.
    pub(super) fn check(&self) -> Result<(), HttpConfigError> {
        let path = self.path.as_str();
        if matches!(path, "/healthz" | "/readyz" | "/metrics") {
            return Err(HttpConfigError(format!(
                "the MCP path cannot be {path}, which serves something else"
            )));
        }
        if path.contains(['{', '}', '*', ':', '?', '#']) || path.contains("//") {
            return Err(HttpConfigError(format!(
                "the MCP path {path:?} must be a plain path such as /mcp"
            )));
        }
        // One way to authenticate: with a static token and OAuth together it would be
        // unclear which a client must send, and the weaker one would open the endpoint.
        #[cfg(feature = "oauth")]
        if self.oauth.is_some() && self.bearer_token.is_some() {
            return Err(HttpConfigError(
                "HttpOptions::oauth and HttpOptions::bearer_token cannot be combined: choose the OAuth resource server or the static token"
                    .to_owned(),
            ));
        }
        if let Some(prefix) = &self.session_prefix
            && (prefix.is_empty()
                || prefix.len() > 64
                || !prefix.bytes().all(|byte| (0x21..=0x7e).contains(&byte)))
        {
            return Err(HttpConfigError(format!(
                "the session prefix {prefix:?} must be 1 to 64 visible ASCII characters"
            )));
        }
        Ok(())
    }

    /// The OAuth resource server of these options, with `local_url` (the MCP URL at the
    /// bound address) as its default resource URL; `None` without OAuth, a configuration
    /// mistake as an `Err`.
    #[cfg(feature = "oauth")]
    pub(super) fn authenticator(
        &self,
        local_url: &str,
        server_name: &str,
    ) -> Result<Option<super::auth::Authenticator>, HttpConfigError> {
        self.oauth
            .as_ref()
            .map(|oauth| super::auth::Authenticator::new(oauth, local_url, &self.path, server_name))
            .transpose()
            .map_err(HttpConfigError)
    }

    /// The hosts accepted, with the bound address's when it is a specific one.
    pub(super) fn effective_hosts(&self, bound: SocketAddr) -> Vec<String> {
        let mut hosts = self.allowed_hosts.clone();
        if hosts.is_empty() {
            return hosts;
        }
        let ip = bound.ip();
        if !ip.is_unspecified() && !ip.is_loopback() {
            hosts.push(ip.to_string());
        }
        hosts
    }

    pub(super) fn rmcp_config(
        &self,
        hosts: &[String],
        cancel: CancellationToken,
    ) -> StreamableHttpServerConfig {
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(!self.stateless)
            .with_json_response(self.json_response.unwrap_or(self.stateless))
            .with_sse_keep_alive(self.sse_keep_alive)
            .with_max_request_body_bytes(self.max_body_bytes)
            .with_cancellation_token(cancel);
        let config = if hosts.is_empty() {
            config.disable_allowed_hosts()
        } else {
            config.with_allowed_hosts(hosts.iter().cloned())
        };
        match &self.allowed_origins {
            Some(origins) => config
                .with_allowed_origins(origins.iter().cloned())
                .enforce_origin_validation(),
            None => config.disable_allowed_origins(),
        }
    }
}

pub(super) fn url_of(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}
