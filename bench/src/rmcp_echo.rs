//! The `echo` tool written as rmcp 3.11's documentation shows it: `#[tool_router]` and
//! `#[tool]` on an impl block, arguments as `Parameters<T>` with a schemars type,
//! `#[tool_handler]` for the `ServerHandler`. The rmcp baselines (`rmcp-echo`,
//! `rmcp-pipe-echo`, `rmcp-http-echo`) serve it over their transports.

use rmcp::{
    ServerHandler, handler::server::wrapper::Parameters, schemars, tool, tool_handler, tool_router,
};

/// The arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoRequest {
    /// The text to send back.
    pub text: String,
}

/// The server: one tool.
#[derive(Debug, Clone, Default)]
pub struct Echo;

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
