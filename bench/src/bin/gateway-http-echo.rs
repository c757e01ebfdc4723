//! `gateway-http-echo`: a fusion gateway in front of one fusion server, for `compare --http
//! --gateway` (issue 59). It mounts the server at `--upstream URL` over Streamable HTTP
//! (`Upstream::http`) under the prefix `app`, so the upstream's `echo` is served as
//! `app_echo`, called through fusion's pipeline and the link, and serves Streamable HTTP
//! itself (`--http 0`, as the quickstart: sessions unless `--stateless`).
//!
//! `gateway-http-echo --upstream http://ADDR/mcp --http 0 [--no-policies]`: with the
//! upstream's default policy ([`DEFAULT_POLICY`]: a 60 s timeout, 3 runs of a tool safe
//! to repeat, a breaker for the upstream), or, with `--no-policies`, the least the
//! upstream's policy can be. [`Upstream::policy`] fills what a policy leaves unset from
//! [`DEFAULT_POLICY`], and a call served over a transport always has a deadline, so
//! neither the timeout nor the breaker can be switched off: `--no-policies` sets no
//! retries, a one-day timeout and a breaker that opens after `u32::MAX` failures (still
//! asked and told of every call).
//!
//! Prints fusion's `serving ... at http://ADDR/mcp` line on stderr, and its call log.

use std::{process::ExitCode, time::Duration};

use fusion_runtime::{
    policy::{CircuitPolicy, Policy, RetryPolicy},
    prelude::*,
    upstream::{DEFAULT_POLICY, Upstream},
};

/// `--no-policies`: no retries, a timeout and a breaker that never act.
const NO_POLICIES: Policy = Policy {
    timeout: Some(Duration::from_secs(24 * 3600)),
    retry: Some(RetryPolicy::NONE),
    circuit: Some(CircuitPolicy {
        failures: u32::MAX,
        window: CircuitPolicy::DEFAULT_WINDOW,
        cooldown: CircuitPolicy::DEFAULT_COOLDOWN,
    }),
    heartbeat: None,
    task_after: None,
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    fusion_runtime::log::init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(url) = args
        .iter()
        .position(|arg| arg == "--upstream")
        .and_then(|at| args.get(at + 1))
    else {
        eprintln!(
            "usage: gateway-http-echo --upstream http://ADDR/mcp --http PORT [--no-policies]"
        );
        return ExitCode::from(2);
    };
    let policy = if args.iter().any(|arg| arg == "--no-policies") {
        NO_POLICIES
    } else {
        DEFAULT_POLICY
    };
    Server::builder("gateway-http-echo", env!("CARGO_PKG_VERSION"))
        .upstream("app", Upstream::http(url.as_str()).policy(policy))
        .serve()
        .await
}
