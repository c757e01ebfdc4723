//! A fleet of `examples/fleet.rs` replicas on a Redis of the test's own: stateless replicas
//! on free ports, and a file where every replica appends one line per effect (an order
//! placed, a shipment sent), so that a test counts what actually ran.

use std::{net::SocketAddr, path::PathBuf, process::Command, time::Duration};

use serde_json::{Value, json};

use super::{http::HttpServer, redis_server::RedisServer};

/// How long a replica may take to report its URL.
const START: Duration = Duration::from_secs(30);

pub(crate) struct Fleet {
    pub(crate) redis: RedisServer,
    effects: PathBuf,
}

impl Fleet {
    /// Redis, and a file for the replicas' effects; `None` (skipped) without redis-server.
    pub(crate) fn start(name: &str) -> Option<Self> {
        let binary = super::redis_server()?;
        let effects = std::env::temp_dir().join(format!(
            "fusion-fleet-{name}-{}.effects",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&effects);
        Some(Self {
            redis: RedisServer::start(&binary),
            effects,
        })
    }

    /// One replica of `examples/fleet.rs`, stateless, on a free port, with `extra` flags.
    pub(crate) fn replica(&self, extra: &[&str]) -> HttpServer {
        let mut command = Command::new(super::example_binary("fleet"));
        command
            .args(["--http", "0", "--stateless", "--redis", &self.redis.url()])
            .arg("--effects")
            .arg(&self.effects)
            .args(extra)
            .env("RUST_LOG", "warn");
        HttpServer::start(command, START)
    }

    /// The effects' lines (one per order placed or shipment sent).
    pub(crate) fn effects(&self) -> Vec<String> {
        std::fs::read_to_string(&self.effects)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.effects);
    }
}

/// The limit of one `tools/call` to a replica.
const CALL: Duration = Duration::from_secs(30);

/// One `tools/call` to a stateless endpoint; its `result` (or the whole answer when there
/// is none).
pub(crate) fn call(addr: SocketAddr, tool: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let answer = super::post_mcp(
        addr,
        &[("MCP-Protocol-Version", "2025-06-18")],
        &body.to_string(),
        CALL,
    );
    assert_eq!(answer.status, 200, "{tool}: {answer:?}");
    let message: Value = serde_json::from_str(answer.body.trim())
        .unwrap_or_else(|error| panic!("not JSON ({error}): {answer:?}"));
    message.get("result").cloned().unwrap_or(message)
}

/// The first text block of a result.
pub(crate) fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Whether a result is `isError`.
pub(crate) fn is_error(result: &Value) -> bool {
    result["isError"] == true
}
