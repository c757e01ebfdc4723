//! `rmcp-http-echo`: `rmcp-echo`'s tool served over Streamable HTTP as rmcp 3.11's
//! documentation shows it (`StreamableHttpService` with a `LocalSessionManager`, mounted
//! on an axum router), plus TCP_NODELAY on every accepted connection: without it
//! `axum::serve` leaves Nagle on, and each answer waits for the client's delayed ACK (23
//! calls/s at one in flight). The baseline for "rmcp over HTTP" in `compare --http`.
//!
//! `rmcp-http-echo [--stateless] [--json]`: `--stateless` serves without sessions,
//! `--json` answers those with `application/json` instead of SSE (rmcp's
//! `json_response`). Listens on a free loopback port and prints
//! `rmcp-http-echo: serving at http://ADDR/mcp` on stderr.

use std::sync::Arc;

use axum::serve::ListenerExt as _;
use rmcp::{
    ServerHandler,
    handler::server::wrapper::Parameters,
    schemars, tool, tool_handler, tool_router,
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    },
};

/// The arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoRequest {
    /// The text to send back.
    text: String,
}

/// The server: one tool.
#[derive(Debug, Clone, Default)]
struct Echo;

#[tool_router]
impl Echo {
    /// Echo the text back, unchanged.
    #[tool(description = "Echo the text back, unchanged.")]
    async fn echo(&self, Parameters(EchoRequest { text }): Parameters<EchoRequest>) -> String {
        text
    }
}

#[tool_handler(name = "rmcp-http-echo")]
impl ServerHandler for Echo {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let stateless = args.iter().any(|arg| arg == "--stateless");
    let json = args.iter().any(|arg| arg == "--json");
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(!stateless)
        .with_json_response(json);
    let service = StreamableHttpService::new(
        || Ok(Echo),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    eprintln!("rmcp-http-echo: serving at http://{addr}/mcp");
    let listener = listener.tap_io(|tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            eprintln!("rmcp-http-echo: TCP_NODELAY: {error}");
        }
    });
    axum::serve(listener, router).await?;
    Ok(())
}
