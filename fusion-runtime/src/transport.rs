//! Serving a [`Server`] to MCP clients. rmcp (the official Rust SDK) speaks the protocol:
//! version negotiation, JSON-RPC dispatch, notifications. This module implements rmcp's
//! `ServerHandler` over the server's registry and runs it over stdio.

use std::{io::IsTerminal as _, process::ExitCode};

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool as WireTool,
    },
    service::{RequestContext, ServerInitializeError},
};
use serde_json::Value;

use crate::server::Server;

/// Exit code when the server cannot start because of its configuration (`EX_CONFIG`).
pub const EXIT_CONFIG: u8 = 78;

impl<C: Send + Sync + 'static> ServerHandler for Server<C> {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(self.name(), self.version()));
        if let Some(instructions) = self.instructions() {
            config = config.with_instructions(instructions);
        }
        config
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools().to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.map_or(Value::Null, Value::Object);
        let report = self.call(&request.name, None, args, None).await;
        Ok(CallToolResponse::from(report.result))
    }

    fn get_tool(&self, name: &str) -> Option<WireTool> {
        self.tools().iter().find(|tool| tool.name == name).cloned()
    }
}

impl<C: Send + Sync + 'static> Server<C> {
    /// Serves the server over stdin/stdout until the client disconnects, and returns the
    /// process exit code (`0` after a normal end, `1` when the transport failed).
    ///
    /// Started from a terminal, it first prints to stderr what it is and how to connect a
    /// client, instead of waiting silently for JSON-RPC.
    pub async fn serve_stdio(self) -> ExitCode {
        if std::io::stdin().is_terminal() {
            eprintln!("{}", self.banner());
        }
        tracing::info!(
            target: "fusion::server",
            server = self.name(),
            version = self.version(),
            tools = self.tool_names().len(),
            transport = "stdio",
            "serving"
        );
        let transport = rmcp::transport::stdio_pipes();
        let service = match rmcp::serve_server(self, transport).await {
            Ok(service) => service,
            // The client went away before the handshake: nothing to serve, not a failure.
            Err(ServerInitializeError::ConnectionClosed(_)) => return ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("fusion: the MCP handshake failed: {error}");
                return ExitCode::FAILURE;
            }
        };
        match service.waiting().await {
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
        let config = serde_json::json!({
            "mcpServers": { self.name(): { "command": exe, "args": [] } }
        });
        let config = serde_json::to_string_pretty(&config).unwrap_or_default();
        text.push_str(&format!(
            "\nTry it with the MCP Inspector:\n  npx -y @modelcontextprotocol/inspector@2.12.0 --cli {exe} --method tools/list\n\n\
             Claude Desktop (claude_desktop_config.json):\n{config}\n\n\
             Waiting for JSON-RPC on stdin (Ctrl-D to quit)."
        ));
        text
    }
}
