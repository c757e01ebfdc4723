//! Streamable HTTP: rmcp's `StreamableHttpService` (the protocol: sessions, SSE streams,
//! version negotiation) behind a small axum router that adds what a deployed server needs:
//! Host and Origin validation (DNS rebinding), an optional bearer token, a body size limit,
//! answers to bodies that are not JSON, `/healthz`, `/readyz`, `/metrics`, and a graceful
//! shutdown on SIGTERM/SIGINT that lets the calls in flight finish. `tools/call` is served
//! by the transport itself ([`direct`]); with `serve_http`, [`front`] does that in front of
//! the router, which the other requests reach. Under them, [`conn`] bounds connections
//! (count, time to send headers); beside them, [`sessions`] bounds sessions (count,
//! idleness, calls in flight, duplicate ids).

mod answer;
mod asked;
#[cfg(feature = "oauth")]
mod auth;
mod body;
mod call_stream;
mod clients;
mod conn;
mod current;
mod direct;
mod front;
#[cfg(feature = "fuzzing")]
pub(crate) mod fuzz_guard;
mod guard;
mod hang_up;
mod hosts;
mod json_answer;
mod limits;
mod literals;
mod options;
mod refusal;
mod session_entry;
mod sessions;
mod streams;

use std::{
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
    extract::State,
    http::{HeaderValue, StatusCode, header},
    middleware::{self},
    routing::{any, get},
};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use tokio_util::sync::CancellationToken;

use self::{
    conn::ConnLimits,
    sessions::{SessionLimits, Sessions},
};
use super::signals::Signals;
use crate::{setup::builder::ServerBuilder, setup::server::Server};

#[cfg(feature = "oauth")]
pub use self::auth::{JwtAlgorithm, OAuth};
pub use self::options::{HttpConfigError, HttpOptions};
use self::{guard::*, options::*};

/// The endpoint's routes, and what a server that serves them controls: the guard's state
/// (draining) and the sessions' cancellation (closing their streams).
struct Endpoint {
    router: Router,
    state: Arc<HttpState>,
    sessions: CancellationToken,
}

/// How long, after the last call finished, answers may take to reach their streams before
/// the sessions close.
const SETTLE: Duration = Duration::from_millis(150);

/// How long the tasks still running after the grace period may take to be handed over
/// (their leases released, or their ends written).
const HAND_OVER_WAIT: Duration = Duration::from_secs(2);

/// How long closing may take once the listener stopped: calls admitted during the drain
/// finish (for up to half of it), then sessions, streams and connections close.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
impl<C: Send + Sync + 'static> Server<C> {
    /// Serves the server over Streamable HTTP at `addr` (e.g. `"127.0.0.1:8931"`), MCP
    /// at `/mcp`, with the defaults of [`HttpOptions`], until SIGTERM or SIGINT.
    ///
    /// Returns the process exit code: `0` after a signal (once the calls in flight
    /// finished, or [`HttpOptions::shutdown_grace`] passed), `1` when the address cannot
    /// be bound, [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG) (78) when it does not resolve,
    /// [`EXIT_FATAL`](crate::exit::EXIT_FATAL) (70) after a handler's fatal error.
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
    /// #[tokio::main(flavor = "current_thread")]
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
        let code = self.serve_http_until_done(options).await;
        // The log's last lines, and (with `otel`) the spans and metrics not exported yet,
        // leave before the process ends.
        crate::log::flush();
        code
    }

    async fn serve_http_until_done(self, options: HttpOptions) -> ExitCode {
        if let Err(problem) = options.check() {
            eprintln!("{}: {problem}", self.name());
            return ExitCode::from(crate::exit::EXIT_CONFIG);
        }
        // No more connections than the process may open files for, less a reserve: at the
        // descriptor limit `accept` fails, and the server could answer nobody.
        let within = conn::within_descriptor_limit(options.max_connections);
        let options = if within < options.max_connections {
            tracing::warn!(target: "fusion::server", configured = options.max_connections, max_connections = within, "max_connections lowered to fit the open-file limit (RLIMIT_NOFILE), keeping descriptors in reserve; raise the limit to serve more connections");
            options.max_connections(within)
        } else {
            options
        };
        let listener = match tokio::net::TcpListener::bind(options.addr).await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!(
                    "{}: cannot listen on {}: {error}",
                    self.name(),
                    options.addr
                );
                return ExitCode::FAILURE;
            }
        };
        let bound = listener.local_addr().unwrap_or(options.addr);
        let Endpoint {
            router,
            state,
            sessions,
        } = match self.endpoint(&options, bound) {
            Ok(endpoint) => endpoint,
            Err(problem) => {
                eprintln!("{}: {problem}", self.name());
                return ExitCode::from(crate::exit::EXIT_CONFIG);
            }
        };
        // The routes of the endpoint, plus what only a whole server has: a 404 for every
        // other path (an app that mounts the router keeps its own fallback), and, in front
        // of it, the front door: the calls served past the router, and closing connections
        // while draining.
        let router = router.fallback(|| async {
            (
                StatusCode::NOT_FOUND,
                "Not Found: MCP is served at the configured path (default /mcp)\n",
            )
        });
        let front = front::FrontDoor::new(Arc::clone(&state), router, &options.path);
        state.start_reaper();
        self.start_tasks();
        self.start_changes();
        #[cfg(feature = "oauth")]
        let warm_up = state.oauth.as_ref().map(|oauth| {
            eprintln!(
                "fusion: OAuth resource server: tokens from {}, metadata at {}",
                oauth.issuer(),
                oauth.metadata_url()
            );
            oauth.spawn_warm_up()
        });
        let stop = CancellationToken::new();
        let limits = ConnLimits {
            header_read_timeout: options.header_read_timeout,
            max_connections: options.max_connections,
            max_connections_per_peer: options.effective_connections_per_peer(),
        };
        let mut serving = tokio::spawn(conn::serve(listener, front, limits, stop.clone()));
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
        crate::failure::panic::warn_if_panics_abort();
        let mut signals = Signals::install();
        let code = tokio::select! {
            signal = signals.next() => {
                state.draining.store(true, Ordering::SeqCst);
                self.inner.tasks.stop_accepting();
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
                // Tasks still running after the grace period go to other replicas.
                self.inner.tasks.hand_over(HAND_OVER_WAIT).await;
                self.catalog().changes.stop();
                ExitCode::SUCCESS
            }
            () = self.fatal_error() => {
                state.draining.store(true, Ordering::SeqCst);
                self.drain(crate::exit::FATAL_ANSWER_WAIT).await;
                ExitCode::from(crate::exit::EXIT_FATAL)
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
        #[cfg(feature = "oauth")]
        if let Some(Some(warm_up)) = warm_up {
            warm_up.abort();
        }
        tracing::info!(target: "fusion::server", "stopped");
        code
    }

    /// The MCP endpoint as an axum [`Router`], to mount into an existing app with
    /// `.merge(..)` or `.nest(..)` and wrap in tower layers: the MCP path
    /// ([`HttpOptions::path`]) behind the Host/Origin guard, the bearer token or OAuth, the
    /// body limit and the session caps, plus `/healthz`, `/readyz` and `/metrics`. It has
    /// no fallback, so the app's own stays. [`serve_http_with`](Self::serve_http_with)
    /// serves this router and adds what only a listener can: the connection cap, the
    /// header-read timeout, the 404 for other paths and the drain on SIGTERM.
    ///
    /// The accepted `Host`s are the options' (loopback by default, plus the address in
    /// [`HttpOptions::addr`] when it is a specific one): set
    /// [`allow_hosts`](HttpOptions::allow_hosts) for the names the app is reached by.
    ///
    /// Returns an error for options that cannot serve (an MCP path that shadows another
    /// route or is not a plain path).
    ///
    /// ```
    /// use axum::{Router, routing::get};
    /// use fusion_runtime::{HttpOptions, prelude::*};
    ///
    /// /// Add two integers.
    /// #[mcp_tool]
    /// async fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let server = Server::builder("calc", "1.0.0").tool(add).build();
    /// let app: Router = Router::new()
    ///     .route("/", get(|| async { "the team's own app" }))
    ///     .merge(server.router(HttpOptions::default())?);
    /// # let _ = app;
    /// # Ok::<(), fusion_runtime::HttpConfigError>(())
    /// # }).unwrap();
    /// ```
    pub fn router(&self, options: HttpOptions) -> Result<Router, HttpConfigError> {
        options.check()?;
        let endpoint = self.endpoint(&options, options.addr)?;
        // A shared task store's sweeper and signal listener, when a runtime runs.
        self.start_tasks();
        self.start_changes();
        // Loads the issuer's keys now when a runtime runs, else with the first token.
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &endpoint.state.oauth {
            drop(oauth.spawn_warm_up());
        }
        Ok(endpoint.router)
    }

    /// The routes of the endpoint and the state that serving them shares; an error for an
    /// OAuth configuration that cannot serve.
    fn endpoint(
        &self,
        options: &HttpOptions,
        bound: SocketAddr,
    ) -> Result<Endpoint, HttpConfigError> {
        // By default the resource URL (the audience tokens must name) is the endpoint's
        // URL at the bound address.
        #[cfg(feature = "oauth")]
        let oauth = options
            .authenticator(&url_of(bound, &options.path), self.name())?
            .map(Arc::new);
        let hosts = options.effective_hosts(bound);
        let sessions = CancellationToken::new();
        let session_manager = Arc::new(Sessions::new(SessionLimits {
            max_sessions: options.max_sessions,
            idle_timeout: options.session_idle_timeout,
            max_in_flight: options.max_calls_per_session,
            max_queued: options.max_queued_per_session,
        }));
        let state = Arc::new(HttpState {
            hosts: hosts::AllowedHosts::new(&hosts),
            origins: options.allowed_origins.clone(),
            token: options.bearer_token.clone(),
            max_body_bytes: options.max_body_bytes,
            draining: AtomicBool::new(false),
            sessions: (!options.stateless).then(|| Arc::clone(&session_manager)),
            // The calls served past rmcp know the sessions too (for what their callers
            // were last shown of the tools, `protocol/tools_changed.rs`).
            direct: Some(
                self.with_session_peers(Arc::clone(&session_manager) as _)
                    .direct_calls(options),
            ),
            reaper: std::sync::Once::new(),
            session_prefix: options.session_prefix.clone(),
            streams: streams::StreamBudget::new(
                options.effective_max_streams(),
                streams::Caps {
                    per_session: options.max_streams_per_session,
                    per_subject: options.max_streams_per_subject,
                    per_client: options.effective_streams_per_client(),
                },
            ),
            trusted_proxies: clients::TrustedProxies::parse(&options.trusted_proxies)?,
            forwarded_clients: clients::Holdings::new(options.effective_connections_per_peer()),
            #[cfg(feature = "oauth")]
            oauth,
        });
        // The sessions hear of list changes (`changes/`).
        let told = Arc::clone(&session_manager);
        self.catalog()
            .changes
            .add_sessions(Arc::new(move || told.peers()));
        // Each session's service tells the sessions its peer, for the calls served past
        // rmcp (`direct.rs`).
        let factory = self.with_session_peers(Arc::clone(&session_manager) as _);
        let mcp = StreamableHttpService::new(
            move || Ok(factory.clone()),
            session_manager,
            options.rmcp_config(&hosts, sessions.clone()),
        );
        // Shared, not cloned: axum clones a route's service for every request, and rmcp's
        // holds its whole configuration (allowed hosts and origins among it), which the
        // calls served past it (`direct.rs`) never use.
        let mcp = Arc::new(mcp);
        let metrics_server = self.clone();
        let readiness_server = self.clone();
        let protected = Router::new()
            .route(
                &options.path,
                any(move |request: axum::extract::Request| {
                    let mcp = Arc::clone(&mcp);
                    async move { mcp.handle(request).await }
                }),
            )
            .route(
                "/metrics",
                get(move || {
                    let server = metrics_server.clone();
                    async move {
                        (
                            [(
                                header::CONTENT_TYPE,
                                HeaderValue::from_static(crate::metrics::PROMETHEUS_CONTENT_TYPE),
                            )],
                            server.metrics().to_prometheus(),
                        )
                    }
                }),
            )
            .layer(middleware::from_fn_with_state(Arc::clone(&state), guard))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&state),
                session_prefix,
            ));
        // RFC 9728 metadata: open, like the probes (clients read it to find the issuer);
        // merged after the guard's layer, so the guard does not wrap it.
        #[cfg(feature = "oauth")]
        let protected = match &state.oauth {
            Some(oauth) => protected.merge(oauth.well_known_routes()),
            None => protected,
        };
        let router = Router::new()
            .route("/healthz", get(|| async { "ok\n" }))
            .route(
                "/readyz",
                get(move |State(state): State<Arc<HttpState>>| {
                    // The surface's digest on its own line, so a probe or a deploy script
                    // sees which contract each replica serves.
                    // Then a line for each mounted upstream, up or down.
                    let surface = format!(
                        "surface {}\n{}",
                        readiness_server.surface_digest(),
                        readiness_server.inner.mounts.report()
                    );
                    async move {
                        if state.draining.load(Ordering::SeqCst) {
                            (
                                StatusCode::SERVICE_UNAVAILABLE,
                                format!("draining\n{surface}"),
                            )
                        } else {
                            (StatusCode::OK, format!("ready\n{surface}"))
                        }
                    }
                }),
            )
            .with_state(Arc::clone(&state))
            .merge(protected)
            .layer(middleware::from_fn(check_framing));
        Ok(Endpoint {
            router,
            state,
            sessions,
        })
    }

    /// What serves the `tools/call` requests that go past rmcp (`direct.rs`).
    fn direct_calls(&self, options: &HttpOptions) -> direct::DirectCalls {
        let logging = self.clone();
        let detached = self.clone();
        direct::DirectCalls {
            calls: Arc::new(self.clone()),
            path: options.path.clone(),
            logs_to_client: Arc::new(move || logging.log_level().is_some()),
            current: current::CurrentRevision::new(
                &rmcp::ServerHandler::supported_protocol_versions(self),
                self.tools(),
            ),
            start_detached: Arc::new(move |current| {
                direct::DetachedPeer::start(detached.clone(), current)
            }),
            detached: std::sync::OnceLock::new(),
            detached_current: std::sync::OnceLock::new(),
            keep_alive: options.sse_keep_alive,
        }
    }

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

#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
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
/// exits with [`EXIT_CONFIG`](crate::exit::EXIT_CONFIG).
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

#[cfg(test)]
mod tests {
    use super::{literals::number_literals_of, *};

    #[test]
    fn tool_call_bodies_carry_their_number_literals() {
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":9007199254740993.0,"b":-9223372036854775809}}}"#;
        let literals = number_literals_of(body.as_bytes()).expect("recorded");
        assert_eq!(
            (literals.get("/a"), literals.get("/b")),
            (Some("9007199254740993.0"), Some("-9223372036854775809"))
        );
    }

    #[test]
    fn other_bodies_have_none_and_a_clients_meta_is_not_read() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":1.5}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"a":1.5}}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","_meta":{"progressToken":7,"fusion\/number_literals":{"/a":"3"}},"arguments":{"a":1,"b":2}}}"#,
        ] {
            assert_eq!(number_literals_of(body.as_bytes()), None, "{body}");
        }
    }

    #[cfg(feature = "oauth")]
    #[test]
    fn oauth_and_a_static_token_cannot_be_combined() {
        let oauth = OAuth::new("https://id.example.com");
        assert!(HttpOptions::default().oauth(oauth.clone()).check().is_ok());
        let both = HttpOptions::default()
            .bearer_token("s3cret")
            .oauth(oauth.clone());
        let error = both.check().expect_err("refused");
        assert!(error.to_string().contains("cannot be combined"), "{error}");
        // An OAuth configuration that cannot serve is a configuration error of the router.
        let server = crate::setup::server::Server::builder("t", "1").build();
        let unreachable = HttpOptions::default()
            .addr(([0, 0, 0, 0], 8080))
            .oauth(oauth.clone());
        assert!(server.router(unreachable).is_err());
        let bad = HttpOptions::default().oauth(OAuth::new("not a url"));
        assert!(server.router(bad).is_err());
        assert!(server.router(HttpOptions::default().oauth(oauth)).is_ok());
    }

    #[test]
    fn the_mcp_path_cannot_shadow_other_routes() {
        assert!(HttpOptions::default().check().is_ok());
        assert!(HttpOptions::default().path("api/mcp").check().is_ok());
        assert!(HttpOptions::default().path("/metrics").check().is_err());
        assert!(HttpOptions::default().path("/{id}").check().is_err());
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
