//! A rolling deploy's skew, seen from outside: two replicas of `examples/fleet.rs`, one
//! deployed with another call deadline, serve two tool surfaces. Each says which in
//! `/readyz`, in the metric `fusion_surface_info`, and in the `_meta` of its `initialize`
//! and `server/discover` results; a replica pinned to the other surface
//! (`--require-surface`) refuses to start, with exit 78 and both digests.

use crate::support;

use std::{net::SocketAddr, process::Command, time::Duration};

use serde_json::json;
use support::fleet::Fleet;

/// The limit of one HTTP exchange.
const REQUEST: Duration = Duration::from_secs(20);

/// The digest on `/readyz`'s `surface` line.
fn readyz_digest(addr: SocketAddr) -> String {
    let ready = support::raw_http(addr, "GET", "/readyz", &[], b"", REQUEST);
    assert_eq!(ready.status, 200, "{ready:?}");
    let digest = ready
        .body
        .lines()
        .find_map(|line| line.strip_prefix("surface "))
        .unwrap_or_else(|| panic!("no surface line in /readyz: {ready:?}"))
        .to_owned();
    assert_eq!(digest.len(), 64, "{digest}");
    digest
}

/// The digest labelled on `/metrics`' `fusion_surface_info` line.
fn metrics_digest(addr: SocketAddr) -> String {
    let metrics = support::raw_http(addr, "GET", "/metrics", &[], b"", REQUEST);
    assert_eq!(metrics.status, 200, "{metrics:?}");
    let line = metrics
        .body
        .lines()
        .find(|line| line.starts_with("fusion_surface_info{"))
        .unwrap_or_else(|| panic!("no fusion_surface_info: {}", metrics.body));
    assert!(line.ends_with("} 1"), "{line}");
    line.split('"').nth(1).unwrap_or_default().to_owned()
}

/// `_meta["fusion/surface"].digest` of an `initialize` (2025-11-25) result.
fn initialize_digest(addr: SocketAddr) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "surface-test", "version": "1"}}});
    let answer = support::post_mcp(addr, &[], &body.to_string(), REQUEST);
    meta_digest(&answer, "initialize")
}

/// `_meta["fusion/surface"].digest` of a 200 answer's result.
fn meta_digest(answer: &support::RawResponse, method: &str) -> String {
    assert_eq!(answer.status, 200, "{method}: {answer:?}");
    let message = answer.message();
    message["result"]["_meta"]["fusion/surface"]["digest"]
        .as_str()
        .unwrap_or_else(|| panic!("no surface in the {method} result: {message}"))
        .to_owned()
}

/// `_meta["fusion/surface"].digest` of a 2026-07-28 `server/discover` result.
fn discover_digest(addr: SocketAddr) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "surface-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let headers = support::mcp_headers(&[
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "server/discover"),
    ]);
    let answer = support::raw_http(
        addr,
        "POST",
        "/mcp",
        &headers,
        body.to_string().as_bytes(),
        REQUEST,
    );
    meta_digest(&answer, "server/discover")
}

/// Every way a replica says its surface, checked to agree; the digest.
fn surface_of(addr: SocketAddr) -> String {
    let digest = readyz_digest(addr);
    assert_eq!(
        metrics_digest(addr),
        digest,
        "/metrics and /readyz disagree"
    );
    assert_eq!(initialize_digest(addr), digest, "initialize and /readyz");
    assert_eq!(discover_digest(addr), digest, "server/discover and /readyz");
    digest
}

#[test]
fn two_replicas_with_different_surfaces_show_the_skew_and_a_pinned_one_refuses_to_start() {
    let Some(fleet) = Fleet::start("surface") else {
        return;
    };
    let (a, b) = (fleet.replica(&[]), fleet.replica(&["--timeout-ms", "5000"]));
    let (surface_a, surface_b) = (surface_of(a.addr()), surface_of(b.addr()));
    assert_ne!(surface_a, surface_b, "another deadline is another contract");
    // Another replica of A's configuration serves A's surface: the digest is the code's and
    // the configuration's, not the process's.
    let a_again = fleet.replica(&[]);
    assert_eq!(surface_of(a_again.addr()), surface_a);

    // Pinned to A's surface, B's configuration does not start.
    let mut command = Command::new(support::example_binary("fleet"));
    command
        .args(["--http", "0", "--stateless", "--redis", &fleet.redis_url()])
        .args(["--timeout-ms", "5000", "--require-surface", &surface_a])
        .env("RUST_LOG", "warn");
    let refused = support::run_with_timeout(command, Duration::from_secs(30));
    assert_eq!(
        refused.status.and_then(|status| status.code()),
        Some(i32::from(fusion_runtime::exit::EXIT_CONFIG)),
        "{}",
        refused.report()
    );
    for digest in [&surface_a, &surface_b] {
        assert!(
            refused.stderr.contains(digest.as_str()),
            "the refusal names both digests: {}",
            refused.report()
        );
    }
    // Pinned to its own surface, it serves.
    let pinned = fleet.replica(&["--timeout-ms", "5000", "--require-surface", &surface_b]);
    assert_eq!(readyz_digest(pinned.addr()), surface_b);
}

#[test]
fn a_replica_pinned_to_a_lockfile_names_the_tools_that_differ() {
    let Some(fleet) = Fleet::start("surface-lock") else {
        return;
    };
    // The lockfile an earlier release attested: only `echo`, as today's but for its
    // description. The replica reads it from disk.
    let today = fleet.replica(&[]);
    let digest = readyz_digest(today.addr());
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let answer = support::post_mcp(
        today.addr(),
        &[("MCP-Protocol-Version", "2025-06-18")],
        &list.to_string(),
        REQUEST,
    );
    let tools = answer.message()["result"]["tools"].clone();
    let echo = tools
        .as_array()
        .and_then(|tools| tools.iter().find(|tool| tool["name"] == "echo"))
        .unwrap_or_else(|| panic!("no echo in {tools}"))
        .clone();
    drop(today);
    let lock = std::env::temp_dir().join(format!("fusion-surface-{}.lock", std::process::id()));
    let lockfile = json!({"format": 1, "tools": {"echo": {
        "description": "An older echo.",
        "input_schema": echo["inputSchema"],
        "policy": {"timeout_ms": 300000, "max_output_bytes": 1_048_576}}}});
    std::fs::write(&lock, lockfile.to_string()).expect("the lockfile is written");
    let mut command = Command::new(support::example_binary("fleet"));
    command
        .args(["--http", "0", "--stateless", "--redis", &fleet.redis_url()])
        .arg("--require-surface")
        .arg(&lock)
        .env("RUST_LOG", "warn");
    let refused = support::run_with_timeout(command, Duration::from_secs(30));
    let _ = std::fs::remove_file(&lock);
    assert_eq!(
        refused.status.and_then(|status| status.code()),
        Some(i32::from(fusion_runtime::exit::EXIT_CONFIG)),
        "{}",
        refused.report()
    );
    let stderr = &refused.stderr;
    assert!(
        stderr.contains(&digest),
        "names this build's digest: {stderr}"
    );
    // Every tool that differs is named, each with its rating.
    for expected in [
        "RISKY echo:",
        "SAFE place_order: the tool was added",
        "SAFE ping: the tool was added",
    ] {
        assert!(stderr.contains(expected), "`{expected}` in: {stderr}");
    }
}
