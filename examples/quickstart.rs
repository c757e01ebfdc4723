//! The quickstart server: a few small tools over stdio.
//!
//! Run it with `cargo run --example quickstart`. Started from a terminal it prints what it
//! is and how to connect; started by an MCP client it speaks MCP on stdin/stdout.
//!
//! `cargo run --example quickstart -- --http 8000` serves it over Streamable HTTP instead, at
//! `http://127.0.0.1:8000/mcp` (`--http 0` picks a free port and prints it); `--stateless`
//! serves it without sessions, each request on its own.

use std::{process::ExitCode, sync::Arc};

use fusion_runtime::prelude::*;

/// Shared state for every call: here, a greeting prefix and a call counter.
struct App {
    greeting: String,
    calls: Arc<std::sync::atomic::AtomicU64>,
}

/// Errors of the `divide` tool.
#[derive(Debug, thiserror::Error)]
enum MathError {
    #[error("division by zero")]
    DivisionByZero,
}

/// Units for a temperature.
#[mcp_type]
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Units {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// A weather report.
#[mcp_type]
#[derive(Debug, Serialize, JsonSchema)]
struct Report {
    /// The city the report is for.
    city: String,
    /// The temperature, in `units`.
    temperature: f64,
    /// The unit of `temperature`.
    units: Units,
}

/// Echo the text back, unchanged.
#[mcp_tool(read_only, idempotent)]
async fn echo(
    /// The text to send back.
    text: String,
) -> String {
    text
}

/// Add two integers.
#[mcp_tool(read_only, idempotent)]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a.saturating_add(b)
}

/// Divide `a` by `b`.
#[mcp_tool(read_only, idempotent)]
async fn divide(a: f64, b: f64) -> Result<f64, MathError> {
    if b == 0.0 {
        Err(MathError::DivisionByZero)
    } else {
        Ok(a / b)
    }
}

/// Current weather for a city (made up, deterministic).
#[mcp_tool(name = "get_weather", read_only, open_world, title = "Weather")]
async fn weather(
    #[ctx] app: &App,
    /// The city, e.g. "Lisbon".
    city: String,
    /// Celsius unless given.
    units: Option<Units>,
) -> Report {
    app.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let celsius = 10.0 + (city.len() % 20) as f64;
    let units = units.unwrap_or(Units::Celsius);
    let temperature = match units {
        Units::Celsius => celsius,
        Units::Fahrenheit => celsius * 9.0 / 5.0 + 32.0,
    };
    Report {
        city,
        temperature,
        units,
    }
}

/// Greet someone, using the server's configured greeting.
#[mcp_tool(read_only)]
async fn greet(#[ctx] app: &App, name: String) -> String {
    format!("{}, {name}!", app.greeting)
}

/// Crash on purpose (a panic in the handler), to show that the server survives it.
#[mcp_tool]
async fn crash(
    /// What the panic message says.
    message: Option<String>,
) -> String {
    panic!(
        "{}",
        message.unwrap_or_else(|| "crash requested".to_owned())
    )
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "quickstart",
    about: "the quickstart server: a few small tools over stdio",
    flags: &[
        (
            "--http",
            "PORT",
            "serve Streamable HTTP on 127.0.0.1:PORT instead of stdio (0: a free port, printed on stderr)",
        ),
        (
            "--stateless",
            "",
            "with --http: serve without sessions (each request on its own, as replicas behind a load balancer do)",
        ),
        (
            "--trusted-proxies",
            "LIST",
            "with --http: the proxies in front (addresses or ranges, comma-separated) whose X-Forwarded-For names the client",
        ),
    ],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    // stdio, or Streamable HTTP with `--http PORT` (and `--stateless`).
    server().serve().await
}

/// The server: its context and its tools.
fn server() -> fusion_runtime::ServerBuilder<App> {
    let calls = Arc::new(std::sync::atomic::AtomicU64::new(0));
    Server::builder("quickstart", env!("CARGO_PKG_VERSION"))
        .context(move || App {
            greeting: "Hello".to_owned(),
            calls: Arc::clone(&calls),
        })
        .tool(echo)
        .tool(add)
        .tool(divide)
        .tool(weather)
        .tool(greet)
        .tool(crash)
}

#[cfg(test)]
mod tests {
    use fusion_runtime::testing::Tester;

    /// The tools are what `quickstart.fusion.lock` says: a change to a schema, a hint, a
    /// description or a retry fails here until it is accepted with
    /// `FUSION_LOCK=update cargo test --example quickstart` and the lockfile committed.
    #[test]
    fn the_tool_surface_is_the_locked_one() {
        Tester::new(super::server().build()).assert_contract("examples/quickstart.fusion.lock");
    }
}
