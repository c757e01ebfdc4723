//! `loadgen`: drives one stdio MCP server with C `tools/call` requests in flight over a
//! single connection and prints calls/s, p50/p99 latency, the server's CPU µs per call
//! and its peak RSS. Exits 1 when any id was not answered exactly once without an error,
//! or when the run stopped (timeout, the server died); 2 on bad options.
//!
//! ```sh
//! loadgen --server "target/release/examples/quickstart" --concurrency 32 --calls 200000
//! loadgen --server "target/release/rmcp-echo" --tool echo --args '{"text":"hi"}' --runs 3
//! loadgen --server "target/release/examples/quickstart" --client current
//! ```
//!
//! `--client current` drives it as a 2026-07-28 client (no `initialize`; every request's
//! `_meta` names the revision, the client and its capabilities).

use std::{path::PathBuf, process::ExitCode, time::Duration};

use fusion_bench::{
    cli::{Args, split_command},
    load::{self, Client, LoadConfig, RunReport},
    stats::median,
};

const USAGE: &str = "usage: loadgen --server \"<command and args>\" [--concurrency C] [--calls N] \
[--warmup N] [--tool echo] [--args '{\"text\":\"hi\"}'] [--runs 3] [--timeout SECS] [--stderr PATH] [--client classic|current]";

fn main() -> ExitCode {
    match configure() {
        Ok((config, runs)) => drive(&config, runs),
        Err(message) => {
            eprintln!("loadgen: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn configure() -> Result<(LoadConfig, u32), String> {
    let args = Args::parse(
        std::env::args().skip(1),
        &[
            "server",
            "concurrency",
            "calls",
            "warmup",
            "tool",
            "args",
            "runs",
            "timeout",
            "stderr",
            "client",
        ],
        &[],
    )?;
    let server = args.get("server").ok_or("`--server` is required")?;
    let mut config = LoadConfig::new(split_command(server)?);
    config.concurrency = args.parse_or("concurrency", 1)?;
    config.calls = args.parse_or("calls", config.calls)?;
    config.warmup = args.parse_or("warmup", (config.calls / 10).clamp(100, 20_000))?;
    config.tool = args.get("tool").unwrap_or("echo").to_owned();
    if let Some(json) = args.get("args") {
        config.arguments =
            serde_json::from_str(json).map_err(|error| format!("`--args {json}`: {error}"))?;
    }
    config.timeout = Duration::from_secs_f64(args.parse_or("timeout", 120.0)?);
    config.stderr = args.get("stderr").map(PathBuf::from);
    if let Some(name) = args.get("client") {
        config.client = Client::parse(name).ok_or(format!(
            "`--client {name}`: the client is `classic` or `current`"
        ))?;
    }
    let runs = args.parse_or("runs", 1u32)?.max(1);
    Ok((config, runs))
}

fn drive(config: &LoadConfig, runs: u32) -> ExitCode {
    let mut reports: Vec<RunReport> = Vec::new();
    let mut failed = false;
    for run in 1..=runs {
        match load::run(config) {
            Ok(report) => {
                if runs > 1 {
                    println!("-- run {run} of {runs}");
                }
                println!("{report}");
                failed |= !report.is_clean();
                reports.push(report);
            }
            Err(error) => {
                eprintln!("loadgen: run {run} of {runs}: {error}");
                failed = true;
            }
        }
    }
    if reports.len() > 1 {
        let med = |f: fn(&RunReport) -> f64| median(&reports.iter().map(f).collect::<Vec<_>>());
        println!(
            "-- median of {} runs: {:.0} calls/s, p50 {:.0} µs, p99 {:.0} µs, server CPU {:.2} \
             µs/call, peak RSS {:.1} MiB",
            reports.len(),
            med(RunReport::calls_per_sec).unwrap_or(0.0),
            med(|r| r.p50.as_secs_f64() * 1e6).unwrap_or(0.0),
            med(|r| r.p99.as_secs_f64() * 1e6).unwrap_or(0.0),
            med(RunReport::server_cpu_us_per_call).unwrap_or(0.0),
            med(|r| r.peak_rss_kib as f64 / 1024.0).unwrap_or(0.0),
        );
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
