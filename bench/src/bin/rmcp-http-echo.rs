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
use fusion_bench::rmcp_echo::Echo;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

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
