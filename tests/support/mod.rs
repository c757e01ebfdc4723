//! Helpers shared by the integration tests that drive built binaries and external clients.
//!
//! Use from a test file with `mod support;` (`tests/hostile/main.rs`: `#[path =
//! "../support/mod.rs"] mod support;`). Not every test uses every helper, hence the
//! `dead_code` allowance (and `unused_imports` on the re-exports below). One file a concern;
//! everything is re-exported here, so tests write `support::example_binary`:
//!
//! - [`process`]: [`example_binary`] and [`package_binary`] (paths of the built binaries),
//!   [`run_with_timeout`] (run a command to completion with a hard deadline, capturing
//!   output, into a [`RunOutput`]), [`send_signal`], [`rss_kib`]; pipes drained on threads and process
//!   groups killed for the other helpers.
//! - [`http`]: [`HttpServer`] (a server process on a free port, killed on drop), [`raw_http`]
//!   and [`try_raw_http`] (raw HTTP/1.1 exchanges, into a [`RawResponse`]), [`connect_from`]
//!   (a connection from another loopback address) and [`exchange`] (one request on it).
//! - [`toolchains`]: [`target_dir`] (cargo's target directory, where `scripts/python-env`
//!   and `scripts/node-env` put their tools), [`python`], [`node_bin`] with [`path_with`],
//!   [`nginx`], [`redis_server()`], [`redis_cli()`]: each the tool, or `None` (skip, with a loud note) outside CI when it is
//!   missing; under `CI=true` a missing tool fails the test.
//! - [`stdio_peer::StdioPeer`]: raw JSON-RPC lines to an example server over stdio.
//! - [`drop_after::drop_after`]: a future dropped after its k-th `Pending` poll.
//! - [`nginx_proxy::Nginx`]: nginx of the test's own in front of replicas (round robin),
//!   killed on drop.
//! - [`fleet::Fleet`]: `examples/fleet.rs` replicas on a Redis of the test's own, and the
//!   file their effects are counted in.
//! - [`task_client`]: raw 2026-07-28 requests of a client with the tasks extension
//!   (create a task, poll it to its end), for the fleet's task tests.
//! - [`redis_server::RedisServer`]: a Redis of the test's own on a loopback port, stopped
//!   and started again at will (with its data, when started persistent), killed on drop
//!   ([`redis_server()`] finds the binary).
//! - [`redis_cluster::RedisCluster`]: a Redis Cluster of three primaries of the test's own.
//! - [`redis_sentinel::RedisSentinel`]: a primary, its replica and three sentinels; the
//!   primary killed, a failover waited for.
//! - [`axum_thread::AxumThread`]: an axum router on loopback, on a thread of its own.
//! - [`otlp::OtlpReceiver`]: an OTLP/HTTP receiver on loopback that decodes the spans a
//!   server exports with the official protobuf definitions.
//! - [`auth_server::AuthServer`]: a test OAuth authorization server on loopback (RFC 8414
//!   metadata, a JWKS of RSA keys made at start), minting and forging access tokens.

#![allow(dead_code)]

pub(crate) mod auth_server;
pub(crate) mod axum_thread;
pub(crate) mod drop_after;
pub(crate) mod fleet;
pub(crate) mod http;
pub(crate) mod nginx_proxy;
pub(crate) mod otlp;
pub(crate) mod process;
pub(crate) mod redis_cluster;
pub(crate) mod redis_sentinel;
pub(crate) mod redis_server;
pub(crate) mod stdio_peer;
pub(crate) mod task_client;
pub(crate) mod toolchains;

#[allow(unused_imports)]
pub(crate) use auth_server::AuthServer;
#[allow(unused_imports)]
pub(crate) use http::{
    HttpServer, RawResponse, connect_from, exchange, free_port, mcp_headers, post_mcp, raw_http,
    try_raw_http,
};
#[allow(unused_imports)]
pub(crate) use process::{
    RunOutput, example_binary, package_binary, rss_kib, run_with_timeout, send_signal,
};
#[allow(unused_imports)]
pub(crate) use toolchains::{
    nginx, node_bin, path_with, python, redis_cli, redis_server, target_dir,
};
