//! The cancellation server: tools behind a circuit breaker, a concurrency limit, an
//! idempotency key, a timeout, retries with a reconnect, plus tools that panic and hang,
//! and `in_flight`, which reports the calls the server's metrics count as running
//! (`src/cancel_safety.rs` defines them). Served over stdio for the cancellation storm
//! (`tests/stdio/cancel_storm.rs`).
//!
//! `cargo run --example cancel_safety`

use fusion_tests::cancel_safety::{self, StormCtx};

#[path = "support/cli.rs"]
mod cli;

/// The command line (`--help` prints it).
const USAGE: cli::Usage = cli::Usage {
    name: "cancel_safety",
    about: "tools under every policy, over stdio, for the cancellation storm",
    flags: &[],
    env: &[],
};

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    if let Some(exit) = cli::check(&USAGE) {
        return exit;
    }
    fusion_runtime::log::init();
    let ctx = StormCtx::default();
    match cancel_safety::builder(ctx.clone()).try_build() {
        Ok(server) => cancel_safety::record(server, &ctx).serve_stdio().await,
        Err(errors) => {
            for error in errors {
                eprintln!("cancel_safety: {error}");
            }
            std::process::ExitCode::from(fusion_runtime::exit::EXIT_CONFIG)
        }
    }
}
