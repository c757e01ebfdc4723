//! The demo server over stdio. The caller's role comes from `DEMO_ROLE` (`ADMIN`, the
//! default, or `GUEST`); `--flat` lists one tool per action instead of one per group.
//!
//! `--http PORT` serves Streamable HTTP on `127.0.0.1:PORT` instead (`0`: a free port,
//! printed on stderr), `--stateless` without sessions (for replicas behind a load balancer).

use std::process::ExitCode;

use fusion_demo::Role;
use fusion_runtime::Exposure;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    fusion_runtime::log::init();
    let role = match std::env::var("DEMO_ROLE") {
        Ok(text) => match Role::parse(&text) {
            Some(role) => role,
            None => {
                eprintln!("fusion-demo: DEMO_ROLE must be ADMIN or GUEST, not {text:?}");
                return ExitCode::from(fusion_runtime::EXIT_CONFIG);
            }
        },
        Err(_) => Role::Admin,
    };
    let exposure = if std::env::args().any(|arg| arg == "--flat") {
        Exposure::Flat
    } else {
        Exposure::Grouped
    };
    let builder = fusion_demo::builder(role, exposure);
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|arg| arg == "--http") {
        None => builder.serve_stdio().await,
        Some(at) => match args.get(at + 1).and_then(|port| port.parse::<u16>().ok()) {
            Some(port) => {
                let options = fusion_runtime::HttpOptions::default()
                    .port(port)
                    .stateless(args.iter().any(|arg| arg == "--stateless"));
                builder.serve_http_with(options).await
            }
            None => {
                eprintln!("fusion-demo: --http takes a port number");
                ExitCode::from(fusion_runtime::EXIT_CONFIG)
            }
        },
    }
}
