//! A slow report that runs as a task (the `io.modelcontextprotocol/tasks` extension): a
//! client that declared the extension gets a task id at once, polls `tasks/get`, and reads
//! the report once it is `completed`, also after reconnecting. The work runs under the
//! tool's policies (its timeout, retries); `tasks/cancel` stops it.
//!
//! ```sh
//! cargo run --example report_task -- --port 8932 [--seconds 3]
//! ```
//!
//! `tests/http/report_task.rs` drives it over raw HTTP with 2026-07-28 requests.

use std::{process::ExitCode, time::Duration};

use fusion_runtime::{Call, HttpOptions, prelude::*, tasks::Tasking};

/// Builds the quarterly sales report: slow (a few seconds), so it runs as a task.
#[mcp_tool(read_only, timeout = "2m", retry(attempts = 2))]
async fn quarterly_report(
    #[call] call: &Call,
    /// The quarter, 1 to 4.
    #[arg(min = 1, max = 4)]
    quarter: u8,
    /// How long the report takes, in seconds (default 2).
    seconds: Option<f64>,
) -> String {
    let seconds = seconds.unwrap_or(2.0).clamp(0.0, 60.0);
    let steps = 4_u32;
    for step in 1..=steps {
        tokio::time::sleep(Duration::from_secs_f64(seconds / f64::from(steps))).await;
        call.progress(f64::from(step), Some(f64::from(steps)), None)
            .await;
    }
    format!("Q{quarter} report: revenue up 12%, costs down 3%")
}

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "report_task",
    about: "a slow report run as a task, over Streamable HTTP",
    flags: &[("--port", "PORT", "serve on 127.0.0.1:PORT (default 8932)")],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let mut port = 8932_u16;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().map(|value| value.parse::<u16>())) {
            ("--port", Some(Ok(value))) => port = value,
            _ => {
                eprintln!("report_task: use --port N");
                return ExitCode::from(fusion_runtime::exit::EXIT_CONFIG);
            }
        }
    }
    Server::builder("report-task", env!("CARGO_PKG_VERSION"))
        .task_tool(quarterly_report, Tasking::optional())
        .task_ttl(Duration::from_secs(300))
        .task_poll_interval(Duration::from_millis(200))
        .serve_http_with(HttpOptions::default().port(port))
        .await
}
