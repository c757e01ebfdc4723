//! Streamable HTTP: rmcp's `StreamableHttpService` (the protocol: sessions, SSE streams,
//! version negotiation) behind a small axum router that adds what a deployed server needs:
//! Host and Origin validation (DNS rebinding), an optional bearer token, a body size limit,
//! answers to bodies that are not JSON, `/healthz`, `/readyz`, `/metrics`, and a graceful
//! shutdown on SIGTERM/SIGINT that lets the calls in flight finish. Under the router,
//! [`conn`] bounds connections (count, time to send headers); beside it, [`sessions`]
//! bounds sessions (count, idleness, calls in flight, duplicate ids).

mod conn;
mod sessions;

use std::{
    borrow::Cow,
    collections::{BTreeMap, HashMap},
    net::SocketAddr,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, HeaderValue, Method, StatusCode, header, uri::Authority},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use futures_util::StreamExt as _;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde::de::IgnoredAny;
use serde_json::{
    Map, Value,
    value::{RawValue, to_raw_value},
};
use tokio_util::sync::CancellationToken;

use self::{
    conn::ConnLimits,
    sessions::{SessionLimits, Sessions},
};
use super::signals::Signals;
use crate::{
    server::Server,
    setup::builder::ServerBuilder,
    validate::{NUMBER_LITERALS_META_KEY, literal},
};

/// How [`Server::serve_http_with`] serves: the address, the MCP path, who may connect,
/// limits, and the session mode.
///
/// | route | what | checks |
/// |---|---|---|
/// | `POST`/`GET`/`DELETE /mcp` | MCP (the path is [`path`](Self::path)) | Host, Origin, bearer token, body size |
/// | `GET /metrics` | [`Server::metrics`] in Prometheus text | Host, Origin, bearer token |
/// | `GET /healthz` | `200` while the process serves | none |
/// | `GET /readyz` | `200` once started, `503` while draining after SIGTERM | none |
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
/// | [`max_connections`](Self::max_connections) | 512 | new connections wait, unaccepted |
/// | [`max_sessions`](Self::max_sessions) | 1024 | `initialize` gets `503` |
/// | [`session_idle_timeout`](Self::session_idle_timeout) | 10 min | the session ends (then `404`) |
/// | [`max_calls_per_session`](Self::max_calls_per_session) | 32 | the request gets a JSON-RPC error at once |
/// | [`max_body_bytes`](Self::max_body_bytes) | 4 MiB | `413` |
///
/// Calls themselves are bounded by the server's call deadline
/// ([`DEFAULT_TIMEOUT`](crate::DEFAULT_TIMEOUT), 5 minutes, unless the tool or
/// [`ServerBuilder::timeout`] sets another): over HTTP a client that leaves does not
/// cancel its call, so the deadline is what ends a hung one. A session that ends (the
/// client's `DELETE`, the idle timeout) cancels its calls at once, and a request that
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
    addr: SocketAddr,
    path: String,
    allowed_hosts: Vec<String>,
    allowed_origins: Option<Vec<String>>,
    bearer_token: Option<String>,
    max_body_bytes: usize,
    stateless: bool,
    json_response: Option<bool>,
    shutdown_grace: Duration,
    sse_keep_alive: Option<Duration>,
    header_read_timeout: Duration,
    max_connections: usize,
    max_sessions: usize,
    session_idle_timeout: Option<Duration>,
    max_calls_per_session: usize,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
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
            .field("max_sessions", &self.max_sessions)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("max_calls_per_session", &self.max_calls_per_session)
            .finish()
    }
}

/// The hosts accepted by default: loopback names and addresses.
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The browser origins accepted by default: loopback, any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
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
            max_sessions: 1024,
            session_idle_timeout: Some(Duration::from_secs(600)),
            max_calls_per_session: 32,
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
    pub fn sse_keep_alive(mut self, interval: Option<Duration>) -> Self {
        self.sse_keep_alive = interval;
        self
    }

    /// How long a client may take to send a request's headers (10 s by default); the
    /// connection closes after it. The same bound applies to a keep-alive connection
    /// between two requests.
    ///
    /// Without it a client that sends one header byte a second (slowloris) holds a
    /// connection, and a file descriptor, for as long as it likes. Headers are a few
    /// hundred bytes: a real client sends them in milliseconds, even over a slow link, so
    /// 10 s leaves ample room while a flood of stalled clients is cut within seconds.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().header_read_timeout(Duration::from_secs(5));
    /// # drop(options);
    /// ```
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// The most connections served at once (512 by default, at least 1). At the cap
    /// the server stops accepting: new connections wait in the kernel's backlog until
    /// one closes, and cost no file descriptor meanwhile.
    ///
    /// 512 is half the usual soft limit on open files (1024), which leaves descriptors
    /// for the tools' own files, sockets and database pools; a server that raises its
    /// limit can raise this one. Each open SSE stream (a session's `GET`, a call's
    /// answer) holds a connection.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_connections(4096);
    /// # drop(options);
    /// ```
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// The most sessions open at once (1024 by default); over it, an `initialize` gets
    /// `503 Service Unavailable` with `Retry-After`. A session costs about 56 kB, so the
    /// default bounds them to about 56 MB. No effect in [`stateless`](Self::stateless) mode.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_sessions(100);
    /// # drop(options);
    /// ```
    pub fn max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long a session may stay idle, with no request from its client and no call
    /// in flight, before it ends (10 minutes by default; `None` keeps idle sessions
    /// for good). Its next request then gets `404`, upon which MCP clients initialize a
    /// new session.
    ///
    /// Clients that leave without `DELETE` are the common case; without expiry their
    /// sessions would fill [`max_sessions`](Self::max_sessions) for good. Ten minutes
    /// outlasts a person's pause in a conversation with an agent.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().session_idle_timeout(Some(Duration::from_secs(60)));
    /// # drop(options);
    /// ```
    pub fn session_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.session_idle_timeout = timeout;
        self
    }

    /// The most requests in flight in one session (32 by default, at least 1). A request
    /// over it gets a JSON-RPC error (`-32000`) at once that says so.
    ///
    /// A client that leaves does not cancel its calls over HTTP, so without a cap a
    /// client could leave hung calls behind without bound (about 35 kB each). Agents
    /// rarely run more than a few calls at once; 32 leaves room for bursts.
    ///
    /// ```
    /// use fusion_runtime::HttpOptions;
    ///
    /// let options = HttpOptions::default().max_calls_per_session(8);
    /// # drop(options);
    /// ```
    pub fn max_calls_per_session(mut self, calls: usize) -> Self {
        self.max_calls_per_session = calls.max(1);
        self
    }

    /// The URL of the MCP endpoint at the configured address.
    pub fn local_url(&self) -> String {
        url_of(self.addr, &self.path)
    }

    /// The MCP path must not shadow the other routes nor hold routing syntax.
    fn check_path(&self) -> Result<(), String> {
        let path = self.path.as_str();
        if matches!(path, "/healthz" | "/readyz" | "/metrics") {
            return Err(format!(
                "the MCP path cannot be {path}, which serves something else"
            ));
        }
        if path.contains(['{', '}', '*', ':', '?', '#']) || path.contains("//") {
            return Err(format!(
                "the MCP path {path:?} must be a plain path such as /mcp"
            ));
        }
        Ok(())
    }

    /// The hosts accepted, with the bound address's when it is a specific one.
    fn effective_hosts(&self, bound: SocketAddr) -> Vec<String> {
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

    fn rmcp_config(
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

fn url_of(addr: SocketAddr, path: &str) -> String {
    format!("http://{addr}{path}")
}

/// How long, after the last call finished, answers may take to reach their streams before
/// the sessions close.
const SETTLE: Duration = Duration::from_millis(150);

/// How long closing may take once the listener stopped: calls admitted during the drain
/// finish (for up to half of it), then sessions, streams and connections close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

impl<C: Send + Sync + 'static> Server<C> {
    /// Serves the server over Streamable HTTP at `addr` (e.g. `"127.0.0.1:8931"`), MCP
    /// at `/mcp`, with the defaults of [`HttpOptions`], until SIGTERM or SIGINT.
    ///
    /// Returns the process exit code: `0` after a signal (once the calls in flight
    /// finished, or [`HttpOptions::shutdown_grace`] passed), `1` when the address cannot
    /// be bound, [`EXIT_CONFIG`](crate::EXIT_CONFIG) (78) when it does not resolve,
    /// [`EXIT_FATAL`](crate::EXIT_FATAL) (70) after a handler's fatal error.
    ///
    /// ```no_run
    /// use fusion_runtime::prelude::*;
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// #[tokio::main]
    /// async fn main() -> std::process::ExitCode {
    ///     Server::builder("calc", "1.0.0").tool(add).serve_http("127.0.0.1:8931").await
    /// }
    /// ```
    pub async fn serve_http(self, addr: impl std::net::ToSocketAddrs) -> ExitCode {
        match options_at(addr) {
            Ok(options) => self.serve_http_with(options).await,
            Err(code) => code,
        }
    }

    /// [`serve_http`](Self::serve_http) with every option.
    ///
    /// ```no_run
    /// use fusion_runtime::{HttpOptions, prelude::*};
    ///
    /// # async fn serve(server: Server) -> std::process::ExitCode {
    /// let token = std::env::var("MCP_TOKEN").unwrap_or_default();
    /// server
    ///     .serve_http_with(HttpOptions::default().port(8931).bearer_token(token))
    ///     .await
    /// # }
    /// ```
    pub async fn serve_http_with(self, options: HttpOptions) -> ExitCode {
        if let Err(problem) = options.check_path() {
            eprintln!("fusion: {problem}");
            return ExitCode::from(crate::exit::EXIT_CONFIG);
        }
        let listener = match tokio::net::TcpListener::bind(options.addr).await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("fusion: cannot listen on {}: {error}", options.addr);
                return ExitCode::FAILURE;
            }
        };
        let bound = listener.local_addr().unwrap_or(options.addr);
        let hosts = options.effective_hosts(bound);
        let sessions = CancellationToken::new();
        let session_manager = Arc::new(Sessions::new(SessionLimits {
            max_sessions: options.max_sessions,
            idle_timeout: options.session_idle_timeout,
            max_in_flight: options.max_calls_per_session,
        }));
        let state = Arc::new(HttpState {
            hosts: hosts.clone(),
            origins: options.allowed_origins.clone(),
            token: options.bearer_token.clone(),
            max_body_bytes: options.max_body_bytes,
            draining: AtomicBool::new(false),
            sessions: (!options.stateless).then(|| Arc::clone(&session_manager)),
        });
        let router = self.router(
            &options,
            &hosts,
            Arc::clone(&state),
            Arc::clone(&session_manager),
            sessions.clone(),
        );
        let reaper = tokio::spawn(Arc::clone(&session_manager).reap());
        let stop = CancellationToken::new();
        let limits = ConnLimits {
            header_read_timeout: options.header_read_timeout,
            max_connections: options.max_connections,
        };
        let mut serving = tokio::spawn(conn::serve(listener, router, limits, stop.clone()));
        let url = url_of(bound, &options.path);
        tracing::info!(
            target: "fusion::server",
            server = self.name(),
            version = self.version(),
            tools = self.tool_names().len(),
            transport = "http",
            address = %bound,
            url = %url,
            stateless = options.stateless,
            bearer_token = options.bearer_token.is_some(),
            "serving"
        );
        eprintln!(
            "fusion: serving {} {} over Streamable HTTP at {url} (health: http://{bound}/healthz)",
            self.name(),
            self.version()
        );
        let mut signals = Signals::install();
        let code = tokio::select! {
            signal = signals.next() => {
                state.draining.store(true, Ordering::SeqCst);
                let in_flight = self.calls_in_flight();
                tracing::info!(
                    target: "fusion::server",
                    signal,
                    in_flight,
                    grace_ms = options.shutdown_grace.as_millis() as u64,
                    "draining: finishing the calls in flight, then stopping"
                );
                tokio::select! {
                    drained = self.drain(options.shutdown_grace) => {
                        if !drained {
                            tracing::warn!(
                                target: "fusion::server",
                                in_flight = self.calls_in_flight(),
                                "the grace period ended with calls still running; stopping without their answers"
                            );
                        }
                    }
                    signal = signals.next() => {
                        tracing::warn!(target: "fusion::server", signal, "second signal: stopping now");
                    }
                }
                ExitCode::SUCCESS
            }
            () = self.fatal_error() => {
                state.draining.store(true, Ordering::SeqCst);
                self.drain(crate::exit::FATAL_ANSWER_WAIT).await;
                ExitCode::from(crate::EXIT_FATAL)
            }
            ended = &mut serving => {
                match ended {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(error) => {
                        eprintln!("fusion: the HTTP server task failed: {error}");
                        ExitCode::FAILURE
                    }
                }
            }
        };
        // The listener stops first: a new connection is refused, which a load balancer
        // can safely send elsewhere (the request never reached this process); idle
        // connections close, busy ones after their answer. Calls admitted since the
        // drain then finish and their answers reach their streams; only then do the
        // sessions and their streams close (a stateless request still running then would
        // be answered `500`).
        stop.cancel();
        let closing = tokio::time::Instant::now() + DRAIN_TIMEOUT;
        self.drain(DRAIN_TIMEOUT / 2).await;
        tokio::time::sleep(SETTLE).await;
        sessions.cancel();
        if !serving.is_finished()
            && tokio::time::timeout_at(closing, &mut serving)
                .await
                .is_err()
        {
            tracing::warn!(target: "fusion::server", "connections still open after the close timeout; stopping anyway");
            serving.abort();
        }
        reaper.abort();
        tracing::info!(target: "fusion::server", "stopped");
        code
    }

    fn router(
        &self,
        options: &HttpOptions,
        hosts: &[String],
        state: Arc<HttpState>,
        session_manager: Arc<Sessions>,
        sessions: CancellationToken,
    ) -> Router {
        let factory = self.clone();
        let mcp = StreamableHttpService::new(
            move || Ok(factory.clone()),
            session_manager,
            options.rmcp_config(hosts, sessions),
        );
        let metrics_server = self.clone();
        let protected = Router::new()
            .route_service(&options.path, mcp)
            .route(
                "/metrics",
                get(move || {
                    let server = metrics_server.clone();
                    async move {
                        (
                            [(
                                header::CONTENT_TYPE,
                                HeaderValue::from_static(
                                    "text/plain; version=0.0.4; charset=utf-8",
                                ),
                            )],
                            server.metrics().to_prometheus(),
                        )
                    }
                }),
            )
            .layer(middleware::from_fn_with_state(Arc::clone(&state), guard));
        let closing = Arc::clone(&state);
        Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route(
                "/readyz",
                get(move |State(state): State<Arc<HttpState>>| async move {
                    if state.draining.load(Ordering::SeqCst) {
                        (StatusCode::SERVICE_UNAVAILABLE, "draining\n")
                    } else {
                        (StatusCode::OK, "ready\n")
                    }
                }),
            )
            .with_state(state)
            .merge(protected)
            .fallback(|| async {
                (
                    StatusCode::NOT_FOUND,
                    "Not Found: MCP is served at the configured path (default /mcp)\n",
                )
            })
            .layer(middleware::from_fn_with_state(closing, close_when_draining))
            .layer(middleware::from_fn(check_framing))
    }

    /// Calls running now, over every tool.
    fn calls_in_flight(&self) -> i64 {
        self.metrics()
            .tools
            .iter()
            .map(|tool| tool.in_flight.max(0))
            .sum()
    }

    /// Waits until no call runs, or `grace` passes; whether every call finished.
    async fn drain(&self, grace: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            if self.calls_in_flight() == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl<C: Send + Sync + 'static> ServerBuilder<C> {
    /// Builds the server and serves it over Streamable HTTP at `addr` (MCP at `/mcp`)
    /// until SIGTERM or SIGINT; see [`Server::serve_http`].
    ///
    /// Returns the process exit code; `78` (`EX_CONFIG`) when the server could not be
    /// built or a start-up check failed.
    pub async fn serve_http(self, addr: impl std::net::ToSocketAddrs) -> ExitCode {
        match options_at(addr) {
            Ok(options) => self.serve_http_with(options).await,
            Err(code) => code,
        }
    }

    /// Builds the server and serves it over Streamable HTTP with `options`; see
    /// [`Server::serve_http_with`].
    pub async fn serve_http_with(self, options: HttpOptions) -> ExitCode {
        self.start_and_serve(|server| server.serve_http_with(options))
            .await
    }
}

/// The options for serving at `addr`; an address that does not resolve is reported and
/// exits with [`EXIT_CONFIG`](crate::EXIT_CONFIG).
fn options_at(addr: impl std::net::ToSocketAddrs) -> Result<HttpOptions, ExitCode> {
    resolve(addr).map(HttpOptions::new).map_err(|message| {
        eprintln!("fusion: {message}");
        ExitCode::from(crate::exit::EXIT_CONFIG)
    })
}

fn resolve(addr: impl std::net::ToSocketAddrs) -> Result<SocketAddr, String> {
    match addr.to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| "the HTTP address resolves to nothing".to_owned()),
        Err(error) => Err(format!("the HTTP address is invalid: {error}")),
    }
}

/// What the guard checks, shared by the routes it protects.
struct HttpState {
    hosts: Vec<String>,
    origins: Option<Vec<String>>,
    token: Option<String>,
    max_body_bytes: usize,
    draining: AtomicBool,
    /// The sessions, in stateful mode.
    sessions: Option<Arc<Sessions>>,
}

/// While draining, every HTTP/1 answer closes its connection, so that clients and proxies
/// open new connections, which go to another replica once the listener stops, instead of
/// reusing one that this process is about to close (a request sent on a connection as it
/// closes is lost, and a proxy may not send a POST again).
async fn close_when_draining(
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
async fn check_framing(request: Request, next: Next) -> Response {
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

/// The session a request names, if any (`None` also for a value that is not text, which
/// rmcp treats as absent).
fn session_of(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("mcp-session-id")
        .map(|value| value.to_str().unwrap_or(""))
}

/// `404` for a request naming a session that does not exist (MCP: the client then
/// initializes a new one).
fn unknown_session() -> Response {
    (
        StatusCode::NOT_FOUND,
        "Not Found: no session with this Mcp-Session-Id (it ended or never existed); send `initialize` without it to start a new one\n",
    )
        .into_response()
}

/// Just the `method` of a JSON-RPC message, read without building the rest.
#[derive(serde::Deserialize)]
struct MethodOnly {
    #[serde(default)]
    method: Option<String>,
}

/// Host, Origin and bearer token for every protected route; the session a request names;
/// for a POST, the body's size and that it is JSON.
async fn guard(State(state): State<Arc<HttpState>>, request: Request, next: Next) -> Response {
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
    let session = session_of(request.headers()).map(str::to_owned);
    // rmcp answers 404 for an unknown session on GET and POST, but ends it without a
    // word on DELETE (204 for a forged id): one check here, for every method.
    if let (Some(sessions), Some(id)) = (&state.sessions, &session)
        && !sessions.exists(id)
    {
        return unknown_session();
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

/// A `tools/call` body with the number literals of its arguments recorded in
/// `params._meta` (see [`crate::validate::literal`]), the way the stdio transport records
/// them: only the literals a JSON value cannot hold exactly, and any value a client sent
/// under the key removed. Other bodies, and calls without such numbers, pass unchanged.
/// The arguments' text is kept byte for byte: only `_meta` is rewritten.
fn record_number_literals(body: Bytes) -> Bytes {
    /// The members that decide whether there is anything to record.
    #[derive(serde::Deserialize)]
    struct Message<'a> {
        #[serde(borrow, default)]
        method: Option<Cow<'a, str>>,
        #[serde(borrow, default)]
        params: Option<&'a RawValue>,
    }
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
    }
    // A batch, or a message rmcp will refuse anyway: rmcp answers it as it is.
    let Ok(Message {
        method: Some(method),
        params: Some(params),
    }) = serde_json::from_slice::<Message<'_>>(&body)
    else {
        return body;
    };
    if method != "tools/call" {
        return body;
    }
    let Ok(members) = serde_json::from_str::<Params<'_>>(params.get()) else {
        return body;
    };
    let literals = members
        .arguments
        .map(|raw| literal::scan(raw.get()))
        .unwrap_or_default();
    let forged = members.meta.is_some_and(|raw| {
        serde_json::from_str::<HashMap<String, IgnoredAny>>(raw.get())
            .is_ok_and(|meta| meta.contains_key(NUMBER_LITERALS_META_KEY))
    });
    if literals.is_empty() && !forged {
        return body;
    }
    let rewritten = (|| {
        let mut message = serde_json::from_slice::<BTreeMap<String, Box<RawValue>>>(&body).ok()?;
        let mut params =
            serde_json::from_str::<BTreeMap<String, Box<RawValue>>>(members_text(&message)?)
                .ok()?;
        let mut meta = params
            .get("_meta")
            .and_then(|raw| serde_json::from_str::<Map<String, Value>>(raw.get()).ok())
            .unwrap_or_default();
        literals.store_in(&mut meta);
        if meta.is_empty() {
            params.remove("_meta");
        } else {
            params.insert("_meta".to_owned(), to_raw_value(&meta).ok()?);
        }
        message.insert("params".to_owned(), to_raw_value(&params).ok()?);
        serde_json::to_vec(&message).ok()
    })();
    rewritten.map_or(body, Bytes::from)
}

/// The raw text of a message's `params`.
fn members_text(message: &BTreeMap<String, Box<RawValue>>) -> Option<&str> {
    message.get("params").map(|raw| raw.get())
}

fn is_json(headers: &HeaderMap) -> bool {
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
const LINGER: Duration = Duration::from_secs(2);

/// The whole body, or `413` as soon as it is larger than `limit`: at once when
/// `Content-Length` says so (without reading the body), else when the limit is crossed.
async fn collect_limited(headers: &HeaderMap, body: Body, limit: usize) -> Result<Bytes, Response> {
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
fn linger(mut stream: axum::body::BodyDataStream) {
    tokio::spawn(async move {
        let _ = tokio::time::timeout(LINGER, async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await;
    });
}

fn jsonrpc_error(status: StatusCode, code: i64, message: &str) -> Response {
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

fn forbidden(message: &'static str) -> Box<Response> {
    Box::new((StatusCode::FORBIDDEN, message).into_response())
}

fn bad_request(message: &'static str) -> Box<Response> {
    Box::new((StatusCode::BAD_REQUEST, message).into_response())
}

/// A host and an optional port, lower-cased, IPv6 brackets removed.
#[derive(Debug, PartialEq, Eq)]
struct HostPort {
    host: String,
    port: Option<u16>,
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

fn parse_host_entry(entry: &str) -> Option<HostPort> {
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

fn check_host(
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
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

fn parse_origin(text: &str) -> Option<Origin> {
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

fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Whether the allowed origin `entry` (`scheme://host[:port]`, `:*` for any port, `null`)
/// admits `origin`. An entry without a port admits any port, as rmcp does.
fn origin_allows(entry: &str, origin: &Origin) -> bool {
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

fn check_origin(allowed: &[String], headers: &HeaderMap) -> Result<(), Box<Response>> {
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
fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded(body: &str) -> Value {
        let rewritten = record_number_literals(Bytes::from(body.to_owned()));
        serde_json::from_slice(&rewritten).expect("still JSON")
    }

    #[test]
    fn tool_call_bodies_carry_their_number_literals() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":9007199254740993.0,"b":-9223372036854775809}}}"#;
        let message = recorded(body);
        assert_eq!(
            message["params"]["_meta"][NUMBER_LITERALS_META_KEY],
            serde_json::json!({"/a": "9007199254740993.0", "/b": "-9223372036854775809"})
        );
        assert_eq!(message["params"]["name"], "add");
        assert_eq!(message["id"], 1);
        // The arguments' text is kept as sent (a re-serialized f64 would lose the digits).
        let rewritten = record_number_literals(Bytes::from(body));
        let text = String::from_utf8_lossy(&rewritten);
        assert!(text.contains("9007199254740993.0"), "{text}");
    }

    #[test]
    fn other_bodies_pass_unchanged_and_forged_literals_are_removed() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1.5}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":1.5}}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
        ] {
            let same = record_number_literals(Bytes::from(body));
            assert_eq!(same, Bytes::from(body), "{body}");
        }
        let forged = recorded(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","_meta":{"progressToken":7,"fusion\/number_literals":{"/a":"3"}},"arguments":{"a":1,"b":2}}}"#,
        );
        assert_eq!(
            forged["params"]["_meta"],
            serde_json::json!({"progressToken": 7})
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).expect("as expected"));
        }
        map
    }

    fn loopback() -> Vec<String> {
        LOOPBACK_HOSTS.map(str::to_owned).to_vec()
    }

    #[test]
    fn loopback_hosts_pass_and_others_do_not() {
        let uri = axum::http::Uri::from_static("/mcp");
        for host in [
            "localhost",
            "localhost:8931",
            "127.0.0.1:1",
            "[::1]:80",
            "LOCALHOST",
        ] {
            assert!(
                check_host(&loopback(), &uri, &headers(&[("host", host)])).is_ok(),
                "{host}"
            );
        }
        for host in [
            "evil.example.com",
            "evil.example.com:8931",
            "127.0.0.2",
            "localhost.evil",
        ] {
            let rejected =
                check_host(&loopback(), &uri, &headers(&[("host", host)])).expect_err("rejected");
            assert_eq!(rejected.status(), StatusCode::FORBIDDEN, "{host}");
        }
        let ported = vec!["example.com:8080".to_owned()];
        assert!(check_host(&ported, &uri, &headers(&[("host", "example.com:8080")])).is_ok());
        assert!(check_host(&ported, &uri, &headers(&[("host", "example.com:9090")])).is_err());
        assert!(check_host(&[], &uri, &headers(&[("host", "anything")])).is_ok());
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let allowed: Vec<String> = LOOPBACK_ORIGINS.map(str::to_owned).to_vec();
        assert!(check_origin(&allowed, &headers(&[])).is_ok());
        assert!(check_origin(&allowed, &headers(&[("origin", "http://localhost:6274")])).is_ok());
        assert!(check_origin(&allowed, &headers(&[("origin", "http://127.0.0.1:8931")])).is_ok());
        assert!(
            check_origin(&allowed, &headers(&[("origin", "http://evil.example.com")])).is_err()
        );
        assert!(check_origin(&allowed, &headers(&[("origin", "null")])).is_err());
        assert!(check_origin(&allowed, &headers(&[("origin", "not a url")])).is_err());
        let exact = vec!["https://app.example.com".to_owned(), "null".to_owned()];
        assert!(check_origin(&exact, &headers(&[("origin", "https://app.example.com")])).is_ok());
        assert!(check_origin(&exact, &headers(&[("origin", "http://app.example.com")])).is_err());
        assert!(check_origin(&exact, &headers(&[("origin", "null")])).is_ok());
        let port = vec!["https://app.example.com:443".to_owned()];
        assert!(check_origin(&port, &headers(&[("origin", "https://app.example.com")])).is_ok());
        assert!(
            check_origin(
                &port,
                &headers(&[("origin", "https://app.example.com:8443")])
            )
            .is_err()
        );
    }

    #[test]
    fn bearer_tokens_must_match_exactly() {
        assert!(bearer_matches(
            &headers(&[("authorization", "Bearer abc")]),
            "abc"
        ));
        assert!(bearer_matches(
            &headers(&[("authorization", "bearer  abc ")]),
            "abc"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Bearer abcd")]),
            "abc"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Bearer ab")]),
            "abc"
        ));
        assert!(!bearer_matches(
            &headers(&[("authorization", "Basic abc")]),
            "abc"
        ));
        assert!(!bearer_matches(&headers(&[]), "abc"));
    }

    #[test]
    fn the_mcp_path_cannot_shadow_other_routes() {
        assert!(HttpOptions::default().check_path().is_ok());
        assert!(HttpOptions::default().path("api/mcp").check_path().is_ok());
        assert!(
            HttpOptions::default()
                .path("/metrics")
                .check_path()
                .is_err()
        );
        assert!(HttpOptions::default().path("/{id}").check_path().is_err());
    }

    #[test]
    fn the_bound_address_is_an_accepted_host() {
        let options = HttpOptions::default();
        let bound = SocketAddr::from(([10, 1, 2, 3], 80));
        assert!(
            options
                .effective_hosts(bound)
                .contains(&"10.1.2.3".to_owned())
        );
        let any = HttpOptions::default().allow_any_host();
        assert!(any.effective_hosts(bound).is_empty());
    }
}
