//! An existing axum app with its own routes, and fusion's MCP endpoint mounted at `/mcp`.
//!
//! `cargo run --example axum_mount -- --port 8000` serves the app on `127.0.0.1:8000`:
//! `GET /` and `GET /api/status` are the app's; `/mcp` (Streamable HTTP), `/healthz`,
//! `/readyz` and `/metrics` are fusion's. Tower layers of the app's own wrap both: one
//! stamps every answer with `x-served-by`, one signs the caller in and leaves them in the
//! request's extensions, where the tool `whoami` reads them. `--port 0` picks a free port
//! and prints the URL.

use std::process::ExitCode;

use fusion_runtime::{
    Call, HttpOptions,
    axum::{self, Router, http::HeaderValue, routing::get},
    prelude::*,
};

/// Add two integers.
#[mcp_tool(read_only, idempotent)]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Who the app's own sign-in says is calling, as its middleware leaves it in the request's
/// extensions (here, naively, from an `x-team-user` header).
#[derive(Clone)]
struct TeamUser(String);

/// Who is calling, as the app's sign-in says.
#[mcp_tool(read_only)]
async fn whoami(#[call] call: &Call) -> String {
    match call.request().extensions().get::<TeamUser>() {
        Some(TeamUser(user)) => user.clone(),
        None => "nobody signed in".to_owned(),
    }
}

/// The app's own sign-in: puts the caller in the request's extensions, where fusion's
/// tools read it (`Call::request`, `context_from_request`).
async fn sign_in(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let user = request
        .headers()
        .get("x-team-user")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(user) = user {
        request.extensions_mut().insert(TeamUser(user));
    }
    next.run(request).await
}

/// The app's own middleware: every answer, MCP's included, says who served it.
async fn stamp(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert("x-served-by", HeaderValue::from_static("the-team-app"));
    response
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "axum_mount",
    about: "an axum app with its own routes and fusion's MCP endpoint at /mcp",
    flags: &[(
        "--port",
        "PORT",
        "serve on 127.0.0.1:PORT (default 8000; 0: a free port, printed)",
    )],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let args: Vec<String> = std::env::args().collect();
    let port = match args.iter().position(|arg| arg == "--port") {
        None => 8000,
        Some(at) => match args.get(at + 1).and_then(|port| port.parse::<u16>().ok()) {
            Some(port) => port,
            None => {
                eprintln!("axum_mount: --port takes a port number");
                return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
            }
        },
    };
    // `start` builds the server and runs its start-up checks.
    let server = match Server::builder("axum-mount", "1.0.0")
        .tool(add)
        .tool(whoami)
        .start()
        .await
    {
        Ok(server) => server,
        Err(error) => {
            eprintln!("axum_mount: {error}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("axum_mount: cannot listen on 127.0.0.1:{port}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let Ok(bound) = listener.local_addr() else {
        return ExitCode::FAILURE;
    };
    // The MCP endpoint's Host check accepts loopback names by default; an app reached by
    // other names lists them with `allow_hosts`.
    let mcp = match server.router(HttpOptions::new(bound)) {
        Ok(mcp) => mcp,
        Err(problem) => {
            eprintln!("axum_mount: {problem}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    let app = Router::new()
        .route("/", get(|| async { "the team's app\n" }))
        .route("/api/status", get(|| async { "{\"status\":\"up\"}" }))
        .merge(mcp)
        .fallback(|| async {
            (
                axum::http::StatusCode::NOT_FOUND,
                "the app has no such page\n",
            )
        })
        .layer(axum::middleware::from_fn(sign_in))
        .layer(axum::middleware::from_fn(stamp));
    eprintln!("axum_mount: serving the app and MCP over Streamable HTTP at http://{bound}/mcp");
    match axum::serve(listener, app).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("axum_mount: {error}");
            ExitCode::FAILURE
        }
    }
}
