//! A minimal MCP client session for `cargo fusion call`: `initialize`, then requests, each
//! answered in turn, over any [`Transport`] (stdio, Streamable HTTP).

use serde_json::{Value, json};

use crate::error::{CliError, CliResult};

/// The protocol revision the client asks for.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";

/// How JSON-RPC messages go to the server and come back.
pub(crate) trait Transport {
    /// Sends one message.
    ///
    /// # Errors
    /// When the server cannot be reached, or refuses the message.
    fn send(&mut self, message: &Value) -> CliResult<()>;

    /// The next message from the server; `method` (the request waited for) names it in
    /// errors.
    ///
    /// # Errors
    /// When the server is gone, or says nothing more before the deadline.
    fn receive(&mut self, method: &str) -> CliResult<Value>;

    /// The protocol revision `initialize` settled on, for transports that send it with
    /// every later message.
    fn negotiated(&mut self, _version: &str) {}
}

/// What a request got back.
pub(crate) enum Reply {
    /// The `result`.
    Result(Value),
    /// A JSON-RPC `error`: its `code` and `message`.
    Error(Value),
}

/// A session with one server.
pub(crate) struct Session<T> {
    transport: T,
    next_id: u64,
}

impl<T: Transport> Session<T> {
    /// `initialize`, then `notifications/initialized`: a session ready for calls.
    ///
    /// # Errors
    /// When the server refuses, is gone, or does not answer in time.
    pub(crate) fn initialize(transport: T) -> CliResult<Self> {
        let mut session = Self {
            transport,
            next_id: 1,
        };
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "cargo-fusion", "version": env!("CARGO_PKG_VERSION") },
        });
        match session.request("initialize", params)? {
            Reply::Result(result) => {
                let version = result["protocolVersion"]
                    .as_str()
                    .unwrap_or(PROTOCOL_VERSION);
                session.transport.negotiated(version);
            }
            Reply::Error(error) => {
                return Err(CliError::new(format!(
                    "the server refused to initialize: {error}"
                )));
            }
        }
        session
            .transport
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))?;
        Ok(session)
    }

    /// Sends a request and waits for its reply, answering what the server asks meanwhile.
    ///
    /// # Errors
    /// When the server is gone or does not answer in time.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> CliResult<Reply> {
        let id = self.next_id;
        self.next_id += 1;
        self.transport
            .send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))?;
        loop {
            let message = self.transport.receive(method)?;
            if message.get("method").is_some() {
                self.answer_server_message(&message)?;
                continue;
            }
            if message["id"] != id {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Ok(Reply::Error(error.clone()));
            }
            return Ok(Reply::Result(message["result"].clone()));
        }
    }

    /// A request from the server (a ping, a sampling or roots request) gets an answer, so
    /// the server is not left waiting: a ping an empty result, anything else "not found",
    /// since this client declares no capabilities. Notifications need none.
    fn answer_server_message(&mut self, message: &Value) -> CliResult<()> {
        let Some(id) = message.get("id") else {
            return Ok(());
        };
        let reply = if message["method"] == "ping" {
            json!({ "jsonrpc": "2.0", "id": id, "result": {} })
        } else {
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": { "code": -32601, "message": "cargo fusion call answers no requests" },
            })
        };
        self.transport.send(&reply)
    }
}
