//! `rmcp-echo`: the `echo` tool written as rmcp 3.11's documentation shows it —
//! `#[tool_router]` and `#[tool]` on an impl block, arguments as `Parameters<T>` with a
//! schemars type, `#[tool_handler]` for the `ServerHandler`, served with
//! `rmcp::transport::stdio()` on `#[tokio::main]` — which is how users ship it. The
//! baseline for "rmcp as shipped" in `compare`.

use rmcp::{
    ServerHandler, ServiceExt, handler::server::wrapper::Parameters, schemars, tool, tool_handler,
    tool_router, transport::stdio,
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

#[tool_handler(name = "rmcp-echo")]
impl ServerHandler for Echo {}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Echo.serve(stdio()).await?;
    service.waiting().await?;
    Ok(())
}
