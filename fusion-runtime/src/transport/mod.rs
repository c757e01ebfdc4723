//! Serving a [`Server`] to MCP clients. rmcp (the official Rust SDK) speaks the protocol:
//! version negotiation, JSON-RPC dispatch, notifications; the server's `ServerHandler` is in
//! `protocol/mod.rs`. This module serves it over two transports:
//! - stdio, through our own transport ([`stdio`]): framing that answers malformed input, a
//!   fast `tools/call` decode, batched writes with backpressure, duplicate ids refused, the
//!   stdout guard, and a bounded drain on SIGTERM or when stdin closes;
//! - Streamable HTTP (`http`, feature `http`): rmcp's service behind the Host, Origin and
//!   token guard, with session and connection caps.

mod call_answer;
mod choice;
pub(crate) mod decode;
pub(crate) mod hand_off;
#[cfg(feature = "http")]
mod http;
mod signals;
pub(crate) mod stdio;

use std::{io::IsTerminal as _, process::ExitCode, sync::Arc, time::Duration};

use rmcp::{RoleServer, service::ServerInitializeError};

pub use self::choice::Transport;
#[cfg(feature = "fuzzing")]
pub(crate) use self::decode::{
    Decoded, decode_by_envelope, decode_line, decode_tool_call_in_one_pass, said,
};
#[cfg(all(feature = "fuzzing", feature = "http"))]
pub(crate) use self::http::fuzz_guard::check_guard;
#[cfg(feature = "http")]
pub use self::http::{HttpConfigError, HttpOptions};
#[cfg(feature = "oauth")]
pub use self::http::{JwtAlgorithm, OAuth};
pub use self::stdio::StdioOptions;
use self::stdio::{StdioHandle, StdioTransport};
use crate::setup::server::Server;

impl<C: Send + Sync + 'static> Server<C> {
    /// Serves the server over stdin/stdout until the client disconnects, and returns the
    /// process exit code: `0` after a normal end, `1` when the transport failed,
    /// [`EXIT_FATAL`](crate::exit::EXIT_FATAL) (`70`) after a handler's fatal error (once the
    /// calls in flight had a moment to be answered and the answers were written).
    ///
    /// Started from a terminal, it first prints to stderr what it is and how to connect a
    /// client, instead of waiting silently for JSON-RPC.
    ///
    /// From the start, fd 1 belongs to the protocol: output printed by tools, libraries or
    /// child processes goes to stderr instead. When stdin closes, or on SIGTERM or SIGINT
    /// (the server then stops reading), calls still running get
    /// [`StdioOptions::shutdown_grace`] (5 s) to finish and be answered; then it returns
    /// `0` without waiting for the rest (they are dropped with the runtime). A second
    /// signal stops at once. When stdout fails (the client closed it, a full disk), it
    /// returns `1` and says why on stderr. A client that stops reading stdout makes the
    /// server stop reading stdin ([`StdioOptions::max_unwritten_bytes`]). See
    /// [`serve_stdio_with`](Self::serve_stdio_with) to change the limits.
    ///
    /// `FUSION_STDIO_TRANSPORT=rmcp` in the environment serves through rmcp's own
    /// `stdio_pipes()` transport instead (no guard, no answers to malformed input), to
    /// compare the two when diagnosing a client.
    pub async fn serve_stdio(self) -> ExitCode {
        self.serve_stdio_with(StdioOptions::default()).await
    }

    /// [`serve_stdio`](Self::serve_stdio) with the transport's limits set.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use fusion_runtime::{StdioOptions, prelude::*};
    ///
    /// # async fn serve(server: Server) -> std::process::ExitCode {
    /// let options = StdioOptions::default()
    ///     .max_line_bytes(4 << 20)
    ///     .shutdown_grace(Duration::from_secs(30));
    /// server.serve_stdio_with(options).await
    /// # }
    /// ```
    pub async fn serve_stdio_with(self, options: StdioOptions) -> ExitCode {
        let code = self.serve_stdio_until_done(options).await;
        // The log's last lines, and (with `otel`) the spans and metrics not exported yet,
        // leave before the process ends: at the end of input as after a signal.
        crate::log::flush();
        code
    }

    async fn serve_stdio_until_done(self, options: StdioOptions) -> ExitCode {
        if std::io::stdin().is_terminal() {
            eprintln!("{}", self.banner());
        }
        let legacy = std::env::var_os(LEGACY_TRANSPORT_ENV).is_some_and(|value| value == "rmcp");
        tracing::info!(
            target: "fusion::server",
            server = self.name(),
            version = self.version(),
            tools = self.tool_names().len(),
            transport = if legacy { "stdio (rmcp)" } else { "stdio" },
            "serving"
        );
        crate::failure::panic::warn_if_panics_abort();
        self.start_tasks();
        self.start_changes();
        if legacy {
            return serve_exit_code(rmcp::serve_server(self, rmcp::transport::stdio_pipes()).await)
                .await;
        }
        let supported_versions = rmcp::ServerHandler::supported_protocol_versions(&self);
        let (transport, handle) = match stdio::process::take().and_then(|(input, output)| {
            StdioTransport::new(input, output, &options, supported_versions)
        }) {
            Ok(taken) => taken,
            Err(error) => {
                eprintln!("fusion: cannot serve on stdin/stdout: {error}");
                return ExitCode::FAILURE;
            }
        };
        // rmcp takes the server; this handle (one `Arc`) watches for a fatal error.
        let watched = self.clone();
        // Listening from before the handshake: a signal then is drained like any other,
        // instead of killing the process.
        let signals = signals::Signals::install();
        let served = rmcp::serve_server(self, transport).await;
        let code = match served {
            Ok(service) => {
                handle.serve_calls_directly(direct_calls(&watched, &service));
                // The client hears of list changes (`changes/`).
                let peer = service.peer().clone();
                watched
                    .catalog()
                    .changes
                    .add_sessions(std::sync::Arc::new(move || vec![(None, peer.clone())]));
                let code = wait_or_abandon(service, &watched, &handle, &options, signals).await;
                // Tasks still running go to other replicas (a shared task store).
                watched
                    .inner
                    .tasks
                    .hand_over(std::time::Duration::from_secs(2))
                    .await;
                watched.catalog().changes.stop();
                code
            }
            Err(error) => served_error_code(&error),
        };
        // A fatal error that raced the end of the input still decides the exit code; then
        // a failed stdout (the client can no longer hear the server) does.
        let code = if watched.has_failed_fatally() {
            ExitCode::from(crate::exit::EXIT_FATAL)
        } else if let Some(error) = handle.output_error() {
            tracing::error!(
                target: "fusion::server",
                %error,
                unanswered = handle.pending(),
                "stdout failed: the client can no longer receive answers; stopping"
            );
            eprintln!("fusion: stdout failed ({error}); stopping with exit code 1");
            ExitCode::FAILURE
        } else {
            code
        };
        // Answers queued last (a handshake error, the last responses) reach the client
        // before the process goes.
        handle.flush(FLUSH_TIMEOUT).await;
        code
    }

    /// What a person who starts the server in a terminal reads: the server, its tools, and
    /// how to connect a client.
    pub fn banner(&self) -> String {
        let exe = std::env::current_exe()
            .map(|path| path.display().to_string())
            .unwrap_or_else(|_| self.name().to_owned());
        let mut text = format!(
            "{} {} — an MCP server (fusion). It speaks MCP (JSON-RPC) on stdin/stdout and is meant to be started by an MCP client.\n\nTools:\n",
            self.name(),
            self.version()
        );
        for tool in self.tools() {
            let description = tool.description.as_deref().unwrap_or("");
            let first_line = description.lines().next().unwrap_or("");
            text.push_str(&format!("  {:<20} {first_line}\n", tool.name));
        }
        // The variables the server requires, with placeholders: a snippet without them
        // would start a server that exits 78 at once.
        let required = &self.inner.required_env;
        let placeholder = |name: &String| format!("<your {name}>");
        let mut entry = serde_json::json!({ "command": exe, "args": [] });
        if !required.is_empty() {
            let env: serde_json::Map<String, serde_json::Value> = required
                .iter()
                .map(|name| (name.clone(), placeholder(name).into()))
                .collect();
            entry["env"] = env.into();
        }
        let config = serde_json::json!({ "mcpServers": { self.name(): entry } });
        let config = serde_json::to_string_pretty(&config).unwrap_or_default();
        let inspector_env: String = required
            .iter()
            .map(|name| format!("-e {name}='{}' ", placeholder(name)))
            .collect();
        text.push_str(&format!(
            "\nTry it with the MCP Inspector:\n  npx -y @modelcontextprotocol/inspector@2.12.0 --cli {inspector_env}{exe} --method tools/list\n\n\
             Claude Desktop (claude_desktop_config.json):\n{config}\n\n\
             Waiting for JSON-RPC on stdin (Ctrl-D to quit)."
        ));
        text
    }
}

/// What the stdio transport needs to serve `tools/call` itself: the server's
/// `ServerHandler::call_tool`, the session's peer, and what the session is, for every
/// session rmcp runs. Opened with `initialize`, the session has the negotiated revision;
/// without (rmcp's inline lifecycle of 2026-07-28: the first request's `_meta` named its
/// revision, and every request names one), rmcp keeps no `peer_info`. `stdio/direct.rs`
/// says which calls of each then go direct, and what stays with rmcp.
fn direct_calls<C: Send + Sync + 'static>(
    server: &Server<C>,
    service: &RunningServer<C>,
) -> stdio::DirectCalls {
    use rmcp::model::ProtocolVersion;
    let peer = service.peer();
    let initialized = peer.peer_info();
    let session = match &initialized {
        Some(info) if info.protocol_version < ProtocolVersion::V_2026_07_28 => {
            stdio::Session::Legacy
        }
        _ => stdio::Session::Current {
            versions: rmcp::ServerHandler::supported_protocol_versions(server)
                .iter()
                .filter(|version| **version >= ProtocolVersion::V_2026_07_28)
                .cloned()
                .collect(),
            initialized: initialized.is_some(),
        },
    };
    stdio::DirectCalls::new(Arc::new(server.clone()), peer.clone(), session)
}

/// The environment variable that selects rmcp's own stdio transport (`=rmcp`).
const LEGACY_TRANSPORT_ENV: &str = "FUSION_STDIO_TRANSPORT";

/// How long rmcp may take to wind down once every call is answered. It waits up to 5 s
/// for handlers whose answers it already dropped (cancelled calls); nothing is lost by not
/// waiting for those.
const WIND_DOWN: Duration = Duration::from_millis(500);

/// How long the last answers may take to reach the client.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(2);

/// How long, after calls were abandoned, the runtime may take to drop them before the
/// process exits anyway (a handler blocking a worker thread would hold the runtime's
/// shutdown forever).
const ABANDON_EXIT_DELAY: Duration = Duration::from_secs(3);

type RunningServer<C> = rmcp::service::RunningService<RoleServer, Server<C>>;

/// Waits for the service to end, but not for calls still running once the input has
/// ended (stdin closed, or SIGTERM/SIGINT stopped the reading) and the transport's grace
/// period is over, nor past a handler's fatal error. A second signal stops at once.
async fn wait_or_abandon<C: Send + Sync + 'static>(
    service: RunningServer<C>,
    server: &Server<C>,
    handle: &StdioHandle,
    options: &StdioOptions,
    mut signals: signals::Signals,
) -> ExitCode {
    // The service stays alive (inside `waiting`) until this returns, so answers keep
    // flowing while the branches below wait.
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let mut draining = false;
    loop {
        tokio::select! {
            ended = &mut waiting => return ended_code(ended),
            () = server.fatal_error() => return fatal_exit(handle).await,
            () = handle.input_ended() => break,
            signal = signals.next() => {
                if draining {
                    tracing::warn!(target: "fusion::server", signal, "second signal: stopping now");
                    exit_soon(ABANDON_EXIT_DELAY, 0);
                    return ExitCode::SUCCESS;
                }
                draining = true;
                tracing::info!(
                    target: "fusion::server",
                    signal,
                    in_flight = handle.pending(),
                    grace_ms = options.shutdown_grace.as_millis() as u64,
                    "draining: no new requests are read; the calls in flight may finish within the grace period"
                );
                handle.stop_reading();
            }
        }
    }
    let abandoned = handle.pending();
    if handle.output_error().is_some() {
        // Nothing more can be answered; `serve_stdio_with` reports the failure (exit 1).
        if abandoned > 0 {
            exit_soon(ABANDON_EXIT_DELAY, 1);
        }
        return ExitCode::FAILURE;
    }
    if abandoned == 0 {
        return match tokio::time::timeout(WIND_DOWN, &mut waiting).await {
            Ok(ended) => ended_code(ended),
            Err(_) => ExitCode::SUCCESS,
        };
    }
    tracing::warn!(
        target: "fusion::server",
        abandoned,
        grace_ms = options.shutdown_grace.as_millis() as u64,
        cause = if draining { "signal" } else { "stdin closed" },
        "the input ended and calls were still running after the grace period; stopping without their answers"
    );
    exit_soon(ABANDON_EXIT_DELAY, 0);
    ExitCode::SUCCESS
}

/// After a handler's fatal error: the calls in flight (the fatal one among them, its
/// answer already rendered) get a moment to have their answers queued, then the process
/// ends with [`EXIT_FATAL`](crate::exit::EXIT_FATAL) once the output is flushed (by the caller).
async fn fatal_exit(handle: &StdioHandle) -> ExitCode {
    let in_flight = handle.pending_ids();
    let deadline = tokio::time::Instant::now() + crate::exit::FATAL_ANSWER_WAIT;
    // Polled rather than signalled: this runs once, and the hot path stays free of it.
    while handle.any_pending(&in_flight) && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    exit_soon(ABANDON_EXIT_DELAY, i32::from(crate::exit::EXIT_FATAL));
    ExitCode::from(crate::exit::EXIT_FATAL)
}

/// Exits the process with `code` after `delay` unless it ended before: the handlers of
/// abandoned calls are dropped with the runtime, which waits for each worker thread's
/// current poll, and a handler that blocks its thread never yields.
fn exit_soon(delay: Duration, code: i32) {
    let spawned = std::thread::Builder::new()
        .name("fusion-exit".into())
        .spawn(move || {
            std::thread::sleep(delay);
            eprintln!("fusion: a tool call blocked the runtime's shutdown; exiting");
            // `exit` skips the flush that `serve_*` does on the way out: the log's last
            // lines (the fatal event among them) are written first.
            crate::log::flush();
            std::process::exit(code);
        });
    if let Err(error) = spawned {
        tracing::warn!(target: "fusion::server", %error, "could not start the exit watchdog");
    }
}

fn ended_code(ended: Result<rmcp::service::QuitReason, tokio::task::JoinError>) -> ExitCode {
    match ended {
        Ok(reason) => {
            tracing::info!(target: "fusion::server", reason = ?reason, "stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("fusion: the server task failed: {error}");
            ExitCode::FAILURE
        }
    }
}

fn served_error_code(error: &ServerInitializeError) -> ExitCode {
    match error {
        // The client went away before the handshake: nothing to serve, not a failure.
        ServerInitializeError::ConnectionClosed(_) => ExitCode::SUCCESS,
        error => {
            eprintln!("fusion: the MCP handshake failed: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The rmcp-transport path: serve until the service ends.
async fn serve_exit_code<C: Send + Sync + 'static>(
    served: Result<RunningServer<C>, ServerInitializeError>,
) -> ExitCode {
    match served {
        Ok(service) => ended_code(service.waiting().await),
        Err(error) => served_error_code(&error),
    }
}

impl<C: Send + Sync + 'static> crate::setup::builder::ServerBuilder<C> {
    /// Builds the server and serves it over stdio until the client disconnects.
    ///
    /// Returns the process exit code: `0` after a normal end, `78` (`EX_CONFIG`) when the
    /// server could not be built, `1` when the transport failed.
    pub async fn serve_stdio(self) -> std::process::ExitCode {
        self.serve_stdio_with(StdioOptions::default()).await
    }

    /// [`serve_stdio`](Self::serve_stdio) with other limits (line size, shutdown grace).
    pub async fn serve_stdio_with(self, options: StdioOptions) -> std::process::ExitCode {
        self.start_and_serve(|server| server.serve_stdio_with(options))
            .await
    }
}
