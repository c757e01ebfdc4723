//! A fleet of `examples/fleet.rs` replicas on a Redis of the test's own: stateless replicas
//! on free ports, and a file where every replica appends one line per effect (an order
//! placed, a shipment sent), so that a test counts what actually ran.

use std::{path::PathBuf, process::Command, time::Duration};

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
