//! A replica of a fleet that shares state on Redis: idempotency keys run once across every
//! replica, and a rate limit holds for the fleet as a whole.
//!
//! ```text
//! cargo run --example fleet -- --http 8001 --redis redis://127.0.0.1:6379 --rate 20
//! cargo run --example fleet -- --http 8002 --redis redis://127.0.0.1:6379 --rate 20
//! ```
//!
//! Tools: `place_order` (destructive, one run per `order_id`; it appends one line per run
//! to the `--effects FILE`, so that a test counts the orders actually placed), `ping`
//! (limited to `--rate` calls a second across the fleet, burst 1) and `echo` (no key, no
//! limit). `--lease-ms N` shortens the claim lease (10 s by default); `--stateless` serves
//! without sessions. `--http 0` picks a free port and prints the URL.

use std::{io::Write as _, path::PathBuf, process::ExitCode, time::Duration};

use fusion_runtime::{HttpOptions, prelude::*, redis::RedisStore};

/// Where each run of `place_order` leaves its mark.
struct Ctx {
    effects: Option<PathBuf>,
}

/// Errors of `place_order`.
#[derive(Debug, thiserror::Error)]
enum OrderError {
    #[error("cannot record the order: {0}")]
    Record(#[from] std::io::Error),
}

/// Place an order; one per `order_id`, whichever replica serves the call.
#[mcp_tool(destructive, idempotency_key = "order_id")]
async fn place_order(
    #[ctx] ctx: &Ctx,
    /// The client's id of this order: calls with the same id place it once.
    order_id: String,
    /// What to order.
    item: String,
    /// How long placing it takes, in milliseconds.
    delay_ms: Option<u32>,
) -> Result<String, OrderError> {
    tokio::time::sleep(Duration::from_millis(u64::from(delay_ms.unwrap_or(0)))).await;
    if let Some(path) = &ctx.effects {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        writeln!(file, "{order_id} {item} {}", std::process::id())?;
    }
    Ok(format!(
        "placed {item} as {order_id} by replica {}",
        std::process::id()
    ))
}

/// Answer `pong`; limited across the fleet.
#[mcp_tool(read_only)]
async fn ping() -> String {
    "pong".to_owned()
}

/// Echo the text back.
#[mcp_tool(read_only)]
async fn echo(text: String) -> String {
    text
}

/// The value after `flag`, parsed.
fn flag<T: std::str::FromStr>(args: &[String], flag: &str) -> Result<Option<T>, String> {
    match args.iter().position(|arg| arg == flag) {
        None => Ok(None),
        Some(at) => args
            .get(at + 1)
            .and_then(|value| value.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} takes a value")),
    }
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "fleet",
    about: "a replica of a fleet sharing idempotency keys and a rate limit on Redis",
    flags: &[
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT (required; 0: a free port)",
        ),
        ("--redis", "URL", "the Redis to share state on (required)"),
        (
            "--lease-ms",
            "MS",
            "the lease of an idempotency claim (default 10000)",
        ),
        (
            "--rate",
            "N",
            "calls a second to `ping`, across the fleet (default 20)",
        ),
        (
            "--effects",
            "FILE",
            "append one line per order placed to FILE",
        ),
        ("--stateless", "", "serve without sessions"),
    ],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let args: Vec<String> = std::env::args().collect();
    let parsed = (|| {
        Ok::<_, String>((
            flag::<u16>(&args, "--http")?.ok_or("--http PORT is required")?,
            flag::<String>(&args, "--redis")?.ok_or("--redis URL is required")?,
            flag::<u64>(&args, "--lease-ms")?,
            flag::<f64>(&args, "--rate")?.unwrap_or(20.0),
            flag::<PathBuf>(&args, "--effects")?,
        ))
    })();
    let (port, url, lease_ms, rate, effects) = match parsed {
        Ok(parsed) => parsed,
        Err(problem) => {
            eprintln!("fleet: {problem}");
            return ExitCode::from(fusion_runtime::EXIT_CONFIG);
        }
    };
    let mut redis = match RedisStore::connect(&url).await {
        Ok(redis) => redis,
        Err(error) => {
            eprintln!("fleet: cannot reach Redis at {url}: {error}");
            return ExitCode::from(fusion_runtime::EXIT_CONFIG);
        }
    };
    if let Some(lease_ms) = lease_ms {
        redis = redis.lease(Duration::from_millis(lease_ms));
    }
    let options = HttpOptions::default()
        .port(port)
        .stateless(args.iter().any(|arg| arg == "--stateless"));
    Server::builder("fleet", "1.0.0")
        .context(move || Ctx {
            effects: effects.clone(),
        })
        .tool(place_order)
        .tool(ping)
        .tool(echo)
        .tool_middleware("ping", redis.rate_limit(rate, 1))
        .idempotency_store(redis)
        .serve_http_with(options)
        .await
}
