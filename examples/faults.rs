//! The fault server: tools that hang, sleep, panic, print to stdout and fail in every
//! class, served over stdio (`src/faults.rs` defines them). Not a demo: the robustness,
//! recovery, lifecycle and soak tests drive it, and the stdio throughput check measures it.
//!
//! `cargo run --example faults [-- --require-env NAME] [-- --fail-setup]`: the flags add a
//! start-up check that fails (exit code 78), for the tests of the start-up path.
//! `--no-log` serves without installing a log subscriber.
//!
//! `--http PORT` serves Streamable HTTP on 127.0.0.1:PORT instead (`0`: a free port, reported
//! on stderr), for the HTTP tests (tests/http/http.rs), with `--bearer-token T`,
//! `--max-body-bytes N`, `--shutdown-grace-ms N` and `--stateless`. Small limits for the
//! hostile-peer tests (tests/hostile/http.rs): `--header-timeout-ms N`,
//! `--max-connections N`, `--max-connections-per-peer N`, `--max-streams N`,
//! `--max-streams-per-session N`, `--max-streams-per-client N`, `--trusted-proxies LIST`,
//! `--max-sessions N`, `--session-idle-ms N`,
//! `--max-calls-per-session N`, `--max-queued-per-session N` (the `HttpOptions` of the
//! same names), `--call-timeout-ms N` (the server's default call deadline,
//! `ServerBuilder::timeout`), `--heartbeat-ms N` (`ServerBuilder::heartbeat`) and
//! `--max-output-bytes N` (`ServerBuilder::max_output`).

use fusion_tests::faults::{self, FaultCtx};

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "faults",
    about: "tools that hang, panic and fail in every class, over stdio (for the tests)",
    flags: &[
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT instead (0: a free port, printed on stderr)",
        ),
        ("--stateless", "", "with --http: serve without sessions"),
        (
            "--bearer-token",
            "TOKEN",
            "with --http: require this bearer token",
        ),
        (
            "--max-body-bytes",
            "N",
            "with --http: the largest request body",
        ),
        (
            "--shutdown-grace-ms",
            "N",
            "with --http: how long calls may finish after SIGTERM",
        ),
        (
            "--header-timeout-ms",
            "N",
            "with --http: how long a request's headers may take",
        ),
        ("--max-connections", "N", "with --http: connections at once"),
        (
            "--max-connections-per-peer",
            "N",
            "with --http: connections at once from one address",
        ),
        ("--max-streams", "N", "with --http: event streams at once"),
        (
            "--max-streams-per-session",
            "N",
            "with --http: event streams at once in one session",
        ),
        (
            "--max-streams-per-client",
            "N",
            "with --http: event streams at once from one client",
        ),
        (
            "--trusted-proxies",
            "LIST",
            "with --http: the proxies (addresses or ranges, comma-separated) whose X-Forwarded-For names the client",
        ),
        ("--max-sessions", "N", "with --http: sessions at once"),
        (
            "--session-idle-ms",
            "N",
            "with --http: when an idle session expires",
        ),
        (
            "--max-calls-per-session",
            "N",
            "with --http: calls in flight per session",
        ),
        (
            "--max-queued-per-session",
            "N",
            "with --http: requests waiting behind them",
        ),
        (
            "--sse-keep-alive-ms",
            "N",
            "with --http: the SSE keep-alive interval (a longer call's answer streams)",
        ),
        ("--call-timeout-ms", "N", "the default deadline of a call"),
        (
            "--heartbeat-ms",
            "N",
            "a progress heartbeat after N ms without progress (0: none)",
        ),
        (
            "--max-output-bytes",
            "N",
            "the largest result a tool may answer (ServerBuilder::max_output)",
        ),
        (
            "--require-env",
            "NAME",
            "refuse to start (exit 78) unless NAME is set",
        ),
        ("--fail-setup", "", "add a setup step that fails (exit 78)"),
        ("--no-log", "", "serve without a log subscriber"),
    ],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    let args: Vec<String> = std::env::args().collect();
    // `--no-log` serves without a log subscriber (for the test of fatal errors that no
    // subscriber records).
    if !args.iter().any(|arg| arg == "--no-log") {
        fusion_runtime::log::init();
    }
    let mut builder = faults::builder(FaultCtx::default());
    if let Some(name) = args
        .iter()
        .position(|arg| arg == "--require-env")
        .and_then(|at| args.get(at + 1))
    {
        builder = builder.require_env(name.clone());
    }
    if args.iter().any(|arg| arg == "--fail-setup") {
        builder =
            builder.setup(|| async { Err::<(), _>("the upstream credentials file is unreadable") });
    }
    let durations = millis(&args, "--call-timeout-ms")
        .and_then(|timeout| Ok((timeout, millis(&args, "--heartbeat-ms")?)));
    match durations {
        Ok((timeout, heartbeat)) => {
            if let Some(limit) = timeout {
                builder = builder.timeout(limit);
            }
            if let Some(every) = heartbeat {
                builder = builder.heartbeat(every);
            }
        }
        Err(message) => {
            eprintln!("faults: {message}");
            return std::process::ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    }
    if let Some(bytes) = args
        .iter()
        .position(|arg| arg == "--max-output-bytes")
        .and_then(|at| args.get(at + 1))
    {
        match bytes.parse::<usize>() {
            Ok(bytes) => builder = builder.max_output(bytes),
            Err(_) => {
                eprintln!("faults: --max-output-bytes takes a number, not {bytes:?}");
                return std::process::ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
            }
        }
    }
    match http_options(&args) {
        Some(Ok(options)) => builder.serve_http_with(options).await,
        Some(Err(message)) => {
            eprintln!("faults: {message}");
            std::process::ExitCode::from(fusion_runtime::exit::EXIT_CONFIG)
        }
        None => builder.serve_stdio().await,
    }
}

/// The duration a flag such as `--call-timeout-ms N` gives, in milliseconds.
fn millis(args: &[String], flag: &str) -> Result<Option<std::time::Duration>, String> {
    let Some(at) = args.iter().position(|arg| arg == flag) else {
        return Ok(None);
    };
    let text = args.get(at + 1).ok_or(format!("{flag} needs a value"))?;
    text.parse()
        .map(|ms| Some(std::time::Duration::from_millis(ms)))
        .map_err(|_| format!("{flag} takes a number, not {text:?}"))
}

/// The HTTP options when `--http PORT` is given.
fn http_options(args: &[String]) -> Option<Result<fusion_runtime::HttpOptions, String>> {
    let value = |flag: &str| {
        args.iter().position(|arg| arg == flag).map(|at| {
            args.get(at + 1)
                .cloned()
                .ok_or(format!("{flag} needs a value"))
        })
    };
    let number = |flag: &str| -> Result<Option<u64>, String> {
        value(flag)
            .transpose()?
            .map(|text| {
                text.parse()
                    .map_err(|_| format!("{flag} takes a number, not {text:?}"))
            })
            .transpose()
    };
    let port = match value("--http")? {
        Ok(port) => port,
        Err(message) => return Some(Err(message)),
    };
    Some((|| {
        let port = port
            .parse::<u16>()
            .map_err(|_| format!("--http takes a port, not {port:?}"))?;
        let mut options = fusion_runtime::HttpOptions::default()
            .port(port)
            .stateless(args.iter().any(|arg| arg == "--stateless"));
        if let Some(token) = value("--bearer-token").transpose()? {
            options = options.bearer_token(token);
        }
        if let Some(bytes) = number("--max-body-bytes")? {
            options = options.max_body_bytes(usize::try_from(bytes).unwrap_or(usize::MAX));
        }
        if let Some(ms) = number("--shutdown-grace-ms")? {
            options = options.shutdown_grace(std::time::Duration::from_millis(ms));
        }
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if let Some(ms) = number("--header-timeout-ms")? {
            options = options.header_read_timeout(std::time::Duration::from_millis(ms));
        }
        if let Some(n) = number("--max-connections")? {
            options = options.max_connections(count(n));
        }
        if let Some(n) = number("--max-connections-per-peer")? {
            options = options.max_connections_per_peer(count(n));
        }
        if let Some(n) = number("--max-streams")? {
            options = options.max_streams(count(n));
        }
        if let Some(n) = number("--max-streams-per-session")? {
            options = options.max_streams_per_session(count(n));
        }
        if let Some(n) = number("--max-streams-per-client")? {
            options = options.max_streams_per_client(count(n));
        }
        if let Some(list) = value("--trusted-proxies").transpose()? {
            options = options.trusted_proxies(list.split(','));
        }
        if let Some(n) = number("--max-sessions")? {
            options = options.max_sessions(count(n));
        }
        if let Some(ms) = number("--session-idle-ms")? {
            options = options.session_idle_timeout(Some(std::time::Duration::from_millis(ms)));
        }
        if let Some(n) = number("--max-calls-per-session")? {
            options = options.max_calls_per_session(count(n));
        }
        if let Some(n) = number("--max-queued-per-session")? {
            options = options.max_queued_per_session(count(n));
        }
        if let Some(ms) = number("--sse-keep-alive-ms")? {
            options = options.sse_keep_alive(Some(std::time::Duration::from_millis(ms)));
        }
        Ok(options)
    })())
}
