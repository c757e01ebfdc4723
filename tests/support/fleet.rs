//! A fleet of `examples/fleet.rs` replicas on a Redis of the test's own: stateless replicas
//! on free ports, and a file where every replica appends one line per effect (an order
//! placed, a shipment sent), so that a test counts what actually ran.

use std::{net::SocketAddr, path::PathBuf, process::Command, time::Duration};

use serde_json::{Value, json};

use super::{http::HttpServer, redis_sentinel::RedisSentinel, redis_server::RedisServer};

/// How long a replica may take to report its URL.
const START: Duration = Duration::from_secs(30);

pub(crate) struct Fleet {
    backing: Backing,
    effects: PathBuf,
}

/// The Redis a fleet shares: one server, or a primary and a replica under Sentinel.
enum Backing {
    Single(RedisServer),
    Sentinel(RedisSentinel),
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
            backing: Backing::Single(RedisServer::start(&binary)),
            effects,
        })
    }

    /// [`start`](Self::start) on a persistent primary and its replica under three
    /// sentinels (down after `down_after_ms`); the replicas find the primary through the
    /// sentinels, and wait for the replica to acknowledge their claims (`WAIT 1`).
    pub(crate) fn start_sentinel(name: &str, down_after_ms: u64) -> Option<Self> {
        let binary = super::redis_server()?;
        let mut fleet = Self::start(name)?;
        fleet.backing = Backing::Sentinel(RedisSentinel::start_with(&binary, down_after_ms, true));
        Some(fleet)
    }

    /// The Redis of a fleet of one server.
    pub(crate) fn redis(&mut self) -> &mut RedisServer {
        match &mut self.backing {
            Backing::Single(redis) => redis,
            Backing::Sentinel(_) => panic!("this fleet's Redis is under Sentinel"),
        }
    }

    /// `redis://..` of a fleet of one server.
    pub(crate) fn redis_url(&self) -> String {
        match &self.backing {
            Backing::Single(redis) => redis.url(),
            Backing::Sentinel(_) => panic!("this fleet's Redis is under Sentinel"),
        }
    }

    /// The Redis under Sentinel of a fleet started with [`start_sentinel`](Self::start_sentinel).
    pub(crate) fn sentinel(&mut self) -> &mut RedisSentinel {
        match &mut self.backing {
            Backing::Sentinel(sentinel) => sentinel,
            Backing::Single(_) => panic!("this fleet's Redis is one server"),
        }
    }

    /// The flags that point a replica at the fleet's Redis.
    fn redis_args(&self) -> Vec<String> {
        match &self.backing {
            Backing::Single(redis) => vec!["--redis".to_owned(), redis.url()],
            Backing::Sentinel(sentinel) => vec![
                "--redis-sentinel".to_owned(),
                sentinel.sentinel_urls().join(","),
                "--redis-master".to_owned(),
                sentinel.master_name().to_owned(),
                "--wait-replicas".to_owned(),
                "1".to_owned(),
            ],
        }
    }

    /// One replica of `examples/fleet.rs`, stateless, on a free port, with `extra` flags.
    pub(crate) fn replica(&self, extra: &[&str]) -> HttpServer {
        self.replica_serving(true, extra)
    }

    /// [`replica`](Self::replica), with sessions for the clients before 2026-07-28 (their
    /// `resources/subscribe`, their notifications).
    pub(crate) fn replica_with_sessions(&self, extra: &[&str]) -> HttpServer {
        self.replica_serving(false, extra)
    }

    fn replica_serving(&self, stateless: bool, extra: &[&str]) -> HttpServer {
        let mut command = Command::new(super::example_binary("fleet"));
        command
            .args(["--http", "0"])
            .args(stateless.then_some("--stateless"))
            .args(self.redis_args())
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
