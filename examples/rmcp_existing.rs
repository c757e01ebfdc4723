//! fusion's tools inside a server already written with rmcp, the official Rust SDK.
//!
//! `Existing` is an rmcp `ServerHandler` with a tool of its own (`version`, written with
//! rmcp's `#[tool]`). It adds fusion's tools by adding routers:
//! `Self::tool_router() + fusion.tool_router()`. Each fusion route runs its call through
//! fusion's pipeline (strict validation, recovery, middleware, the call log), so `divide`
//! answers bad arguments and its own errors as fusion does, while `version` stays rmcp's.
//!
//! `cargo run --example rmcp_existing` serves it over stdio with rmcp's own transport.

use std::process::ExitCode;

use fusion_runtime::prelude::*;
use rmcp::{
    ServerHandler, ServiceExt,
    handler::server::router::tool::ToolRouter,
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router,
};

/// Errors of `divide`: the caller's mistake, so the model reads the message.
#[derive(Debug, thiserror::Error, Classify)]
enum MathError {
    #[error("division by zero")]
    #[invalid_input(hint = "use a divisor other than 0")]
    DivisionByZero,
}

/// Divide `dividend` by `divisor`.
#[mcp_tool(read_only, idempotent)]
async fn divide(
    /// The number divided.
    dividend: f64,
    /// The number it is divided by; not zero.
    divisor: f64,
) -> Result<f64, MathError> {
    if divisor == 0.0 {
        return Err(MathError::DivisionByZero);
    }
    Ok(dividend / divisor)
}

/// The team's existing rmcp server.
#[derive(Clone)]
struct Existing {
    tools: ToolRouter<Existing>,
}

#[tool_router]
impl Existing {
    fn new(fusion: &Server) -> Self {
        Self {
            // rmcp's own routes, then fusion's.
            tools: Self::tool_router() + fusion.tool_router(),
        }
    }

    /// rmcp's own tool.
    #[tool(description = "The version of the existing server.")]
    async fn version(&self) -> String {
        "existing 2.4.1".to_owned()
    }
}

#[tool_handler(router = self.tools)]
impl ServerHandler for Existing {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "rmcp_existing",
    about: "fusion's tools inside an rmcp server of its own, over stdio",
    flags: &[],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let fusion = match Server::builder("existing", "2.4.1")
        .tool(divide)
        .start()
        .await
    {
        Ok(server) => server,
        Err(error) => {
            eprintln!("rmcp_existing: {error}");
            return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
        }
    };
    let running = match Existing::new(&fusion).serve(rmcp::transport::stdio()).await {
        Ok(running) => running,
        Err(error) => {
            eprintln!("rmcp_existing: the client did not initialize: {error}");
            return ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rmcp_existing: {error}");
            ExitCode::FAILURE
        }
    }
}
