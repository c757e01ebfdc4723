//! The gateway: one fusion server that serves the tools of two others as its own, under
//! its policies. A notes server written with the official MCP Python SDK runs as a child
//! process over stdio (`notes_*`), and a fusion server is reached over Streamable HTTP
//! (`app_*`).
//!
//! `cargo run --example gateway -- --python-server examples/support/notes_upstream.py --app-url http://127.0.0.1:PORT/mcp`
//!
//! The notes' read-only tools are retried and cached (a stale answer while the upstream is
//! down); `add_note` is destructive, so it is never sent twice. Serves stdio, or Streamable
//! HTTP with `--http PORT`. tests/clients/gateway.rs drives it with the official Python
//! client while it kills the upstreams. It starts while the app is down, and adds the app's
//! tools when it comes; with `--app-required` it exits with 78 instead.

use std::time::Duration;

use fusion_runtime::{
    cache::{CachePolicy, CacheScope},
    policy::{CircuitPolicy, Policy, RetryPolicy},
    prelude::*,
    upstream::Upstream,
};

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "gateway",
    about: "serves a Python MCP server's tools and a fusion server's tools as its own",
    flags: &[
        (
            "--python",
            "PATH",
            "the Python interpreter that runs the notes server (default: python3)",
        ),
        (
            "--python-server",
            "PATH",
            "the notes server's script (examples/support/notes_upstream.py), mounted as `notes`",
        ),
        (
            "--app-url",
            "URL",
            "a fusion server's Streamable HTTP endpoint, mounted as `app` (optional)",
        ),
        (
            "--app-required",
            "",
            "exit with 78 when the app cannot be reached at start (by default the gateway starts without it and adds its tools when it comes)",
        ),
        (
            "--cooldown-ms",
            "N",
            "how long an upstream that failed is left out before it is tried again (default 10000)",
        ),
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port, printed on stderr)",
        ),
        ("--stateless", "", "with --http: serve without sessions"),
    ],
    env: &[],
};

fn value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|arg| arg == flag)
        .and_then(|at| args.get(at + 1))
        .map(String::as_str)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let args: Vec<String> = std::env::args().collect();
    let script = value(&args, "--python-server");
    let app_url = value(&args, "--app-url");
    if script.is_none() && app_url.is_none() {
        eprintln!("gateway: --python-server PATH or --app-url URL, or both (see --help)");
        return std::process::ExitCode::from(cli::EXIT_USAGE);
    }
    let cooldown = match value(&args, "--cooldown-ms").map(str::parse::<u64>) {
        None => CircuitPolicy::DEFAULT_COOLDOWN,
        Some(Ok(millis)) => Duration::from_millis(millis),
        Some(Err(error)) => {
            eprintln!("gateway: --cooldown-ms: {error}");
            return std::process::ExitCode::from(cli::EXIT_USAGE);
        }
    };
    // One breaker per upstream: 3 failures within 30 s leave it out for `cooldown`.
    let policy = Policy {
        timeout: Some(Duration::from_secs(10)),
        retry: Some(RetryPolicy::new(5, Duration::from_millis(200))),
        circuit: Some(CircuitPolicy {
            failures: 3,
            window: CircuitPolicy::DEFAULT_WINDOW,
            cooldown,
        }),
        heartbeat: None,
        task_after: None,
    };
    let mut gateway = Server::builder("gateway", "1.0.0");
    if let Some(script) = script {
        let python = value(&args, "--python").unwrap_or("python3");
        let notes = Upstream::stdio(python, [script])
            .policy(policy)
            .cache(CachePolicy {
                ttl: Duration::from_millis(500),
                stale_if_error: Duration::from_secs(600),
                scope: CacheScope::Public,
            });
        gateway = gateway.upstream("notes", notes);
    }
    if let Some(url) = app_url {
        let mut app = Upstream::http(url)
            .policy(policy)
            .connect_timeout(Duration::from_secs(2));
        if args.iter().any(|arg| arg == "--app-required") {
            app = app.required();
        }
        gateway = gateway.upstream("app", app);
    }
    gateway.serve().await
}
